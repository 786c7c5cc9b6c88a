"""psbase query --file as a user runs it: the paper's Fig. 8 end to end
(setup, input of the b_eff_io files, the query file with a text table and
a bar chart PNG), --where, and one-line errors with exit status 2."""

from __future__ import annotations

import struct
from pathlib import Path

from tests.conftest import one_line_error
from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_queryfile_fig8 import ACCESS, DATA, QUERY, SUM_FILES, expected


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG header: the signature, then the IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def bio_archive(db_url: str, cwd: Path) -> None:
    ok(psbase("--db", db_url, "setup", str(DATA / "b_eff_io.experiment.xml"), cwd=cwd))
    out = ok(
        psbase(
            "--db",
            db_url,
            "input",
            "b_eff_io",
            "--desc",
            str(DATA / "b_eff_io.input.xml"),
            *map(str, SUM_FILES),
            cwd=cwd,
        )
    )
    assert out == "psbase: 4 runs filed in b_eff_io (1-4)\n"


def table_rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.split() and line.split()[0].isdigit()]


def test_fig8_end_to_end_table_and_bar_chart(db_url, tmp_path):
    bio_archive(db_url, tmp_path)
    out = ok(psbase("--db", db_url, "query", "--file", str(QUERY), cwd=tmp_path))
    lines = out.splitlines()
    assert "# fs = ufs" in lines and "# N = 4" in lines
    header = next(line for line in lines if line.startswith("S_chunk"))
    assert header.split("  ")[0] == "S_chunk [B]" and header.count("[%]") == 3
    want = expected()
    rows = table_rows(out)
    assert [int(r[0]) for r in rows] == sorted({c for _, c in want})
    for r in rows:
        for access, text in zip(ACCESS, r[1:], strict=True):
            assert abs(float(text) - want[(access, int(r[0]))]) < 1e-9 * abs(float(text))
    png = tmp_path / "b_eff_io_fig8.png"
    assert lines[-1] == "psbase: wrote b_eff_io_fig8.png"
    assert png_size(png) == (800, 500)
    # a second run does not replace the chart without --force
    before = png.read_bytes()
    msg = one_line_error(psbase("--db", db_url, "query", "--file", str(QUERY), cwd=tmp_path), "psbase")
    assert "b_eff_io_fig8.png" in msg and "--force" in msg
    assert png.read_bytes() == before
    ok(psbase("--db", db_url, "query", "--file", str(QUERY), "--force", cwd=tmp_path))
    assert png_size(png) == (800, 500)


def test_where_applies_to_every_source(db_url, tmp_path):
    bio_archive(db_url, tmp_path)
    out = ok(
        psbase(
            "--db",
            db_url,
            "query",
            "--file",
            str(QUERY),
            "--where",
            "access=read",
            "--where",
            "S_chunk=32",
            "--where",
            "S_chunk=2097152",
            "--force",
            cwd=tmp_path,
        )
    )
    rows = table_rows(out)
    want = expected()
    assert [r[0] for r in rows] == ["32", "2097152"] and all(len(r) == 2 for r in rows)
    for r in rows:
        assert abs(float(r[1]) - want[("read", int(r[0]))]) < 1e-9 * abs(float(r[1]))
    assert "# access = read" not in out.splitlines()  # access is swept (one sweep value left), not fixed
    # --sweep: fs is filtered to ufs by the query, so one value of it
    out = ok(
        psbase(
            "--db",
            db_url,
            "query",
            "--file",
            str(QUERY),
            "--where",
            "access=read",
            "--sweep",
            "fs",
            "--force",
            cwd=tmp_path,
        )
    )
    assert "listless vs listbased [access=read, fs=ufs] [%]" in out and len(table_rows(out)) == 8


def test_query_file_errors_are_one_line(db_url, tmp_path):
    ok(psbase("--db", db_url, "setup", str(DATA / "b_eff_io.experiment.xml"), cwd=tmp_path))  # no runs needed
    bad = tmp_path / "bad.xml"
    bad.write_text(
        "<query><experiment>b_eff_io</experiment><source id='s'><result>B_scatter</result></source>"
        "<operator id='o' type='diff'><input>s</input></operator><output><input>o</input></output></query>"
    )
    cases = [
        (["--file", str(bad)], "diff takes exactly two <input> elements"),
        (
            ["b_eff_io", "--file", str(QUERY)],
            "--file QUERY.xml names the experiment, results, statistics, formats "
            "and files itself; drop EXPERIMENT (or drop --file for the short form)",
        ),
        (["--file", str(QUERY), "-f", "png", "-o", "x.png"], "drop -f, -o"),
        (["--file", str(QUERY), "--by", "S_chunk"], "drop --by"),
        (["--file", str(tmp_path / "missing.xml")], "query file " + str(tmp_path / "missing.xml") + ": no such file"),
        (
            ["--file", str(QUERY), "--where", "S_chunk=big"],
            "--where S_chunk=big: variable 'S_chunk': 'big' is not an integer",
        ),
        ([], "give EXPERIMENT RESULT --by PARAM, or a query file with --file QUERY.xml"),
        (["b_eff_io", "B_read", "--by", "N", "--sweep", "fs"], "--sweep goes with --file QUERY.xml"),
    ]
    for args, message in cases:
        msg = one_line_error(psbase("--db", db_url, "query", *args, cwd=tmp_path), "psbase")
        assert message in msg, (args, msg)
    assert not (tmp_path / "b_eff_io_fig8.png").exists()
