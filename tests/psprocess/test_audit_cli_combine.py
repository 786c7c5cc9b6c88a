"""-c refuses profiles of different sampling events (a wall-time sample is
not a CPU-time sample nor a task-clock overflow) with one line naming both
events; profiles of one event are still combined, their samples summed."""

from __future__ import annotations

import json

import pytest

from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_audit_cli_runs import audit_runs, sampling  # noqa: F401  (the fixture)


@pytest.mark.parametrize("a,b", [("real", "taskclock"), ("prof", "real"), ("taskclock", "prof")])
def test_profiles_of_different_events_are_not_summed(audit_runs, tmp_path, a, b):  # noqa: F811
    out = tmp_path / "combined.txt"
    p = run_tool("psprocess", "-c", "-o", str(out), audit_runs[a], audit_runs[b])
    line = one_line_error(p, "psprocess")
    ev_a, ev_b = sampling(audit_runs[a])[0], sampling(audit_runs[b])[0]
    assert f"samples {ev_a} and " in line and f"samples {ev_b}:" in line, line
    assert not out.exists()
    # the same in a call tree and an export of the combination
    p = run_tool("psprocess", "-c", "--cube", str(tmp_path / "c.cubex"), audit_runs[a], audit_runs[b])
    assert ev_b in one_line_error(p, "psprocess") and list(tmp_path.iterdir()) == []


def test_profiles_of_one_event_are_combined(audit_runs):  # noqa: F811
    p = run_tool("psprocess", "-c", "-f", "json", audit_runs["prof"], audit_runs["prof2"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    expected = sampling(audit_runs["prof"])[2] + sampling(audit_runs["prof2"])[2]  # <totalsamples> read with lxml
    assert sum(s["sum"] for s in doc["statistics"]) == expected
