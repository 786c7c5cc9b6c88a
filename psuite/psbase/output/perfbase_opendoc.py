"""perfbase's opendoc output: an OpenDocument spreadsheet (NAME.ods) of one
sheet, named after the output, laid out as perfbase lays it out.

perfbase gathers the columns of all inputs (parameters, then results; a
label met again gets a hidden suffix), sorts them by label, drops a repeated
parameter column whose values equal the first one's, and moves the filters
that every result shares to the top of the sheet ("Parameters are:").  Then
one of three layouts:

  vector     some column has more than one value: the columns side by side,
             each result's own filters above its label
  scalar 1D  single values, at most one filter of their own: the results as
             columns, their filters as row labels
  scalar 2D  single values with two filters of their own: the first filter
             spans the columns, the second the rows ("Results are ...")

Cells carry perfbase's formatting (bold, 12pt, red filters, grey headers);
floats are float cells, every other value a string cell, each written as
Python 2's str() wrote it.  The file is written with odfpy."""

from __future__ import annotations

import io
from dataclasses import dataclass

from psuite.errors import UsageError
from psuite.psbase.output.perfbase_text import Block, py2str

_SEP = "###"  # perfbase's hidden suffix of a label met again (never shown)


@dataclass(frozen=True)
class _Look:
    """A cell's formatting as perfbase sets it before writing the cell."""

    fontsize: int = 10
    bold: bool = False
    color: str | None = None
    background: str | None = None


@dataclass
class _Cell:
    kind: str  # "string" or "float"
    value: object
    look: _Look


class _Sheet:
    """Cells by (column, row), both from 1, with the formatting in force when each was set."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, int], _Cell] = {}
        self.look = _Look()

    def set(self, **changes: object) -> None:
        self.look = _Look(**{**self.look.__dict__, **changes})

    def put(self, col: int, row: int, value: object, kind: str = "string") -> None:
        if col < 1 or row < 1:  # perfbase's column 0 is no cell of the sheet: nothing shows
            return
        self.cells[(col, row)] = _Cell(kind, value, self.look)


def _strip(label: str) -> str:
    while label.endswith(_SEP):
        label = label[: -len(_SEP)]
    return label


def _kind(value: object) -> str:
    return "float" if isinstance(value, float) else "string"


def _gather(blocks: list[Block]):
    """perfbase's columns: labels (sorted), units, data, each result's own filters, the common filters."""
    labels: list[str] = []
    units: dict[str, str] = {}
    data: dict[str, list] = {}
    col_filters: dict[str, list[str]] = {}
    repeated: list[str] = []  # parameter labels met in more than one input
    per_input: list[list[str]] = []
    for b in blocks:
        mine = []
        for i, (label, unit) in enumerate(b.params + b.results):
            if label in labels and i < len(b.params) and label not in repeated:
                repeated.append(label)
            while label in labels:
                label += _SEP
            labels.append(label)
            units[label] = unit
            mine.append(label)
        per_input.append(mine)
    labels.sort()  # the same label from several inputs side by side (perfbase sorts them)
    last = None
    for b, mine in zip(blocks, per_input, strict=True):
        for j, label in enumerate(mine):
            data[label] = [row[j] for row in b.rows]
        for label, _ in b.results:
            while label in col_filters:
                label += _SEP
            col_filters[label] = [f.replace("'", "") for f in b.filters]
            last = label
    common: list[str] = []
    if last is not None:
        common = [f for f in col_filters[last] if all(f in v for v in col_filters.values())]
    for f in common:
        for v in col_filters.values():
            if f in v:
                v.remove(f)
    for ml in repeated:  # a parameter column with the same values as the first one's is shown once
        for label in list(labels):
            if label != ml and _strip(label) == ml and data[label] == data[ml]:
                labels.remove(label)
                del data[label]
    return labels, units, data, col_filters, common, last


def _top(sheet: _Sheet, common: list[str]) -> int:
    """ "Parameters are:" and the common filters in red below it; the next row."""
    sheet.set(fontsize=12, bold=True, color="#000000")
    sheet.put(1, 1, "Parameters are:")
    sheet.set(bold=False, color="#ff0000")
    for row, f in enumerate(common, start=2):
        sheet.put(1, row, f)
    return 2 + len(common)


def _header_look(sheet: _Sheet) -> None:
    sheet.set(color="#000000", fontsize=10, background="#cccccc", bold=True)


def _vector(sheet: _Sheet, labels, units, data, col_filters, common) -> None:
    row = _top(sheet, common) + 1
    if any(col_filters.values()):
        row += 1  # a row for the results' own filters
    _header_look(sheet)
    for col, label in enumerate(labels, start=1):
        if label in col_filters:
            sheet.put(col, row - 1, "".join(col_filters[label]))
        sheet.put(col, row, f"{_strip(label)} [{units[label]}]")
    sheet.set(bold=False, background="#ffffff")
    for col, label in enumerate(labels, start=1):
        for k, value in enumerate(data[label], start=row + 1):
            sheet.put(col, k, value, _kind(value))


def _scalar_1d(sheet: _Sheet, labels, units, data, col_filters, common) -> None:
    row = _top(sheet, common) + (1 if common else 0)
    row_labels: list[str] = []
    col_labels: list[str] = []
    for label in labels:
        if col_filters.get(label):
            f = ", ".join(col_filters[label])
            if f not in row_labels:
                row_labels.append(f)
        f = f"{_strip(label)} [{units[label]}]"
        if f not in col_labels:
            col_labels.append(f)
    start_col = 2 if row_labels else 1
    sheet.set(fontsize=10, background="#cccccc", color="#000000", bold=True)
    for k, f in enumerate(col_labels):
        sheet.put(start_col + k, row, f)
    start_row = row + 1
    for k, f in enumerate(row_labels):
        sheet.put(1, start_row + k, f)
    sheet.set(bold=False, background="#ffffff")
    col = r = 0
    for label in labels:  # down the rows of the filters, then the next result's column
        if data[label]:
            sheet.put(start_col + col, start_row + r, data[label][0], _kind(data[label][0]))
        r += 1
        if r >= len(row_labels):
            col, r = col + 1, 0


def _scalar_2d(sheet: _Sheet, labels, units, data, col_filters, common) -> None:
    row = _top(sheet, common) + (1 if common else 0)
    last = labels[-1]  # the result is the rightmost column
    sheet.set(bold=True, color="#000000")
    sheet.put(1, row, f"Results are {_strip(last)} [{units[last]}]")
    # the first filter of each result spans the columns, the second the rows; a result's cell follows
    # perfbase's walk: a filter seen again keeps its index, and a new one on the other axis starts it over
    cols: list[str] = []
    rows: list[str] = []
    place: dict[str, tuple[int, int]] = {}
    mc = mr = -1
    auto_r = auto_c = 0
    col_same = row_same = False
    for label in labels:
        filters = col_filters.get(label, [])
        if len(filters) < 2:
            raise UsageError(f"opendoc: column {_strip(label)!r} has no two sweep filters for a table of "
                             "single values; give the parameters two sweeps, or one")
        if filters[0] not in cols:
            cols.append(filters[0])
            mc += 1
            if col_same:
                mr, auto_r = -1, 1
            col_same = False
        else:
            col_same = True
        if filters[1] not in rows:
            rows.append(filters[1])
            mr += 1
            if row_same:
                mc, auto_c = -1, 1
            row_same = False
        else:
            row_same = True
        mc += auto_c
        mr += auto_r
        place[label] = (mc, mr)
    row += 1
    sheet.set(fontsize=10, background="#cccccc")
    sheet.put(1, row, " ")
    for k, f in enumerate(cols, start=2):
        sheet.put(k, row, f)
    start_row = row + 1
    for k, f in enumerate(rows):
        sheet.put(1, start_row + k, f)
    sheet.set(bold=False, background="#ffffff")
    for label in labels:
        if data[label]:
            c, r = place[label]
            sheet.put(2 + c, start_row + r, data[label][0], _kind(data[label][0]))


def layout(blocks: list[Block]) -> dict[tuple[int, int], _Cell]:
    """The cells of perfbase's sheet for an output's blocks (one per input and sweep instance)."""
    sheet = _Sheet()
    if not blocks:
        _top(sheet, [])
        return sheet.cells
    labels, units, data, col_filters, common, last = _gather(blocks)
    if any(len(v) > 1 for v in data.values()):
        _vector(sheet, labels, units, data, col_filters, common)
    elif last is None or len(col_filters[last]) <= 1:
        _scalar_1d(sheet, labels, units, data, col_filters, common)
    elif len(col_filters[last]) == 2:
        _scalar_2d(sheet, labels, units, data, col_filters, common)
    else:  # perfbase has no layout for single values with more than two filters of their own
        raise UsageError(f"opendoc: single values with {len(col_filters[last])} sweep filters each have no "
                         "spreadsheet layout (perfbase's: a vector, or one or two sweeps); sweep at most two "
                         "parameters, or give the results a parameter")
    return sheet.cells


def document(blocks: list[Block], name: str) -> bytes:
    """The .ods file's bytes: one sheet named name with perfbase's cells."""
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.style import Style, TableCellProperties, TextProperties
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    cells = layout(blocks)
    doc = OpenDocumentSpreadsheet()
    from odf import dc

    doc.meta.addElement(dc.Title(text=name))
    styles: dict[_Look, str] = {}

    def style(look: _Look) -> str:
        if look not in styles:
            name = f"ce{len(styles) + 1}"
            st = Style(name=name, family="table-cell")
            if look.background:
                st.addElement(TableCellProperties(backgroundcolor=look.background))
            text = {}
            if look.bold:
                text["fontweight"] = "bold"
            if look.fontsize != 10:  # 10pt is the default: not written, as perfbase's library did
                text["fontsize"] = f"{look.fontsize}pt"
            if look.color:
                text["color"] = look.color
            if text:
                st.addElement(TextProperties(**text))
            doc.automaticstyles.addElement(st)
            styles[look] = name
        return styles[look]

    sheet = Table(name=name)
    ncols = max((c for c, _ in cells), default=1)
    nrows = max((r for _, r in cells), default=1)
    for r in range(1, nrows + 1):
        tr = TableRow()
        for c in range(1, ncols + 1):
            cell = cells.get((c, r))
            if cell is None:
                tr.addElement(TableCell())
                continue
            text = py2str(cell.value)
            if cell.kind == "float":
                tc = TableCell(stylename=style(cell.look), valuetype="float", value=text)
            else:
                tc = TableCell(stylename=style(cell.look), valuetype="string")
            if text:  # an empty string is a string cell without a paragraph (perfbase's)
                tc.addElement(P(text=text))
            tr.addElement(tc)
        sheet.addElement(tr)
    doc.spreadsheet.addElement(sheet)
    buf = io.BytesIO()
    doc.write(buf)
    return buf.getvalue()
