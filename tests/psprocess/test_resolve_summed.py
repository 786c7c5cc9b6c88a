"""srcmap.resolve sums the samples of a module's PCs per source location in
C (ps_dwarf_group): the locations, their order and their sums are those of
looking each PC up and adding them up one at a time, also where one
location has several DWARF ids (a static inline function of a header,
compiled into two units) and where a module is listed twice."""

from __future__ import annotations

import random
import subprocess

import pytest

from psuite.analysis import srcmap
from psuite.model.report import Location, ModuleSamples, ProfileReport

HEADER = """
static inline __attribute__((noinline)) int helper(int x) {
    int t = 0;
    for (int i = 0; i < x; i++) t += i * x;
    return t;
}
"""
UNIT = '#include "h.h"\nint {name}(int x) {{ return helper(x) + {k}; }}\n'
MAIN = "int a(int); int b(int);\nint main(int argc, char **argv) { return a(argc) + b(argc); }\n"


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("summed")
    (d / "h.h").write_text(HEADER)
    (d / "a.c").write_text(UNIT.format(name="a", k=1))
    (d / "b.c").write_text(UNIT.format(name="b", k=2))
    (d / "main.c").write_text(MAIN)
    exe = d / "prog"
    subprocess.run(
        ["cc", "-O1", "-g", "-o", str(exe), str(d / "a.c"), str(d / "b.c"), str(d / "main.c")], check=True, cwd=d
    )
    return str(exe)


def helper_copies(exe: str) -> list[tuple[int, int]]:
    """(address, size) of each copy of the static helper."""
    out = subprocess.run(["nm", "-S", exe], capture_output=True, text=True, check=True).stdout
    return [
        (int(p[0], 16), int(p[1], 16))
        for p in (line.split() for line in out.splitlines())
        if len(p) == 4 and p[3] == "helper"
    ]


def one_at_a_time(report: ProfileReport) -> list[Location]:
    totals: dict[tuple[str, str, str, int], int] = {}
    for mod in report.modules:
        mmap = srcmap.module_map(mod.file)
        for pc, n in mod.samples.items():
            key = (mod.file, *mmap.lookup(pc - mod.offset))
            totals[key] = totals.get(key, 0) + n
    return [Location(*key, n) for key, n in totals.items()]


def samples_of(exe: str, seed: int) -> dict[int, int]:
    rng = random.Random(seed)
    copies = helper_copies(exe)
    pcs = [addr + off for addr, size in copies for off in range(size)]
    for sym in ("a", "b", "main"):
        out = subprocess.run(["nm", "-S", exe], capture_output=True, text=True, check=True).stdout
        for p in (line.split() for line in out.splitlines()):
            if len(p) == 4 and p[3] == sym:
                pcs += range(int(p[0], 16), int(p[0], 16) + int(p[1], 16))
    pcs += [0x10, 2**40]  # no code there: unknown
    rng.shuffle(pcs)
    return {pc: rng.choice([1, 1, 2, 5, 2**40]) for pc in pcs}


def test_a_header_function_in_two_units_is_one_location(program):
    copies = helper_copies(program)
    assert len(copies) == 2, copies
    mmap = srcmap.module_map(program)
    first, second = (mmap.lookup(addr) for addr, _ in copies)
    assert first == second and first[1] == "helper"  # the same location from two DWARF units
    report = ProfileReport(modules=[ModuleSamples(program, 0, {copies[0][0]: 3, copies[1][0]: 4})])
    assert srcmap.resolve(report) == [Location(program, first[0], "helper", first[2], 7)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sums_and_order_are_those_of_one_pc_at_a_time(program, seed):
    report = ProfileReport(modules=[ModuleSamples(program, 0, samples_of(program, seed))])
    expected = one_at_a_time(report)
    assert srcmap.resolve(report) == expected
    assert srcmap.resolve(report, progress=lambda done, total: None) == expected  # the batched Python way


def test_a_module_listed_twice_and_a_load_offset(program):
    samples = samples_of(program, 4)
    half = dict(list(samples.items())[: len(samples) // 2])
    shifted = {pc + 0x1000: n for pc, n in samples.items() if pc < 2**39}
    report = ProfileReport(
        modules=[
            ModuleSamples(program, 0, samples),
            ModuleSamples("/no/such/file", 0, {1: 2}),
            ModuleSamples(program, 0x1000, shifted),
            ModuleSamples(program, 0, half),
        ]
    )
    assert srcmap.resolve(report) == one_at_a_time(report)


def test_counts_python_keeps_as_they_are(program):
    samples = samples_of(program, 5)
    pc = next(iter(samples))
    samples[pc] = 2**70  # beyond 64 bits: summed in Python
    report = ProfileReport(modules=[ModuleSamples(program, 0, samples)])
    assert srcmap.resolve(report) == one_at_a_time(report)
