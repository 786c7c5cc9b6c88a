"""Shared by the call-path acceptance tests: building the targets of
tests/targets/callpath (optimised, without frame pointers), running them
under `perf record --call-graph dwarf`, and turning per-sample stacks into
call-path shares, so perf's view, psuite's and the known truth are compared
by one function."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent / "targets" / "callpath"
FLAGS = ("-O2", "-g", "-fomit-frame-pointer")
PERIOD_US = 1000  # psrun --period for ITIMER_PROF, and perf's -F 1000

# A stack: function names, outermost first
Stack = tuple[str, ...]


def _cc(*args: str) -> None:
    subprocess.run(["gcc", *FLAGS, *args], check=True, capture_output=True, text=True)


def build(out: Path) -> dict[str, str]:
    """Every target, compiled as users compile: name -> executable.
    known / known_shared: the same program with work() in the executable,
    or in libcpwork.so reached through the PLT."""
    assert shutil.which("gcc") and shutil.which("g++"), "gcc and g++ are needed (tests/run.sh installs them)"
    out.mkdir(parents=True, exist_ok=True)
    work, known = str(SRC / "work.c"), str(SRC / "known.c")
    _cc("-o", str(out / "known"), known, work)
    _cc("-fPIC", "-shared", "-o", str(out / "libcpwork.so"), work)
    _cc("-o", str(out / "known_shared"), known, f"-L{out}", "-lcpwork", f"-Wl,-rpath,{out}")
    _cc("-o", str(out / "recursion"), str(SRC / "recursion.c"), work)
    _cc("-pthread", "-o", str(out / "threads"), str(SRC / "threads.c"), work)
    _cc("-o", str(out / "qsort_cb"), str(SRC / "qsort_cb.c"))
    subprocess.run(
        ["g++", *FLAGS, "-o", str(out / "inlined"), str(SRC / "inlined.cpp")],
        check=True,
        capture_output=True,
        text=True,
    )
    return {p.name: str(p) for p in out.iterdir()}


def disassembly(binary: str, function: str) -> list[str]:
    """The instructions of `function` in `binary` (objdump -d)."""
    text = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True, text=True, check=True
    ).stdout
    m = re.search(rf"^[0-9a-f]+ <{re.escape(function)}>:\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    assert m, f"{function} not found in {binary}"
    return m.group(1).splitlines()


def sets_frame_pointer(lines: Iterable[str]) -> bool:
    """Whether the code makes %rbp a frame pointer (mov %rsp,%rbp)."""
    return any(re.search(r"\bmov\s+%rsp,%rbp\b", line) for line in lines)


# --- perf -----------------------------------------------------------------


def perf_binary() -> str:
    """perf as installed by linux-perf: `perf` on PATH, or a versioned
    perf_X.Y (Debian's wrapper finds those by kernel version, which may not
    match the running kernel of a container)."""
    found = shutil.which("perf")
    candidates = (
        ([found] if found else [])
        + sorted(glob.glob("/usr/bin/perf_*"), reverse=True)
        + sorted(glob.glob("/usr/lib/linux-tools*/perf"), reverse=True)
    )
    for cand in candidates:
        if subprocess.run([cand, "--version"], capture_output=True).returncode == 0:
            return cand
    raise AssertionError("perf is needed (tests/run.sh installs linux-perf)")


@dataclass
class Sample:
    tid: int
    weight: float  # the sample's period (ns of task clock)
    stack: Stack  # outermost first


_HEADER = re.compile(r"^\s*(\d+)\s+(\d+)\s*$")
_FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*)\s+\((.*)\)\s*$")


def parse_perf_script(text: str, inlined: bool = True) -> list[Sample]:
    """`perf script -F tid,period,ip,sym,dso` into samples.  Frames perf
    shows as "(inlined)" are kept or dropped by `inlined`; kernel frames
    (an interrupt on the way back to user mode, a busy machine's reschedule
    IPI) are dropped: psrun's paths, like its flat profile, are the user
    stack the sample returns to."""
    samples: list[Sample] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        head = _HEADER.match(lines[0])
        assert head, f"unexpected perf script line: {lines[0]!r}"
        frames = []
        for line in lines[1:]:
            m = _FRAME.match(line)
            assert m, f"unexpected perf script frame: {line!r}"
            if (m.group(3) == "inlined" and not inlined) or m.group(3) == "[kernel.kallsyms]":
                continue
            frames.append(m.group(2))
        samples.append(Sample(int(head.group(1)), float(head.group(2)), tuple(reversed(frames))))
    return samples


def perf_record(argv: Sequence[str], workdir: Path, inlined: bool = True) -> list[Sample]:
    """Run argv under `perf record --call-graph dwarf` at 1,000 samples a
    second of task clock (the CPU time psrun's ITIMER_PROF samples) and
    return perf's per-sample stacks."""
    perf = perf_binary()
    data = workdir / "perf.data"
    env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}  # no network look-ups
    rec = subprocess.run(
        [
            perf,
            "record",
            "-q",
            "-e",
            "task-clock",
            "-F",
            str(1_000_000 // PERIOD_US),
            "--call-graph",
            "dwarf",
            "-o",
            str(data),
            "--",
            *argv,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert rec.returncode == 0, rec.stderr
    script = subprocess.run(
        [perf, "script", "-i", str(data), "-F", "tid,period,ip,sym,dso"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert script.returncode == 0, script.stderr
    return parse_perf_script(script.stdout, inlined=inlined)


# --- shares ---------------------------------------------------------------


def from_anchor(stack: Stack, anchor: str) -> Stack | None:
    """The stack from its outermost `anchor` frame inwards (the start-up
    frames above main differ between tools), None without one."""
    try:
        return stack[stack.index(anchor) :]
    except ValueError:
        return None


def path_shares(samples: Iterable[tuple[Stack, float]], anchor: str = "main") -> dict[Stack, float]:
    """Inclusive share (percent of all weight, anchored or not) of every
    call path that starts at `anchor`: the weight of the samples whose
    stack begins with that path."""
    total = 0.0
    shares: dict[Stack, float] = {}
    for stack, weight in samples:
        total += weight
        tail = from_anchor(stack, anchor)
        if tail is None:
            continue
        for depth in range(1, len(tail) + 1):
            shares[tail[:depth]] = shares.get(tail[:depth], 0.0) + weight
    assert total > 0, "no samples"
    return {path: 100.0 * w / total for path, w in shares.items()}


def perf_shares(samples: Iterable[Sample], anchor: str = "main") -> dict[Stack, float]:
    return path_shares(((s.stack, s.weight) for s in samples), anchor)


def record_shares(records: Iterable[dict], anchor: str = "main", inlined: bool = True) -> dict[Stack, float]:
    """path_shares of psuite's call-tree records (psuite.read_document().calltree_records()
    or the call-tree records of psprocess -f json): each record's exclusive
    value is the weight of its path.  Inlined frames kept or dropped by
    `inlined` (as perf_record's)."""
    records = list(records)
    if not inlined:
        records = function_paths(records)
    return path_shares(((tuple(r["path"]), float(r["exclusive"])) for r in records), anchor)


def function_paths(records: list[dict]) -> list[dict]:
    """The records with the inlined frames left out of their paths (a
    record says whether its own last frame is inlined; its ancestors are
    the records of its path's prefixes)."""
    inlined = {(r.get("thread"), tuple(r["path"])): bool(r.get("inlined")) for r in records}
    out = []
    for r in records:
        path = tuple(r["path"])
        kept = tuple(f for i, f in enumerate(path) if not inlined.get((r.get("thread"), path[: i + 1]), False))
        out.append({**r, "path": kept})
    return out


# The known structure of known.c, in percent of its work
KNOWN_TRUTH: dict[Stack, float] = {
    ("main", "a", "work"): 50.0,
    ("main", "b", "work"): 30.0,
    ("main", "b", "c", "work"): 20.0,
}


def off_by(shares: dict[Stack, float], truth: dict[Stack, float]) -> dict[Stack, tuple[float, float]]:
    """path -> (measured, expected) for every path of `truth`."""
    return {path: (round(shares.get(path, 0.0), 2), expected) for path, expected in truth.items()}


# --- psuite ---------------------------------------------------------------


def psrun_profile(argv: Sequence[str], workdir: Path, callpath: bool = True, *options: str,
                  env: dict[str, str] | None = None) -> Path:
    """Run argv under psrun at 1,000 samples a second of CPU time
    (ITIMER_PROF), with --callpath unless told otherwise; the flat profile.
    `env`: variables added to the environment."""
    from tests.conftest import run_tool

    before = set(workdir.iterdir())
    flags = ["--callpath"] if callpath else []
    p = run_tool(
        "psrun",
        "-q",
        "--profile",
        "ITIMER_PROF",
        "--period",
        str(PERIOD_US),
        *flags,
        *options,
        *argv,
        timeout=300,
        cwd=workdir,
        env={**os.environ, **env} if env else None,
    )
    assert p.returncode == 0, p.stderr
    new = [f for f in set(workdir.iterdir()) - before if f.suffix == ".xml"]
    flat = [f for f in new if not f.name.endswith(".callpaths.xml")]
    assert len(flat) == 1, new
    companion = flat[0].with_name(flat[0].name[: -len(".xml")] + ".callpaths.xml")
    assert companion.exists() == callpath, new
    return flat[0]


def companion(flat: Path) -> Path:
    """The <callpaths> document beside flat profile X.xml: X.callpaths.xml."""
    return flat.with_name(flat.name[: -len(".xml")] + ".callpaths.xml")


def read_records(flat: Path) -> list[dict]:
    """psuite.read_document(flat).calltree_records(), as a Python user reads them."""
    import psuite

    return psuite.read_document(str(flat)).calltree_records()


def json_report(flat: Path) -> dict:
    """The one report of `psprocess -f json flat`."""
    import json

    from tests.conftest import run_tool

    p = run_tool("psprocess", "-f", "json", str(flat), timeout=300)
    assert p.returncode == 0, p.stderr
    [report] = json.loads(p.stdout)["reports"]
    return report


def by_thread(records: Iterable[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in records:
        out.setdefault(r["thread"], []).append(r)
    return out


# qsort_cb.c's callback: cmp, or key inlined in it (what a resolver that
# names the innermost inlined function, as addr2line -f does, calls it)
CALLBACK = {"cmp", "key"}

# The inlined calls of inlined.cpp's hot loop, outermost first
INLINED = ["accumulate", "operator()", "repeat", "operator()", "mix"]


def inline_chain(records: list[dict], leaf: dict) -> list[str]:
    """What each inlined frame of leaf's path below main is (INLINED's
    words), outermost first; every record of its path's prefixes says
    whether it is inlined."""
    inlined = {(r["thread"], tuple(r["path"])): r["inlined"] for r in records}
    path = tuple(leaf["path"])
    tail = from_anchor(path, "main") or ()
    below = range(len(path) - len(tail), len(path))
    return [inline_word(path[i]) for i in below if inlined[(leaf["thread"], path[: i + 1])]]


def inline_word(function: str) -> str:
    m = re.search(r"accumulate|repeat|mix|operator\(\)", function)
    return m.group(0) if m else function
