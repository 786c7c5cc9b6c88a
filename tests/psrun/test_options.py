"""psrun's fast command-line parser gives exactly what argparse gives, and
leaves to argparse everything it does not handle."""

from __future__ import annotations

import pytest

from psuite.psrun.cli import build_parser
from psuite.psrun.options import parse_fast

SAME = [
    ["./app"],
    ["./app", "-e", "x", "--", "-q"],
    ["-q", "./app", "a", "-b"],
    ["-e", "task-clock,page-faults", "./app"],
    ["-etask-clock", "./app"],
    ["--events", "a,b", "-c", "f.xml", "./app"],
    ["--events=a,b", "./app"],
    ["--domain", "kernel", "--backend", "perf_event", "./app"],
    ["--domain=all", "-o", "pre", "-d", "out", "-q", "./app", "--help"],
    ["--", "./app", "-x"],
    ["-q", "--", "-weird-name"],
]

ARGPARSE_ONLY = [
    ["--help"],
    ["-h", "./app"],
    ["--version"],
    ["--domain", "sometimes", "./app"],
    ["--backend=perfmon", "./app"],
    ["-e"],
    ["-x", "./app"],
    ["--event", "a", "./app"],  # an abbreviation: argparse's rules
    ["-qe", "a", "./app"],
    [],
    ["-q"],
    ["--"],
]


@pytest.mark.parametrize("argv", SAME)
def test_fast_parser_matches_argparse(argv):
    fast = parse_fast(argv)
    assert fast is not None
    assert vars(fast) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", ARGPARSE_ONLY)
def test_everything_else_goes_to_argparse(argv):
    assert parse_fast(argv) is None
