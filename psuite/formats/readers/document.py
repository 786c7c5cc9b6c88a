"""Parsing an input document in one streaming pass.

A report can hold a million events or sampled PCs; a whole lxml tree of
that costs about a kilobyte per element.  So the long lists (the events
of <hwpceventdata>, the samples of a raw profile's <samples>, the lines
of a processed profile's <function>) are turned into model values as the
parser passes them and their elements are dropped at once.  What is left
is a small tree (run information, machine, modules) that the readers walk
as before, asking the Document for the lists that were taken out.

The parser never loads a DTD, never resolves external entities and never
touches the network; libxml2's limits on entity expansion stay on."""

from __future__ import annotations

from operator import attrgetter, methodcaller

from psuite.errors import InputError
from psuite.formats import native_rows, values
from psuite.model.report import Event

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at start-up
    from collections.abc import Callable
    from typing import IO

_TYPES = {"preset": "preset", "native": "native"}  # one string object for every event
_MAX_COUNT = values.MAX_COUNT
_TAG, _TEXT, _PC = attrgetter("tag"), attrgetter("text"), methodcaller("get", "pc")


class Document:
    def __init__(self, source: str) -> None:
        self.source = source
        self.root = None
        self._events: dict = {}  # <hwpceventdata> -> [Event]
        self._samples: dict = {}  # <samples> -> {pc: count}
        self._lines: dict = {}  # <function> -> [(lineno, samples)]
        self._last_events = None  # the <hwpceventdata> being read, and its list's append
        self._append_event = None

    def events(self, data) -> list[Event]:
        return self._events.get(data, [])

    def samples(self, samples) -> dict[int, int]:
        return self._samples.get(samples, {})

    def lines(self, function) -> list[tuple[int, int]]:
        return self._lines.get(function, [])

    # One handler per streamed element, keyed by (parent tag, tag).  These
    # run once per event or sample: the common well-formed case is checked
    # inline, anything else goes through values' full checks and messages.
    def _event(self, el, parent) -> None:
        get = el.get
        name = get("name", "")
        text = el.text
        if text is not None and text.isdigit() and text.isascii() and len(text) < 20 and int(text) <= _MAX_COUNT:
            count: int | float = int(text)
        else:
            count = values.count(text, f"count of {name or 'an event'} (<hwpcevent>)", self.source)
        if parent is not self._last_events:
            self._last_events = parent
            self._append_event = self._events.setdefault(parent, []).append
        self._append_event(Event(name, count, _TYPES.get(get("type", "native"), "native"),
                                 get("derived", "no") == "yes"))

    def _sample(self, el, parent) -> None:
        table = self._table(parent)
        pc_text, text = el.get("pc"), el.text
        if (self._pcbase == 16 and pc_text is not None and pc_text.isalnum() and pc_text.isascii()
                and len(pc_text) <= 16 and text is not None and text.isdigit() and text.isascii() and len(text) < 19):
            try:
                pc = int(pc_text, 16)
            except ValueError:
                pc = values.integer(pc_text, "<sample pc>", self.source, hi=2**64 - 1, base=16)
            n = int(text)
        else:
            pc = values.integer(pc_text, "<sample pc>", self.source, hi=2**64 - 1, base=self._pcbase)
            n = values.integer(text, "<sample> count", self.source)
        table[pc] = table.get(pc, 0) + n

    def _table(self, parent) -> dict[int, int]:
        """The {pc: count} of a <samples>, its pcbase checked when it is new."""
        table = self._samples.get(parent)
        if table is None:
            table = self._samples[parent] = {}
            self._pcbase = values.integer(parent.get("pcbase", "16"), "<samples pcbase>", self.source, lo=10, hi=16)
            if self._pcbase not in (10, 16):
                raise InputError(f"{self.source}: <samples pcbase> must be 10 or 16, not {self._pcbase}")
        return table

    def _samples_at_once(self, children: list, parent) -> bool:
        """The common case of a run of <sample>s (hex PCs, plain counts)
        checked and added with C-level operations; False, with nothing
        added, when anything else is among them (then each goes through
        _sample, for its checks and messages)."""
        if set(map(_TAG, children)) != {"sample"}:
            return False
        table = self._table(parent)
        if self._pcbase != 16:
            return False
        pcs = list(map(_PC, children))
        texts = list(map(_TEXT, children))
        if None in pcs or None in texts:
            return False
        parsed = native_rows.samples(pcs, texts)  # the digits read in C
        if parsed is not None:
            numbers, counts, ascending = parsed
            if ascending and (not table or table.keys().isdisjoint(numbers)):
                table.update(zip(numbers, counts, strict=True))  # new PCs, each once: as adding them one by one
            else:
                get = table.get
                for pc, n in zip(numbers, counts, strict=True):
                    table[pc] = get(pc, 0) + n
            return True
        pc_text, text = "".join(pcs), "".join(texts)
        if not (pc_text.isalnum() and pc_text.isascii() and text.isdigit() and text.isascii()
                and max(map(len, pcs)) <= 16 and max(map(len, texts)) < 19):
            return False
        try:
            numbers = list(map(int, pcs, [16] * len(pcs)))
        except ValueError:  # a letter beyond f
            return False
        batch = dict(zip(numbers, map(int, texts), strict=True))
        if len(batch) == len(numbers) and table.keys().isdisjoint(batch):
            table.update(batch)  # new PCs, each once: the same as adding them one by one, in order
        else:
            get = table.get
            for pc, n in zip(numbers, map(int, texts), strict=True):
                table[pc] = get(pc, 0) + n
        return True

    def _line(self, el, parent) -> None:
        self._lines.setdefault(parent, []).append(
            (values.integer(el.get("lineno", "0"), "<line lineno>", self.source, lo=-1, hi=2**31 - 1),
             values.integer(el.text, "<line> sample count", self.source)))

    # container tag -> (the tag of its streamed children, their handler)
    _STREAMS = {"hwpceventdata": ("hwpcevent", _event), "samples": ("sample", _sample), "function": ("line", _line)}

    def _take(self, container, count: int) -> None:
        """The first `count` children of a streamed container turned into
        model values, then dropped from the tree."""
        if count <= 0:
            return
        tag, handler = self._STREAMS[container.tag]
        children = container[:count]
        if tag != "sample" or not self._samples_at_once(children, container):
            for el in children:
                if el.tag == tag:
                    handler(self, el, container)
        del children  # the proxies first: lxml then frees each node as it unlinks it
        del container[:count]


CHUNK = 1 << 16  # bytes parsed at a time: the elements of one chunk are in the tree at once


def _raw_profile_module(el) -> bool:
    """A <module> of a raw profile (<hwpcreport mode="profile">): its PCs are to be resolved."""
    data = el.getparent()
    report = data.getparent() if data is not None and data.tag == "hwpcprofiledata" else None
    return report is not None and report.tag == "hwpcreport" and report.get("mode") == "profile"


def parse(stream: IO[bytes], source: str, on_module: Callable[[str], None] | None = None) -> Document:
    """The document read from a binary stream, its long lists taken out.
    on_module(file) is called as soon as a raw profile's <module> starts,
    before its samples are read: psprocess starts decoding the module's
    debug information then, while the rest of the document is parsed."""
    from lxml import etree

    doc = Document(source)
    # Start and end events of the containers only: libxml2 builds the rest
    # of the tree without a Python call per element, and after each chunk
    # the containers' complete children (all but the last, which may still
    # be parsing) are read and dropped in one go.
    tags = (*Document._STREAMS, "module") if on_module else tuple(Document._STREAMS)
    parser = etree.XMLPullParser(events=("start", "end"), tag=tags, resolve_entities=False,
                                 no_network=True, load_dtd=False, huge_tree=False, remove_comments=True,
                                 remove_pis=True)
    opened: list = []  # containers started and not yet ended, in document order
    try:
        size = 4096 if on_module else CHUNK  # a small first chunk: the first <module> is seen early
        while data := stream.read(size):
            size = CHUNK
            parser.feed(data)
            for event, el in parser.read_events():
                if el.tag == "module":
                    if event == "start" and _raw_profile_module(el):
                        on_module(el.get("file", ""))
                elif event == "start":
                    opened.append(el)
                else:
                    doc._take(el, len(el))
                    opened.remove(el)
            for el in opened:
                doc._take(el, len(el) - 1)
        doc.root = parser.close()
    except etree.XMLSyntaxError as exc:
        from psuite.hwpc.config import xml_error_text

        raise InputError(f"{source} is not well-formed XML ({xml_error_text(exc)}); "
                         "check that the file is complete") from None
    if doc.root is None:
        raise InputError(f"{source} is empty; give a PerfSuite XML document")
    return doc
