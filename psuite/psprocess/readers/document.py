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

from typing import IO

from psuite.errors import InputError
from psuite.formats import values
from psuite.report import Event

_TYPES = {"preset": "preset", "native": "native"}  # one string object for every event
_MAX_COUNT = values.MAX_COUNT


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
        table = self._samples.get(parent)
        if table is None:
            table = self._samples[parent] = {}
            self._pcbase = values.integer(parent.get("pcbase", "16"), "<samples pcbase>", self.source, lo=10, hi=16)
            if self._pcbase not in (10, 16):
                raise InputError(f"{self.source}: <samples pcbase> must be 10 or 16, not {self._pcbase}")
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

    def _line(self, el, parent) -> None:
        self._lines.setdefault(parent, []).append(
            (values.integer(el.get("lineno", "0"), "<line lineno>", self.source, lo=-1, hi=2**31 - 1),
             values.integer(el.text, "<line> sample count", self.source)))

    _HANDLERS = {("hwpceventdata", "hwpcevent"): _event, ("samples", "sample"): _sample,
                 ("function", "line"): _line}
    _STREAMED = ("hwpcevent", "sample", "line")


def parse(stream: IO[bytes], source: str) -> Document:
    """The document read from a binary stream, its long lists taken out."""
    from lxml import etree

    doc = Document(source)
    handlers = Document._HANDLERS
    try:
        # End events of the streamed elements only: the rest of the tree is
        # built by libxml2 without a Python call per element.
        parsed = etree.iterparse(stream, events=("end",), tag=Document._STREAMED, resolve_entities=False,
                                 no_network=True, load_dtd=False, huge_tree=False, remove_comments=True,
                                 remove_pis=True)
        current, current_tag, handler = None, None, None
        for _, el in parsed:
            parent, tag = el.getparent(), el.tag
            if parent is not current or tag != current_tag:  # looked up once per run of siblings
                current, current_tag = parent, tag
                handler = handlers.get((parent.tag, tag)) if parent is not None else None
            if handler is not None:
                handler(doc, el, parent)
                # Drop the elements the model has now: those before this
                # one (later siblings may be parsed already, their events
                # still queued).
                el.clear(keep_tail=False)
                while el.getprevious() is not None:
                    del parent[0]
        doc.root = parsed.root
    except etree.XMLSyntaxError as exc:
        from psuite.hwpc.config import xml_error_text

        raise InputError(f"{source} is not well-formed XML ({xml_error_text(exc)}); "
                         "check that the file is complete") from None
    if doc.root is None:
        raise InputError(f"{source} is empty; give a PerfSuite XML document")
    return doc

