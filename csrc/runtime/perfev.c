/* perfev.c - counting through the kernel's perf_event interface directly. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "internal.h"

/* The measured program may close or reuse descriptors (closefrom(3), close
 * 3..1023, dup2 /dev/null over them before exit): the counters' descriptors
 * live above the program's descriptor limit (util.c), out of its reach, and
 * each is checked to still be a perf_event descriptor (they share one
 * anonymous inode) - where its identity was kept, the very event
 * (PERF_EVENT_IOC_ID) - before it is used or closed, so that a descriptor
 * the program reused is never read, switched or closed by psuite. */
static dev_t perf_dev;
static ino_t perf_ino;
static int counters_lost;

static void remember(int fd)
{
    struct stat st;
    if (!perf_ino && fd >= 0 && fstat(fd, &st) == 0) {
        perf_dev = st.st_dev;
        perf_ino = st.st_ino;
    }
}

static int still_ours(int fd)
{
    struct stat st;
    return fd >= 0 && perf_ino && fstat(fd, &st) == 0 && st.st_dev == perf_dev && st.st_ino == perf_ino;
}

int ps_perf_still_ours(int fd) { return still_ours(fd); }

unsigned long long ps_perf_id(int fd)
{
    unsigned long long id = 0;
    if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0)
        return 0;
    return id;
}

int ps_perf_is(int fd, unsigned long long id) { return still_ours(fd) && (!id || ps_perf_id(fd) == id); }

void ps_perf_close_fd(int fd)
{
    if (still_ours(fd))
        close(fd);
}

void ps_perf_close_id(int fd, unsigned long long id)
{
    if (ps_perf_is(fd, id))
        close(fd);
}

/* Above the soft limit where the hard one leaves room; else at base (a
 * caller's budget, base > 0) or as high as the limit allows. */
int ps_perf_move_high(int fd, long base)
{
    if (fd < 0)
        return fd;
    remember(fd);
    if (base > 0 && !ps_fd_room_above()) {
        if (base > (1L << 20))
            base = 1L << 20;
        if (fd >= base)
            return fd;
        int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)base);
        if (high < 0)
            return fd;
        close(fd);
        return high;
    }
    return ps_fd_above_limit(fd);
}

static int move_high(int fd) { return ps_perf_move_high(fd, 0); }

struct others {
    int self, n, max, *out;
};

static void add_other(int tid, void *arg)
{
    struct others *o = arg;
    if (tid != o->self && o->n++ < o->max)
        o->out[o->n - 1] = tid;
}

int ps_perf_other_threads(int *out, int max)
{
    struct others o = {(int)syscall(SYS_gettid), 0, max, out};
    ps_each_thread(add_other, &o);
    return o.n;
}

int ps_perf_counters_lost(void) { return counters_lost; }

/* Under psrun, once the program's collector runs (collector.c), the counters
 * live outside the program: it closes its copies of the counting
 * descriptors, and the collector, which inherited them at its fork, enables,
 * disables and reads them when the program asks.  So the program holds no
 * counter that closefrom(), dup2 or a hard RLIMIT_NOFILE could take, and a
 * killed program's counts are read where they always were.  These globals
 * are shared with the collector (shared.c); in a forked child they are the
 * child's own copy.  PAPI's descriptors are PAPI's and stay in the program. */
static int outside;
static ps_evset_t *outside_set;
static long long outside_values[PS_HWPC_MAX_EVENTS];

static int program_side_outside(void) { return outside && !ps_in_collector(); }

void ps_perf_hand_over(ps_evset_t *set)
{
    for (int k = 0; k < set->ncounted; k++) {
        const ps_event_t *e = &set->ev[set->counted[k]];
        ps_perf_close_id(e->fd, e->id);
        for (int t = 0; t < e->nxfd; t++)
            if (still_ours(e->xfd[t]))
                close(e->xfd[t]);
    }
    outside_set = set;
    outside = 1;
}

/* In the collector: the program's request (PS_PERF_OP_*), on its set. */
int ps_perf_serve(int op)
{
    if (!outside || !outside_set)
        return PS_HWPC_ESTATE;
    if (op == PS_PERF_OP_READ)
        return ps_perf_read(outside_set, outside_values);
    return ps_perf_enable(outside_set, op == PS_PERF_OP_ENABLE);
}

static int ask_collector(int op)
{
    int rc;
    if (!ps_collector_counters(op, &rc)) { /* no answer: the collector is gone, and the counters with it */
        counters_lost = PS_PERF_LOST_COLLECTOR;
        return PS_HWPC_EBACKEND;
    }
    return rc;
}

static int perf_open_tid(unsigned type, unsigned long long config, int domain, int inherit, int tid)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    attr.disabled = 1;
    attr.inherit = inherit ? 1 : 0;
    attr.exclude_kernel = domain == PS_DOM_USER && !ps_perf_kernel_only(type, config);
    attr.exclude_user = domain == PS_DOM_KERNEL;
    attr.exclude_hv = 1;
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    /* Threads yes, forked children no: they are measured on their own
     * (psrun -f) or not at all (Linux 5.13+; older kernels count them). */
    attr.inherit_thread = inherit ? 1 : 0;
    int fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && errno == EINVAL && attr.inherit_thread) {
        attr.inherit_thread = 0;
        fd = (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    return fd;
}

static int perf_open(unsigned type, unsigned long long config, int domain, int inherit)
{
    return perf_open_tid(type, config, domain, inherit, 0);
}

static void open_error(int err, char *why, size_t len)
{
    switch (err) {
    case ENOENT:
    case EOPNOTSUPP:
    case EINVAL:
        snprintf(why, len, ps_perf_hardware_pmu() ? "not supported here (not this CPU's event)"
                                                  : "no hardware counters on this machine (no PMU)");
        break;
    case EACCES:
    case EPERM:
        snprintf(why, len, "not permitted (perf_event_paranoid is %d; try the user domain)",
                 (int)ps_read_ll("/proc/sys/kernel/perf_event_paranoid", 99));
        break;
    case ENODEV:
        snprintf(why, len, "no such PMU on this machine");
        break;
    case ENOSYS:
        snprintf(why, len, "this kernel has no perf_event support");
        break;
    default:
        snprintf(why, len, "perf_event_open: %s", strerror(err));
    }
}

/* Whether the CPU has counters perf_event can open here, asked once: where
 * it has none (most virtual machines), no PAPI preset can be counted, and
 * the library need not load PAPI to learn that in every process. */
int ps_perf_hardware_pmu(void)
{
    static int known = -1;
    if (known < 0) {
        int fd = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, PS_DOM_USER, 0);
        int err = errno;
        if (fd >= 0)
            close(fd);
        /* EACCES and the like say nothing about the hardware: assume it is there */
        known = fd >= 0 || !(err == ENOENT || err == EOPNOTSUPP || err == ENODEV);
    }
    return known;
}

int ps_perf_available(char *why, size_t why_len)
{
    int fd = perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, PS_DOM_USER, 0);
    if (fd < 0) {
        open_error(errno, why, why_len);
        return 0;
    }
    close(fd);
    return 1;
}

int ps_perf_open(ps_evset_t *set)
{
    struct utsname u;
    snprintf(set->backend_version, sizeof set->backend_version, "Linux %s",
             uname(&u) == 0 ? u.release : "?");
    set->ncounted = 0;
    /* Under psrun, threads already running when measurement starts (those
     * of shared libraries' constructors) are counted too: the events are
     * opened on each of them as well (they are not children of this one). */
    static int others[PS_PERF_MAX_XFD];
    int nothers = ps_env_flag("PSUITE_PRELOAD") ? ps_perf_other_threads(others, PS_PERF_MAX_XFD) : 0;
    if (nothers > PS_PERF_MAX_XFD) {
        size_t used = strlen(set->annotation);
        snprintf(set->annotation + used, sizeof set->annotation - used,
                 "%s%d threads running before measurement started not counted (at most %d are)", used ? "; " : "",
                 nothers - PS_PERF_MAX_XFD, PS_PERF_MAX_XFD);
        ps_note("%d threads running before measurement started not counted (at most %d are)",
                nothers - PS_PERF_MAX_XFD, PS_PERF_MAX_XFD);
        nothers = PS_PERF_MAX_XFD;
    }
    for (int i = 0; i < set->nrequested; i++) {
        ps_event_t *e = &set->ev[i];
        e->fd = -1;
        e->nxfd = 0;
        if (e->status != PS_EVENT_COUNTED)
            continue;
        e->status = ps_perf_lookup(e->name, &e->perf_type, &e->perf_config, e->why, sizeof e->why);
        if (e->status != PS_EVENT_COUNTED)
            continue;
        e->fd = perf_open(e->perf_type, e->perf_config, set->domain, 1);
        if (e->fd < 0) {
            int err = errno;
            e->status = PS_EVENT_DROPPED;
            open_error(err, e->why, sizeof e->why);
            if ((err == EACCES || err == EPERM) && ps_perf_kernel_only(e->perf_type, e->perf_config))
                snprintf(e->why, sizeof e->why, "not permitted: the kernel counts it only in kernel mode, which "
                         "perf_event_paranoid %d keeps from this user (1 or less allows it)",
                         (int)ps_read_ll("/proc/sys/kernel/perf_event_paranoid", 99));
            continue;
        }
        e->fd = move_high(e->fd);
        e->id = ps_perf_id(e->fd);
        for (int t = 0; t < nothers; t++) {
            int fd = perf_open_tid(e->perf_type, e->perf_config, set->domain, 1, others[t]);
            if (fd >= 0) /* else the thread has ended since */
                e->xfd[e->nxfd++] = move_high(fd);
        }
        set->counted[set->ncounted++] = i;
    }
    return set->ncounted ? PS_HWPC_OK : PS_HWPC_ENOCOUNT;
}

int ps_perf_enable(ps_evset_t *set, int on)
{
    if (program_side_outside())
        return ask_collector(on ? PS_PERF_OP_ENABLE : PS_PERF_OP_DISABLE);
    for (int k = 0; k < set->ncounted; k++) {
        int fd = set->ev[set->counted[k]].fd;
        if (!ps_perf_is(fd, set->ev[set->counted[k]].id)) {
            counters_lost = PS_PERF_LOST_CLOSED;
            return PS_HWPC_EBACKEND;
        }
        if (ioctl(fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0))
            return PS_HWPC_EBACKEND;
        const ps_event_t *e = &set->ev[set->counted[k]];
        for (int t = 0; t < e->nxfd; t++)
            if (still_ours(e->xfd[t]))
                ioctl(e->xfd[t], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
    }
    return PS_HWPC_OK;
}

/* Counts scaled by enabled/running time: the kernel multiplexes when more
 * events are open than the PMU has counters. */
int ps_perf_read(ps_evset_t *set, long long *values)
{
    if (program_side_outside()) {
        int rc = ask_collector(PS_PERF_OP_READ);
        if (rc == PS_HWPC_OK)
            memcpy(values, outside_values, sizeof(long long) * (size_t)set->ncounted);
        return rc;
    }
    for (int k = 0; k < set->ncounted; k++) {
        ps_event_t *e = &set->ev[set->counted[k]];
        unsigned long long buf[3];
        ssize_t r;
        if (!ps_perf_is(e->fd, e->id)) {
            counters_lost = PS_PERF_LOST_CLOSED;
            return PS_HWPC_EBACKEND;
        }
        do
            r = read(e->fd, buf, sizeof buf);
        while (r < 0 && errno == EINTR);
        if (r != (ssize_t)sizeof buf)
            return PS_HWPC_EBACKEND;
        unsigned long long total = 0;
        for (int t = -1; t < e->nxfd; t++) {
            if (t >= 0) { /* the threads that were running before measurement */
                if (!still_ours(e->xfd[t]))
                    continue;
                do
                    r = read(e->xfd[t], buf, sizeof buf);
                while (r < 0 && errno == EINTR);
                if (r != (ssize_t)sizeof buf)
                    continue;
            }
            unsigned long long value = buf[0], enabled = buf[1], running = buf[2];
            if (running && running < enabled) {
                e->multiplexed = 1;
                set->multiplexed = 1;
                value = (unsigned long long)((long double)value * enabled / running);
            }
            total += value;
        }
        values[k] = (long long)total;
    }
    return PS_HWPC_OK;
}

void ps_perf_close(ps_evset_t *set)
{
    if (program_side_outside()) {
        /* the collector's copies are the only ones: it closes them when it
         * ends; here (a forked child's private copy, or the program giving
         * counting up) the set only forgets them */
        outside = 0;
        for (int k = 0; k < set->ncounted; k++) {
            set->ev[set->counted[k]].fd = -1;
            set->ev[set->counted[k]].nxfd = 0;
        }
        return;
    }
    for (int k = 0; k < set->ncounted; k++) {
        ps_event_t *e = &set->ev[set->counted[k]];
        ps_perf_close_id(e->fd, e->id);
        e->fd = -1;
        for (int t = 0; t < e->nxfd; t++)
            if (still_ours(e->xfd[t]))
                close(e->xfd[t]);
        e->nxfd = 0;
    }
}

int ps_perf_probe(const char *name, char *why, size_t why_len)
{
    unsigned type;
    unsigned long long config;
    int status = ps_perf_lookup(name, &type, &config, why, why_len);
    if (status != PS_EVENT_COUNTED)
        return status;
    int fd = perf_open(type, config, PS_DOM_USER, 0);
    if (fd < 0) {
        open_error(errno, why, why_len);
        return PS_EVENT_DROPPED;
    }
    unsigned long long buf[3];
    int ok = ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0 && ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) == 0 &&
             read(fd, buf, sizeof buf) == (ssize_t)sizeof buf;
    close(fd);
    if (!ok) {
        snprintf(why, why_len, "opened but could not be started or read");
        return PS_EVENT_DROPPED;
    }
    return PS_EVENT_COUNTED;
}
