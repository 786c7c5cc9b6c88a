"""Resolving call paths: the real return addresses of a compiled -O2
program (read from its disassembly) resolve to its call structure; a
return address is resolved at the call (addr - 1), an interrupted
instruction where it is; inlined frames hang under the function they were
inlined into; placeholders and unknown objects; many modules; 100,000
distinct return addresses."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import psuite
from psuite.analysis import calltree_resolve, srcmap
from psuite.formats.readers import callpaths as reader
from psuite.model.calltree import BLOCKED_FUNCTION, TRUNCATED_FUNCTION, Frame
from tests.psprocess.test_calltree import OFFSET, program  # noqa: F401  (the session fixture)

LIBC_OFFSET = 0x7F0000000000


def return_addresses(exe: str) -> dict[tuple[str, str], int]:
    """(caller, callee) -> the return address of each direct call in the
    program's own functions: the address of the instruction after the call."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", exe], capture_output=True, text=True,
                         check=True).stdout
    calls: dict[tuple[str, str], int] = {}
    function, pending = "", None
    for line in out.splitlines():
        head = re.match(r"^[0-9a-f]+ <(\w+)>:$", line)
        if head:
            function = head.group(1)
            continue
        insn = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if not insn:
            continue
        addr = int(insn.group(1), 16)
        if pending:
            calls.setdefault(pending, addr)
            pending = None
        call = re.match(r"call\s+[0-9a-f]+ <(\w+)>", f"{insn.group(2)} {insn.group(3)}")
        if call and function in ("main", "a", "b", "c"):
            pending = (function, call.group(1))
    return calls


def sizes(exe: str) -> dict[str, tuple[int, int]]:
    out = subprocess.run(["nm", "-S", exe], capture_output=True, text=True, check=True).stdout
    return {f[3]: (int(f[0], 16), int(f[1], 16)) for f in (line.split() for line in out.splitlines())
            if len(f) == 4 and f[2] in "Tt"}


def document(modules: list[tuple[int, str, int]], nodes: list[tuple], samples: int | None = None) -> str:
    """nodes: (parent, module, absolute addr or None, kind, samples)."""
    total = sum(n[4] for n in nodes) if samples is None else samples
    parts = ['<callpaths version="1.1">']
    parts += [f'<module id="{i}" file="{f}" offset="{o:#x}"/>' for i, f, o in modules]
    parts.append(f'<thread id="1" tid="7" samples="{total}">')
    for i, (parent, module, addr, kind, n) in enumerate(nodes, 1):
        where = f' module="{module}" addr="{addr:x}"' if addr is not None else ""
        parts.append(f'<node id="{i}" parent="{parent}"{where} kind="{kind}" samples="{n}"/>')
    parts.append("</thread></callpaths>")
    return "".join(parts)


def resolved(tmp_path: Path, text: str):
    path = tmp_path / "t.callpaths.xml"
    path.write_text(text)
    return psuite.read_document(str(path))


def paths(report) -> dict[tuple[str, ...], tuple[int, int]]:
    return {row["path"]: (row["inclusive"], row["exclusive"]) for row in report.calltree_records()}


def test_real_return_addresses_of_an_optimised_program(program, tmp_path):  # noqa: F811
    ret = return_addresses(program["exe"])
    work = sizes(program["exe"])["work"]
    in_work = OFFSET + work[0] + work[1] // 2  # an instruction inside work's loop
    r = {k: OFFSET + v for k, v in ret.items()}
    nodes = [(0, 1, r[("main", "a")], "call", 0), (1, 1, r[("a", "work")], "call", 0), (2, 1, in_work, "sample", 50),
             (0, 1, r[("main", "b")], "call", 0), (4, 1, r[("b", "work")], "call", 0), (5, 1, in_work, "sample", 30),
             (4, 1, r[("b", "c")], "call", 0), (7, 1, r[("c", "work")], "call", 0), (8, 1, in_work, "sample", 20)]
    report = resolved(tmp_path, document([(1, program["exe"], OFFSET)], nodes))
    assert paths(report) == {("main",): (100, 0), ("main", "a"): (50, 0), ("main", "a", "work"): (50, 50),
                             ("main", "b"): (50, 0), ("main", "b", "work"): (30, 30), ("main", "b", "c"): (20, 0),
                             ("main", "b", "c", "work"): (20, 20)}
    rows = report.calltree_records()
    assert all(row["module"] == program["exe"] for row in rows)


def test_return_address_is_resolved_at_the_call(program, tmp_path):  # noqa: F811
    """A function's first byte: as an interrupted instruction it is in the
    function; as a return address (a call that never returns, at the end
    of whatever lies before) the call is one byte back, outside it."""
    start = OFFSET + sizes(program["exe"])["b"][0]
    report = resolved(tmp_path, document([(1, program["exe"], OFFSET)],
                                         [(0, 1, start, "call", 0), (1, 1, start, "sample", 1)]))
    [(outer, _), (inner, _)] = sorted(paths(report).items(), key=lambda kv: len(kv[0]))
    assert outer[0] != "b" and inner[1] == "b", (outer, inner)


def test_placeholders_unknown_objects_and_second_module(program, tmp_path):  # noqa: F811
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    import ctypes

    qsort = ctypes.cast(ctypes.CDLL(libc).qsort, ctypes.c_void_p).value
    # libc's code as loaded (its executable mapping), not a read-only mapping of the file the DWARF decoder
    # may keep from an earlier test in this process
    base = next(int(line.split("-")[0], 16) - int(line.split()[2], 16) for line in Path("/proc/self/maps").read_text()
                .splitlines() if line.endswith("libc.so.6") and "x" in line.split()[1])
    start = sizes(program["exe"])["main"][0]
    nodes = [(0, None, None, "truncated", 0), (1, 1, OFFSET + start + 5, "call", 0),
             (2, 2, LIBC_OFFSET + (qsort - base) + 1, "sample", 3),
             (0, None, None, "blocked", 0), (4, 0, 0xDEAD0, "sample", 2)]
    report = resolved(tmp_path, document([(1, program["exe"], OFFSET), (2, libc, LIBC_OFFSET)], nodes))
    got = paths(report)
    libc_path = next(p for p in got if len(p) == 3)
    assert libc_path[:2] == (TRUNCATED_FUNCTION, "main") and "qsort" in libc_path[2], got
    assert got[(TRUNCATED_FUNCTION,)] == (3, 0)
    assert got[(BLOCKED_FUNCTION, "?? 0xdead0")] == (2, 2)


def test_inlined_frames_hang_under_their_function(program, tmp_path, monkeypatch):  # noqa: F811
    """resolve_frames gives the frames at an address innermost first: the
    innermost inlined call, then the function it is inlined into."""
    real = srcmap.resolve_frames

    def with_inlines(module_file: str, addrs: list[int]) -> list[list[Frame]]:
        out = real(module_file, addrs)
        return [[Frame("leaf_inl", module_file, "x.c", 3, True), Frame("mid_inl", module_file, "x.c", 9, True), *f]
                if f[-1].function == "work" else f for f in out]

    monkeypatch.setattr(srcmap, "resolve_frames", with_inlines)
    work = sizes(program["exe"])["work"][0]
    main = sizes(program["exe"])["main"][0]
    nodes = [(0, 1, OFFSET + main + 5, "call", 0), (1, 1, OFFSET + work + 4, "sample", 5)]
    report = resolved(tmp_path, document([(1, program["exe"], OFFSET)], nodes))
    rows = report.calltree_records()
    assert [(row["path"], row["inlined"], row["exclusive"]) for row in rows] == [
        (("main",), False, 0), (("main", "work"), False, 0), (("main", "work", "mid_inl"), True, 0),
        (("main", "work", "mid_inl", "leaf_inl"), True, 5)]
    from psuite.formats.writers import text_calltree

    out = text_calltree.render([report])  # the text view marks them
    assert "      leaf_inl [inlined]" in out and "    mid_inl [inlined]" in out


def test_deep_recursion_is_handled(program, tmp_path):  # noqa: F811
    """A stack of 1,000 frames under a truncated node: resolved, reported
    and recorded without recursion in Python."""
    start = sizes(program["exe"])["a"][0]
    nodes = [(0, None, None, "truncated", 0)] + [(i, 1, OFFSET + start + 5, "call", 0) for i in range(1, 1000)]
    nodes.append((1000, 1, OFFSET + start + 4, "sample", 7))
    report = resolved(tmp_path, document([(1, program["exe"], OFFSET)], nodes))
    rows = report.calltree_records()
    assert len(rows) == 1001 and rows[-1]["depth"] == 1001 and rows[-1]["inclusive"] == 7
    from psuite.formats.writers import text_calltree

    assert text_calltree.render([report], view="callers").count("[2]") >= 2


def _libc_text() -> tuple[str, int, int]:
    from elftools.elf.elffile import ELFFile

    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    with open(libc, "rb") as f:
        text = ELFFile(f).get_section_by_name(".text")
        return libc, text["sh_addr"], text["sh_size"]


def _big(tmp_path: Path, n: int) -> Path:
    """n distinct return addresses in libc's text, as a binary tree of
    contexts (node i under i // 2), the deeper half sampled once each."""
    libc, start, size = _libc_text()
    assert 4 * n < size
    body = "".join(f'<node id="{i}" parent="{i // 2}" module="1" addr="{LIBC_OFFSET + start + 4 * i + 1:x}"'
                   + (' kind="sample" samples="1"/>' if i > n // 2 else "/>") for i in range(1, n + 1))
    path = tmp_path / f"big{n}.callpaths.xml"
    path.write_text(f'<callpaths version="1.1"><module id="1" file="{libc}" offset="{LIBC_OFFSET:#x}"/>'
                    f'<thread id="1" tid="1" samples="{n - n // 2}">{body}</thread></callpaths>')
    return path


def test_100000_return_addresses_are_read_and_resolved(tmp_path):
    """100,000 distinct return addresses: every one resolved (progress
    reported to the last), every sample kept.  That the cost is linear in
    the nodes is bench/calltree_resolve.py's figure, not a timing here."""
    big = _big(tmp_path, 100_000)
    progress: list[tuple[int, int]] = []
    with open(big, "rb") as f:
        cp = reader.read(f, str(big))
    calltree_resolve.resolve(cp, lambda done, total: progress.append((done, total)))
    assert progress[-1] == (100_000, 100_000)
    assert cp.threads[0].tree.total() == 50_000


def test_address_below_its_module_is_unknown(program, tmp_path):  # noqa: F811
    report = resolved(tmp_path, document([(1, program["exe"], OFFSET)], [(0, 1, OFFSET - 16, "sample", 1)]))
    assert list(paths(report)) == [("??",)]
