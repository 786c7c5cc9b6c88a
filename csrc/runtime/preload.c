/* preload.c - whole-program measurement for psrun.  With PSUITE_PRELOAD=1
 * in the environment, the library (loaded through LD_PRELOAD) interposes
 * __libc_start_main, starts counting right before the program's own code
 * (its constructors, then main) and writes the report when the program
 * exits.  The program's own behaviour, output and
 * exit status are untouched. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "../common/fsize_limit.h"

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static main_fn real_main;
static pid_t measured_pid;
static int prepared = PS_HWPC_ESTATE; /* result of psrun_prepare() */

/* What psrun counts when none of the requested events can be counted:
 * kernel software counters, which exist wherever perf_event does. */
static const char FALLBACK_EVENTS[] = "task-clock,page-faults,context-switches";
static const char FALLBACK_SAID[] = "task-clock, page-faults, context-switches";

static int profiling, finished;
/* The thread writing the report (0: none yet) and whether it is done: a
 * thread ending the process while another writes waits for it, bounded, so
 * that its exit_group does not kill the writer mid-report. */
static int writer_tid, written;
static int exiting_tid; /* the first thread in exit() */

#define WAIT_WRITER_MS 5000

/* The report written before an exec, removed if the exec fails (its name
 * kept, so that the final report under that name is not announced again);
 * with psrun -p the threads' reports too (thread_counts.c), and when
 * profiling the profiles (profile_report.c). */
static char exec_report[4096];
static int exec_pending, exec_threads_pending;

static int my_tid(void) { return (int)syscall(SYS_gettid); }

/* Async-signal-safe: only atomics and nanosleep. */
static void wait_for_writer(void)
{
    struct timespec ms = {0, 1000000};
    for (int k = 0; k < WAIT_WRITER_MS && !__atomic_load_n(&written, __ATOMIC_SEQ_CST); k++)
        syscall(SYS_nanosleep, &ms, NULL);
}
static void child_after_fork(void);
static void child_follow(void);

/* psrun -p, read when measurement starts (the end may be a signal handler,
 * where getenv is not to be trusted with a program changing its environment). */
static int per_thread_flag = -1;
static int per_thread(void)
{
    if (per_thread_flag < 0)
        per_thread_flag = ps_env_flag("PSUITE_PER_THREAD");
    return per_thread_flag;
}

/* psrun -R's resource file, if this process is the one psrun started
 * (PSUITE_RESOURCE_PID, set by psrun in its child before the exec): the
 * processes psrun -f follows, children of it, write none. */
static const char *resource_file(void)
{
    const char *path = getenv("PSUITE_RESOURCE_FILE"), *pid = getenv("PSUITE_RESOURCE_PID");
    if (!path || !*path)
        return NULL;
    if (pid && *pid && strtol(pid, NULL, 10) != (long)getpid())
        return NULL;
    return path;
}

/* psrun -R's file is psrun's own unlinked file, reached through its
 * descriptor (/proc/PID/fd/N, a link to follow), or a path of the caller's
 * choosing (never through a symlink planted there). */
static int resource_open_flags(const char *path)
{
    if (strncmp(path, "/proc/", 6) == 0)
        return O_WRONLY | O_TRUNC | O_CLOEXEC;
    return O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
}

/* psrun -R: the program's peak memory, read by itself at its end (after
 * that the kernel releases it), for psrun's resource report. */
static char peak_file[PATH_MAX]; /* resource_file(), found when measurement starts */

static void find_peak_file(void)
{
    const char *path = resource_file();
    peak_file[0] = '\0';
    if (path && strlen(path) < sizeof peak_file)
        ps_strlcpy(peak_file, path, sizeof peak_file);
}

/* "VmHWM:   1234 kB" -> 1234; 0 when absent */
static long long status_kb(const char *status, const char *key)
{
    const char *p = strstr(status, key);
    long long v = 0;
    if (!p)
        return 0;
    for (p += strlen(key); *p == ' ' || *p == '\t'; p++)
        ;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    return v;
}

/* Async-signal-safe: no stdio, no environment (it runs at the end). */
static void note_peak_memory(void)
{
    char status[4096], line[64];
    if (!peak_file[0] || ps_read_file("/proc/self/status", status, sizeof status) <= 0)
        return;
    ps_buf_t b;
    ps_buf_fixed(&b, line, sizeof line);
    ps_buf_ll(&b, status_kb(status, "VmHWM:"));
    ps_buf_str(&b, " ");
    ps_buf_ll(&b, status_kb(status, "VmPeak:"));
    ps_buf_str(&b, "\n");
    int fd = open(peak_file, resource_open_flags(peak_file), 0600);
    if (fd >= 0) {
        if (ps_write_fits(fd, strlen(line)) && write(fd, line, strlen(line)) < 0) { /* nothing more to do: psrun falls back on its samples */
        }
        close(fd);
    }
}

/* The reports of the records finish() froze: written by the collector
 * (collector.c), or here when there is none. */
static int write_end(const char *why)
{
    if (profiling) {
        ps_profile_set_note(why); /* again: a checkpoint may have run meanwhile */
        return ps_profile_write(per_thread()) < 0 ? -1 : 0;
    }
    int rc = ps_hwpc_stop(NULL);
    if (per_thread())
        ps_thread_counts_finish();
    return rc == PS_HWPC_OK ? 0 : -1;
}

/* In the collector: the process ended without finish() (SIGKILL,
 * exit_group, a crash): what was recorded until then, and how it ended. */
static void write_dead(const char *how)
{
    long long user, sys;
    ps_collector_cpu(&user, &sys);
    if (profiling) {
        ps_sampler_stop_dead(user, sys);
        char note[256];
        ps_strlcpy(note, how, sizeof note);
        unsigned long long paths_dropped;
        if (ps_sampler_drop_unshared(&paths_dropped))
            ps_append_part(note, sizeof note, "the samples of threads recorded beyond the shared memory are lost");
        else if (paths_dropped)
            ps_append_part(note, sizeof note, "the call paths of threads recorded beyond the shared memory are lost");
        ps_profile_set_note(note);
        ps_profile_write(per_thread());
        return;
    }
    if (per_thread())
        ps_thread_counts_stop_dead();
    int running = per_thread() ? ps_thread_counts_running() : 0;
    if (per_thread())
        ps_hwpc_annotate(PS_TOTAL_MARK);
    if (running) {
        char text[160];
        ps_buf_t b;
        ps_buf_fixed(&b, text, sizeof text);
        ps_buf_str(&b, "the own counts of the ");
        ps_buf_ll(&b, running);
        ps_buf_str(&b, running == 1 ? " thread" : " threads");
        ps_buf_str(&b, " still running went with the process (they are in this total)");
        ps_hwpc_annotate(text);
    }
    ps_hwpc_annotate(how);
    ps_hwpc_freeze_dead(user, sys);
    ps_hwpc_stop(NULL);
    if (per_thread())
        ps_thread_counts_write_dead(how);
}

/* In the collector, every checkpoint period: the reports so far. */
static void write_checkpoint(void)
{
    static const char note[] = "checkpoint: the process was still running";
    ps_report_checkpointing(1);
    if (profiling) {
        ps_profile_set_note(note);
        ps_profile_write(per_thread());
        ps_profile_set_note(NULL);
    } else
        ps_hwpc_checkpoint(note);
    ps_report_checkpointing(0);
}

/* First thing in the collector: ITIMER_REAL's sampler thread where the
 * program holds no descriptor, then what the report's header says of the
 * machine, out of the program's time. */
static void collector_started(void)
{
    ps_sampler_collector_started();
    ps_report_prepare_machine();
}

static const ps_collector_writers_t collector_writers = {write_end, write_dead, write_checkpoint, collector_started};

/* The end of measurement, however the program ends (atexit, or exitpaths.c
 * for _exit, exec and fatal signals): once, and only in the measured
 * process (a child forked without exec inherits the hooks). */
static void finish(const char *why)
{
    if (getpid() != measured_pid)
        return;
    if (__atomic_exchange_n(&finished, 1, __ATOMIC_SEQ_CST)) {
        /* another thread writes: wait for it (not for ourselves, when a
         * signal or an exit path re-enters on the writing thread) */
        if (__atomic_load_n(&writer_tid, __ATOMIC_SEQ_CST) != my_tid())
            wait_for_writer();
        return;
    }
    __atomic_store_n(&written, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&writer_tid, my_tid(), __ATOMIC_SEQ_CST);
    note_peak_memory();
    if (why == ps_exec_why && !profiling) {
        /* the exec may fail: resume() takes these reports back */
        if (per_thread()) {
            ps_thread_counts_exec_freeze();
            exec_threads_pending = 1;
        }
        if (exec_report[0]) /* taken back after an earlier failed exec: announced already */
            ps_report_announced(exec_report);
        char total_why[128] = PS_TOTAL_MARK;
        ps_append_part(total_why, sizeof total_why, why);
        if (ps_hwpc_exec_write(per_thread() ? total_why : why, exec_report, sizeof exec_report) == PS_HWPC_OK)
            exec_pending = 1;
        ps_collector_exec_written(1); /* the collector writes nothing when this image ends by the exec */
        if (per_thread())
            ps_thread_counts_exec_write(why);
    } else if (why == ps_exec_why) {
        /* sampling paused, not stopped: if the exec fails, resume() takes
         * the profile back and sampling goes on */
        ps_sampler_pause(1);
        ps_profile_set_note(why);
        ps_profile_write_exec(per_thread());
        exec_pending = 1;
        ps_collector_exec_written(1);
    } else if (profiling) {
        /* an ordinary end (not a signal handler's): libraries glibc loaded
         * itself (NSS, gconv), which bypass the dlopen wrapper, mapped too */
        if (!why)
            ps_modules_refresh();
        ps_sampler_stop();
        ps_profile_set_note(why);
        if (ps_shared_overflowed() || !ps_collector_handoff(why)) /* overflowed: not all of it is shared */
            write_end(why);
    } else {
        if (per_thread()) {
            ps_hwpc_annotate(PS_TOTAL_MARK);
            ps_thread_counts_freeze(); /* threads beyond PS_MAX_THREADS are noted in the total */
        }
        ps_hwpc_annotate(why);
        if (exec_report[0]) /* taken back after a failed exec: announced already */
            ps_report_announced(exec_report);
        ps_hwpc_freeze();
        if (ps_shared_overflowed() || !ps_collector_handoff(why))
            write_end(why);
    }
    __atomic_store_n(&written, 1, __ATOMIC_SEQ_CST);
}

/* exit() from two threads at once: glibc lets the second run the handlers
 * that are left (ours already taken by the first) and end the process while
 * the first is still writing the report.  The first thread in exit() goes
 * on; a later one waits until the report is written, then exits as it
 * would have. */
typedef void (*exit_fn)(int);
PS_API __attribute__((noreturn)) void exit(int status)
{
    static exit_fn real_exit;
    if (!real_exit)
        real_exit = (exit_fn)dlsym(RTLD_NEXT, "exit");
    int me = my_tid(), first = 0;
    if (measured_pid && getpid() == measured_pid &&
        !__atomic_compare_exchange_n(&exiting_tid, &first, me, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
        first != me)
        wait_for_writer();
    if (real_exit)
        real_exit(status);
    _exit(status);
}

/* An exec that failed: the program goes on, and so does measurement; the
 * reports written before the exec are taken back (one report per image). */
static void resume(void)
{
    if (getpid() != measured_pid || !__atomic_load_n(&finished, __ATOMIC_SEQ_CST))
        return;
    ps_collector_exec_written(0);
    if (profiling) {
        if (!exec_pending)
            return;
        exec_pending = 0;
        ps_profile_take_back();
        ps_profile_set_note(NULL);
        ps_sampler_pause(0);
        __atomic_store_n(&finished, 0, __ATOMIC_SEQ_CST);
        return;
    }
    if (exec_threads_pending) {
        exec_threads_pending = 0;
        ps_thread_counts_exec_failed();
    }
    if (exec_pending) {
        /* counting goes on from where it was */
        exec_pending = 0;
        ps_hwpc_exec_failed(exec_report);
        __atomic_store_n(&finished, 0, __ATOMIC_SEQ_CST);
    } else if (ps_hwpc_yielded() || ps_hwpc_start() == PS_HWPC_OK)
        __atomic_store_n(&finished, 0, __ATOMIC_SEQ_CST);
}

static void at_exit(void) { finish(NULL); }

/* The configuration is refused before the program runs (the message is
 * out): exit 2, and tell psrun -R through its resource file, so that it
 * writes no resource report of a program that never ran. */
static __attribute__((noreturn)) void refuse(void)
{
    const char *path = resource_file();
    if (path) {
        int fd = open(path, resource_open_flags(path), 0600);
        if (fd >= 0) {
            if (ps_write_fits(fd, 8) && write(fd, "refused\n", 8) < 0) { /* psrun then writes its report: nothing more to do */
            }
            close(fd);
        }
    }
    _exit(2);
}

/* Before a fork: no thread is between opening a descriptor of psuite's and
 * recording it (the child closes the recorded ones), and no signal handler
 * is inside an unwinder. */
static void fork_prepare(void)
{
    int saved = errno;
    ps_fd_window_fork_prepare();
    ps_unwind_fork_prepare();
    errno = saved;
}

static void parent_after_fork(void)
{
    ps_unwind_fork_done();
    ps_fd_window_fork_done(0);
}

/* This process is the measured one from now on; the hooks that end its
 * measurement are set once (they stay valid for forked children, which
 * check the pid). */
static int watch_process(void)
{
    static int hooked;
    measured_pid = getpid();
    if (hooked++)
        return 0;
    pthread_atfork(fork_prepare, parent_after_fork, child_after_fork);
    ps_exitpaths_init(finish, resume);
    return atexit(at_exit);
}

/* Memory for the records the collector reads (shared.c): address space
 * only (pages are used as touched), reserved before the collector is
 * forked and grown after as needed; where RLIMIT_AS is set, only what the
 * first thread's records need, so that the program keeps its room. */
static size_t profile_arena_bytes(int callpath)
{
    /* with no RLIMIT_AS, address space costs nothing: room for thousands
     * of threads without growing */
    size_t want = callpath ? (size_t)16 << 30 : (size_t)4 << 30;
    const char *env = getenv("PSUITE_ARENA_MB");
    if (env && *env) {
        char *end;
        unsigned long long mb = strtoull(env, &end, 10);
        if (!*end && mb > 0 && mb < (1ULL << 24))
            want = (size_t)mb << 20;
    }
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        /* the program's room first: the arena grows with what is recorded */
        size_t cap = ps_sampler_table_bytes() + ((size_t)1 << 20);
        if (want > cap)
            want = cap;
    }
    return want;
}

/* The same for psrun -p's per-thread count records (counting mode). */
static size_t count_arena_bytes(void)
{
    struct rlimit as;
    size_t first = ps_thread_counts_bytes() + ((size_t)1 << 20);
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
        return first;
    return ps_thread_counts_all_bytes() + ((size_t)1 << 20);
}

static void share_records(size_t arena_bytes)
{
    for (;; arena_bytes /= 2) /* smaller where the address space is short */
        if (ps_shared_init(arena_bytes) == 0 || arena_bytes < ((size_t)4 << 20))
            return;
}

/* No collector: the process writes its own reports, at its exit or at a
 * fatal signal, with the machine part gathered now (not at the end). */
static void write_own_reports(void)
{
    ps_exitpaths_hook_fatal();
    ps_report_prepare_machine();
}

/* The collector (collector.c) from here on writes this process's reports;
 * without one (it could not be started) the process writes them itself. */
static void start_collector(void)
{
    if (!ps_shared_active()) {
        write_own_reports();
        return;
    }
    if (ps_collector_start(&collector_writers) == 0) {
        /* the collector holds the counters; the program keeps no descriptor
         * of them.  With psrun -p only where the limit leaves no room above
         * it: the threads' own counters are in the program otherwise, and
         * the total beside them is stopped in the same instant as theirs (a
         * round trip to the collector would let the threads still running
         * count on in the total only); the collector holding both stops
         * them together (thread_counts.c). */
        int threads_outside = 0;
        if (!profiling && (!per_thread() || (threads_outside = ps_thread_counts_hand_over())))
            ps_hwpc_hand_over();
        /* a fatal signal is the collector's to see, but where it would not
         * know how the process ended, and under counting -p with the
         * threads' counters in the program, which go with it */
        if ((!profiling && per_thread() && !threads_outside) || !ps_collector_sees_deaths())
            ps_exitpaths_hook_fatal();
    } else {
        write_own_reports();
        if (ps_cct_verbose())
            ps_message("no collector process: the reports are written by the program itself");
    }
}

/* A preparation about to be made: what it gathers about the machine (not
 * the program) is left to the collector, out of the program's time. */
static void prepare_outside(void)
{
    if (ps_shared_active())
        ps_report_defer_machine();
}

/* Profiling from before the program's constructors to its exit.  Returns
 * 0 when the configuration is not a profile. */
static int psrun_profile(void)
{
    ps_profcfg_t cfg;
    char why[1024] = "";
    int kind = ps_config_profile(&cfg, why, sizeof why);
    const char *cp = getenv("PSUITE_CALLPATH");
    if (kind == 0 && cp && *cp && strcmp(cp, "no") != 0) {
        ps_message("--callpath records the call paths of samples, but the configuration %s counts events; give "
                   "--profile or a <ps_hwpc_profile> file", getenv("PS_HWPC_CONFIG") ? getenv("PS_HWPC_CONFIG") : "");
        refuse();
    }
    if (kind == 0)
        return 0;
    if (kind < 0) {
        ps_message("%s", why);
        refuse();
    }
    share_records(profile_arena_bytes(cfg.callpath));
    ps_sampler_starting(1);
    int rc = ps_sampler_init(&cfg, why, sizeof why);
    if (rc == PS_HWPC_ENOEVENT || rc == PS_HWPC_ECONFIG) {
        ps_message("%s", why);
        refuse();
    }
    if (rc != PS_HWPC_OK) {
        ps_sampler_starting(0);
        ps_message("cannot profile here (%s); the program runs unprofiled", why);
        return 1;
    }
    profiling = 1;
    ps_hwpc_profile_psrun(); /* the program's ps_hwpc_suspend and ps_hwpc_start act on this sampling */
    prepare_outside();
    ps_report_prepare(); /* what the profile's header says, gathered now, not at the end */
    ps_modules_refresh(); /* the module map, kept current by dlopen and dlclose from now on */
    watch_process();
    start_collector();
    return 1; /* the samples are the program's from the C library's start on (ps_sampler_starting(0) below) */
}

static void counted_list(char *out, size_t len)
{
    const char *const *names;
    size_t used = 0;
    out[0] = '\0';
    if (ps_hwpc_eventnames(&names))
        return;
    for (int k = 0; names[k] && used < len; k++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", k ? ", " : "", names[k]);
}

/* Resolve the events once, before the program runs: say what is dropped
 * and why, fall back to software events when nothing else counts.  An
 * unknown event or a broken configuration is returned for the caller to
 * act on (the messages are out already). */
static int psrun_prepare(void)
{
    int quiet = ps_quiet();
    char dropped[1024], counted[1024];
    int rc = ps_hwpc_init();
    if (rc == PS_HWPC_ENOEVENT) {
        char unknown[1024];
        size_t used = 0;
        for (int i = 0, n = ps_hwpc_numrequested(); i < n && used < sizeof unknown; i++) {
            const char *name, *why;
            int status;
            if (!ps_hwpc_eventstatus(i, &name, &status, &why) && status == PS_EVENT_UNKNOWN)
                used += (size_t)snprintf(unknown + used, sizeof unknown - used, "%s%s", used ? ", " : "", name);
        }
        ps_message("unknown event %s (see psinv -e for the events here)", unknown);
        return rc;
    }
    if (rc == PS_HWPC_ENOCOUNT) {
        char note[1024];
        ps_hwpc_dropped(dropped, sizeof dropped, !quiet);
        snprintf(note, sizeof note, "%s; counted instead: %s", dropped, FALLBACK_SAID);
        if (!quiet)
            ps_message("none of the requested events can be counted here; counting %s instead", FALLBACK_SAID);
        rc = ps_hwpc_init_events(FALLBACK_EVENTS, note);
        if (rc != PS_HWPC_OK)
            ps_message("nothing to count: %s", ps_hwpc_strerror(rc));
        return rc;
    }
    if (rc != PS_HWPC_OK || quiet)
        return rc;
    if (ps_hwpc_dropped(dropped, sizeof dropped, 1)) {
        const char *version = NULL;
        const char *backend = ps_hwpc_backend(&version);
        counted_list(counted, sizeof counted);
        ps_message("counting %s (%s %s)", counted, backend, version ? version : "");
    }
    if (ps_hwpc_multiplexed())
        ps_message("more events than hardware counters: counts are multiplexed and scaled");
    return rc;
}

/* psrun -f: a forked child is measured on its own, under its own pid (its
 * exec'd images too, since the library stays in LD_PRELOAD).  Without -f
 * the child is not measured: its pid is not the measured one. */
static void child_after_fork(void)
{
    int saved = errno;
    ps_fd_window_fork_done(1);
    ps_unwind_fork_done();
    __atomic_store_n(&exiting_tid, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&writer_tid, 0, __ATOMIC_SEQ_CST);
    int follow = ps_env_flag("PSUITE_FOLLOW");
    /* The parent's threads are not the child's: their records go (their
     * descriptors closed, the parent's counters untouched), and no lock a
     * parent's thread held while forking is ever waited for.  Without -f
     * the child is not measured: every hook passes straight through. */
    ps_thread_counts_after_fork(0);
    ps_threads_after_fork(!follow);
    /* the parent's counters: the child's copies of their descriptors
     * closed (never switched off), the set's lock anew */
    ps_hwpc_forget_after_fork();
    ps_config_after_fork();
    find_peak_file(); /* psrun -R's file is the started process's, not a child's */
    if (!follow) {
        if (profiling)
            ps_sampler_forget_after_fork();
        errno = saved;
        return;
    }
    child_follow();
    errno = saved;
}

static void child_measure(void);

/* The child's own collector, or none (its measurement could not start, or
 * was not wanted): the parent's collector told either way. */
static void child_follow(void)
{
    child_measure();
    ps_collector_child_settled();
}

static void child_measure(void)
{
    ps_shared_again(); /* its records shared with a collector of its own */
    if (profiling) {
        ps_sampler_restart_after_fork();
        ps_hwpc_profile_psrun();
        prepare_outside();
        ps_report_prepare(); /* this child's pid */
        watch_process();
        __atomic_store_n(&finished, 0, __ATOMIC_SEQ_CST);
        start_collector();
        return;
    }
    if (prepared != PS_HWPC_OK)
        return;
    /* the parent said what is counted; the child's reports are still noted */
    if (!ps_env_flag("PSUITE_QUIET"))
        setenv("PSUITE_QUIET", "reports", 1);
    prepare_outside();
    if (ps_hwpc_init() == PS_HWPC_OK) {
        if (per_thread() && ps_thread_counts_init())
            ps_message("per-thread counts are not available; the process total is still counted");
        if (ps_hwpc_start() == PS_HWPC_OK) {
            watch_process();
            __atomic_store_n(&finished, 0, __ATOMIC_SEQ_CST);
            start_collector();
        }
    }
}

static int psrun_start(void)
{
    if (watch_process())
        return PS_HWPC_ESTATE;
    if (per_thread() && ps_thread_counts_init())
        ps_message("per-thread counts are not available; the process total is still counted");
    return ps_hwpc_start();
}

PS_API int ps_hwpc_psrun(void)
{
    int rc = psrun_prepare();
    if (rc == PS_HWPC_OK && (rc = psrun_start()) == PS_HWPC_OK)
        ps_exitpaths_hook_fatal(); /* no collector here: the process writes its report */
    return rc;
}

/* Take this library out of LD_PRELOAD so programs the measured one starts
 * are not measured (psrun without -f). */
static void unpreload_self(void)
{
    Dl_info info;
    const char *preload = getenv("LD_PRELOAD");
    if (!preload || !dladdr((void *)unpreload_self, &info) || !info.dli_fname)
        return;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    char *kept = malloc(strlen(preload) + 1); /* at most as long: no other library dropped */
    if (!kept)
        return;
    size_t used = 0;
    const char *p = preload;
    while (*p) {
        size_t len = strcspn(p, ": ");
        const char *slash = memrchr(p, '/', len);
        const char *tok_base = slash ? slash + 1 : p;
        size_t base_len = len - (size_t)(tok_base - p);
        int mine = base_len == strlen(base) && memcmp(tok_base, base, base_len) == 0;
        if (!mine && len) {
            if (used)
                kept[used++] = ':';
            memcpy(kept + used, p, len);
            used += len;
        }
        p += len;
        p += strspn(p, ": ");
    }
    kept[used] = '\0';
    if (used)
        setenv("LD_PRELOAD", kept, 1);
    else
        unsetenv("LD_PRELOAD");
    free(kept);
}

/* main's return goes through exit() above (the C library would call its
 * own, which a concurrent exit() could not wait for). */
static int measured_main(int argc, char **argv, char **envp)
{
    exit(real_main(argc, argv, ps_environ_for_main(envp)));
}

/* Profiling: what starts with main (ITIMER_REAL's sampler thread, after the
 * program's constructors), then the program. */
static int profiled_main(int argc, char **argv, char **envp)
{
    int saved = errno; /* what the constructors left there is the program's */
    ps_sampler_at_main();
    errno = saved;
    return real_main(argc, argv, ps_environ_for_main(envp));
}

PS_API int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end)
{
    int found_errno = errno; /* what the program gets at its start, whatever psuite's start-up leaves */
    start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real) { /* cannot happen with glibc; never leave the program without a start */
        ps_message("cannot find the C library's __libc_start_main; the program is not measured");
        _exit(127);
    }
    if (ps_env_flag("PSUITE_PRELOAD")) {
        ps_collector_title_area(argc, argv);
        ps_notes_init();
        per_thread_flag = ps_env_flag("PSUITE_PER_THREAD");
        find_peak_file();
        int follow = ps_env_flag("PSUITE_FOLLOW");
        ps_report_manifest_init(follow);
        if (!follow)
            unpreload_self();
        /* Events are resolved here, before the program's own constructors,
         * so a bad event list stops it before any of its code has run. */
        if (psrun_profile()) {
            real_main = main;
            main = profiled_main;
        } else {
            share_records(per_thread() ? count_arena_bytes() : 0);
            prepare_outside();
            prepared = psrun_prepare();
            if (prepared == PS_HWPC_ENOEVENT || prepared == PS_HWPC_ECONFIG)
                refuse();
            real_main = main;
            main = measured_main;
            /* Counting starts before the program's own constructors: their
             * work is the program's, and one that calls exit() still gets
             * its report. */
            if (prepared == PS_HWPC_OK && psrun_start() == PS_HWPC_OK)
                start_collector();
        }
        ps_environ_remove_psuite(follow);
        ps_sampler_starting(0);
    }
    errno = found_errno;
    return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}
