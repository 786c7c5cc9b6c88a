"""psbase ls EXPERIMENT --show NAME --where NAME=VALUE: runs listed with some
of their values and filtered by them, against the runs the test filed."""

from __future__ import annotations

import pytest

from tests.conftest import one_line_error
from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_query import TIMES, sweep  # noqa: F401  (sweep: the fixture)
from tests.psbase.test_query_unit import env_of


def table(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_ls_shows_values_and_filters_runs(sweep, tmp_path):  # noqa: F811
    env = env_of(sweep)
    runs = [(n, c, t) for (n, c), ts in TIMES.items() for t in ts]  # filed in this order, runs 1...
    got = table(ok(psbase("ls", "sweep", "--show", "nodes,compiler", "--show", "time", cwd=tmp_path, env=env)))
    assert got[0][:7] == ["run", "filed", "(UTC)", "who", "nodes", "compiler", "time"]
    body = {int(r[0]): r for r in got[1:]}
    for i, (n, c, t) in enumerate(runs, 1):
        assert body[i][4:6] == [str(n), c] and float(body[i][6]) == t  # filed date and time are two words
    assert body[len(runs) + 1][4:6] == ["1", "gcc"] and len(body) == len(runs) + 1  # no time; the deleted run left out
    got = table(ok(psbase("ls", "sweep", "--show", "time", "--where", "compiler=icc", "--where", "nodes=2",
                          cwd=tmp_path, env=env)))
    want = [i for i, (n, c, _) in enumerate(runs, 1) if c == "icc" and n == 2]
    assert [int(r[0]) for r in got[1:]] == want
    assert [float(r[4]) for r in got[1:]] == TIMES[(2, "icc")]
    deleted = table(ok(psbase("ls", "sweep", "--deleted", "--where", "time=1000", cwd=tmp_path, env=env)))
    assert len(deleted) == 2 and deleted[1][-1] == "(deleted)"


@pytest.mark.parametrize(
    "args, message",
    [
        (["ls", "sweep", "--show", "size"], "'size' is a data-set variable"),
        (["ls", "sweep", "--show", "nosuch"], "--show 'nosuch'"),
        (["ls", "sweep", "--where", "nodes=many"], "nodes"),
        (["ls", "--show", "nodes"], "list the runs of an experiment"),
    ],
)
def test_ls_bad_names_are_one_line(sweep, tmp_path, args, message):  # noqa: F811
    assert message in one_line_error(psbase(*args, cwd=tmp_path, env=env_of(sweep)), "psbase")
