"""Fixtures shared by the profile tests: the profiling target programs."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import TARGETS

PROFILE_SRC = TARGETS / "profile"


@pytest.fixture(scope="session")
def programs(tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("profile_targets")
    lib = out / "libprof_lib.so"
    subprocess.run(["cc", "-O1", "-g", "-shared", "-fPIC", "-o", str(lib), str(PROFILE_SRC / "prof_lib.c")],
                   check=True)
    subprocess.run(["cc", "-O1", "-g", "-o", str(out / "prof_split"), str(PROFILE_SRC / "prof_split.c"),
                    f"-L{out}", "-lprof_lib", f"-Wl,-rpath,{out}"], check=True)
    built = {"lib": str(lib)}
    for name in ("prof_split", "prof_threads", "own_sigprof", "dlopen_main"):
        exe = out / name
        if name != "prof_split":
            subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(PROFILE_SRC / f"{name}.c")], check=True)
        built[name] = str(exe)
    return built
