"""perfbase's gnuplot output, byte for byte: the gnuplot command file
perfbase writes beside its plot (<filename>.gp): the terminal and output
lines, the title, tics, axis labels and logscales, the <option>s as "set"
lines, the settings of the plot type, then one `plot '-'` (or `splot '-'`)
line and each data set inline, ended by "e".

It is fed by the blocks of perfbase's text output (one per input and sweep
instance), each with the synopses of its columns and the filters of its
first result, and by the attributes of the <output> and its <input>s as
written.  Values print as perfbase's Python 2 printed them."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from psuite.errors import OutputError, UsageError
from psuite.psbase.output.perfbase_text import Block, py2str

STYLES = {"graphs": "linespoints", "points": "points", "boxes": "boxes", "bars": "boxes", "steps": "histeps"}
FORMATS = ("screen", "ps", "eps", "pdf", "png")
DRAWN = ("ps", "eps")  # the formats psbase has gnuplot draw from the command file, as perfbase does
DRAW_SECONDS = 120  # a plot gnuplot has not drawn by then is given up (one line, no file left)
_FONT = {"tiny": 8, "small": 10, "normal": 12, "large": 14, "huge": 16}
_ELEMENT = {"tiny": 0, "small": 1, "normal": 2, "large": 3, "huge": 4}
_MAX_TICS = 14  # perfbase's limit of tic marks on an axis
_LABEL_TYPES = ("empty", "value", "full", "parameter", "input_id", "explicit", "fulltitle", "title")


@dataclass
class PlotBlock(Block):
    """A block with what a plot shows besides its values: the synopsis of each column (params, then
    results) and the filters of its first result (perfbase's data title)."""

    synopses: list[str] = field(default_factory=list)
    first_filters: list[str] = field(default_factory=list)


@dataclass
class Spec:
    """An <output target="gnuplot">: its attributes and those of its <input>s (by input id), its
    <option>s and <filename> (with unify=), as written."""

    attrs: dict[str, str]
    inputs: dict[str, dict[str, str]]
    options: list[str]
    filename: str | None = None
    unify: str = "no"
    title: str = ""


def _bad(problem: str) -> UsageError:
    return UsageError(f"<output target=\"gnuplot\">: {problem}")


def enhanced(text: str | None) -> str:
    """A text for gnuplot's enhanced mode as perfbase makes it: per word, a single _ or ^ takes the
    letters and digits after it in braces (MPI_{version}), several are escaped, "[us]" is
    "[{/Symbol m}s]"; double spaces are ", "."""
    if text is None:
        return ""
    words = []
    for s in text.replace("  ", ", ").split():
        word = s
        for sep in ("_", "^"):
            n = word.count(sep)
            if n > 1:
                word = word.replace(sep, "\\" + sep)
            elif n == 1:
                i = word.index(sep) + 1
                j = i
                while j < len(word) and word[j].isalnum():
                    j += 1
                word = word[:i] + "{" + word[i:j] + "}" + word[j:]
        words.append("[{/Symbol m}s]" if s == "[us]" else word)
    return " ".join(words)


def pow2_label(n: object) -> str:
    """A tic label for powers of two: 2Ki for 2048, 1Mi, ... (perfbase's, with its Ti/Pi divisors)."""
    if not isinstance(n, int):
        return py2str(n)
    if n < 1024:
        return str(n)
    for k, suffix, div in ((2, "Ki", 1), (3, "Mi", 2), (4, "Gi", 3), (5, "Ti", 3), (6, "Pi", 3)):
        if n < 1024**k and n % 1024 ** (k - 1) == 0:
            return f"{n // 1024**div}{suffix}"  # perfbase divides Ti and Pi by 1024**3
    return str(n)


def _pow2_tics(data: list) -> list[str]:
    tics = [f'"{pow2_label(i)}" {int(i)}' for i in data]
    rm = len(tics) - 2
    while len(tics) > _MAX_TICS:  # too many tics are unreadable: drop every other one from the end
        tics.pop(rm)
        rm -= 2
        if rm <= 0:
            rm = len(tics) - 2
    return tics


def _value(x: object) -> str:
    """A data value as perfbase printed it: a float read back from PostgreSQL's 15 significant digits,
    then Python 2's str() (8.837662642875003 prints as 8.83766264287)."""
    if isinstance(x, float) and math.isfinite(x):
        x = float(f"{x:.15g}")
    return py2str(x)


def _is_int(x: object) -> bool:
    return isinstance(x, int)  # Python 2's int test: booleans too


def _tics(data: list) -> list[str]:
    """perfbase's "smart" tics of a parameter's values: powers of two as such, a short range of
    integers each, else none (gnuplot's).  Its power-of-two test compares from the first value on."""
    idx = 0
    if data and _is_int(data[0]) and data[0] >= 0:
        i = data[0]
        if i == 0:
            if len(data) < 2:
                return []
            idx = 1
            i = data[1]
        while i > 1:
            i //= 2
        if i == 1:
            pow2 = True
            idx += 1
            for i2 in data[: len(data) - idx]:
                while i < i2:
                    i *= 2
                if i != i2:
                    pow2 = False
                    break
                i = i2
            if pow2:
                return _pow2_tics(data)
    if _is_int(data[idx]) and data[-1] + 1 - data[0] < 9:
        return [str(x) for x in range(data[0], data[-1] + 1)]
    return []


@dataclass
class _Axis:
    tics: list[str] | None = None
    label: str | None = None


@dataclass
class _Set:
    data: list[list]
    title: str
    kind: str
    style: str
    place: dict[str, str]


def _filename_part(f: str) -> list[str]:
    f = f.strip().replace("'", "").replace(" = ", "=").replace("  ", "_").replace(" ", "_").replace("/", "p")
    return f.split("###")


def script(blocks: list[PlotBlock], spec: Spec, prefix: str | None) -> str | None:
    """The gnuplot command file of an output (prefix: its file name without suffix); None when no input
    has data (perfbase writes no file then)."""
    a = spec.attrs
    fmt = a.get("format", "screen")
    if fmt not in FORMATS:
        raise _bad(f"format={fmt!r} is not one of {', '.join(FORMATS)}")
    ndims = int(a.get("dimensions", "2"))
    color = a.get("color", "yes") != "no"
    dflt_type = a.get("type") or "graphs"
    if dflt_type not in STYLES:
        raise _bad(f"type={dflt_type!r} is not one of {', '.join(STYLES)}")
    filterstring = a.get("filterstring")
    ntics = int(a.get("ntics", "-1"))
    fontsize = _FONT[a.get("fontsize", "normal")]
    elmtsize = _ELEMENT[a.get("elements", "normal")]
    dflt_errors = a.get("errors")
    n_par, n_res = -1, -1
    if dflt_errors and dflt_errors != "disable":
        n_par, n_res = 1, {"ydelta": 2, "ylowhigh": 3}.get(dflt_errors, -1)

    logscale_out: dict[str, int] = {}  # the output's: for log2 tics
    logscale: dict[tuple[str, str], int] = {}  # gnuplot's: set lines
    set_opts: list[str] = []
    for o in spec.options:
        w = o.split()
        if w[0].startswith("-"):  # a gnuplot command-line option, not a setting
            continue
        if w[0] == "logscale":
            logscale_out[w[1][0]] = int(w[2])
            logscale[(w[1], "2" if len(w[1]) == 2 and w[1][1] == "2" else "")] = int(w[2])
            continue
        # perfbase passes its own settings and the <option>s in one list: these name its settings
        if w[0] == "fontsize" and len(w) > 1 and w[1] in _FONT:
            fontsize = _FONT[w[1]]
        elif w[0] == "elements" and len(w) > 1 and w[1] in _ELEMENT:
            elmtsize = _ELEMENT[w[1]]
        elif w[0] == "ntics" and len(w) > 1 and w[1].lstrip("-").isdigit():
            ntics = int(w[1])
        elif w[0] == "ndims" and len(w) > 1 and w[1] in ("2", "3"):
            ndims = int(w[1])
        else:
            set_opts.append(o)

    title = enhanced(spec.title)
    per: dict[str, dict] = {}
    for b in blocks:
        ia = spec.inputs.get(b.input, {})
        ltype = ia.get("label")
        if ltype in (None, "auto"):
            ltype = "full" if filterstring is None else "title"
        if ltype == "explicit":
            if ia.get("labeltext") is None:
                raise _bad("label=explicit needs labeltext=; give it")
            ltext = ia["labeltext"]
        else:
            ltext = ia.get("labelprefix") or ""
        kind = ia.get("type") or dflt_type
        if kind not in STYLES:
            raise _bad(f"<input> type={kind!r} is not one of {', '.join(STYLES)}")
        style = ia.get("style") or STYLES[kind]
        errors = ia.get("errors")
        np, nr = (2, 1) if ndims == 3 else (1, 1)
        if errors and errors != "disable":
            style = {"linespoints": "yerrorlines", "points": "yerrorbars"}.get(style, "boxerrorbars")
            n_par, n_res = 1, {"ydelta": 2, "ylowhigh": 3}.get(errors, n_res)
        elif dflt_errors and dflt_errors != "disable":
            style = {"linespoints": "yerrorlines", "points": "yerrorbars"}.get(style, "boxerrorbars")
        if errors or dflt_errors:
            np, nr = n_par, n_res
        per[b.input] = {"ltype": ltype.strip(), "ltext": ltext, "kind": kind, "style": style, "np": np, "nr": nr}
    kinds = [per[b.input]["kind"] for b in blocks]
    if "bars" in kinds and any(k != "bars" for k in kinds[kinds.index("bars"):]):
        raise _bad("plot type 'bars' can not be mixed with other plot types; give every <input> type=bars")

    data_blocks = [b for b in blocks if b.rows]
    for b in data_blocks:
        p = per[b.input]
        if p["nr"] == 1 and len(b.params) != p["np"]:
            many = len(b.params) > p["np"]
            raise _bad(f"<input> {b.input!r} has {len(b.params)} parameter columns and the plot takes {p['np']}; "
                       + ("give the others show=filter" if many else "give another show=data"))
        if p["nr"] != 1 and (len(b.params), len(b.results)) != (p["np"], p["nr"]):
            raise _bad(f"<input> {b.input!r} does not offer the {p['np']} parameter and {p['nr']} result "
                       "columns its errors= plots; give them")

    # the title: filter labels common to every input go to the title, the others to the data titles
    elmts = {id(b): b.first_filters for b in data_blocks if b.first_filters}
    dtitles = {id(b): "" for b in data_blocks}
    titled = any(p["ltype"] in ("title", "fulltitle") for p in per.values())
    if (filterstring or titled) and elmts:
        longest = max(data_blocks, key=lambda b: len(elmts.get(id(b), [])))
        common = ""
        for i, ref in enumerate(elmts[id(longest)]):
            current = [(elmts.get(id(b), [])[i:i + 1] or [""])[0] for b in data_blocks]
            if all(c == ref for c in current):
                common += enhanced(ref.replace("'", "")) + ", "
            else:
                for b, c in zip(data_blocks, current, strict=True):
                    if c:
                        dtitles[id(b)] += c + " "
        common = common[:-2]
        if filterstring:
            title = title.replace(filterstring, common.strip())
        else:
            title = f"{title} ({common})" if title else common

    yunit: dict[str, str | None] = {"left": None, "right": None}
    yplace: dict[int, str] = {}
    for b in data_blocks:
        unit = b.results[0][1]
        for k in ("left", "right", None):
            if k is None:
                raise _bad(f"no y-axis left for {b.results[0][0]!r}: plot at most two units")
            if yunit[k] in (unit, None):
                yplace[id(b)] = "" if k == "left" else "2"
                yunit[k] = unit
                break

    axis: dict[tuple[str, str], _Axis] = {}
    axis_cnt = {"x": 1, "y": 1, "z": 1}
    sets: list[_Set] = []
    for b in data_blocks:
        p = per[b.input]
        np_, nr = len(b.params), p["nr"]
        labels: dict[str, str] = {}
        for r in range(0, len(b.results), nr):
            data = [[row[k] for row in b.rows] for k in range(np_)]
            data += [[row[np_ + k] for row in b.rows] for k in range(r, r + nr)]
            idx: dict[str, list[str]] = {}
            for k in range(np_):
                dim = "xyz"[k]
                t = _tics(data[k])
                if t:
                    idx[dim] = t
                elif logscale_out.get(dim) == 2:
                    top = max(data[k])
                    idx[dim] = _pow2_tics([2**i for i in range(40) if 2**i <= top])
            if not labels:
                for k in range(np_):
                    labels["xyz"[k]] = _axis_label(b.synopses[k], b.params[k][1])
                labels["xyz"[np_]] = _axis_label(b.synopses[np_], b.results[0][1])
            dt = p["ltext"]
            lt = p["ltype"]
            res_label = b.results[0][0]
            full = "  ".join(b.first_filters)
            if lt == "title":
                dt += dtitles[id(b)]
            if lt == "fulltitle":
                dt += res_label
                if dtitles[id(b)] not in ("", " "):
                    dt += " for " + dtitles[id(b)]
            if lt in ("value", "full"):
                dt += res_label
            if lt in ("parameter", "full") and full:
                dt += (" for " if dt else "") + full
            if lt == "input_id":
                dt += b.input.replace(".", " ").split("~")[0] if "~" in b.input[1:] else b.input.replace(".", " ")
            place = {"x": "", "y": yplace[id(b)], "z": ""}
            for dim in "xyz":
                if place[dim]:
                    axis_cnt[dim] += 1
                key = (dim, place[dim])
                if dim in idx:
                    if key in axis and axis[key].tics is not None:
                        for tic in idx[dim]:
                            if len(axis[key].tics) > _MAX_TICS:
                                break
                            if tic not in axis[key].tics:
                                axis[key].tics.append(tic)
                    else:
                        axis.setdefault(key, _Axis()).tics = list(idx[dim])
                if dim in labels and axis.setdefault(key, _Axis()).label is None:
                    axis[key].label = labels[dim]
            sets.append(_Set(data, dt, p["kind"], p["style"], place))

    out = _target(fmt, color, fontsize, prefix)
    if title:
        out.append(f'set title "{title}"\n')
    for dim in "xyz":
        for place in ("", "2"):
            ax = axis.get((dim, place))
            if ax and ax.tics is not None:
                out.append(f"set {dim}{place}tics ({','.join(ax.tics)})\n")
            if ax and ax.label is not None:
                out.append(f'set {dim}{place}label "{enhanced(ax.label)}"\n')
            if (dim, place) in logscale:
                out.append(f"set logscale {dim}{place} {logscale[(dim, place)]}\n")
        if axis_cnt[dim] > 1:
            out += [f"set {dim}tics nomirror\n", f"set {dim}2tics nomirror\n"]
    out += [f"set {o}\n" for o in set_opts]
    if not sets:
        return None
    done: list[str] = []
    for s in sets:
        if s.kind not in done:
            done.append(s.kind)
            out += _setup(s.kind, sets, ntics)
    plot = _bars(sets) if done[0] == "bars" else _graphs(sets, ndims, elmtsize)
    return "".join(out + plot) if plot else ""


def name(spec: Spec, blocks: list[PlotBlock]) -> str | None:
    """The file name (without suffix) perfbase writes an output to: <filename> (with unify=filter:
    the filters shown, joined by _), else the title; None on the screen without either."""
    fmt = spec.attrs.get("format", "screen")
    name = spec.filename
    if fmt != "screen" and not name:
        if not spec.title:
            raise _bad(f"format={fmt!r} writes a file; give <filename> or title=")
        name = enhanced(spec.title)
    if name and spec.unify == "filter":
        parts: list[str] = []
        for b in blocks:
            for f in b.filters:
                for t in _filename_part(f):
                    if t not in parts:
                        parts.append(t)
        name += "".join("_" + t for t in parts)
    return name


def _axis_label(synopsis: str, unit: str) -> str:
    return synopsis + (f" [{unit}]" if unit not in ("none", "") else "")


def _target(fmt: str, color: bool, fontsize: int, prefix: str | None) -> list[str]:
    c = "color" if color else ""
    out = {
        "screen": [f'set terminal x11 enhanced font "helvetica-{fontsize}"\n'],
        "png": [f"set terminal png font helvetica {fontsize} enhanced \n", "set size ratio 0.5  2.00,1.00\n"],
        "ps": [f'set terminal postscript enhanced {c} "Helvetica" {fontsize}\n'],
        "eps": [f'set terminal postscript eps enhanced {c} "Helvetica" {fontsize}\n', "set size 0.8\n"],
        "pdf": [f'set terminal pdf enhanced fname "Helvetica" fsize {fontsize // 2}\n'],
    }[fmt]
    if fmt != "screen":
        out.append(f"set output '{prefix}.{fmt}'\n")
    return out


def _setup(kind: str, sets: list[_Set], ntics: int) -> list[str]:
    if kind == "points":
        return ["set style data dots"]  # perfbase's, without a newline
    if kind == "boxes":
        return ["set boxwidth 0.9 relative\n", "set style fill solid 1.0\n"]
    if kind != "bars":
        return []
    n = len(sets)
    out = [f"set boxwidth {0.8 / n:f}\n", "set style fill solid 1.0\n", "set style line 1 lt 0\n"]
    for place in dict.fromkeys(s.place["x"] for s in sets):
        xs: list = []
        for s in sets:
            if s.place["x"] == place:
                xs += [x for x in s.data[0] if x is not None and x not in xs]
        out += [f"set x{place}zeroaxis\n", f"set x{place}range[-0.5:{len(xs) - 0.5:f}]\n"]
        inc = 1 if ntics < 0 else 0 if ntics == 0 else len(xs) // ntics
        if inc > 0:
            tics = ",".join(f'"{pow2_label(xs[i])}" {i}' for i in range(0, len(xs), inc))
            out.append(f"set x{place}tics ({tics})\n")
    return out


def _axes(s: _Set, dims: str = "xy", ndims: int = 2) -> str:
    return "axes " + "".join(d + (s.place[d] or "1") for d in dims) if ndims == 2 else ""


def _using(n: int) -> str:
    return "using " + ":".join(str(i) for i in range(1, n + 1))


def _title(s: _Set) -> str:
    return enhanced(s.title.replace("'", ""))


def _graphs(sets: list[_Set], ndims: int, elmtsize: int) -> list[str]:
    cmd = "splot " if ndims == 3 else "plot "
    for s in sets:
        fmt = f"lw {elmtsize}" + (f" ps {elmtsize}" if s.style in ("dots", "points", "linespoints") else "")
        cmd += f"'-' {_using(len(s.data))} title '{_title(s)}' {_axes(s, ndims=ndims)} with {s.style} {fmt},"
    out = [cmd.rstrip(",") + "\n"]
    pts: list[str] = []
    for s in sets:
        prev = None
        blanks = lines = 0
        for i in range(len(s.data[0])):
            vals = [v[i] for v in s.data]
            if any(v is None for v in vals):
                continue
            if ndims == 3:  # a blank line between the rows of a grid
                if prev is not None and prev != vals[0]:
                    blanks += 1
                    pts.append("\n")
                prev = vals[0]
            pts.append("".join(_value(v) + " " for v in vals) + "\n")
            lines += 1
        if ndims == 3 and blanks in (0, lines - 1):
            raise UsageError("a 3-dimensional plot of one-dimensional data (unsorted?): "
                             "sort its input by its first parameter, e.g. with a sort <operator>")
        if not pts:
            return []
        pts.append("e\n")
    return out + pts


def _bars(sets: list[_Set]) -> list[str]:
    n = len(sets)
    off, inc = 0.8 * (n - 1) / (n * 2), 0.8 / n
    cmd = "plot " + "".join(f"'-' {_using(len(s.data))} title '{_title(s)}' {_axes(s)} with {s.style},"
                            for s in sets)
    out = [cmd[:-1] + "\n"]
    xs: list = []
    for s in sets:
        for x, y in zip(s.data[0], s.data[1], strict=False):
            if y is not None and x not in xs:
                xs.append(x)
    xs.sort(key=lambda v: (v is None, v))
    for s in sets:  # each set gets every x value (a missing one without a y value) at its place
        for k, x in enumerate(xs):
            if x not in s.data[0]:
                s.data[0].insert(k, x)
                for v in s.data[1:]:
                    v.insert(k, None)
    pts: list[str] = []
    for d, s in enumerate(sets):
        got: dict[int, str] = {}
        for k in range(len(s.data[0])):
            if s.data[1][k] is not None:
                got[k] = f"{k - off + d * inc:f} " + "".join(_value(v[k]) + " " for v in s.data[1:]) + "\n"
        if not got:
            return pts
        pts += [got[k] for k in range(len(xs)) if k in got]
        pts.append("e\n")
    return out + pts


def drawing(spec: Spec, prefix: str) -> str | None:
    """The file gnuplot draws for an output written to prefix (PREFIX.ps, PREFIX.eps: the script's
    "set output"), or None for a format whose command file psbase only writes."""
    fmt = spec.attrs.get("format", "screen")
    return f"{prefix}.{fmt}" if fmt in DRAWN else None


def check_gnuplot(spec: Spec) -> str | None:
    """gnuplot's path for a format it draws (None for the others); one line when it is not installed."""
    fmt = spec.attrs.get("format", "screen")
    if fmt not in DRAWN:
        return None
    exe = shutil.which("gnuplot")
    if exe is None:
        raise OutputError(f"<output target=\"gnuplot\" format={fmt!r}> is drawn by gnuplot, which is not "
                          "installed (not on PATH): install gnuplot (Debian: gnuplot-nox), or give "
                          "format=\"screen\" for the command file alone")
    return exe


# What would make gnuplot do more than draw the plot: run a shell command (backquotes, system, shell, a
# line starting with !, a file name starting with < or |), read another script, or write other files.  The
# command file holds the query's <option>s and titles made of stored values, which come from other people.
_ESCAPES = (
    (re.compile(r"`"), "a backquote (a shell command)"),
    (re.compile(r"\b(system|shell)\b"), "system or shell (a shell command)"),
    (re.compile(r"^\s*!", re.M), "a line starting with ! (a shell command)"),
    (re.compile(r"['\"]\s*[<|]"), "a file name starting with < or | (a pipe)"),
    (re.compile(r"(^|;)\s*(load|call|cd|save|exit|quit|(set\s+)?(print|table|loadpath))\b", re.M),
     "a command that reads or writes other files"),
)


def _escape(script: str) -> str | None:
    """What in a command file would make gnuplot do more than draw (None: nothing)."""
    for pattern, what in _ESCAPES:
        if pattern.search(script):
            return what
    if len(re.findall(r"(^|;)\s*set\s+output\b", script, re.M)) > 1:
        return "a second 'set output' (another file written)"
    return None


def draw(exe: str, script_path: str, out: str) -> None:
    """Run gnuplot on the command file, as perfbase pipes it to gnuplot: the script's "set output" names
    out, which gnuplot writes (its %%Title is that name).  On failure nothing of out is left.  A command file
    that would make gnuplot run commands or write other files is not run (perfbase ran it as it was)."""
    with open(script_path, encoding="utf-8", errors="replace") as f:
        what = _escape(f.read())
    if what:
        raise OutputError(f"{script_path} holds {what}, from the query's <option>s or the stored values in its "
                          f"titles; psbase does not run gnuplot on it: check them, or run `gnuplot {script_path}` "
                          "yourself if you trust it")
    try:
        p = subprocess.run([exe, script_path], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=DRAW_SECONDS)
    except subprocess.TimeoutExpired:
        p = None
    if p is None or p.returncode != 0 or not os.path.isfile(out) or os.path.getsize(out) == 0:
        if os.path.isfile(out):
            os.unlink(out)
        why = (f"it took more than {DRAW_SECONDS} s" if p is None else
               next((x.strip() for x in p.stderr.decode("utf-8", "replace").splitlines() if x.strip()),
                    f"exit status {p.returncode}"))
        raise OutputError(f"gnuplot could not draw {out} from {script_path}: {why[:200]}; "
                          f"run `gnuplot {script_path}` to see why")
