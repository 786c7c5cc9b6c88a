"""What a measured program can see of psuite, at its main, bare and under
psrun in every mode: descriptors open, address space mapped (VmSize),
resident memory (VmRSS), the room left under an RLIMIT_AS (the most it can
map), whether an alternate signal stack is installed, how many processes
it has as children, and how many signals have a handler (the kernel's
SigCgt).  Prints one row per mode and the difference
from the bare run; --psrun PATH compares another build.

    python bench/footprint.py [--psrun PATH] [--limit-mb MB (default 2048)]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from _common import native_psrun

PROBE = r"""
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/wait.h>
static long status_kb(const char *key) {
    char line[256]; long v = -1; FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key))) sscanf(line + strlen(key), "%ld", &v);
    if (f) fclose(f); return v;
}
static int caught(void) {
    char line[256]; unsigned long long m = 0; FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "SigCgt:", 7)) sscanf(line + 7, "%llx", &m);
    if (f) fclose(f); return __builtin_popcountll(m);
}
int main(void) {
    int fds = -1; DIR *d = opendir("/proc/self/fd"); struct dirent *e;
    while (d && (e = readdir(d))) fds += e->d_name[0] != '.';
    if (d) closedir(d);
    stack_t ss; sigaltstack(NULL, &ss);
    long size = status_kb("VmSize:"), rss = status_kb("VmRSS:");
    size_t room = 0, step = 1 << 20; /* the largest mapping the limit still allows, to 1 MiB */
    for (size_t lo = 0, hi = (size_t)1 << 40; hi - lo > step;) {
        size_t mid = lo + (hi - lo) / 2;
        void *p = mmap(NULL, mid, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) hi = mid; else { munmap(p, mid); lo = mid; room = mid; }
    }
    int children = waitpid(-1, NULL, WNOHANG) == 0;
    printf("%d %ld %ld %zu %d %d %d\n", fds, size, rss, room >> 20, !(ss.ss_flags & SS_DISABLE), children,
           caught());
    return 0;
}
"""

MODES = {"bare": None, "count": ["-e", "task-clock"], "count -p": ["-p", "-e", "task-clock"],
         "profile": ["--profile", "ITIMER_PROF"], "profile REAL": ["--profile", "ITIMER_REAL"],
         "callpath": ["--callpath"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--psrun")
    ap.add_argument("--limit-mb", type=int, default=2048)
    args = ap.parse_args()
    psrun = native_psrun(args.psrun)
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
        with open(src, "w") as f:
            f.write(PROBE)
        subprocess.run(["cc", "-O1", "-o", exe, src], check=True)
        limit = args.limit_mb << 20

        def under_limit() -> None:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        rows = {}
        for mode, opts in MODES.items():
            argv = [exe] if opts is None else [psrun, "-q", *opts, exe]
            out = subprocess.run(argv, capture_output=True, text=True, cwd=tmp, preexec_fn=under_limit, check=True)
            rows[mode] = [int(x) for x in out.stdout.split()]
        print(f"psrun: {psrun}; RLIMIT_AS {args.limit_mb} MiB")
        print(f"{'mode':14} {'fds':>4} {'VmSize kB':>10} {'VmRSS kB':>9} {'room MiB':>9} {'altstack':>8} "
              f"{'children':>8} {'handlers':>8}   difference from bare")
        bare = rows["bare"]
        for mode, r in rows.items():
            diff = "" if mode == "bare" else (f"fds {r[0] - bare[0]:+d}, VmSize {r[1] - bare[1]:+d} kB, "
                                              f"room {r[3] - bare[3]:+d} MiB")
            print(f"{mode:14} {r[0]:4d} {r[1]:10d} {r[2]:9d} {r[3]:9d} {r[4]:8d} {r[5]:8d} {r[6]:8d}   {diff}")


if __name__ == "__main__":
    sys.exit(main())
