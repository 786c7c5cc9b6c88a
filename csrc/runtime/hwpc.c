/* hwpc.c - the public API (ps_hwpc_*): one process-wide event set driven
 * through the PAPI or perf_event backend, or, with a <ps_hwpc_profile>
 * configuration, the process's sampling (sampler.c).  psrun uses the same
 * calls from the preloaded constructor (preload.c); when psrun profiles,
 * the program's calls suspend and resume psrun's sampling. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

enum { ST_NONE, ST_READY, ST_RUNNING, ST_SUSPENDED };

static ps_lock_t lock; /* util.c: its holder known atomically, bounded at the end */
static int state = ST_NONE;
/* Profiling through this API: the sampler set up by ps_hwpc_init
 * (PROF_OWN), or psrun's (PROF_PSRUN), which runs from before main and
 * which the program's calls act on; PROF_NONE: counting. */
enum { PROF_NONE, PROF_OWN, PROF_PSRUN };
static int profiling;
static int own_sampler_ended; /* a PROF_OWN sampler was shut down: reset before the next */
static int verbose;              /* PSUITE_VERBOSE, read at init */

static void take(void) { ps_lock_take(&lock); }
static void give(void) { ps_lock_give(&lock); }
/* The collector (collector.c) writes what the program froze, while the
 * program waits, or after it died: a lock one of its threads held stays
 * held, and is not the collector's to wait for. */
static int take_bounded(void) { return ps_in_collector() ? 0 : ps_lock_take_bounded(&lock); }
static void give_bounded(int held)
{
    if (held)
        ps_lock_give(&lock);
}

static ps_evset_t set;
static long long wall_start, wall_total;
/* CPU time over the same intervals as the counters and the wall clock, so
 * utilization is CPU over wall of one interval (not including start-up
 * before main), and task-clock can be checked against it.  The CPU time is
 * read right next to the start and stop of the counters, after every
 * thread's pending time has been accounted (ps_settle_thread_times):
 * reading it later would add what threads still running did after the
 * counters stopped; reading it without settling would miss up to a tick
 * per thread running on another CPU.  The settling comes first because it
 * is the slow part: if the kernel preempts this thread there, the counters
 * are still running and nothing is lost.
 * What remains between task-clock and this CPU time on a virtual machine
 * is steal: perf's task-clock runs whenever the thread is on its vCPU,
 * even while the hypervisor has taken the vCPU away, and the scheduler's
 * CPU time (getrusage, CLOCK_*_CPUTIME_ID) leaves that time out
 * (CONFIG_PARAVIRT_TIME_ACCOUNTING). */
static double user_start, sys_start, user_total, sys_total;

static void cpu_now(double *user, double *sys)
{
    ps_process_cpu(user, sys);
}

/* The events as the configuration names them, before a backend resolved
 * them: read once, for the backend tried second too. */
static ps_evset_t requested; /* large: not on the stack of the program's start-up */

/* Every requested name means something to the perf_event backend (a perf
 * event, or a PAPI preset it can say it cannot count). */
static int perf_knows_all(void)
{
    for (int i = 0; i < requested.nrequested; i++) {
        unsigned type;
        unsigned long long config;
        char why[192];
        if (ps_perf_lookup(requested.ev[i].name, &type, &config, why, sizeof why) == PS_EVENT_UNKNOWN)
            return 0;
    }
    return 1;
}

static int choose_backend(char *why, size_t why_len)
{
    const char *want = getenv("PSUITE_BACKEND");
    char papi_why[256] = "";
    if (want && *want && strcmp(want, "perf_event") != 0 && strcmp(want, "papi") != 0 &&
        strcmp(want, "PAPI") != 0) {
        snprintf(why, why_len, "PSUITE_BACKEND must be PAPI or perf_event");
        return PS_BACKEND_NONE;
    }
    if (!(want && *want) && !ps_perf_hardware_pmu() && perf_knows_all()) {
        /* PAPI would load and probe only to find no counter: what it could
         * count here (software events), perf_event counts directly */
        if (ps_perf_available(why, why_len))
            return PS_BACKEND_PERF;
    }
    if (!(want && strcmp(want, "perf_event") == 0)) {
        if (ps_papi_load(papi_why, sizeof papi_why))
            return PS_BACKEND_PAPI;
        if (want && *want) {
            snprintf(why, why_len, "PAPI requested but %s", papi_why);
            return PS_BACKEND_NONE;
        }
    }
    if (ps_perf_available(why, why_len))
        return PS_BACKEND_PERF;
    return PS_BACKEND_NONE;
}

/* PAPI that cannot inherit counts only the thread that started it.  Unless
 * PAPI was asked for by name, count through perf_event instead when it
 * counts every event PAPI does; either way, say what happens. */
static void prefer_perf_for_threads(void)
{
    static ps_evset_t alt; /* large: not on the stack of the program's start-up */
    char why[256] = "";
    const char *want = getenv("PSUITE_BACKEND");
    int forced = want && (strcmp(want, "PAPI") == 0 || strcmp(want, "papi") == 0);
    int better = 0;
    if (!forced) {
        alt = requested;
        ps_strlcpy(alt.annotation, set.annotation, sizeof alt.annotation);
        alt.backend = PS_BACKEND_PERF;
        better = ps_perf_available(why, sizeof why) && ps_perf_open(&alt) == PS_HWPC_OK;
        for (int i = 0; better && i < set.nrequested; i++)
            better = set.ev[i].status != PS_EVENT_COUNTED || alt.ev[i].status == PS_EVENT_COUNTED;
        if (!better && alt.ncounted)
            ps_perf_close(&alt);
    }
    if (!better) {
        /* psrun -p: the thread reports are counted by perf_event, every
         * thread (thread_counts.c); only this total is PAPI's one thread */
        const char *only = ps_env_flag("PSUITE_PER_THREAD")
                               ? "this process total counts only the thread that starts counting; the per-thread "
                                 "reports count each thread through Linux perf_event"
                               : "only the thread that starts counting is measured";
        size_t used = strlen(set.annotation);
        snprintf(set.annotation + used, sizeof set.annotation - used, "%sPAPI cannot count other threads here (%s): %s",
                 used ? "; " : "", set.no_inherit, only);
        ps_note("PAPI cannot count other threads here (%s): %s", set.no_inherit, only);
        return;
    }
    ps_note("PAPI cannot count other threads here (%s); counting through perf_event, which can", set.no_inherit);
    for (int i = 0; i < set.nrequested; i++) /* PAPI's reason is the more telling one */
        if (set.ev[i].status != PS_EVENT_COUNTED && alt.ev[i].status != PS_EVENT_COUNTED) {
            alt.ev[i].status = set.ev[i].status;
            ps_strlcpy(alt.ev[i].why, set.ev[i].why, sizeof alt.ev[i].why);
        }
    ps_papi_close(&set);
    set = alt;
}

/* A <ps_hwpc_profile> configuration (or PSUITE_PROFILE): the sampler set
 * up, every thread's source switched off until ps_hwpc_start.  1: done;
 * 0: the configuration counts; < 0: an error, said. */
static int init_profile_locked(void)
{
    ps_profcfg_t cfg;
    char why[1024] = "";
    int kind = ps_config_profile(&cfg, why, sizeof why);
    if (kind < 0)
        ps_message("%s", why);
    if (kind <= 0)
        return kind;
    if (own_sampler_ended)
        ps_sampler_reset();
    own_sampler_ended = 0;
    ps_sampler_suspend(1);
    int rc = ps_sampler_init(&cfg, why, sizeof why);
    if (rc != PS_HWPC_OK) {
        ps_message("%s", why);
        ps_sampler_stop();
        own_sampler_ended = 1;
        return rc;
    }
    memset(&set, 0, sizeof set); /* no counted events */
    set.counted_names[0] = NULL;
    verbose = getenv("PSUITE_VERBOSE") != NULL;
    ps_report_prepare();
    ps_modules_refresh();
    ps_sampler_at_main(); /* ITIMER_REAL's sampler thread: the program is running */
    profiling = PROF_OWN;
    state = ST_READY;
    return 1;
}

void ps_hwpc_profile_psrun(void)
{
    take();
    profiling = PROF_PSRUN;
    memset(&set, 0, sizeof set);
    set.counted_names[0] = NULL;
    state = ST_RUNNING;
    give();
}

static int init_locked(const char *events, const char *annotation)
{
    char why[1024] = "";
    if (profiling == PROF_PSRUN)
        return PS_HWPC_OK; /* psrun's sampling, which the program's calls now control */
    if (state != ST_NONE)
        return PS_HWPC_ESTATE;
    if (!events) {
        int rc = init_profile_locked();
        if (rc != 0)
            return rc > 0 ? PS_HWPC_OK : rc;
    }
    memset(&set, 0, sizeof set);
    if (annotation)
        ps_strlcpy(set.annotation, annotation, sizeof set.annotation);
    int rc = ps_config_load(&set, events, why, sizeof why);
    if (rc != PS_HWPC_OK) {
        ps_message("%s", why);
        return rc;
    }
    requested = set;
    set.backend = choose_backend(why, sizeof why);
    if (set.backend == PS_BACKEND_NONE) {
        ps_message("no counting backend: %s", why);
        return PS_HWPC_EBACKEND;
    }
    rc = set.backend == PS_BACKEND_PAPI ? ps_papi_open(&set) : ps_perf_open(&set);
    for (int i = 0; i < set.nrequested; i++)
        if (set.ev[i].status == PS_EVENT_UNKNOWN)
            rc = PS_HWPC_ENOEVENT;
    if (rc == PS_HWPC_OK && set.backend == PS_BACKEND_PAPI && set.no_inherit[0])
        prefer_perf_for_threads();
    if (rc != PS_HWPC_OK) {
        if (set.backend == PS_BACKEND_PAPI)
            ps_papi_close(&set);
        else
            ps_perf_close(&set);
        return rc;
    }
    for (int k = 0; k < set.ncounted; k++)
        set.counted_names[k] = set.ev[set.counted[k]].name;
    /* The report's <annotation> names what was asked for and not counted. */
    size_t used = strlen(set.annotation);
    if (used + 2 < sizeof set.annotation && ps_hwpc_dropped(set.annotation + used + (used ? 2 : 0),
                                                            sizeof set.annotation - used - 2, 0) && used)
        memcpy(set.annotation + used, "; ", 2);
    set.counted_names[set.ncounted] = NULL;
    /* what the report needs and cannot safely find at the end: now */
    verbose = getenv("PSUITE_VERBOSE") != NULL;
    ps_report_prepare();
    wall_total = 0;
    user_total = sys_total = 0;
    state = ST_READY;
    return PS_HWPC_OK;
}

int ps_hwpc_init_events(const char *events, const char *annotation)
{
    take();
    int rc = init_locked(events, annotation);
    give();
    return rc;
}

PS_API int ps_hwpc_init(void) { return ps_hwpc_init_events(NULL, NULL); }

static int start_locked(void)
{
    if (profiling == PROF_PSRUN && state == ST_RUNNING)
        return PS_HWPC_OK; /* psrun's sampling runs from before main */
    if (state != ST_READY && state != ST_SUSPENDED)
        return PS_HWPC_ESTATE;
    if (profiling) {
        ps_sampler_suspend(0);
        state = ST_RUNNING;
        return PS_HWPC_OK;
    }
    double user, sys;
    ps_settle_thread_times();
    /* Nested intervals, so that no clock covers more than the wall clock:
     * wall clock, then CPU time, then the counters here; the reverse in
     * suspend_locked. */
    long long wall = ps_wallclock_ns();
    cpu_now(&user, &sys);
    int rc = set.backend == PS_BACKEND_PAPI ? ps_papi_start(&set) : ps_perf_enable(&set, 1);
    if (rc == PS_HWPC_OK) {
        wall_start = wall;
        user_start = user;
        sys_start = sys;
        state = ST_RUNNING;
    }
    return rc;
}

PS_API int ps_hwpc_start(void)
{
    take();
    int rc = start_locked();
    give();
    return rc;
}

static int suspend_locked(void)
{
    if (state != ST_RUNNING)
        return PS_HWPC_ESTATE;
    if (profiling) {
        ps_sampler_suspend(1);
        state = ST_SUSPENDED;
        return PS_HWPC_OK;
    }
    ps_settle_thread_times();
    int rc = set.backend == PS_BACKEND_PAPI ? ps_papi_stop(&set, NULL) : ps_perf_enable(&set, 0);
    double user, sys;
    cpu_now(&user, &sys);
    wall_total += ps_wallclock_ns() - wall_start;
    user_total += user - user_start;
    sys_total += sys - sys_start;
    state = ST_SUSPENDED;
    return rc;
}

/* psrun's counting stopped for good where the program started its own PAPI
 * counters (papi_coexist.c): nothing restarts it, not a failed exec. */
static int yielded;
void ps_hwpc_yield(void) { __atomic_store_n(&yielded, 1, __ATOMIC_RELEASE); }
int ps_hwpc_yielded(void) { return __atomic_load_n(&yielded, __ATOMIC_ACQUIRE); }

PS_API int ps_hwpc_suspend(void)
{
    take();
    int rc = suspend_locked();
    give();
    return rc;
}

static int read_locked(long long *values)
{
    if (state == ST_NONE || profiling) /* a profile has samples, not counts */
        return PS_HWPC_ESTATE;
    if (set.backend == PS_BACKEND_PERF)
        return ps_perf_read(&set, values);
    if (state == ST_RUNNING)
        return ps_papi_read(&set, values);
    memcpy(values, set.papi_acc, sizeof(long long) * (size_t)set.ncounted);
    return PS_HWPC_OK;
}

PS_API int ps_hwpc_read(long long *values)
{
    if (!values)
        return PS_HWPC_EINVAL;
    take();
    int rc = read_locked(values);
    give();
    return rc;
}

/* A profile: sampling suspended, and every sample taken since it was set
 * up written as psrun writes a profile.  Sampling goes on at the next
 * ps_hwpc_start. */
static int stop_profile_locked(const char *name)
{
    int rc = state == ST_RUNNING ? suspend_locked() : state == ST_SUSPENDED ? PS_HWPC_OK : PS_HWPC_ESTATE;
    if (rc != PS_HWPC_OK)
        return rc;
    ps_modules_refresh(); /* libraries glibc loaded itself (NSS, gconv) mapped too */
    rc = ps_profile_write_named(name, profiling == PROF_PSRUN ? !ps_quiet() : verbose);
    state = ST_READY;
    return rc;
}

/* Under the lock: counting suspended (if running) and the counts read,
 * for the end of measurement (ps_hwpc_stop, or ps_hwpc_freeze). */
static int end_locked(long long *values)
{
    int rc = state == ST_RUNNING ? suspend_locked() : PS_HWPC_OK;
    if (rc == PS_HWPC_OK && state != ST_SUSPENDED)
        rc = PS_HWPC_ESTATE;
    return rc == PS_HWPC_OK ? read_locked(values) : rc;
}

/* ps_hwpc_freeze below */
static int frozen, frozen_rc;
static long long frozen_values[PS_HWPC_MAX_EVENTS];

PS_API int ps_hwpc_stop(const char *name)
{
    long long values[PS_HWPC_MAX_EVENTS];
    if (profiling) {
        take();
        int rc = profiling ? stop_profile_locked(name) : PS_HWPC_ESTATE;
        give();
        return rc;
    }
    int held = take_bounded(); /* the end of measurement: see take_bounded */
    int rc = PS_HWPC_OK;
    if (frozen) { /* read already (ps_hwpc_freeze), perhaps by another process */
        rc = frozen_rc;
        memcpy(values, frozen_values, sizeof values);
        frozen = 0;
    } else
        rc = end_locked(values);
    /* The program closed or reused the counters' descriptors: the report is
     * still written (times, machine), its events left out, and says why. */
    int ncounted = set.ncounted;
    if (rc != PS_HWPC_OK && set.backend == PS_BACKEND_PERF && ps_perf_counters_lost() && state == ST_SUSPENDED) {
        ps_append_part(set.annotation, sizeof set.annotation,
                       ps_perf_counters_lost() == PS_PERF_LOST_COLLECTOR
                           ? "counts lost: the collector process holding the counters ended before the program"
                           : "counts lost: the program closed or reused psuite's perf_event descriptors");
        set.ncounted = 0;
        rc = PS_HWPC_OK;
    }
    /* perf_event learns of multiplexing only from the counts (PAPI knows
     * when the events are added, and psrun said so then). */
    if (rc == PS_HWPC_OK && set.backend == PS_BACKEND_PERF && set.multiplexed)
        ps_note_safe("more events than hardware counters: counts were multiplexed and are scaled", NULL);
    if (rc == PS_HWPC_OK) {
        ps_measurement_t m = {wall_total, user_total, sys_total, values};
        char path[4096];
        rc = ps_report_write(&set, &m, name, path, sizeof path);
        if (rc == PS_HWPC_EEXIST) {
            ps_message_safe("an output file existed already; report saved as ", path, NULL, NULL);
            rc = PS_HWPC_OK;
        } else if (rc != PS_HWPC_OK)
            ps_message_safe("could not save the report ", path, ": ", ps_save_errno_text(errno));
        else if (verbose)
            ps_message_safe("report written to ", path, NULL, NULL);
        set.ncounted = ncounted;
        state = ST_READY;
        wall_total = 0;
        user_total = sys_total = 0;
        if (set.backend == PS_BACKEND_PAPI)
            memset(set.papi_acc, 0, sizeof set.papi_acc);
    }
    give_bounded(held);
    return rc;
}

/* The end of the process's counting, read where it happens, the report
 * written later by whoever writes it (the collector, collector.c):
 * ps_hwpc_stop(NULL) then writes these counts. */

int ps_hwpc_freeze(void)
{
    if (profiling)
        return PS_HWPC_ESTATE;
    int held = take_bounded();
    int rc = end_locked(frozen_values);
    frozen_rc = rc;
    frozen = 1;
    give_bounded(held);
    return rc;
}

/* In the collector, while the process runs: the report so far under its
 * final name (report.c replaces it at the next checkpoint and at the end),
 * the counts read through the collector's descriptors, nothing of the
 * running measurement changed. */
int ps_hwpc_checkpoint(const char *note)
{
    static ps_evset_t copy; /* large; only the collector writes it */
    long long values[PS_HWPC_MAX_EVENTS];
    if (profiling || state != ST_RUNNING || set.backend != PS_BACKEND_PERF)
        return PS_HWPC_ESTATE;
    if (ps_perf_read(&set, values) != PS_HWPC_OK)
        return PS_HWPC_EIO;
    copy = set;
    ps_append_part(copy.annotation, sizeof copy.annotation, note);
    double user, sys;
    ps_process_cpu(&user, &sys);
    ps_measurement_t m = {wall_total + ps_wallclock_ns() - wall_start, user_total + user - user_start,
                          sys_total + sys - sys_start, values};
    char path[4096];
    return ps_report_write(&copy, &m, NULL, path, sizeof path);
}

/* In the collector, the process gone without freezing: the counts read
 * through the collector's own copies of the descriptors (an inherited
 * perf_event counter keeps its final value after the task is gone), the
 * times from what the collector saw of the process. */
int ps_hwpc_freeze_dead(long long user_ns, long long sys_ns)
{
    if (profiling || state != ST_RUNNING)
        return PS_HWPC_ESTATE;
    int rc = set.backend == PS_BACKEND_PAPI ? ps_papi_read(&set, frozen_values) : ps_perf_read(&set, frozen_values);
    wall_total += ps_wallclock_ns() - wall_start;
    user_total += user_ns / 1e9 - user_start;
    sys_total += sys_ns / 1e9 - sys_start;
    if (user_total < 0)
        user_total = 0;
    if (sys_total < 0)
        sys_total = 0;
    state = ST_SUSPENDED;
    frozen_rc = rc;
    frozen = 1;
    return rc;
}

/* Before an exec: the report so far under its final name (the exec may
 * succeed), `why` in its annotation, the counts kept.  If the exec fails,
 * ps_hwpc_exec_failed() takes that report back and counting goes on from
 * where it was, so one report covers the image whatever happens. */
int ps_hwpc_exec_write(const char *why, char *path_out, size_t path_len)
{
    long long values[PS_HWPC_MAX_EVENTS];
    path_out[0] = '\0';
    int held = take_bounded();
    /* suspended for good (ps_hwpc_yield): the counts so far are the report */
    int rc = state == ST_RUNNING ? suspend_locked() : state == ST_SUSPENDED && ps_hwpc_yielded() ? PS_HWPC_OK
                                                                                                : PS_HWPC_ESTATE;
    if (rc == PS_HWPC_OK)
        rc = read_locked(values);
    if (rc == PS_HWPC_OK) {
        size_t used = strlen(set.annotation);
        ps_append_part(set.annotation, sizeof set.annotation, why);
        ps_measurement_t m = {wall_total, user_total, sys_total, values};
        rc = ps_report_write(&set, &m, NULL, path_out, path_len);
        set.annotation[used] = '\0';
        if (rc == PS_HWPC_EEXIST)
            rc = PS_HWPC_OK;
        else if (rc != PS_HWPC_OK) {
            ps_message_safe("could not save the report ", path_out, ": ", ps_save_errno_text(errno));
            path_out[0] = '\0';
        }
    }
    give_bounded(held);
    return rc;
}

void ps_hwpc_exec_failed(const char *path)
{
    int saved = errno;
    if (path && *path) {
        unlink(path);
        ps_report_announced(path);
    }
    int held = take_bounded(); /* the exec may have come from a signal handler */
    if (!ps_hwpc_yielded())
        start_locked();
    give_bounded(held);
    errno = saved;
}

/* Under psrun, the collector running: the counters it inherited are the
 * only ones, held and read there (perfev.c); the program keeps none.
 * PAPI's descriptors are PAPI's own and stay in the program. */
void ps_hwpc_hand_over(void)
{
    take();
    if (!profiling && state == ST_RUNNING && set.backend == PS_BACKEND_PERF)
        ps_perf_hand_over(&set);
    give();
}

/* In a child forked while counting: forget the parent's counters (their
 * descriptors are closed here only) so the child can count for itself. */
void ps_hwpc_forget_after_fork(void)
{
    ps_lock_reset(&lock); /* the parent's thread that may have held it is not here */
    if (profiling) { /* the sampler forgets for itself (preload.c: psrun -f profiles the child anew) */
        profiling = PROF_NONE;
        state = ST_NONE;
        return;
    }
    if (state != ST_NONE) {
        if (set.backend == PS_BACKEND_PERF)
            ps_perf_close(&set);
        else
            ps_papi_close(&set);
    }
    state = ST_NONE;
}

PS_API int ps_hwpc_shutdown(void)
{
    take();
    int rc = PS_HWPC_OK;
    if (state == ST_NONE)
        rc = PS_HWPC_ESTATE;
    else if (profiling == PROF_PSRUN) {
        /* psrun's sampling stays as the program left it: its profile is
         * written when the program ends */
    } else if (profiling) {
        ps_sampler_stop();
        own_sampler_ended = 1;
        profiling = PROF_NONE;
        state = ST_NONE;
    } else {
        if (state == ST_RUNNING)
            suspend_locked();
        if (set.backend == PS_BACKEND_PAPI)
            ps_papi_close(&set);
        else
            ps_perf_close(&set);
        state = ST_NONE;
    }
    give();
    return rc;
}

int ps_hwpc_domain(void) { return set.domain; }

void ps_hwpc_annotate(const char *text)
{
    int held = take_bounded(); /* at the end of measurement */
    ps_append_part(set.annotation, sizeof set.annotation, text);
    give_bounded(held);
}

PS_API int ps_hwpc_numevents(int *count)
{
    if (!count)
        return PS_HWPC_EINVAL;
    if (state == ST_NONE)
        return PS_HWPC_ESTATE;
    *count = set.ncounted;
    return PS_HWPC_OK;
}

PS_API int ps_hwpc_eventnames(const char *const **names)
{
    if (!names)
        return PS_HWPC_EINVAL;
    if (state == ST_NONE)
        return PS_HWPC_ESTATE;
    *names = set.counted_names;
    return PS_HWPC_OK;
}

/* These two stay answerable after a failed ps_hwpc_init, so the caller can
 * say which events were unknown or could not be counted. */
PS_API int ps_hwpc_numrequested(void) { return set.nrequested; }

PS_API int ps_hwpc_eventstatus(int i, const char **name, int *status, const char **why)
{
    if (i < 0 || i >= set.nrequested || !name || !status || !why)
        return PS_HWPC_EINVAL;
    *name = set.ev[i].name;
    *status = set.ev[i].status;
    *why = set.ev[i].why;
    return PS_HWPC_OK;
}

size_t ps_hwpc_dropped(char *out, size_t len, int lines) /* see internal.h */
{
    int n = ps_hwpc_numrequested();
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *name, *why;
        int status, seen = 0;
        if (ps_hwpc_eventstatus(i, &name, &status, &why) || status == PS_EVENT_COUNTED)
            continue;
        for (int j = 0; j < i && !seen; j++) { /* reason already listed with an earlier event */
            const char *n2, *w2;
            int s2;
            seen = !ps_hwpc_eventstatus(j, &n2, &s2, &w2) && s2 != PS_EVENT_COUNTED && strcmp(w2, why) == 0;
        }
        if (seen)
            continue;
        char line[1024];
        size_t k = (size_t)snprintf(line, sizeof line, "not counted: %s", name);
        for (int j = i + 1; j < n && k < sizeof line; j++) {
            const char *n2, *w2;
            int s2;
            if (!ps_hwpc_eventstatus(j, &n2, &s2, &w2) && s2 != PS_EVENT_COUNTED && strcmp(w2, why) == 0)
                k += (size_t)snprintf(line + k, sizeof line - k, ", %s", n2);
        }
        if (k < sizeof line)
            snprintf(line + k, sizeof line - k, ": %s", why);
        if (lines)
            ps_message("%s", line);
        if (used < len)
            used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "; " : "", line);
    }
    return used < len ? used : len - 1;
}

PS_API const char *ps_hwpc_backend(const char **version)
{
    if (state == ST_NONE || profiling) /* sampling: no counting backend */
        return NULL;
    if (version)
        *version = set.backend_version;
    return set.backend == PS_BACKEND_PAPI ? "PAPI" : "perf_event";
}

PS_API int ps_hwpc_multiplexed(void)
{
    if (state == ST_NONE)
        return 0;
    if (set.backend == PS_BACKEND_PERF && set.ncounted) {
        long long v[PS_HWPC_MAX_EVENTS];
        ps_perf_read(&set, v); /* updates the flag */
    }
    return set.multiplexed;
}

PS_API const char *ps_hwpc_strerror(int code)
{
    switch (code) {
    case PS_HWPC_OK: return "success";
    case PS_HWPC_EINVAL: return "invalid argument";
    case PS_HWPC_ESTATE: return "call not allowed in the current state";
    case PS_HWPC_ECONFIG: return "configuration missing or malformed";
    case PS_HWPC_ENOEVENT: return "an event name does not exist";
    case PS_HWPC_ENOCOUNT: return "none of the events can be counted here";
    case PS_HWPC_EIO: return "the report could not be written";
    case PS_HWPC_EBACKEND: return "the counting backend failed";
    case PS_HWPC_EEXIST: return "the report file exists already";
    default: return "unknown error";
    }
}

PS_API int ps_event_probe(const char *backend, const char *name, char *why, size_t why_len)
{
    if (!name || !why)
        return PS_HWPC_EINVAL;
    why[0] = '\0';
    if (backend && strcmp(backend, "perf_event") == 0)
        return ps_perf_probe(name, why, why_len);
    return ps_papi_probe(name, why, why_len);
}

PS_API int ps_event_catalogue(const char *backend, int index, char *name, size_t name_len, char *desc,
                              size_t desc_len, const char **kind)
{
    if (backend && strcmp(backend, "PAPI_presets") == 0) {
        const char *d, *n = ps_preset_name(index, &d); /* the standard list, no libpapi needed */
        if (!n)
            return 0;
        ps_strlcpy(name, n, name_len);
        ps_strlcpy(desc, d, desc_len);
        *kind = "preset";
        return 1;
    }
    if (backend && strcmp(backend, "perf_event") == 0) {
        const char *d, *alias;
        const char *n = ps_perf_catalogue(index, &d, &alias);
        if (!n)
            return 0;
        ps_strlcpy(name, n, name_len);
        if (alias)
            snprintf(desc, desc_len, "%s (PAPI: %s)", d, alias);
        else
            ps_strlcpy(desc, d, desc_len);
        *kind = "native";
        return 1;
    }
    return ps_papi_catalogue(index, name, name_len, desc, desc_len, kind);
}

/* Fortran bindings: same calls, status in the trailing ierr. */
PS_API void ps_hwpc_init_(int *ierr) { *ierr = ps_hwpc_init(); }
PS_API void ps_hwpc_start_(int *ierr) { *ierr = ps_hwpc_start(); }
PS_API void ps_hwpc_suspend_(int *ierr) { *ierr = ps_hwpc_suspend(); }
PS_API void ps_hwpc_read_(long long *values, int *ierr) { *ierr = ps_hwpc_read(values); }
PS_API void ps_hwpc_shutdown_(int *ierr) { *ierr = ps_hwpc_shutdown(); }
PS_API void ps_hwpc_numevents_(int *count, int *ierr) { *ierr = ps_hwpc_numevents(count); }
PS_API void ps_hwpc_psrun_(int *ierr) { *ierr = ps_hwpc_psrun(); }

PS_API void ps_hwpc_stop_(const char *name, int *ierr, size_t name_len)
{
    char buf[4096];
    size_t n = name_len < sizeof buf - 1 ? name_len : sizeof buf - 1;
    while (n && name[n - 1] == ' ') /* Fortran pads with blanks */
        n--;
    memcpy(buf, name, n);
    buf[n] = '\0';
    *ierr = ps_hwpc_stop(buf);
}
