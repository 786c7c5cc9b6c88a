"""The built C library: its exports, header and dependencies."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from psuite.libperfsuite import cdefs
from psuite.libperfsuite.native import decoder_path, include_dir, library_path

# Interposed libc entry point (how measurement starts before main) and the
# ELF section hooks: the only exports allowed without the ps_ prefix.
# The C library functions psrun interposes (start-up, threads, SIGPROF shared
# with the program, the exit paths that must write the report), besides the
# ps_* API.
ALLOWED = {"__libc_start_main", "_init", "_fini", "exit", "pthread_create", "sigprocmask", "pthread_sigmask",
           "sigaction", "signal", "setitimer",
           "_exit", "_Exit", "execve", "execv", "execvp", "execvpe", "fexecve", "execl", "execlp", "execle",
           "execveat", "quick_exit", "raise", "PAPI_start", "thrd_create",
           "unshare", "setns", "dlclose", "dlopen", "dlmopen", "dl_iterate_phdr", "pipe2",
           "bsd_signal", "sysv_signal", "__sysv_signal",
           # psrun -f: the collector watches each child the program forks, and learns how it ended
           "fork", "wait", "waitpid", "wait3", "wait4",
           # psrun -f: the images the program starts get psrun's variables back
           "posix_spawn", "posix_spawnp", "system", "popen"}


def exported(path: str | None = None) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", path or library_path()], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_only_public_symbols_are_exported():
    leaked = {s for s in exported() if not s.startswith("ps_") and s not in ALLOWED}
    assert not leaked


def test_every_python_declaration_is_exported():
    declared = set(re.findall(r"\b(ps_\w+)\s*\(", cdefs.CDEFS))
    assert declared and declared <= exported()
    decoder = set(re.findall(r"\b(ps_\w+)\s*\(", cdefs.DECODER_CDEFS))
    assert decoder and decoder == exported(decoder_path())


def symbols(path: str) -> set[str]:
    """Every function in the object's symbol table, static ones included."""
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[1:2] and line.split()[1] in "tT"}


def text_size(path: str) -> int:
    out = subprocess.run(["size", "-A", path], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[1]) for line in out.splitlines() if line.startswith(".text "))


def test_injected_runtime_carries_no_dwarf_decoder():
    runtime, decoder = symbols(library_path()), symbols(decoder_path())
    assert {"ps_dwarf_open", "ps_dwarf_lookup_many"} <= decoder
    own = {s for s in decoder if not s.startswith(("_", "frame_dummy", "register_tm", "deregister_tm"))}
    assert not own & runtime, "decoder code linked into the injected library"
    assert not any("dwarf" in s for s in runtime)
    # the code moved rather than vanished: the decoder is a real object
    assert text_size(decoder_path()) > 10_000
    needed = re.findall(r"NEEDED.*\[(.*)\]", subprocess.run(["readelf", "-d", library_path()],
                                                          capture_output=True, text=True, check=True).stdout)
    assert not any("psdwarf" in n for n in needed)


def test_header_declares_the_c_api_and_fortran_variants():
    header = (Path(include_dir()) / "pshwpc.h").read_text()
    for fn in ("ps_hwpc_init", "ps_hwpc_start", "ps_hwpc_suspend", "ps_hwpc_read", "ps_hwpc_stop",
               "ps_hwpc_shutdown", "ps_hwpc_numevents", "ps_hwpc_eventnames", "ps_hwpc_psrun"):
        assert f"{fn}(" in header and fn in exported()
        if fn not in ("ps_hwpc_eventnames",):
            assert f"{fn}_(" in header and f"{fn}_" in exported()


def test_no_build_time_dependency_on_papi():
    dyn = subprocess.run(["readelf", "-d", library_path()], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"NEEDED.*\[(.*)\]", dyn)
    assert needed and not any("papi" in n for n in needed)


def test_header_compiles_and_links_a_program(tmp_path):
    src = tmp_path / "api.c"
    src.write_text('#include "pshwpc.h"\nint main(void){int n=-1; return ps_hwpc_numevents(&n) == '
                   'PS_HWPC_ESTATE ? 0 : 1;}\n')
    exe = tmp_path / "api"
    lib_dir = str(Path(library_path()).parent)
    subprocess.run(["cc", "-I", include_dir(), "-o", str(exe), str(src), library_path(),
                    f"-Wl,-rpath,{lib_dir}"], check=True)
    assert subprocess.run([str(exe)]).returncode == 0
