"""The environment the program sees under psrun is the one its caller set:
without -f, LD_PRELOAD's entry for psuite's library and the PSUITE_*
variables psrun sets are taken out of environ before main (the caller's own
PSUITE_* stay), so that a program with its
own getenv/setenv (bash) and everything it starts see what they would see
bare.  With -f they stay: the children are measured too."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import run_tool
from tests.psrun.test_psrun import reports

SCRIPT = r"""#!/bin/bash
echo "LD_PRELOAD=[$LD_PRELOAD]"
env | grep PSUITE | sort
x=$( (echo inner; ls /nonexistent 2>&1) | wc -l )
echo "x=$x"
ls / > /dev/null
cat /etc/hostname > /dev/null
date > /dev/null
"""

ENVIRON_C = r"""
#include <stdio.h>
extern char **environ;
int main(int argc, char **argv, char **envp)
{
    for (char **e = environ; *e; e++)
        printf("%s\n", *e);
    printf("envp is environ: %d\n", envp == environ);
    return 0;
}
"""

EMPTY_C = "int psuite_test_shim_marker;\n"


def caller_env(**extra: str) -> dict[str, str]:
    """The caller's environment, with a PSUITE_* variable of its own that psrun does not set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PSUITE_") and k != "LD_PRELOAD"}
    env.update(PSUITE_UNWINDER="libgcc", **extra)
    return env


@pytest.fixture
def script(workdir):
    path = workdir / "job.sh"
    path.write_text(SCRIPT)
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def shims(tmp_path_factory):
    """Two libraries of the caller's own to preload: psuite must keep them, in order."""
    cc = shutil.which("cc") or shutil.which("gcc")
    out = tmp_path_factory.mktemp("shims")
    (out / "shim.c").write_text(EMPTY_C)
    built = []
    for name in ("libfirst.so", "libsecond.so"):
        subprocess.run([cc, "-shared", "-fPIC", "-o", str(out / name), str(out / "shim.c")], check=True)
        built.append(str(out / name))
    return built


def run_both(command: list[str], env: dict[str, str], *options: str):
    """The bare run and psrun's (notes on: none may reach the program's output)."""
    bare = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    measured = run_tool("psrun", *options, *command, env=env)
    assert bare.returncode == 0 and measured.returncode == 0, (bare.stderr, measured.stderr)
    return bare, measured


def test_bash_script_without_follow_writes_one_report_and_sees_the_bare_environment(script, workdir):
    bare, measured = run_both([str(script)], caller_env())
    assert measured.stdout == bare.stdout
    assert "LD_PRELOAD=[]\n" in bare.stdout and "PSUITE_UNWINDER=libgcc\n" in measured.stdout
    assert "x=2\n" in measured.stdout  # the command substitution holds no psrun note
    assert [r.name.split(".")[0] for r in reports(workdir)] == ["bash"]  # the script's shell, not its commands


def test_bash_script_keeps_the_callers_own_preloads_in_order(script, workdir, shims):
    env = caller_env(LD_PRELOAD=f"{shims[0]} {shims[1]}")
    bare, measured = run_both([str(script)], env)
    assert measured.stdout == bare.stdout
    assert f"LD_PRELOAD=[{shims[0]} {shims[1]}]\n" in measured.stdout
    assert len(reports(workdir)) == 1


@pytest.mark.parametrize("mode", [[], ["--profile", "ITIMER_PROF"], ["--callpath"]])
def test_bash_script_command_substitution_as_bare_in_every_mode(script, workdir, mode):
    bare, measured = run_both([str(script)], caller_env(), *mode)
    assert measured.stdout == bare.stdout
    assert {r.name.split(".")[0] for r in reports(workdir)} == {"bash"}


def test_follow_measures_the_children_and_the_script_sees_the_bare_environment(script, workdir, shims):
    """-f: the children get psrun's variables back when they start (the exec
    family, posix_spawn, system, popen), not through the script's own
    environment, which is the one its caller set."""
    env = caller_env(LD_PRELOAD=f"{shims[0]} {shims[1]}")
    bare, measured = run_both([str(script)], env, "-q", "-f")
    assert measured.stdout == bare.stdout
    assert f"LD_PRELOAD=[{shims[0]} {shims[1]}]\n" in measured.stdout and "PSUITE_FOLLOW" not in measured.stdout
    names = {r.name.split(".")[0] for r in reports(workdir)}
    assert {"bash", "ls", "cat", "date", "grep", "sort", "wc"} <= names, names


SPAWNER_C = r"""
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
static int seen(const char *prefix)
{
    int n = 0;
    for (char **e = environ; *e; e++)
        n += strncmp(*e, prefix, strlen(prefix)) == 0;
    return n;
}
int main(int argc, char **argv)
{
    char *child[] = {argv[1], NULL};
    printf("PSUITE_ %d LD_PRELOAD %d\n", seen("PSUITE_"), seen("LD_PRELOAD="));
    fflush(stdout);
    pid_t pid;
    if (posix_spawn(&pid, argv[1], NULL, NULL, child, environ) == 0)
        waitpid(pid, NULL, 0);
    char *const empty[] = {NULL};
    if (posix_spawnp(&pid, "true", NULL, NULL, child, empty) == 0)
        waitpid(pid, NULL, 0);
    if (system(argv[1]) != 0)
        return 3;
    FILE *p = popen(argv[1], "r");
    if (!p || pclose(p) != 0)
        return 4;
    if (fork() == 0) {
        execl(argv[1], argv[1], (char *)NULL);
        _exit(5);
    }
    wait(NULL);
    if (vfork() == 0) {
        execvp("true", child);
        _exit(6);
    }
    wait(NULL);
    return 0;
}
"""


def test_follow_gives_every_way_of_starting_a_program_its_measurement(workdir):
    """posix_spawn (the program's environ, then an empty one), posix_spawnp,
    system, popen, fork+execl and vfork+execvp: each program started is
    measured, and the program sees no psrun variable."""
    cc = shutil.which("cc") or shutil.which("gcc")
    (workdir / "spawner.c").write_text(SPAWNER_C)
    exe = workdir / "spawner"
    subprocess.run([cc, "-O1", "-o", str(exe), str(workdir / "spawner.c")], check=True)
    true = shutil.which("true")
    bare, measured = run_both([str(exe), true], caller_env(), "-q", "-f", "-e", "task-clock")
    assert measured.stdout == bare.stdout == "PSUITE_ 1 LD_PRELOAD 0\n"  # PSUITE_UNWINDER: the caller's own
    names = sorted(r.name.split(".")[0] for r in reports(workdir))
    # spawner and its forked child before the execl; true from posix_spawn, posix_spawnp, execl and execvp;
    # a shell for system and popen (which runs true itself or execs it)
    assert names.count("spawner") == 2 and names.count("true") >= 4, names
    assert sum(1 for n in names if n in ("sh", "dash", "bash")) == 2, names


@pytest.mark.parametrize(
    "mode",
    [[], ["-e", "task-clock"], ["--profile", "ITIMER_PROF"], ["--callpath"], ["-R"], ["--checkpoint", "5"], ["-f"]],
)
def test_c_program_sees_its_callers_environ(workdir, mode):
    cc = shutil.which("cc") or shutil.which("gcc")
    (workdir / "environ.c").write_text(ENVIRON_C)
    exe = workdir / "print_environ"
    subprocess.run([cc, "-O1", "-o", str(exe), str(workdir / "environ.c")], check=True)
    bare, measured = run_both([str(exe)], caller_env(), *mode)
    assert measured.stdout == bare.stdout
    assert "envp is environ: 1\n" in measured.stdout
    assert reports(workdir)  # and it was measured
