"""Call-path capture (psrun --callpath) inside real programs built -O2
-fomit-frame-pointer (tests/targets/callpath_rt): the companion document
is valid against its schema and belongs to the flat profile, every thread
has its own tree, the flat total is the trees' samples plus lost, deep
stacks are truncated and marked, a full tree counts what it loses, each
unwinder gives the known call chains (resolved with nm on the raw
addresses), a dlopen'd library appears in the paths, and the exit paths
still write both documents."""

from __future__ import annotations

import bisect
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from psuite.formats import callpaths_schema
from psuite.hwpc.config import read_configuration
from psuite.libperfsuite.native import library_path
from tests.conftest import TARGETS, one_line_error, run_tool, validate

SRC = TARGETS / "callpath_rt"
PERIOD_US = "1000"
CHAIN_N = "150000000"  # about 0.3 s of work on this machine: a few hundred samples


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """cpt and its library, -O2 without frame pointers, and cpt with them."""
    out = tmp_path_factory.mktemp("callpath_rt")

    def cc(*args: str) -> None:
        subprocess.run(["cc", "-O2", "-g", *args], check=True)

    cc("-fomit-frame-pointer", "-o", str(out / "cpt"), str(SRC / "cpt.c"), "-ldl", "-lpthread")
    # GCC 12 keeps leaves (work) frameless even so: the frame-pointer walk
    # finds a leaf's return address at the stack pointer (unwind.c)
    cc("-fno-omit-frame-pointer", "-o", str(out / "cpt_fp"), str(SRC / "cpt.c"), "-ldl", "-lpthread")
    cc("-fomit-frame-pointer", "-shared", "-fPIC", "-o", str(out / "libcplib.so"), str(SRC / "cplib.c"))
    cc("-fomit-frame-pointer", "-o", str(out / "forkstorm"), str(SRC / "forkstorm.c"), "-lpthread")
    cc(
        "-shared",
        "-fPIC",
        "-o",
        str(out / "libcpouter.so"),
        str(SRC / "cpouter.c"),
        f"-L{out}",
        "-lcplib",
        "-Wl,-rpath,$ORIGIN",
    )
    return {p.name: str(p) for p in out.iterdir()}


def callpath_run(*args: str, env: dict | None = None, options: tuple = ()) -> subprocess.CompletedProcess:
    full = dict(os.environ, **(env or {}))
    p = run_tool("psrun", "--callpath", "--period", PERIOD_US, *options, *args, env=full, timeout=300)
    return p


_SCHEMA = None


def schema() -> etree.XMLSchema:
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = etree.XMLSchema(etree.parse(callpaths_schema()))
    return _SCHEMA


def documents(workdir: Path) -> list[tuple[Path, Path | None]]:
    """(flat profile, its companion or None) for each profile psrun wrote."""
    flats = sorted(
        p for p in workdir.glob("*.xml") if not p.name.endswith(".callpaths.xml") and len(p.name.split(".")) >= 4
    )
    out = []
    for flat in flats:
        companion = flat.with_name(flat.name[:-4] + ".callpaths.xml")
        out.append((flat, companion if companion.exists() else None))
    return out


def companion_root(path: Path) -> etree._Element:
    root = etree.parse(str(path)).getroot()
    assert schema().validate(root), schema().error_log
    return root


def only_pair(workdir: Path) -> tuple[etree._Element, etree._Element, Path]:
    pairs = documents(workdir)
    assert len(pairs) == 1 and pairs[0][1], [p.name for p in workdir.iterdir()]
    flat, comp = pairs[0]
    return validate(flat, "hwpcreport-0.3.dtd"), companion_root(comp), flat


class Symbols:
    """Function ranges of an ELF file from nm -S (file addresses)."""

    def __init__(self, path: str):
        rows = []
        out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "tTwW":
                rows.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
        rows.sort()
        self.starts = [r[0] for r in rows]
        self.rows = rows

    def name(self, addr: int) -> str:
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and self.rows[i][0] <= addr < self.rows[i][0] + max(self.rows[i][1], 1):
            return self.rows[i][2]
        return "??"


def sample_paths(root: etree._Element, thread: etree._Element, symbols: dict[str, Symbols]) -> Counter:
    """(function names outermost first) -> samples, for one thread; frames
    outside the given modules are '?', truncated/blocked marks kept."""
    mods = {m.get("id"): (m.get("file"), int(m.get("offset"), 16)) for m in root.findall("module")}
    nodes = {}
    for n in thread.findall("node"):
        nodes[n.get("id")] = n
    paths: Counter = Counter()
    for n in nodes.values():
        s = int(n.get("samples", "0"))
        if not s:
            continue
        names = []
        cur = n
        while cur is not None:
            kind = cur.get("kind", "call")
            if kind in ("truncated", "blocked"):
                names.append(f"[{kind}]")
            else:
                file, offset = mods.get(cur.get("module"), ("", 0))
                addr = int(cur.get("addr"), 16) - (1 if kind == "call" else 0)
                sym = symbols.get(os.path.basename(file))
                names.append(sym.name(addr - offset) if sym else "?")
            cur = nodes.get(cur.get("parent"))
        paths[tuple(reversed(names))] += s
    return paths


def own_frames(path: tuple) -> tuple:
    """The program's functions of a path from main in (chain, the mode's
    dispatcher, left out)."""
    start = len(path) - 1 - path[::-1].index("main") if "main" in path else 0
    return tuple(f for f in path[start:] if f not in ("?", "chain"))


# ---- the companion and its flat profile ----------------------------------------------


def test_companion_is_valid_and_belongs_to_its_profile(built, workdir):
    p = callpath_run(built["cpt"], "chain", CHAIN_N)
    assert p.returncode == 0, p.stderr
    flat, comp, flat_path = only_pair(workdir)
    prof = comp.find("profile")
    assert prof.get("file") == flat_path.name
    assert prof.get("pid") == flat_path.name.split(".")[1]
    assert prof.get("hostname") == flat.findtext("hostname")
    sampling = comp.find("sampling")
    assert sampling.get("event") == "ITIMER_PROF" and sampling.get("threshold") == PERIOD_US
    assert sampling.get("maxdepth") == "128" and sampling.get("unwinder") == "libunwind"
    # every module the flat profile names has the same offset in the companion
    comp_mods = {(m.get("file"), m.get("offset")) for m in comp.findall("module")}
    flat_mods = {(m.get("file"), m.get("offset")) for m in flat.iter("module")}
    assert flat_mods <= comp_mods
    # the one-line end note
    line = [x for x in p.stderr.splitlines() if x.startswith("psrun: call paths: ") and "samples in" in x]
    assert len(line) == 1 and line[0].endswith("(libunwind)"), p.stderr
    assert p.stderr.splitlines()[-1] == line[0]  # psrun's last line
    assert f"psrun: report: {flat_path.name[:-4]}.callpaths.xml" in p.stderr.splitlines()


def totals(flat: etree._Element, comp: etree._Element) -> tuple[int, int, int]:
    t = comp.findall("thread")
    return (
        int(flat.findtext("hwpcprofiledata/totalsamples")),
        sum(int(x.get("samples")) for x in t),
        sum(int(x.get("lost")) for x in t),
    )


def test_flat_total_is_companion_samples_plus_lost(built, workdir):
    p = callpath_run(built["cpt"], "chain", CHAIN_N)
    assert p.returncode == 0, p.stderr
    flat, comp, _ = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert total > 100 and total == samples + lost
    for thread in comp.findall("thread"):  # a thread's nodes sum to its samples
        assert sum(int(n.get("samples", "0")) for n in thread.findall("node")) == int(thread.get("samples"))


def test_no_companion_without_callpath(built, workdir):
    p = run_tool("psrun", "--profile", "ITIMER_PROF", "--period", PERIOD_US, built["cpt"], "chain", "20000000")
    assert p.returncode == 0, p.stderr
    pairs = documents(workdir)
    assert len(pairs) == 1 and pairs[0][1] is None
    assert "call paths" not in p.stderr


def test_libunwind_is_not_linked():
    dyn = subprocess.run(["readelf", "-d", library_path()], capture_output=True, text=True, check=True).stdout
    assert "libunwind" not in dyn and "libgcc_s" not in dyn


# ---- the paths each unwinder gives ------------------------------------------------------

EXPECTED = {("main", "a", "work"), ("main", "b", "work"), ("main", "b", "c", "work")}


@pytest.mark.parametrize(
    "unwinder,program",
    [
        ("libunwind", "cpt"),
        ("libunwind", "cpt_fp"),
        ("libgcc", "cpt"),
        ("libgcc", "cpt_fp"),
        ("framepointer", "cpt_fp"),
    ],
)
def test_unwinder_gives_the_known_chains(built, workdir, unwinder, program):
    p = callpath_run(built[program], "chain", CHAIN_N, env={"PSUITE_UNWINDER": unwinder})
    assert p.returncode == 0, p.stderr
    _, comp, _ = only_pair(workdir)
    assert comp.find("sampling").get("unwinder") == unwinder
    if unwinder == "framepointer":
        assert "without frame pointers will have broken paths" in p.stderr
    paths = sample_paths(comp, comp.find("thread"), {program: Symbols(built[program])})
    in_work = {k: v for k, v in paths.items() if own_frames(k)[-1:] == ("work",)}
    total = sum(in_work.values())
    assert total > 100, paths
    right = sum(v for k, v in in_work.items() if own_frames(k) in EXPECTED)
    assert right >= 0.95 * total, in_work
    # each of the three chains is there, a -> work the largest (it gets twice b's work)
    shares = Counter({k: v for k, v in in_work.items() if own_frames(k) in EXPECTED})
    got = {own_frames(k) for k in shares}
    assert got == EXPECTED, shares
    by = Counter()
    for k, v in shares.items():
        by[own_frames(k)] += v
    assert by[("main", "a", "work")] > by[("main", "b", "work")] > by[("main", "b", "c", "work")]
    # the walk went on past main, through libc's start frames to _start
    if unwinder != "framepointer":
        assert all(k[0] == "_start" for k in in_work), in_work


def test_dlopened_library_in_the_path(built, workdir):
    p = callpath_run(built["cpt"], "dl", built["libcplib.so"], CHAIN_N)
    assert p.returncode == 0, p.stderr
    _, comp, _ = only_pair(workdir)
    files = {m.get("file") for m in comp.findall("module")}
    assert built["libcplib.so"] in files
    syms = {"cpt": Symbols(built["cpt"]), "libcplib.so": Symbols(built["libcplib.so"])}
    paths = sample_paths(comp, comp.find("thread"), syms)
    total = sum(paths.values())
    good = sum(v for k, v in paths.items() if own_frames(k) == ("main", "via_lib", "lib_entry", "lib_work"))
    assert total > 100 and good >= 0.9 * total, paths


def test_loader_busy_in_another_thread(built, workdir):
    """dlopen/dlclose in a loop on one thread (the loader's lock held most of
    the time, a library and its dependency unmapped each round) while both
    threads are sampled: the handler never waits for the loader, nor reads
    the program headers of an object being unmapped."""
    p = callpath_run(built["cpt"], "dlstress", built["libcpouter.so"], CHAIN_N)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout.split()[0]) > 10, p.stdout  # "N loads"
    flat, comp, _ = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert total == samples + lost and samples > 0.95 * total
    paths = sample_paths(comp, comp.find("thread"), {"cpt": Symbols(built["cpt"])})
    in_work = {k: v for k, v in paths.items() if own_frames(k)[-1:] == ("work",)}
    assert sum(v for k, v in in_work.items() if own_frames(k) in EXPECTED) >= 0.95 * sum(in_work.values())


def test_unwinder_lookups_in_the_handler_use_the_module_map(built, workdir):
    """libunwind's dl_iterate_phdr calls from the handler reach psuite's
    (they bind through the global scope, where the preloaded library comes
    first), which answers them from the module map without the loader's lock;
    PSUITE_VERBOSE also gives each tree's resident memory."""
    p = callpath_run(built["cpt"], "chain", CHAIN_N, env={"PSUITE_VERBOSE": "1"})
    assert p.returncode == 0, p.stderr
    line = next(x for x in p.stderr.splitlines() if "call paths: dl_iterate_phdr:" in x)
    assert int(line.split("dl_iterate_phdr: ")[1].split()[0]) > 0, line
    memory = next(x for x in p.stderr.splitlines() if "call paths: memory: thread 1:" in x)
    resident, nodes = int(memory.split(": ")[-1].split()[0]), int(memory.split(" for ")[1].split()[0])
    _, comp, _ = only_pair(workdir)
    assert nodes == len(comp.find("thread").findall("node"))
    assert 0 < resident <= 64 * 1024  # a few dozen contexts: a few pages, not the reserved megabytes


def test_program_calls_dl_iterate_phdr_itself(built, workdir):
    bare = subprocess.run([built["cpt"], "phdr"], capture_output=True, text=True, check=True).stdout
    p = callpath_run(built["cpt"], "phdr")
    assert p.returncode == 0, p.stderr
    assert "libc found" in p.stdout and int(p.stdout.split()[0]) > int(bare.split()[0])  # psuite's own objects too


def test_unloaded_plugin_keeps_its_module(workdir, tmp_path):
    src = TARGETS / "profile"
    for name in ("plugin_a", "plugin_b"):
        subprocess.run(
            ["cc", "-O2", "-shared", "-fPIC", "-o", str(tmp_path / f"{name}.so"), str(src / f"{name}.c")], check=True
        )
    subprocess.run(["cc", "-O2", "-o", str(tmp_path / "plugin_main"), str(src / "plugin_main.c"), "-ldl"], check=True)
    p = callpath_run(str(tmp_path / "plugin_main"), str(tmp_path / "plugin_a.so"), str(tmp_path / "plugin_b.so"), "0.3")
    assert p.returncode == 0, p.stderr
    flat, comp, _ = only_pair(workdir)
    ids = {m.get("file"): m.get("id") for m in comp.findall("module")}
    assert str(tmp_path / "plugin_a.so") in ids and str(tmp_path / "plugin_b.so") in ids
    leaves = Counter()
    for n in comp.find("thread").findall("node"):
        leaves[n.get("module")] += int(n.get("samples", "0"))
    # each plugin ran 0.3 s of CPU: both hold samples, the unloaded one under its own id
    assert leaves[ids[str(tmp_path / "plugin_a.so")]] > 100 and leaves[ids[str(tmp_path / "plugin_b.so")]] > 100
    total, samples, lost = totals(flat, comp)
    assert total == samples + lost


# ---- threads, truncation, lost --------------------------------------------------------


def test_every_thread_has_its_own_tree(built, workdir):
    p = callpath_run(built["cpt"], "threads", "3", "100000000", options=("-p",))
    assert p.returncode == 0, p.stderr
    pairs = documents(workdir)
    process = [(f, c) for f, c in pairs if c]
    assert len(process) == 1, pairs
    comp = companion_root(process[0][1])
    threads = comp.findall("thread")
    assert len(threads) == 4 and len({t.get("tid") for t in threads}) == 4
    assert sorted(int(t.get("id")) for t in threads) == [1, 2, 3, 4]  # numbered as the -p reports
    syms = {"cpt": Symbols(built["cpt"])}
    for t in threads[1:]:
        paths = sample_paths(comp, t, syms)
        total = sum(paths.values())
        good = sum(v for k, v in paths.items() if own_frames(k) == ("worker", "a", "work"))
        assert total > 30 and good >= 0.9 * total, paths
    # each thread's tree holds exactly its per-thread profile's samples (less what it lost)
    per_thread = {}
    for flat, _ in pairs:
        root = validate(flat, "hwpcreport-0.3.dtd")
        n = int(root.findtext("thread") or 0)
        if n:
            per_thread[n] = int(root.findtext("hwpcprofiledata/totalsamples"))
    for t in threads:
        assert per_thread[int(t.get("id"))] == int(t.get("samples")) + int(t.get("lost"))


def test_deep_recursion_is_truncated_and_marked(built, workdir):
    p = callpath_run(built["cpt"], "recurse", "1000", "400000")
    assert p.returncode == 0, p.stderr
    flat, comp, _ = only_pair(workdir)
    thread = comp.find("thread")
    truncated, samples = int(thread.get("truncated")), int(thread.get("samples"))
    assert samples > 50 and truncated >= 0.9 * samples
    trunc_nodes = [n for n in thread.findall("node") if n.get("kind") == "truncated"]
    assert len(trunc_nodes) == 1 and trunc_nodes[0].get("parent") == "0" and trunc_nodes[0].get("addr") is None
    paths = sample_paths(comp, thread, {"cpt": Symbols(built["cpt"])})
    deep = {k: v for k, v in paths.items() if k[0] == "[truncated]"}
    assert sum(deep.values()) == truncated
    # the innermost 128 frames kept: the leaf's (work), then 127 calls of rec
    main_path = max(deep, key=deep.get)
    assert len(main_path) == 1 + 128 and main_path[-1] == "work" and set(main_path[1:-1]) == {"rec"}
    total, s, lost = totals(flat, comp)
    assert total == s + lost


def test_full_tree_counts_lost_samples(built, workdir):
    p = callpath_run(built["cpt"], "chain", CHAIN_N, env={"PSUITE_CALLPATH_NODES": "6"})
    assert p.returncode == 0, p.stderr
    flat, comp, _ = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert lost > 0 and total == samples + lost
    thread = comp.find("thread")
    assert len(thread.findall("node")) <= 5
    line = next(x for x in p.stderr.splitlines() if "samples in" in x)
    assert f"{lost} lost" in line


SOURCES = {
    "ITIMER_VIRTUAL": ("--profile", "ITIMER_VIRTUAL"),
    "ITIMER_REAL": ("--profile", "ITIMER_REAL"),
    "task-clock overflow": ("--profile", "task-clock", "--period", "1000000"),
    "POSIX CPU-time timers": (),  # ITIMER_PROF without perf_event (the shim)
}


@pytest.mark.parametrize("source", SOURCES)
def test_every_sample_source_records_call_paths(built, workdir, tmp_path, source):
    env = {}
    if source == "POSIX CPU-time timers":
        shim = tmp_path / "libnoperf_shim.so"
        subprocess.run(
            ["cc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(TARGETS / "profile" / "noperf_shim.c"), "-ldl"],
            check=True,
        )
        env["LD_PRELOAD"] = str(shim)
    n = str(3 * int(CHAIN_N))  # the tick-driven timers give about 250 samples a second
    p = callpath_run(built["cpt"], "chain", n, env=env, options=SOURCES[source])
    assert p.returncode == 0, p.stderr
    flat, comp, _ = only_pair(workdir)
    if source == "POSIX CPU-time timers":
        assert "POSIX CPU-time timer" in flat.findtext("annotation")
    total, samples, lost = totals(flat, comp)
    assert total == samples + lost and samples >= 0.95 * total
    paths = sample_paths(comp, comp.find("thread"), {"cpt": Symbols(built["cpt"])})
    in_work = {k: v for k, v in paths.items() if own_frames(k)[-1:] == ("work",)}
    assert sum(in_work.values()) > 100, paths
    assert sum(v for k, v in in_work.items() if own_frames(k) in EXPECTED) >= 0.95 * sum(in_work.values())


# ---- ITIMER_REAL's blocked threads ------------------------------------------------------


def test_blocked_thread_sampled_under_a_blocked_node(built, workdir):
    p = callpath_run(built["cpt"], "sleep", "300", "50000000", options=("--profile", "ITIMER_REAL"))
    assert p.returncode == 0, p.stderr
    flat, comp, _ = only_pair(workdir)
    thread = comp.find("thread")
    blocked = [n for n in thread.findall("node") if n.get("kind") == "blocked"]
    assert len(blocked) == 1
    under = [n for n in thread.findall("node") if n.get("parent") == blocked[0].get("id")]
    assert under and all(n.get("kind") == "sample" for n in under)
    assert sum(int(n.get("samples", "0")) for n in under) > 100  # 300 ms asleep at 1 ms
    total, samples, lost = totals(flat, comp)
    assert total == samples + lost


# ---- configuration, options -------------------------------------------------------------


def profile_config(tmp: Path, callpath: str) -> Path:
    path = tmp / "prof.cfg"
    path.write_text(
        f'<ps_hwpc_profile class="itimer" callpath="{callpath}">'
        f'<ps_hwpc_event name="ITIMER_PROF" threshold="{PERIOD_US}"/></ps_hwpc_profile>\n'
    )
    return path


@pytest.mark.parametrize("value,depth", [("yes", "128"), ("16", "16"), ("no", None)])
def test_configuration_attribute(built, workdir, value, depth):
    cfg = profile_config(workdir, value)
    assert read_configuration(str(cfg)).callpath == int(depth or 0)  # the Python API reads it alike
    p = run_tool("psrun", "-c", str(cfg), built["cpt"], "chain", "50000000")
    assert p.returncode == 0, p.stderr
    pairs = documents(workdir)
    assert len(pairs) == 1
    if depth is None:
        assert pairs[0][1] is None
    else:
        assert companion_root(pairs[0][1]).find("sampling").get("maxdepth") == depth


def test_configuration_attribute_checked(built, workdir):
    cfg = profile_config(workdir, "deep")
    line = one_line_error(run_tool("psrun", "-c", str(cfg), built["cpt"], "chain", "1000"), "psrun")
    assert "callpath" in line and "deep" in line


@pytest.mark.parametrize("value", ["0", "1025", "abc", "99999999999999999999"])
def test_bad_depth_is_one_line(built, workdir, value):
    line = one_line_error(run_tool("psrun", f"--callpath={value}", built["cpt"], "chain", "1000"), "psrun")
    assert "--callpath" in line and "1024" in line


def test_callpath_with_counting_is_refused(built, workdir):
    one_line_error(run_tool("psrun", "--callpath", "-e", "task-clock", built["cpt"], "chain", "1000"), "psrun")
    assert not list(workdir.glob("*.xml"))


def test_depth_option_sets_maxdepth_and_help_explains(built, workdir):
    p = run_tool("psrun", "--callpath=8", built["cpt"], "chain", "50000000")
    assert p.returncode == 0, p.stderr
    _, comp, _ = only_pair(workdir)
    assert comp.find("sampling").get("maxdepth") == "8"
    assert comp.find("sampling").get("threshold") == "10000"  # ITIMER_PROF at its default period
    assert "--callpath[=DEPTH]" in run_tool("psrun", "--help").stdout


# ---- exit paths and fork ----------------------------------------------------------------


@pytest.mark.parametrize("end", ["exit", "_exit", "segv"])
def test_exit_paths_write_both_documents(built, workdir, end):
    p = callpath_run(built["cpt"], "chain", CHAIN_N, end)
    assert p.returncode == (0 if end != "segv" else -11), p.stderr
    flat, comp, _ = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert total > 100 and total == samples + lost


def test_fork_child_forgets_without_follow(built, workdir):
    p = callpath_run(built["cpt"], "fork", "50000000")
    assert p.returncode == 0, p.stderr
    assert len([c for _, c in documents(workdir) if c]) == 1


def test_fork_child_writes_its_own_with_follow(built, workdir):
    p = callpath_run(built["cpt"], "fork", "50000000", options=("-f",))
    assert p.returncode == 0, p.stderr
    pairs = documents(workdir)
    comps = [c for _, c in pairs if c]
    assert len(pairs) == 2 and len(comps) == 2
    pids = {companion_root(c).find("profile").get("pid") for c in comps}
    assert len(pids) == 2
    for flat, comp in pairs:
        total, samples, lost = totals(validate(flat, "hwpcreport-0.3.dtd"), companion_root(comp))
        assert total > 20 and total == samples + lost


def test_forks_while_other_threads_unwind(built, workdir):
    """Forks while two threads' samples are inside the unwinder (whose locks
    a child would inherit held): every followed child runs to its end and
    writes its pair.  A stress test that guards the fork handshake: the hang
    it prevents needs a fork to meet a held lock, which 800 forks here did
    not reproduce without the guard."""
    p = callpath_run(built["forkstorm"], "60", options=("-f", "-q"))
    assert p.returncode == 0, p.stderr
    pairs = documents(workdir)
    assert len(pairs) == 61 and all(c is not None for _, c in pairs)


def test_exec_writes_the_companion_before_it(targets, workdir):
    """exec'd into sh: the program's profile and companion are written before
    the exec (sh, preloaded too, writes its own pair)."""
    p = callpath_run(targets["exit_paths"], "exec")
    assert p.returncode == 4, p.stderr
    pairs = documents(workdir)
    assert pairs and all(c is not None for _, c in pairs), pairs
    mine = [(f, c) for f, c in pairs if f.name.startswith("exit_paths.")]
    assert len(mine) == 1
    total, samples, lost = totals(validate(mine[0][0], "hwpcreport-0.3.dtd"), companion_root(mine[0][1]))
    assert total == samples + lost


def test_failed_exec_takes_the_companion_back(targets, workdir):
    p = callpath_run(targets["exit_paths"], "exec_fail_after", "2")
    assert p.returncode == 5, p.stderr
    pairs = documents(workdir)
    assert len(pairs) == 1 and pairs[0][1] is not None, [x.name for x in workdir.iterdir()]
    flat, comp = validate(pairs[0][0], "hwpcreport-0.3.dtd"), companion_root(pairs[0][1])
    total, samples, lost = totals(flat, comp)
    assert total > 500 and total == samples + lost  # 3 threads x 0.3 s after the failed exec
    assert len(comp.findall("thread")) == 3


# ---- review fixes ---------------------------------------------------------------------


def wide_program(tmp: Path, width: int = 3000) -> str:
    """A hot function of `width` distinct instructions, each sampled about
    equally: one parent with thousands of sample children."""
    body = "".join(f'"addl ${k}, %%eax\\n\\t"\n' for k in range(width))
    src = tmp / "wide.c"
    src.write_text(
        "#include <stdio.h>\n"
        "__attribute__((noinline)) unsigned hot(unsigned x) {\n"
        "  unsigned a = x;\n"
        "  for (long k = 0; k < 1000000; k++)\n"
        f'    __asm__ volatile({body} : "+a"(a));\n'
        "  return a;\n"
        "}\n"
        'int main(void) { printf("%u\\n", hot(1)); return 0; }\n'
    )
    exe = tmp / "wide"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
    return str(exe)


def test_a_parent_with_thousands_of_children_loses_nothing(workdir, tmp_path):
    """3000 distinct sampled instructions under one caller: every sample has
    its call path (the hash probes past a parent's window of slots), and the
    tree's resident memory still grows with its contexts."""
    exe = wide_program(tmp_path)
    p = callpath_run(exe, env={"PSUITE_VERBOSE": "1"})
    assert p.returncode == 0, p.stderr
    flat, comp, _ = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert total > 500 and total == samples + lost
    assert lost == 0, (total, lost)
    nodes = comp.find("thread").findall("node")
    assert len(nodes) > 400  # more children than one window holds
    memory = next(x for x in p.stderr.splitlines() if "call paths: memory: thread 1:" in x)
    resident = int(memory.split(": ")[-1].split()[0])
    assert resident <= 64 * 1024 + 64 * len(nodes)  # pages for the contexts, not the reservation


def test_thread_running_before_sampling_never_enters_the_unwinder(workdir, tmp_path):
    """A thread a library constructor started before psuite's (as OpenBLAS
    starts its pool) is never warmed in its own normal context: the unwinder
    is not entered for it in the handler (its first use may malloc), so its
    samples are in the flat profile and its call paths are counted lost."""
    src = TARGETS / "profile"
    lib = tmp_path / "libctor_pool_lib.so"
    pic = ["cc", "-O2", "-shared", "-fPIC", "-o", str(lib)]
    subprocess.run([*pic, str(src / "ctor_pool_lib.c"), "-lpthread"], check=True)
    exe = tmp_path / "ctor_pool_main"
    subprocess.run(
        ["cc", "-O2", "-o", str(exe), str(src / "ctor_pool_main.c"), f"-L{tmp_path}", "-lctor_pool_lib",
         f"-Wl,-rpath,{tmp_path}"],
        check=True,
    )
    p = callpath_run(str(exe), env={"CTOR_POOL_CPU_MS": "400"})
    assert p.returncode == 0 and p.stdout == "pool done\n", p.stderr
    flat, comp, _ = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert total > 300 and total == samples + lost
    assert lost >= 0.9 * total, (total, samples, lost)  # the pool thread's: every one
    line = next(x for x in p.stderr.splitlines() if "samples in" in x)
    assert f"{lost} lost" in line


CHURN_C = r"""
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
static volatile pid_t last;
static void bye(int s) { (void)s; exit(0); }
static void *brief(void *a) {
    volatile unsigned x = 0;
    last = (pid_t)syscall(SYS_gettid);
    for (int k = 0; k < 20000; k++) x += k;
    return a;
}
static void *killer(void *a) {
    usleep(300000);
    for (;;) { pid_t t = last; if (t) syscall(SYS_tgkill, getpid(), t, SIGUSR1); usleep(50); }
    return a;
}
int main(void) {
    signal(SIGUSR1, bye);
    pthread_t k; pthread_create(&k, NULL, killer, NULL);
    for (;;) { pthread_t t; pthread_create(&t, NULL, brief, NULL); pthread_join(t, NULL); }
}
"""


def test_exit_from_a_handler_while_threads_end(workdir, tmp_path):
    """exit() from a program's handler in a thread that is ending (its tree
    being retired): the end of a thread holds the asynchronous signals back
    and publishes the retired tree before unmapping the live one, so the
    exit writer never reads an unmapped tree: both documents are written."""
    (tmp_path / "churn.c").write_text(CHURN_C)
    exe = tmp_path / "churn"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(tmp_path / "churn.c"), "-lpthread"], check=True)
    for _ in range(3):
        for f in workdir.glob("*.xml"):
            f.unlink()
        p = callpath_run(str(exe))
        assert p.returncode == 0, p.stderr
        flat, comp, _ = only_pair(workdir)
        total, samples, lost = totals(flat, comp)
        assert total == samples + lost


LONGJMP_C = r"""
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>
static sigjmp_buf back;
static volatile long jumps;
static void away(int s) { (void)s; jumps++; siglongjmp(back, 1); }
static double cpu(void) {
    struct timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + ts.tv_nsec / 1e9;
}
__attribute__((noinline)) static double leaf(int n) {
    double x = 0; for (int k = 0; k < n; k++) x += k * 0.5; return x;
}
__attribute__((noinline)) static double mid(int n) { return leaf(n) + 1; }
int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = away;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 150}, {0, 150}};
    setitimer(ITIMER_REAL, &it, NULL);
    volatile double sink = 0;
    sigsetjmp(back, 1);
    while (cpu() < 0.6) sink += mid(2000);
    it.it_value.tv_usec = it.it_interval.tv_usec = 0;
    setitimer(ITIMER_REAL, &it, NULL);
    printf("%ld\n", jumps);
    return 0;
}
"""


def test_program_handler_longjmping_out_of_ours_loses_nothing_after(workdir, tmp_path):
    """A program's SIGALRM handler that siglongjmps, every 150 us: were it
    to interrupt the SIGPROF handler mid-unwind, the tree would stay busy
    and every later sample lose its call path.  The asynchronous signals
    wait while ours runs, so the call paths are kept."""
    (tmp_path / "jump.c").write_text(LONGJMP_C)
    exe = tmp_path / "jump"
    subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-o", str(exe), str(tmp_path / "jump.c")], check=True)
    p = callpath_run(str(exe))
    assert p.returncode == 0 and int(p.stdout) > 500, p.stderr  # the program's handler ran, and jumped
    flat, comp, _ = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert total > 300 and total == samples + lost
    assert lost <= 0.05 * total, (total, samples, lost)


TWICE_C = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    (void)argc;
    void *h1 = dlopen(argv[1], RTLD_NOW), *h2 = dlopen(argv[1], RTLD_NOW);
    void (*run)(double) = (void (*)(double))dlsym(h1, "plugin_run");
    if (!h1 || !h2 || !run) return 1;
    run(0.25);
    dlclose(h1); /* one reference of two: still loaded */
    run(0.25);
    printf("done\n");
    return 0;
}
"""


def test_dlclose_that_does_not_unload_keeps_the_nodes(workdir, tmp_path):
    """A dlclose that only drops a reference: the library stays loaded, and
    its call-path nodes stay under its own module (not retagged as a retired
    one), the samples before and after sharing the same nodes."""
    subprocess.run(
        ["cc", "-O2", "-shared", "-fPIC", "-o", str(tmp_path / "plugin_a.so"), str(TARGETS / "profile" / "plugin_a.c")],
        check=True,
    )
    (tmp_path / "twice.c").write_text(TWICE_C)
    subprocess.run(["cc", "-O2", "-o", str(tmp_path / "twice"), str(tmp_path / "twice.c"), "-ldl"], check=True)
    p = callpath_run(str(tmp_path / "twice"), str(tmp_path / "plugin_a.so"))
    assert p.returncode == 0 and p.stdout == "done\n", p.stderr
    flat, comp, _ = only_pair(workdir)
    plugin = {m.get("id") for m in comp.findall("module") if m.get("file") == str(tmp_path / "plugin_a.so")}
    held = Counter()
    for n in comp.find("thread").findall("node"):
        if n.get("module") in plugin:
            held[n.get("module")] += int(n.get("samples", "0"))
    assert sum(held.values()) > 300 and len(held) == 1, held


COROUTINE_C = r"""
#include <stdio.h>
#include <sys/mman.h>
#include <ucontext.h>
static ucontext_t main_ctx, co_ctx;
static char *hole;
/* rbp used as a general register, pointing into an unmapped page just
 * above the coroutine's stack: between it and the thread's stack top */
static void spin(void) {
    long n = 1500000000L;
    __asm__ volatile("push %%rbp\n\tmov %1, %%rbp\n1:\n\tdec %0\n\tjnz 1b\n\tpop %%rbp"
                     : "+r"(n) : "r"(hole) : "memory", "cc");
}
int main(void) {
    size_t size = 1 << 20, page = 4096;
    char *stack = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED) return 1;
    hole = stack + size;
    munmap(hole, page);
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = size;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, spin, 0);
    swapcontext(&main_ctx, &co_ctx);
    printf("back\n");
    return 0;
}
"""


def test_frame_pointer_walk_on_a_coroutine_stack(workdir, tmp_path):
    """A makecontext stack with rbp pointing into unmapped memory below the
    thread's stack top: the frame-pointer walk only runs when the stack
    pointer is on the thread's own stack, so the handler records the PC
    alone there instead of faulting."""
    (tmp_path / "co.c").write_text(COROUTINE_C)
    exe = tmp_path / "co"
    subprocess.run(["cc", "-O2", "-mno-red-zone", "-o", str(exe), str(tmp_path / "co.c")], check=True)
    p = callpath_run(str(exe), env={"PSUITE_UNWINDER": "framepointer"})
    assert p.returncode == 0 and p.stdout == "back\n", p.stderr
    flat, comp, _ = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert total > 100 and total == samples + lost and samples >= 0.9 * total


HOTLIB_C = r"""
__attribute__((noinline)) double inner(double x) { for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9; return x; }
__attribute__((noinline)) double middle(double x) { return inner(x) + 1; }
double hot(long n) { double s = 0; for (long k = 0; k < n; k++) s += middle(s * 1e-9); return s; }
"""

RUNPATH_MAIN_C = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
    void *h = dlopen("libhot.so", RTLD_NOW); /* a bare name: found by the executable's RUNPATH */
    if (!h) { puts(dlerror()); return 1; }
    double (*f)(long) = (double (*)(long))dlsym(h, "hot");
    printf("%g\n", f(300000));
    return 0;
}
"""


def test_paths_stopping_in_an_object_dlopened_by_runpath_are_truncated(workdir, tmp_path):
    """dlopen("libhot.so") from an executable with a RUNPATH is passed on as
    the wrapper's last call (the loader must see the program as caller), so
    the module map is not refreshed and the unwinder stops at the leaf in
    the new object: those paths are counted truncated, not complete."""
    (tmp_path / "hot.c").write_text(HOTLIB_C)
    (tmp_path / "dl.c").write_text(RUNPATH_MAIN_C)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(tmp_path / "libhot.so"), str(tmp_path / "hot.c")],
                   check=True)
    subprocess.run(
        ["cc", "-O2", "-o", str(tmp_path / "dl"), str(tmp_path / "dl.c"), "-ldl", f"-Wl,-rpath,{tmp_path}",
         "-Wl,--enable-new-dtags"],
        check=True,
    )
    p = callpath_run(str(tmp_path / "dl"))
    assert p.returncode == 0, p.stderr
    flat, comp, flat_path = only_pair(workdir)
    total, samples, lost = totals(flat, comp)
    assert total > 200 and total == samples + lost
    thread = comp.find("thread")
    nodes = {n.get("id"): n for n in thread.findall("node")}
    complete = 0  # samples whose path reaches main's module (the executable) from a leaf outside it
    for n in nodes.values():
        if not int(n.get("samples", "0")):
            continue
        kinds = []
        at = n
        while at is not None:
            kinds.append(at.get("kind"))
            at = nodes.get(at.get("parent"))
        if "truncated" not in kinds:
            complete += int(n.get("samples"))
    # nearly every sample is in libhot.so, whose callers the unwinder could not find
    assert int(thread.get("truncated")) >= 0.8 * samples, (thread.get("truncated"), samples)
    assert complete <= 0.2 * samples
    # and psprocess says why: the unwinder stopped, not a stack deeper than psrun records
    text = run_tool("psprocess", "--calltree", "top-down", str(flat_path))
    assert text.returncode == 0, text.stderr
    truncated = int(thread.get("truncated"))
    assert f"Truncated               : {truncated:,} ({truncated:,} where the unwinder could not go on)" in \
        text.stdout, text.stdout[:2000]
