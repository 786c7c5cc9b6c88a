"""Kill a command as a batch system's time limit does, and see how every
process it started ends.

    python subreaper.py SECONDS COMMAND...

Becomes a child subreaper (so processes orphaned by the kill are reparented
here, and their end can be seen), starts COMMAND with its stdout on a pipe,
waits for its first line, SIGKILLs the process it started, then reaps every
descendant for up to SECONDS.  Prints one JSON object: the first line,
{"pid": how it ended} for each reaped process (a negative number: killed by
that signal, as subprocess reports it) and the processes still alive at the
end ("left", their command lines; they are killed then, so nothing
outlives this script)."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def descendants(root: int) -> list[int]:
    """Live processes whose parent chain leads to `root` (our subreaper's
    children and theirs)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found = []
    for pid in parents:
        p = pid
        while p in parents and p != root:
            p = parents[p]
        if p == root and pid != root:
            found.append(pid)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def main() -> None:
    bound, command = float(sys.argv[1]), sys.argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE)
    first = proc.stdout.readline().decode(errors="replace").strip()
    os.kill(proc.pid, signal.SIGKILL)
    ended: dict[int, int] = {}
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break  # nothing left to wait for, orphans included
        if pid:
            ended[pid] = os.waitstatus_to_exitcode(status)
        else:
            time.sleep(0.01)
    left = {pid: cmdline(pid) for pid in descendants(os.getpid())}
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    proc.returncode = ended.get(proc.pid)  # (reaped above: no warning from Popen)
    print(json.dumps({"first_line": first, "started": proc.pid, "ended": ended, "left": left}))


if __name__ == "__main__":
    main()
