"""--calltree takes an optional VIEW: a word that is neither a view nor an
input is refused naming the views, not as a missing file; inputs right
after --calltree (a file, a -c pattern) still mean the default view."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_audit_cli_runs import audit_runs  # noqa: F401  (the fixture)


def help_views() -> list[str]:
    """The views --help names for --calltree."""
    text = " ".join(run_tool("psprocess", "--help").stdout.split())
    return re.findall(r"([a-z-]+) \((?:the default|the hot|gprof)", text)


@pytest.mark.parametrize("word", ["topdown", "bottomup", "caller", "top_down"])
def test_a_mistyped_view_is_named_with_the_views(audit_runs, word):  # noqa: F811
    line = one_line_error(run_tool("psprocess", "--calltree", word, audit_runs["callpath"]), "psprocess")
    views = help_views()
    assert views == ["top-down", "bottom-up", "callers"]
    assert f"--calltree {word}: no view or file of that name" in line and "no such file" not in line
    assert all(v in line for v in views), line


def test_inputs_after_calltree_are_still_inputs(audit_runs, tmp_path):  # noqa: F811
    p = run_tool("psprocess", "--calltree", audit_runs["callpath"])
    assert p.returncode == 0 and "Call Tree Report (top-down)" in p.stdout, p.stderr
    # a -c pattern that names no file itself is an input too
    for name in (Path(audit_runs["callpath"]).name, Path(audit_runs["callpath"]).name.replace(".xml",
                                                                                            ".callpaths.xml")):
        shutil.copy(Path(audit_runs["callpath"]).parent / name, tmp_path / name)
    p = run_tool("psprocess", "-c", "--calltree", str(tmp_path / "callpath.*.xml"))
    assert p.returncode == 0 and "Call Tree Report (top-down)" in p.stdout, p.stderr
    # a file of that name is an input: read as one (a flat copy: no companion under this name)
    (tmp_path / "topdown").write_bytes(Path(audit_runs["callpath"]).read_bytes())
    p = run_tool("psprocess", "--calltree", "topdown", cwd=tmp_path)
    assert one_line_error(p, "psprocess") == ("psprocess: --calltree: topdown has no call paths; record them with "
                                              "psrun --callpath")
