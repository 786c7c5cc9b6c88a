"""Reader of the call-path companion document, <callpaths> 1.x
(docs/formats/callpaths.md), into psuite.model.calltree.CallPathProfile, its
threads numbered as every document numbers them (docs/formats/numbering.md):
version 1.0 counted them from 0, so its ids are read as id + 1.

Streamed with iterparse: a process can record hundreds of thousands of
calling contexts, and each <node> is turned into four list entries and
dropped as soon as the parser has passed it.  Every problem is one
InputError line naming the file, the element and what is wrong."""

from __future__ import annotations

import os
import re

from psuite.errors import InputError
from psuite.formats import values

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at start-up
    from typing import IO

    from psuite.model.calltree import CallPathModule, CallPathProfile, ThreadCallPaths

ROOT = "callpaths"
MULTI_ROOT = "multicallpaths"  # the companion of a combined document: a <callpaths> per member
SUFFIX = ".callpaths.xml"
KIND_NAMES: tuple[str, ...] = ()
_KINDS: dict[str, int] = {}
_HEX = re.compile(r"[0-9a-f]{2,128}")
_FIX = "regenerate it with psrun --callpath (the format: docs/formats/callpaths.md)"


def companion_name(profile: str) -> str | None:
    """Where the companion of profile X.xml is: X.callpaths.xml (a URL's
    too); None for a name that is itself a companion or not .xml."""
    if profile.endswith(SUFFIX) or not profile.endswith(".xml"):
        return None
    return profile[:-len(".xml")] + SUFFIX


def profile_name(companion: str) -> str | None:
    """The profile a companion name belongs to, or None."""
    return companion[:-len(SUFFIX)] + ".xml" if companion.endswith(SUFFIX) else None


def is_callpaths(head: bytes, root: str = "callpaths") -> bool:
    """Whether a document's first bytes open a <callpaths> root element
    (or a `root` one)."""
    i = 0
    while True:
        i = head.find(b"<", i)
        if i < 0 or i + 1 >= len(head):
            return False
        if head[i + 1:i + 2] in (b"?", b"!"):  # declaration, comment, doctype
            end = head.find(b"-->", i) + 3 if head.startswith(b"<!--", i) else head.find(b">", i) + 1
            if end <= 0:
                return False
            i = end
            continue
        name = head[i + 1:i + 1 + len(root) + 1]
        return name[:len(root)] == root.encode() and (len(name) == len(root) or name[-1:] in b" \t\r\n/>")


def _int(el, attr: str, source: str, default: str | None = None, base: int = 10, hi: int = 2**63 - 1) -> int:
    text = el.get(attr, default)
    if text is None:
        raise InputError(f"{source}: {_where(el)} has no {attr}= attribute; {_FIX}")
    if base == 16 and text[:2].lower() == "0x":
        text = text[2:]
    return values.integer(text, f"{_where(el)} {attr}=", source, hi=hi, base=base)


def _where(el) -> str:
    ident = el.get("id")
    return f'<{el.tag} id="{ident}">' if ident is not None else f"<{el.tag}>"


MAX_DEPTH = 1024  # psrun --callpath's largest depth, for a document without maxdepth


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.cp = CallPathProfile(source=source)
        self.thread: ThreadCallPaths | None = None
        self.ids: dict[int, int] = {}  # document node id -> index in the thread's lists
        self.depths: list[int] = [0]  # per index: frames from the root
        self.deepest = MAX_DEPTH + 1  # frames a node may be from the root: maxdepth under a placeholder
        self.modules_used: set[int] = set()
        self.id_shift = 0  # added to each <thread id>: 1 for version 1.0, which numbered the main thread 0

    def start(self, el) -> None:
        """Read the attributes of a <thread>, <profile>, <sampling> or <module>."""
        tag, cp, source = el.tag, self.cp, self.source
        if tag == "thread":
            self.thread = ThreadCallPaths(
                thread=_int(el, "id", source) + self.id_shift, tid=_int(el, "tid", source, "0"),
                samples=_int(el, "samples", source, "0"), truncated=_int(el, "truncated", source, "0"),
                lost=_int(el, "lost", source, "0"))
            self.ids = {0: 0}
            self.depths = [0]
            self.deepest = min(cp.maxdepth or MAX_DEPTH, MAX_DEPTH) + 1
        elif tag == "profile":
            cp.profile_file = el.get("file", "")
            cp.pid = _int(el, "pid", source, "0")
            cp.hostname = el.get("hostname", "")
            cp.command = el.get("command", "")
        elif tag == "sampling":
            cp.event = el.get("event", "")
            cp.threshold = _int(el, "threshold", source, "0")
            cp.maxdepth = _int(el, "maxdepth", source, "0")
            cp.unwinder = el.get("unwinder", "")
        elif tag == "module":
            ident = _int(el, "id", source)
            if ident == 0 or ident in cp.modules:
                raise InputError(f"{source}: {_where(el)} is {'reserved' if ident == 0 else 'declared twice'}; "
                                 f"{_FIX}")
            buildid = el.get("buildid", "").lower()
            if buildid and not _HEX.fullmatch(buildid):
                raise InputError(f"{source}: {_where(el)} has buildid=\"{buildid}\", not a build-id in hex; {_FIX}")
            cp.modules[ident] = CallPathModule(ident, el.get("file", "??"),
                                               _int(el, "offset", source, "0", base=16, hi=2**64 - 1), buildid)

    def _depth_bound(self) -> str:
        """What limits a path's depth, in words: the document's maxdepth, or
        the most psrun records; frames under one truncated node."""
        declared = self.cp.maxdepth
        if declared and declared <= MAX_DEPTH:
            return f"its maxdepth {declared} allows ({declared} frames under a truncated node)"
        bound = f"psrun records (at most {MAX_DEPTH} frames under a truncated node"
        return bound + (f"; the document's maxdepth {declared} is more than psrun's largest, {MAX_DEPTH})"
                        if declared else ")")

    def node(self, el) -> None:
        t, source, get = self.thread, self.source, el.get
        if t is None:
            t = self._thread_of(el)
        # The common well-formed node is read inline; anything else goes
        # through values' checks and messages.
        id_text, parent_text = get("id"), get("parent")
        if id_text is not None and parent_text is not None and id_text.isdigit() and parent_text.isdigit() \
                and id_text.isascii() and parent_text.isascii() and len(id_text) < 19 and len(parent_text) < 19:
            ident, parent = int(id_text), int(parent_text)
        else:
            ident, parent = _int(el, "id", source), _int(el, "parent", source)
        kind = _KINDS.get(get("kind", "call"))
        if kind is None:
            raise InputError(f"{source}: {_where(el)} of thread {t.thread} has kind={get('kind')!r}; one of "
                             f"{', '.join(KIND_NAMES)} is expected; {_FIX}")
        ids = self.ids
        index = ids.get(parent)
        if index is None:
            raise InputError(f"{source}: {_where(el)} of thread {t.thread} comes before its parent {parent}; "
                             f"parents come first; {_FIX}")
        if ident in ids:
            raise InputError(f"{source}: {_where(el)} of thread {t.thread} is declared twice; {_FIX}")
        depth = self.depths[index] + 1
        if depth > self.deepest:
            # A path is at most maxdepth frames under one placeholder: deeper
            # nodes are a broken document, and would make every per-path
            # output (records, CSV, JSON) quadratic in the node count.
            raise InputError(f"{source}: {_where(el)} of thread {t.thread} is {depth} frames deep, more than "
                             f"{self._depth_bound()}; {_FIX}")
        self.depths.append(depth)
        if kind <= 1:  # call or sample: an address in a module
            addr_text, module_text = get("addr"), get("module", "0")
            if addr_text is not None and addr_text.isalnum() and addr_text.isascii() and len(addr_text) <= 16 \
                    and module_text.isdigit() and module_text.isascii() and len(module_text) < 10:
                try:
                    addr = int(addr_text, 16)
                except ValueError:
                    addr = _int(el, "addr", source, None, base=16, hi=2**64 - 1)
                module = int(module_text)
            else:
                addr = _int(el, "addr", source, None, base=16, hi=2**64 - 1)
                module = _int(el, "module", source, "0")
            if module not in self.modules_used:
                self.modules_used.add(module)
        else:
            addr = module = 0
        samples = get("samples")
        n = 0 if samples is None else int(samples) if samples.isdigit() and samples.isascii() and len(samples) < 19 \
            else _int(el, "samples", source, "0")
        ids[ident] = len(t.parent)
        t.parent.append(index)
        t.module.append(module)
        t.addr.append(addr)
        t.kind.append(kind)
        t.exclusive.append(n)

    def _thread_of(self, el) -> ThreadCallPaths:
        """The <thread> a node is in, begun at its first node."""
        parent = el.getparent()
        if parent is None or parent.tag != "thread":
            raise InputError(f"{self.source}: {_where(el)} outside a <thread>; {_FIX}")
        self.start(parent)
        assert self.thread is not None
        return self.thread

    def end_thread(self, el) -> None:
        t = self.thread
        assert t is not None
        held = sum(t.exclusive)
        if held != t.samples:
            raise InputError(f"{self.source}: <thread id=\"{t.thread}\"> says samples=\"{t.samples}\" but its nodes "
                             f"hold {held}; {_FIX}")
        self.cp.threads.append(t)
        self.thread = None

    def finish(self) -> CallPathProfile:
        unknown = sorted(self.modules_used - set(self.cp.modules) - {0})
        if unknown:
            raise InputError(f"{self.source}: nodes name module {unknown[0]}, which no <module> declares; {_FIX}")
        return self.cp


def _load_model() -> None:
    """psuite.model.calltree's names, imported by the first read(): psprocess
    imports this module for is_callpaths and the companion names even when
    there are no call paths, and psuite.model.calltree costs milliseconds."""
    global KIND_NAMES, _KINDS, CallPathModule, CallPathProfile, ThreadCallPaths  # noqa: PLW0603
    if not _KINDS:
        from psuite.model.calltree import KIND_NAMES, CallPathModule, CallPathProfile, ThreadCallPaths

        _KINDS = {name: i for i, name in enumerate(KIND_NAMES)}


def read(stream: IO[bytes], source: str) -> CallPathProfile:
    """The document read from a binary stream."""
    return _read(stream, source, single=True)[0]


def read_all(stream: IO[bytes], source: str) -> list[CallPathProfile]:
    """Every process's call paths in a companion read from a binary stream:
    the <callpaths> of a <multicallpaths> (the companion of a combined
    document, psprocess -c -x), or the one of a <callpaths> document."""
    return _read(stream, source, single=False)


def _read(stream: IO[bytes], source: str, single: bool) -> list[CallPathProfile]:
    """The call paths of each <callpaths> in the stream; `single`: a
    <multicallpaths> is refused (one profile's companion was expected)."""
    from lxml import etree

    _load_model()

    reader = _Reader(source)
    profiles: list[CallPathProfile] = []
    multi = False
    try:
        # End events only, of the elements the model takes: the rest is
        # built by libxml2 without a Python call per element.  A thread is
        # begun at its first node (its attributes are parsed by then).
        parsed = etree.iterparse(stream, events=("end",), tag=_TAGS, resolve_entities=False, no_network=True,
                                 load_dtd=False, huge_tree=False, remove_comments=True, remove_pis=True)
        checked = fresh = False
        for _, el in parsed:
            if not checked:
                checked = fresh = True
                multi = _check_multi(el.getroottree().getroot(), source, single)
            if fresh:  # the first element of a <callpaths>: its version numbers its threads
                fresh = False
                enclosing = el.getroottree().getroot()
                if multi:
                    enclosing = el if el.tag == ROOT else next(el.iterancestors(ROOT), None)
                    if enclosing is None:
                        raise InputError(f"{source}: <{el.tag}> outside a <callpaths>; {_FIX}")
                reader.id_shift = _check_root(enclosing, source)
            tag = el.tag
            if tag == "node":
                reader.node(el)
            elif tag == "thread":
                if reader.thread is None:  # a thread without nodes
                    reader.start(el)
                reader.end_thread(el)
            elif tag == ROOT:
                if multi:  # one process's call paths read: the next <callpaths> begins afresh
                    profiles.append(reader.finish())
                    reader, fresh = _Reader(source), True
                continue
            else:
                if el.getparent() is not None and el.getparent().tag == ROOT:
                    reader.start(el)
                continue
            # The model has the element now: drop it and what came before.
            el.clear(keep_tail=False)
            parent = el.getparent()
            if parent is not None:
                while el.getprevious() is not None:
                    del parent[0]
        root = parsed.root
        if not checked and root is not None:
            multi = _check_multi(root, source, single)
            if not multi:
                reader.id_shift = _check_root(root, source)
    except etree.XMLSyntaxError as exc:
        from psuite.hwpc.config import xml_error_text

        raise InputError(f"{source} is not well-formed XML ({xml_error_text(exc)}); check that the file is "
                         "complete") from None
    if root is None:
        raise InputError(f"{source} is empty; give a <callpaths> document")
    if multi:
        if not profiles:
            raise InputError(f"{source}: <{MULTI_ROOT}> holds no <callpaths>; {_FIX}")
        return profiles
    return [reader.finish()]


_TAGS = ("node", "thread", "profile", "sampling", "module", ROOT)


def _check_multi(root, source: str, single: bool) -> bool:
    """Whether the root is a <multicallpaths> (checked), else a <callpaths>
    (checked when its first element is)."""
    if root.tag != MULTI_ROOT:
        return False
    if single:
        raise InputError(f"{source}: <{MULTI_ROOT}> is the call paths of a combined document (psprocess -c -x), "
                         "not of one profile; give the combined document it lies beside")
    version = root.get("version", "")
    if version.split(".")[0] != "1":
        raise InputError(f"{source}: <{MULTI_ROOT} version={version!r}> is not a version this psprocess reads "
                         "(1.x); update psuite")
    return True


def _check_root(root, source: str) -> int:
    """Check the root; what to add to its thread ids to number them as
    every document does (1 for version 1.0, which numbered from 0)."""
    if root.tag != ROOT:
        raise InputError(f"{source}: <{root.tag}> is not a <callpaths> document; {_FIX}")
    version = root.get("version", "")
    if version.split(".")[0] != "1":
        raise InputError(f"{source}: <callpaths version={version!r}> is not a version this psprocess reads (1.x); "
                         "update psuite")
    return 1 if version == "1.0" else 0


def check_belongs(cp: CallPathProfile, profile_source: str, pid: int | None) -> str | None:
    """Why the companion cp does not belong to the profile read from
    profile_source (its <profile file> and pid), or None when it does."""
    base = os.path.basename(profile_source.rstrip("/"))
    if "://" in profile_source:
        base = base.split("?", 1)[0]
    if cp.profile_file and cp.profile_file != base:
        return f'its <profile file="{cp.profile_file}"> is not {base}'
    if pid is not None and cp.pid and cp.pid != pid:
        return f'its <profile pid="{cp.pid}"> is not the profile\'s pid {pid}'
    return None


def report_alone(cp: CallPathProfile):
    """A ProfileReport for a companion read without its profile: the run
    information of its <profile> and <sampling> elements, and a flat
    profile made of the innermost frames of the call paths (the samples of
    kind="sample" nodes), so that the flat report still has its numbers."""
    from psuite.model.report import ModuleSamples, ProfileReport

    r = ProfileReport(source=cp.source, hostname=cp.hostname, pid=cp.pid or None, command=cp.command,
                      event=cp.event, threshold=cp.threshold or None, total_samples=cp.samples + cp.lost,
                      annotation=f"call paths only: the flat profile {cp.profile_file or '(unnamed)'} was not read; "
                      "its figures are the call paths' innermost frames",
                      generator="psuite callpaths")
    r.profile_class = "callpaths"
    modules = {ident: ModuleSamples(m.file, m.offset, buildid=m.buildid) for ident, m in cp.modules.items()}
    for t in cp.threads:
        for module, addr, kind, n in zip(t.module, t.addr, t.kind, t.exclusive, strict=True):
            if n and kind == 1 and module in modules:
                table = modules[module].samples
                table[addr] = table.get(addr, 0) + n
    r.modules = [m for m in modules.values() if m.samples]
    r.callpaths = cp
    return r
