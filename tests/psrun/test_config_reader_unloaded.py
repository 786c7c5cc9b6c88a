"""The configuration reader leaves nothing mapped in the program: libexpat
and the second libc of its dlmopen namespace are loaded for the parse of
the event list and closed after it, so the default list costs the program
no more address space than `-e`."""

from __future__ import annotations

import collections
import pathlib
import subprocess

import pytest

from tests.conftest import run_tool
from tests.psrun.test_psrun import reports

CONFIG = pathlib.Path(__file__).resolve().parents[2] / "configs" / "default.xml"


def mapped_files(maps: str) -> collections.Counter:
    """Each file-backed mapping's path, counted (a library has several)."""
    return collections.Counter(
        fields[5] for fields in (line.split() for line in maps.splitlines()) if len(fields) >= 6 and fields[5][0] == "/"
    )


@pytest.mark.parametrize("how", [(), ("-c", str(CONFIG))], ids=["default list", "-c file"])
def test_event_list_reader_is_unloaded_before_main(workdir, how):
    bare = subprocess.run(["cat", "/proc/self/maps"], capture_output=True, text=True, check=True)
    p = run_tool("psrun", "-q", *how, "cat", "/proc/self/maps")
    assert p.returncode == 0, p.stderr
    extra = mapped_files(p.stdout) - mapped_files(bare.stdout)
    assert not any(pathlib.Path(path).name.startswith("libexpat") for path in extra), extra
    libc = [path for path in mapped_files(bare.stdout) if "/libc.so" in path]
    assert libc and all(mapped_files(p.stdout)[path] == mapped_files(bare.stdout)[path] for path in libc), extra
    assert {pathlib.Path(path).name for path in extra} <= {"libpshwpc.so", "zero"}, extra
    assert reports(workdir)


def test_default_list_costs_no_more_address_space_than_one_event(workdir):
    """VmSize at main under the default list is VmSize under -e task-clock,
    within two pages (the longer list's records): the reader's namespace
    (about 3 MB) is gone."""

    def vmsize(*how: str) -> int:
        p = run_tool("psrun", "-q", *how, "grep", "VmSize", "/proc/self/status")
        assert p.returncode == 0, p.stderr
        return int(p.stdout.split()[1])

    default, one = vmsize(), vmsize("-e", "task-clock")
    assert abs(default - one) <= 8, (default, one)
