"""Hostile derived metrics in a cube, through the real command: a metric
naming itself, two naming each other, a chain of 600, 40 metrics each
naming the previous twice; and hostile `dump -m` expressions (5,000 deep,
padded with 100,000 spaces).  Each refusal is one line on stderr, exit
status 2, no traceback, well within a second of work; what is not hostile
(the 40 doubling metrics) is evaluated, linearly."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tests.psprocess import cube_fixtures as cf


def cube(tmp_path, monkeypatch, extra: list) -> str:
    monkeypatch.setattr(cf, "METRICS", cf.METRICS + extra)
    path = tmp_path / "hostile.cubex"
    cf.scorep_cube(str(path))
    return str(path)


def derived(name: str, expression: str) -> cf.Metric:
    return cf.Metric(name, "POSTDERIVED", "DOUBLE", "sec", expression=expression)


def psprocess(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    """The command's result and the CPU time it took (user and system: what
    a loaded machine does not stretch, as it stretches wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                       timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return p, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def refused(p: subprocess.CompletedProcess, words: str) -> None:
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], p.stderr


CYCLES = {
    "itself": ([derived("loop", "metric::loop() + 1")], "derived metric loop refers to itself (loop → loop)"),
    "each other": ([derived("a", "metric::b() + 1"), derived("b", "2 * metric::a()")], "refers to itself ("),
    "a chain of 600": ([derived("c0", "metric::time()")] + [derived(f"c{i}", f"metric::c{i - 1}() + 1")
                                                           for i in range(1, 600)], "more than 48 deep"),
}


@pytest.mark.parametrize("case", list(CYCLES))
@pytest.mark.parametrize("command", [["stat"], ["dump", "-m", "all"], ["dump", "-m", "x:metric::avg_time() * 2"]])
def test_metrics_naming_themselves_are_refused_in_one_line(tmp_path, monkeypatch, case, command):
    extra, words = CYCLES[case]
    path = cube(tmp_path, monkeypatch, extra)
    p, took = psprocess(*command, path)
    if command[-1].startswith("x:"):  # an expression that needs none of them: the cube still serves
        assert p.returncode == 0, p.stderr
    else:
        refused(p, words if case != "each other" else "refers to itself (")
        assert " → " in p.stderr
    assert took < 5  # interpreter start and the cube's reading included; the refusal itself is quick


def test_forty_metrics_each_naming_the_previous_twice_are_evaluated_linearly(tmp_path, monkeypatch):
    extra = [derived("d0", "metric::visits()")] + [derived(f"d{i}", f"metric::d{i - 1}() + metric::d{i - 1}()")
                                                   for i in range(1, 40)]
    path = cube(tmp_path, monkeypatch, extra)
    for command in (["stat"], ["dump", "-m", "d39,visits", "-t", "aggr", "-c", "roots"]):
        p, took = psprocess(*command, path)
        assert p.returncode == 0, p.stderr
        assert took < 5
    # d39 = 2**39 visits, per root over every location
    blocks: dict[str, dict[str, float]] = {}
    for line in p.stdout.splitlines():
        if line.startswith("Print out the data of the metric "):
            current = blocks.setdefault(line.split()[7], {})
        elif line.startswith(("main(", "worker(")):
            current[line.split()[0]] = float(line.split()[1])
    assert blocks["visits"] and blocks["d39"].keys() == blocks["visits"].keys()
    for root, visits in blocks["visits"].items():
        assert blocks["d39"][root] == 2.0 ** 39 * visits


def test_hostile_dump_expressions(tmp_path, monkeypatch):
    path = cube(tmp_path, monkeypatch, [])
    p, took = psprocess("dump", "-m", "x:" + "(" * 5000 + "metric::time()" + ")" * 5000, path)
    refused(p, "nested deeper than")
    p, took = psprocess("dump", "-m", "x:" + " " * 50_000 + "metric::time() / metric::visits()" + " " * 50_000,
                        "-t", "aggr", "-c", "roots", path)
    assert p.returncode == 0, p.stderr
    assert took < 5


@pytest.mark.parametrize("case", list(CYCLES))
@pytest.mark.parametrize("command", ["report", "json", "html", "diff", "mean", "cut"])
def test_cycles_are_one_line_in_every_command(tmp_path, monkeypatch, case, command):
    """The report (text, JSON, the HTML page) and the algebra (diff, mean,
    cut, whose results evaluate their derived metrics) refuse a cyclic or
    too deep chain of derived metrics in one line, as stat and dump do."""
    extra, words = CYCLES[case]
    path = cube(tmp_path, monkeypatch, extra)
    args = {"report": [path], "json": [path, "-f", "json"], "html": [path, "-f", "html"],
            "diff": ["diff", path, path], "mean": ["mean", path, path],
            "cut": ["cut", "--root", "main", path]}[command]
    p, took = psprocess(*args)
    refused(p, words)
    assert took < 5  # CPU seconds, the interpreter's start and the cube's reading included
