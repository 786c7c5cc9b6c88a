/* report.c - the <hwpcreport mode="count"> document (hwpcreport-0.3.dtd),
 * written atomically and exclusively: a file with no name (O_TMPFILE), or
 * where the file system has none a temporary file, then link() to the
 * final name, which never overwrites and never follows a planted symlink.
 *
 * Async-signal-safe by construction.  The report may be written from
 * _exit(), from an exec wrapper or from a fatal signal's handler, while
 * another thread holds malloc's lock or the interrupted thread is anywhere.
 * So everything that is not async-signal-safe to find (host, domain and
 * user names, the command line, the executable's name, md5 and build-id,
 * the MPI rank, the machine information, the output name's parts, the UTC
 * offset) is gathered once by ps_report_prepare() when measurement starts,
 * its XML rendered then.  At the end only numbers are formatted, without
 * stdio or locale, into an output buffer mapped beforehand, on a stack of
 * the writer's own (safestack.c), and written with open, write, link (or
 * renameat2, or an exclusive create where the file system has no hard
 * links).  No umask() call: the file is created 0666 and the kernel
 * applies the umask. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "../common/fsize_limit.h"
#include "../common/mpi_rank.h"

#ifndef PSUITE_VERSION
#define PSUITE_VERSION "0"
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

/* /proc/thread-self, not /proc/self: when main has called pthread_exit the
 * report is written by another thread, and the exited leader's /proc/self
 * entries (exe, cmdline) can no longer be read. */
#define PROC_SELF "/proc/thread-self/"

/* The MPI rank from the launcher's environment (Open MPI, MPICH/PMI,
 * PMIx, Slurm), or -1 outside MPI. */
int ps_mpi_rank(void) { return ps_common_mpi_rank(); }

/* The command line, arguments separated by blanks; 1 when it was cut to
 * fit (at a character boundary, never inside a UTF-8 character). */
static int command_line(char *out, size_t len)
{
    int n = ps_read_file(PROC_SELF "cmdline", out, len);
    if (n <= 0) {
        ps_strlcpy(out, "?", len);
        return 0;
    }
    int cut = (size_t)n + 1 >= len;
    if (cut)
        n = (int)ps_utf8_cut(out, (size_t)n);
    while (n > 0 && out[n - 1] == '\0')
        n--;
    for (int i = 0; i < n; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    out[n] = '\0';
    return cut;
}

static void exe_name(char *out, size_t len)
{
    char path[PATH_MAX];
    ssize_t n = readlink(PROC_SELF "exe", path, sizeof path - 1);
    if (n <= 0) {
        ps_strlcpy(out, "program", len);
        return;
    }
    path[n] = '\0';
    const char *slash = strrchr(path, '/');
    ps_strlcpy(out, slash ? slash + 1 : path, len);
}

static void host_names(char *host, size_t hlen, char *domain, size_t dlen)
{
    if (gethostname(host, hlen))
        ps_strlcpy(host, "localhost", hlen);
    host[hlen - 1] = '\0';
    domain[0] = '\0';
    char *dot = strchr(host, '.');
    if (dot) {
        ps_strlcpy(domain, dot + 1, dlen);
        *dot = '\0';
    } else if (getdomainname(domain, dlen) == 0 && strcmp(domain, "(none)") == 0)
        domain[0] = '\0';
    domain[dlen - 1] = '\0';
}

/* ---- what is gathered when measurement starts ------------------------------
 * Two copies: a new one is filled while writers may still read the one
 * published, then published with one atomic store. */
typedef struct {
    int pid;                    /* of the process that prepared it */
    int rank;                   /* MPI rank, -1 outside MPI */
    long long clock_millimhz;   /* as <clockspeed> says; 0: unknown */
    long gmtoff;                /* local time minus UTC, seconds, when prepared */
    long long dst_at;           /* the next change of the offset (0: none within a year) */
    long dst_gmtoff;            /* the offset from then on */
    size_t unfit;               /* U+FFFD in the command line, host and domain names */
    int cut;                    /* the command line was cut */
    size_t cut_len;             /* to so many bytes */
    int have_buildid;
    char buildid[130];
    char dir[PATH_MAX];         /* PSUITE_OUTPUT_DIR ("": none) */
    char prefix[PATH_MAX];      /* PSUITE_OUTPUT_PREFIX, else the executable's name */
    char host_file[256];        /* the host name in file names ('/' made '_') */
    char host_text[256];        /* the host name as it is (call paths' <profile hostname>) */
    char command_text[8192];    /* the command line as it is */
    /* XML rendered when prepared */
    char ident[4096];           /* <hostname>, <domainname> */
    char user[1024];            /* <username> */
    char command[65536];        /* <command> */
    char machine[16384];        /* <machineinfo> */
    /* The machine's part (user name, machine information, UTC offsets:
     * three quarters of the start-up's cost, none of it the program's):
     * left to the collector, which gathers it first thing, outside the
     * program (ps_report_prepare_machine). */
    int machine_part;           /* 0 to be gathered, 1 being gathered, 2 gathered */
    size_t unfit_user;          /* U+FFFD in the user name */
} prep_t;

static prep_t preps[2];
static prep_t *prep;            /* the published one, NULL before the first */
static int prep_next;
static int defer_machine;       /* the next ps_report_prepare leaves the machine's part to the collector */

static void render(char *mem, size_t size, ps_buf_t *b) { ps_buf_fixed(b, mem, size); }

static long utc_offset(time_t t)
{
    struct tm tm;
    return localtime_r(&t, &tm) ? tm.tm_gmtoff : 0;
}

/* The machine's part of p: the user's name, the machine information and
 * the UTC offsets.  Nothing in it depends on the program's state (the
 * user is the real uid the program started with; the collector, forked
 * then, has the same). */
static void machine_part(prep_t *p)
{
    int none = 0;
    if (!__atomic_compare_exchange_n(&p->machine_part, &none, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* gathered, or being gathered by the other process: a moment's work */
        for (int k = 0; k < 2000 && __atomic_load_n(&p->machine_part, __ATOMIC_ACQUIRE) == 1; k++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        return;
    }
    ps_buf_t b;
    struct passwd pw, *res = NULL;
    char pwbuf[4096];
    getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &res);
    render(p->user, sizeof p->user, &b);
    if (res)
        ps_buf_elem(&b, 2, "username", res->pw_name);
    p->unfit_user = res ? ps_xml_unfit(res->pw_name) : 0;

    ps_machineinfo_t machine;
    ps_machineinfo(&machine);
    p->clock_millimhz = ps_machineinfo_clock_millimhz(&machine);
    /* rendered with printf into a growable buffer here, then copied */
    ps_buf_t mb = {0};
    ps_machineinfo_xml(&mb, 2, &machine);
    render(p->machine, sizeof p->machine, &b);
    if (!mb.failed && mb.data)
        ps_buf_mem(&b, mb.data, mb.len);
    ps_buf_free(&mb);

    /* The UTC offset now and, if it changes within a year (daylight
     * saving), when and to what: a day at a time, then to the second. */
    time_t now = time(NULL);
    p->gmtoff = utc_offset(now);
    p->dst_at = 0;
    p->dst_gmtoff = p->gmtoff;
    for (long long day = 1; day <= 400; day++) {
        time_t hi = now + (time_t)(day * 86400);
        if (utc_offset(hi) == p->gmtoff)
            continue;
        time_t lo = hi - 86400; /* offset at lo: the old one; at hi: the new */
        while (hi - lo > 1) {
            time_t mid = lo + (hi - lo) / 2;
            if (utc_offset(mid) == p->gmtoff)
                lo = mid;
            else
                hi = mid;
        }
        p->dst_at = (long long)hi;
        p->dst_gmtoff = utc_offset(hi);
        break;
    }

    __atomic_store_n(&p->machine_part, 2, __ATOMIC_RELEASE);
}

void ps_report_defer_machine(void) { defer_machine = 1; }

/* The machine's part of the published preparation, if it was left out:
 * in the collector first thing, or in the program when no collector runs. */
void ps_report_prepare_machine(void)
{
    prep_t *p = __atomic_load_n(&prep, __ATOMIC_ACQUIRE);
    if (p)
        machine_part(p);
}

void ps_report_prepare(void)
{
    prep_t *p = &preps[prep_next];
    prep_next ^= 1;
    ps_buf_t b;
    char host[256], domain[256], text[8192];

    ps_messages_prepare();
    ps_stack_prepare();
    p->pid = (int)ps_self_pid();
    p->rank = ps_mpi_rank();

    host_names(host, sizeof host, domain, sizeof domain);
    render(p->ident, sizeof p->ident, &b);
    ps_buf_elem(&b, 2, "hostname", host);
    ps_buf_elem(&b, 2, "domainname", domain);
    ps_strlcpy(p->host_file, host, sizeof p->host_file);
    ps_strlcpy(p->host_text, host, sizeof p->host_text);
    for (char *c = p->host_file; *c; c++)
        if (*c == '/')
            *c = '_';

    p->cut = command_line(text, sizeof text);
    p->cut_len = strlen(text);
    ps_strlcpy(p->command_text, text, sizeof p->command_text);
    p->unfit = ps_xml_unfit(text) + ps_xml_unfit(host) + ps_xml_unfit(domain);
    render(p->command, sizeof p->command, &b);
    /* md5sum of the whole executable only when asked (PSUITE_MD5=1): it reads
     * the file, over a second for a large one, in every process */
    char md5[33];
    if (ps_env_flag("PSUITE_MD5") && ps_md5_file(PROC_SELF "exe", md5) == 0) {
        ps_buf_str(&b, "  <command md5sum=\"");
        ps_buf_str(&b, md5);
        ps_buf_str(&b, "\">");
    } else
        ps_buf_str(&b, "  <command>");
    ps_buf_escaped(&b, text);
    ps_buf_str(&b, "</command>\n");

    p->have_buildid = ps_buildid(p->buildid, sizeof p->buildid) == 0;

    __atomic_store_n(&p->machine_part, 0, __ATOMIC_RELEASE);
    if (!defer_machine)
        machine_part(p);
    defer_machine = 0;

    const char *dir = getenv("PSUITE_OUTPUT_DIR"), *prefix = getenv("PSUITE_OUTPUT_PREFIX");
    ps_strlcpy(p->dir, dir ? dir : "", sizeof p->dir);
    if (prefix && *prefix)
        ps_strlcpy(p->prefix, prefix, sizeof p->prefix);
    else
        exe_name(p->prefix, sizeof p->prefix);
    __atomic_store_n(&prep, p, __ATOMIC_RELEASE);
}

/* The prepared data of this process; prepared here (not async-signal-safe)
 * when it was not, or by another process (a child forked without psrun -f
 * that writes a report through the API). */
static const prep_t *prepared(void)
{
    const prep_t *p = __atomic_load_n(&prep, __ATOMIC_ACQUIRE);
    if (!p || p->pid != (int)ps_self_pid()) {
        ps_report_prepare();
        p = __atomic_load_n(&prep, __ATOMIC_ACQUIRE);
    }
    if (__atomic_load_n(&p->machine_part, __ATOMIC_ACQUIRE) != 2) /* left to a collector not done with it */
        machine_part((prep_t *)p);
    return p;
}

void ps_report_ident(const char **host, const char **command)
{
    const prep_t *p = __atomic_load_n(&prep, __ATOMIC_ACQUIRE);
    *host = p ? p->host_text : NULL;
    *command = p ? p->command_text : NULL;
}

/* <date> as the original PerfSuite wrote it: C's ctime() form, local time,
 * without ctime's newline, and with the day of the month zero-padded, i.e.
 * strftime's "%a %b %d %H:%M:%S %Y" in the C locale ("Tue Mar 04 10:12:09
 * 2014").  Eclipse PTP's PerfSuite parser (ExecutionInfo.java) reads <date>
 * with SimpleDateFormat("EEE MMM dd HH:mm:ss yyyy", Locale.US) and fails on
 * anything else; %d is what its "dd" stands for (ctime's space-padded %e,
 * "Mar  4", is accepted only because SimpleDateFormat skips blanks before a
 * number).  The names are spelled here rather than by strftime so that the
 * program's LC_TIME cannot translate them.
 * Local time is the UTC offset found when measurement started (localtime_r
 * reads the time-zone file: not async-signal-safe) added to the real-time
 * clock, converted with integer arithmetic (days from the civil date,
 * inverted: Howard Hinnant's algorithm).  The next change of the offset
 * (daylight saving) was found then too: a run that crosses it gets the
 * new offset (a second change, more than months later, is not seen). */
static void date_element(ps_buf_t *b, const prep_t *p)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct timespec ts = {0, 0};
    clock_gettime(CLOCK_REALTIME, &ts);
    long gmtoff = p->dst_at && (long long)ts.tv_sec >= p->dst_at ? p->dst_gmtoff : p->gmtoff;
    long long t = (long long)ts.tv_sec + gmtoff;
    long long z = t >= 0 ? t / 86400 : (t - 86399) / 86400; /* days since 1970-01-01 */
    long long secs = t - z * 86400;
    long long wday = (z % 7 + 7 + 4) % 7;                     /* 1970-01-01 was a Thursday */
    z += 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;                                        /* [0, 146096] */
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;   /* [0, 399] */
    long long y = yoe + era * 400;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                 /* [0, 365] */
    long long mp = (5 * doy + 2) / 153;                                      /* [0, 11], from March */
    long long d = doy - (153 * mp + 2) / 5 + 1;                              /* [1, 31] */
    long long m = mp < 10 ? mp + 3 : mp - 9;                                 /* [1, 12] */
    if (m <= 2)
        y++;
    ps_buf_str(b, "  <date>");
    ps_buf_str(b, days[wday]);
    ps_buf_str(b, " ");
    ps_buf_str(b, months[m - 1]);
    ps_buf_str(b, " ");
    ps_buf_zpad(b, (unsigned long long)d, 2);
    ps_buf_str(b, " ");
    ps_buf_zpad(b, (unsigned long long)(secs / 3600), 2);
    ps_buf_str(b, ":");
    ps_buf_zpad(b, (unsigned long long)(secs / 60 % 60), 2);
    ps_buf_str(b, ":");
    ps_buf_zpad(b, (unsigned long long)(secs % 60), 2);
    ps_buf_str(b, " ");
    ps_buf_ll(b, y);
    ps_buf_str(b, "</date>\n");
}

/* What the original PerfSuite wrote after the XML declaration.  TAU's
 * ParaProf recognises a PerfSuite document by a line starting with
 * "<!DOCTYPE hwpc" among its first ten.  The path need not exist where the
 * report is read: psuite's readers (and any parser not asked to load
 * DTDs) do not open it. */
static const char DOCTYPE[] = "<!DOCTYPE hwpcreport SYSTEM \"/usr/share/perfsuite/dtds/pshwpc/hwpcreport-0.3.dtd\">";

/* <wallclock> in ticks of the clock speed written in the same document's
 * <clockspeed> (seconds = ticks / (MHz x 10^6)), as the original PerfSuite
 * wrote it and as TAU assumes whatever the units say.  When the clock speed
 * is unknown (<clockspeed> says 0) there are no ticks to count in: the
 * wall time is written in seconds, which the DTD allows and psuite and PTP
 * read, rather than invent a clock speed machineinfo would then have to
 * report falsely. */
static void wallclock(ps_buf_t *b, long long wall_ns, long long clock_millimhz)
{
    if (wall_ns < 0)
        wall_ns = 0;
    if (clock_millimhz > 0) {
        /* ticks = ns x 10^-9 x (millimhz / 1000) x 10^6, rounded */
        unsigned __int128 t = (unsigned __int128)wall_ns * (unsigned long long)clock_millimhz + 500000;
        ps_buf_str(b, "  <wallclock units=\"ticks\">");
        ps_buf_ull(b, (unsigned long long)(t / 1000000));
    } else {
        ps_buf_str(b, "  <wallclock units=\"seconds\">");
        ps_buf_fixedpoint(b, wall_ns, 9);
    }
    ps_buf_str(b, "</wallclock>\n");
}

/* Seconds with six decimals, whatever the program's LC_NUMERIC. */
static void seconds_element(ps_buf_t *b, const char *tag, double s)
{
    long long us = s > 0 ? (long long)(s * 1e6 + 0.5) : 0;
    ps_buf_str(b, "    <");
    ps_buf_str(b, tag);
    ps_buf_str(b, ">");
    ps_buf_fixedpoint(b, us, 6);
    ps_buf_str(b, "</");
    ps_buf_str(b, tag);
    ps_buf_str(b, ">\n");
}

/* snprintf(dst + *used, cap - *used, "%s", s) as the writer used to append
 * to <annotation>: cut to fit, *used counting what would have been written. */
static void note_add(char *dst, size_t cap, size_t *used, const char *s)
{
    size_t n = strlen(s);
    if (*used < cap) {
        size_t room = cap - 1 - *used, c = n < room ? n : room;
        memcpy(dst + *used, s, c);
        dst[*used + c] = '\0';
    }
    *used += n;
}

static void note_num(char *dst, size_t cap, size_t *used, unsigned long long v)
{
    char d[24];
    ps_buf_t b;
    ps_buf_fixed(&b, d, sizeof d);
    ps_buf_ull(&b, v);
    note_add(dst, cap, used, d);
}

static void header(ps_buf_t *b, const prep_t *p, const char *mode, int thread, const char *annotation,
                   const char *modules, const ps_measurement_t *m)
{
    ps_buf_str(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    ps_buf_str(b, DOCTYPE);
    ps_buf_str(b, "\n<hwpcreport version=\"0.3\" generator=\"psuite " PSUITE_VERSION " libpshwpc\" mode=\"");
    ps_buf_str(b, mode);
    ps_buf_str(b, "\">\n");
    date_element(b, p);
    ps_buf_str(b, p->ident);
    ps_buf_str(b, "  <pid>");
    ps_buf_ll(b, (long long)ps_self_pid());
    /* Always present, a plain decimal (TAU starts a thread of data at each
     * <thread> and reads it with Integer.parseInt): 0 is the process total,
     * 1, 2 ... the threads of psrun -p, so (pid, thread) never collide. */
    ps_buf_str(b, "</pid>\n  <thread>");
    ps_buf_ll(b, thread > 0 ? thread : 0);
    ps_buf_str(b, "</thread>\n");
    ps_buf_str(b, p->user);
    ps_buf_str(b, p->command);

    char note[4096] = "";
    size_t used = 0;
    if (p->rank >= 0) { /* the DTD has no rank element: readers find "MPI rank N" here */
        note_add(note, sizeof note, &used, "MPI rank ");
        note_num(note, sizeof note, &used, (unsigned long long)p->rank);
        if (annotation && *annotation) {
            note_add(note, sizeof note, &used, "; ");
            note_add(note, sizeof note, &used, annotation);
        }
    } else if (annotation)
        note_add(note, sizeof note, &used, annotation);
    used = strlen(note);
    if (p->unfit + p->unfit_user && used < sizeof note) {
        note_add(note, sizeof note, &used, used ? "; " : "");
        note_num(note, sizeof note, &used, p->unfit + p->unfit_user);
        note_add(note, sizeof note, &used,
                 " U+FFFD in the command line, host or user name: bytes that are not XML text "
                 "(invalid UTF-8, surrogates, U+FFFE/U+FFFF, control characters) replaced by U+FFFD");
    }
    if (p->cut && used < sizeof note) {
        note_add(note, sizeof note, &used, used ? "; " : "");
        note_add(note, sizeof note, &used, "command line cut to its first ");
        note_num(note, sizeof note, &used, p->cut_len);
        note_add(note, sizeof note, &used, " bytes");
    }
    /* The executable's GNU build-id, from its mapped notes (no file read).
     * hwpcreport-0.3.dtd declares only md5sum on <command>, so it is the
     * last part of <annotation>: "build-id HEX", whole or not at all. */
    if (p->have_buildid && used + strlen(p->buildid) + 12 < sizeof note) {
        note_add(note, sizeof note, &used, used ? "; " : "");
        note_add(note, sizeof note, &used, "build-id ");
        note_add(note, sizeof note, &used, p->buildid);
    }
    /* the sampled shared modules' build-ids (profile_report.c), after it */
    if (modules && *modules && used + strlen(modules) + 3 < sizeof note) {
        note_add(note, sizeof note, &used, used ? "; " : "");
        note_add(note, sizeof note, &used, modules);
    }
    if (note[0])
        ps_buf_elem(b, 2, "annotation", note);
    wallclock(b, m->wall_ns, p->clock_millimhz);
    ps_buf_str(b, "  <cputime units=\"seconds\">\n");
    seconds_element(b, "usertime", m->user_s);
    seconds_element(b, "systemtime", m->system_s);
    ps_buf_str(b, "  </cputime>\n");
    ps_buf_str(b, p->machine);
}

void ps_report_header(ps_buf_t *b, const char *mode, int thread, const char *annotation, const char *modules,
                      const ps_measurement_t *m)
{
    header(b, prepared(), mode, thread, annotation, modules, m);
}

static void build(ps_buf_t *b, const prep_t *p, const ps_counts_t *c, int thread, const char *annotation,
                  const ps_measurement_t *m)
{
    header(b, p, "count", thread, annotation, NULL, m);
    static const char *const domains[] = {"user", "user", "kernel", "all"};
    ps_buf_str(b, "  <hwpceventdata class=\"");
    ps_buf_str(b, c->cls);
    ps_buf_str(b, "\" version=\"");
    ps_buf_escaped(b, c->version);
    ps_buf_str(b, "\" domain=\"");
    ps_buf_str(b, domains[c->domain & 3]);
    ps_buf_str(b, "\" multiplexed=\"");
    ps_buf_str(b, c->multiplexed ? "yes" : "no");
    ps_buf_str(b, "\">\n");
    for (int k = 0; k < c->n; k++) {
        ps_buf_str(b, "    <hwpcevent type=\"");
        ps_buf_str(b, c->preset[k] ? "preset" : "native");
        ps_buf_str(b, "\" name=\"");
        ps_buf_escaped(b, c->names[k]);
        ps_buf_str(b, "\" derived=\"no\">");
        ps_buf_ll(b, m->values[k]);
        ps_buf_str(b, "</hwpcevent>\n");
    }
    ps_buf_str(b, "  </hwpceventdata>\n</hwpcreport>\n");
}

/* Final path for `name`: "x.xml" as is, else <prefix>.<pid>[.<tag>].<host>.xml
 * in PSUITE_OUTPUT_DIR (default: the current directory); the tag names a
 * thread (t1, t2 ..., the number in its <thread>).  Async-signal-safe. */
static void report_path(const prep_t *p, const char *name, int thread, char *path, size_t len)
{
    ps_buf_t b;
    ps_buf_fixed(&b, path, len);
    const char *dir = p->dir;
    size_t nlen = name ? strlen(name) : 0;
    if (nlen > 4 && strcmp(name + nlen - 4, ".xml") == 0) {
        if (*dir && name[0] != '/') {
            ps_buf_str(&b, dir);
            ps_buf_str(&b, "/");
        }
        ps_buf_str(&b, name);
        return;
    }
    const char *prefix = name && *name ? name : p->prefix;
    if (*dir && prefix[0] != '/') {
        ps_buf_str(&b, dir);
        ps_buf_str(&b, "/");
    }
    ps_buf_str(&b, prefix);
    ps_buf_str(&b, ".");
    if (p->rank >= 0) { /* ranks sort together and never collide, whatever the hosts' pids */
        ps_buf_str(&b, "r");
        ps_buf_ll(&b, p->rank);
        ps_buf_str(&b, ".");
    }
    ps_buf_ll(&b, (long long)ps_self_pid());
    if (thread > 0) {
        ps_buf_str(&b, ".t");
        ps_buf_ll(&b, thread);
    }
    ps_buf_str(&b, ".");
    ps_buf_str(&b, p->host_file);
    ps_buf_str(&b, ".xml");
}

void ps_report_path(const char *name, const char *tag, char *path, size_t len)
{
    /* the tag is t<thread> (profile_report.c) */
    int thread = 0;
    if (tag && tag[0] == 't')
        for (const char *c = tag + 1; *c >= '0' && *c <= '9'; c++)
            thread = thread * 10 + (*c - '0');
    report_path(prepared(), name, thread, path, len);
}

/* 0, or -1 (errno); EFBIG, nothing written, when the data would take the
 * file past the file size limit (fsize_limit.h) */
static int write_all(int fd, const char *p, size_t n)
{
    if (!ps_write_fits(fd, n))
        return -1;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* data written whole at path, created exclusively; 0, or -1 (errno) with
 * nothing left behind */
static int write_file(const char *path, const char *data, size_t len)
{
    int fd = ps_open_anyway(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666); /* even with no descriptor left */
    if (fd < 0)
        return -1;
    int rc = write_all(fd, data, len);
    int err = errno;
    if (close(fd) && !rc) {
        rc = -1;
        err = errno;
    }
    if (rc) {
        unlink(path);
        errno = err;
    }
    return rc;
}

/* psrun --archive: the file psrun reads after the run to know which
 * documents it wrote (PSUITE_MANIFEST, a private temporary file of psrun's).
 * Taken out of the program's environment at its start (kept with psrun -f,
 * whose followed programs write reports too, as LD_PRELOAD is kept).  Each
 * saved document appends "PID PATH\0" in one O_APPEND write: whole records
 * whatever processes and threads save at once.  Async-signal-safe. */
static char manifest[PATH_MAX];

void ps_report_manifest_init(int keep_in_environment)
{
    const char *m = getenv("PSUITE_MANIFEST");
    if (!m)
        return;
    if (*m && strlen(m) < sizeof manifest)
        ps_strlcpy(manifest, m, sizeof manifest);
    if (!keep_in_environment)
        unsetenv("PSUITE_MANIFEST");
}

static void manifest_add(const char *path)
{
    if (!manifest[0])
        return;
    char record[PATH_MAX + 64];
    ps_buf_t b;
    ps_buf_fixed(&b, record, sizeof record);
    ps_buf_ll(&b, (long long)ps_self_pid());
    ps_buf_str(&b, " ");
    ps_buf_str(&b, path);
    int fd = b.failed ? -1 : ps_open_anyway(manifest, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0)
        return; /* psrun then files what it finds: nothing more to do here */
    if (ps_write_fits(fd, b.len + 1)) { /* past the file size limit: not filed either */
        ps_xfsz_hold_t xfsz; /* followed processes append too: the limit may be reached in between */
        ps_xfsz_hold(&xfsz);
        ssize_t w = write(fd, record, b.len + 1); /* the record and its NUL; a failed one is not filed */
        (void)w;
        ps_xfsz_release(&xfsz);
    }
    close(fd);
}

/* link() cannot be used on this file system: no hard links (vfat, some FUSE
 * and SMB mounts) */
static int no_links(int err) { return err == EPERM || err == EOPNOTSUPP || err == ENOSYS || err == EMLINK; }

static unsigned tmp_seq;

/* Write data exclusively at path or the next free name ("x.1.xml" ...);
 * the name used in path_out.  Through a temporary file in the same
 * directory placed with link(); where the file system has no hard links,
 * with renameat2(RENAME_NOREPLACE); where it has not that either, the final
 * name is written directly (O_EXCL).  Async-signal-safe. */
/* Checkpoints (collector.c): reports written while the process runs,
 * under the names its final reports take; a later write of the same name
 * replaces the checkpoint atomically (rename).  Only the collector writes
 * checkpoints: the list is its own (thread-local, so not in the memory it
 * shares with the program). */
#define CHECKPOINT_PATHS 4096
static __thread char (*cp_path)[PATH_MAX];
static __thread int cp_n, checkpointing;

void ps_report_checkpointing(int on) { checkpointing = on; }
int ps_report_is_checkpointing(void) { return checkpointing; }

static int checkpoint_slot(const char *path)
{
    for (int i = 0; i < cp_n; i++)
        if (strcmp(cp_path[i], path) == 0)
            return i;
    return -1;
}

static void checkpoint_remember(const char *path)
{
    if (!cp_path) {
        void *m = mmap(NULL, sizeof *cp_path * CHECKPOINT_PATHS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return;
        cp_path = m;
    }
    if (cp_n < CHECKPOINT_PATHS && checkpoint_slot(path) < 0)
        ps_strlcpy(cp_path[cp_n++], path, PATH_MAX);
}

static int save_new(const char *data, size_t len, const char *path, char *path_out, size_t path_len);

/* A temporary name beside path (".psuite-PID-SEQ" in its directory); 0
 * when it does not fit. */
static int temp_name(const char *path, char *tmp, size_t size)
{
    ps_buf_t b;
    const char *slash = strrchr(path, '/');
    ps_buf_fixed(&b, tmp, size);
    ps_buf_mem(&b, path, slash ? (size_t)(slash - path) + 1 : 0);
    ps_buf_str(&b, ".psuite-");
    ps_buf_ll(&b, (long long)ps_self_pid());
    ps_buf_str(&b, "-");
    ps_buf_ull(&b, __atomic_fetch_add(&tmp_seq, 1, __ATOMIC_SEQ_CST));
    return !b.failed;
}

static int save(const char *data, size_t len, int failed, const char *path, char *path_out, size_t path_len)
{
    int saved_errno = errno;
    ps_strlcpy(path_out, path, path_len);
    if (failed) {
        errno = ENOMEM;
        return PS_HWPC_EIO;
    }
    int slot = checkpoint_slot(path);
    if (slot >= 0) {
        /* a checkpoint of ours is there: replaced whole, never half written */
        char tmp[PATH_MAX + 64];
        if (temp_name(path, tmp, sizeof tmp) && write_file(tmp, data, len) == 0) {
            if (rename(tmp, path) == 0) {
                if (!checkpointing) { /* the final report: announced as any other */
                    cp_path[slot][0] = '\0';
                    ps_report_note(path);
                    manifest_add(path);
                }
                errno = saved_errno;
                return PS_HWPC_OK;
            }
            unlink(tmp);
        }
        return PS_HWPC_EIO;
    }
    int rc = save_new(data, len, path, path_out, path_len);
    if (checkpointing && (rc == PS_HWPC_OK || rc == PS_HWPC_EEXIST))
        checkpoint_remember(path_out);
    if (rc == PS_HWPC_OK || rc == PS_HWPC_EEXIST)
        errno = saved_errno;
    return rc;
}

/* The final name a report is linked to: path, or the next free one. */
static void next_candidate(const char *path, int k, char *candidate, size_t size)
{
    ps_buf_t b;
    size_t plen = strlen(path);
    ps_buf_fixed(&b, candidate, size);
    ps_buf_mem(&b, path, plen > 4 ? plen - 4 : 0);
    ps_buf_str(&b, ".");
    ps_buf_ll(&b, k);
    ps_buf_str(&b, ".xml");
}

#define SAVE_UNSUPPORTED 1000 /* the file system cannot: another way */

/* The report as a file with no name (O_TMPFILE) in path's directory,
 * linked to its final name only when whole: a process killed at any
 * instant (the collector included, with its job) leaves no temporary file.
 * Linked through /proc/self/fd, which needs no privilege (AT_EMPTY_PATH
 * does).  SAVE_UNSUPPORTED where there is no O_TMPFILE or no hard link. */
static int save_unnamed(const char *data, size_t len, const char *path, char *path_out, size_t path_len)
{
    char dir[PATH_MAX], fdpath[64], candidate[PATH_MAX + 32];
    const char *slash = strrchr(path, '/');
    if (!slash)
        ps_strlcpy(dir, ".", sizeof dir);
    else if ((size_t)(slash - path) + 2 > sizeof dir)
        return SAVE_UNSUPPORTED;
    else {
        memcpy(dir, path, (size_t)(slash - path) + 1);
        dir[slash - path + 1] = '\0';
    }
    int fd = ps_open_anyway(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) /* no O_TMPFILE there, or the directory refuses: the other way says which */
        return SAVE_UNSUPPORTED;
    if (write_all(fd, data, len) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return PS_HWPC_EIO;
    }
    ps_buf_t b;
    ps_buf_fixed(&b, fdpath, sizeof fdpath);
    ps_buf_str(&b, "/proc/self/fd/");
    ps_buf_ll(&b, fd);
    ps_strlcpy(candidate, path, sizeof candidate);
    int rc = PS_HWPC_EIO, err = EEXIST;
    for (int k = 1; k < 1000; k++) {
        if (linkat(AT_FDCWD, fdpath, AT_FDCWD, candidate, AT_SYMLINK_FOLLOW) == 0) {
            rc = strcmp(candidate, path) == 0 ? PS_HWPC_OK : PS_HWPC_EEXIST;
            break;
        }
        err = errno;
        if (err != EEXIST) { /* no /proc, no hard links: another way */
            rc = err == ENOENT || no_links(err) ? SAVE_UNSUPPORTED : PS_HWPC_EIO;
            break;
        }
        next_candidate(path, k, candidate, sizeof candidate); /* EEXIST on any name, symlinks included */
    }
    if (close(fd) != 0 && rc != SAVE_UNSUPPORTED && rc != PS_HWPC_EIO) {
        /* written, but the data may not be: a partial file is no report */
        err = errno;
        unlink(candidate);
        rc = PS_HWPC_EIO;
    }
    if (rc == PS_HWPC_OK || rc == PS_HWPC_EEXIST) {
        if (!checkpointing) {
            ps_report_note(candidate);
            manifest_add(candidate);
        }
        ps_strlcpy(path_out, candidate, path_len);
    } else
        errno = err;
    return rc;
}

static int save_new(const char *data, size_t len, const char *path, char *path_out, size_t path_len)
{
    int saved_errno = errno;
    int unnamed = save_unnamed(data, len, path, path_out, path_len);
    if (unnamed != SAVE_UNSUPPORTED) {
        if (unnamed == PS_HWPC_OK || unnamed == PS_HWPC_EEXIST)
            errno = saved_errno;
        return unnamed;
    }
    char tmp[PATH_MAX + 64], candidate[PATH_MAX + 32];
    enum { LINK, RENAME, DIRECT } how = LINK;
    int made = 0;
    for (int tries = 0; tries < 100 && !made; tries++) {
        if (!temp_name(path, tmp, sizeof tmp)) {
            errno = ENAMETOOLONG;
            return PS_HWPC_EIO;
        }
        if (write_file(tmp, data, len) == 0)
            made = 1;
        else if (errno != EEXIST)
            break;
    }
    if (!made) {
        if (errno != EACCES && errno != EPERM && errno != EINVAL)
            return PS_HWPC_EIO; /* a full device, a missing directory ... */
        how = DIRECT;           /* no temporary name allowed there: the final name directly */
    }
    ps_strlcpy(candidate, path, sizeof candidate);
    for (int k = 1; k < 1000;) {
        int rc, err;
        if (how == LINK) {
            rc = link(tmp, candidate);
            err = errno;
            if (rc == 0)
                unlink(tmp);
            else if (no_links(err)) {
                how = RENAME;
                continue;
            }
        } else if (how == RENAME) {
            rc = (int)syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, candidate, RENAME_NOREPLACE);
            err = errno;
            if (rc != 0 && (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == EPERM)) {
                unlink(tmp);
                how = DIRECT;
                continue;
            }
        } else {
            rc = write_file(candidate, data, len);
            err = errno;
        }
        if (rc == 0) {
            if (!checkpointing) {
                ps_report_note(candidate);
                manifest_add(candidate);
            }
            ps_strlcpy(path_out, candidate, path_len);
            errno = saved_errno;
            return strcmp(candidate, path) == 0 ? PS_HWPC_OK : PS_HWPC_EEXIST;
        }
        if (err != EEXIST) {
            if (how != DIRECT)
                unlink(tmp);
            errno = err;
            return PS_HWPC_EIO;
        }
        /* link() and renameat2 fail with EEXIST on any existing name,
         * symlinks included, and so does O_EXCL */
        next_candidate(path, k++, candidate, sizeof candidate);
    }
    if (how != DIRECT)
        unlink(tmp);
    errno = EEXIST;
    return PS_HWPC_EIO;
}

int ps_report_save(ps_buf_t *b, const char *path, char *path_out, size_t path_len)
{
    int rc = save(b->data ? b->data : "", b->len, b->failed, path, path_out, path_len);
    int err = errno;
    ps_buf_free(b);
    errno = err;
    return rc;
}

/* ---- the count report, on the writer's own stack ----------------------------- */
typedef struct {
    const prep_t *p;
    const ps_counts_t *c;
    int thread;
    const char *annotation, *name;
    const ps_measurement_t *m;
    char *path_out;
    size_t path_len;
    int rc, err;
} job_t;

static void write_job(void *arg, char *out, size_t size)
{
    job_t *j = arg;
    ps_buf_t b;
    ps_buf_fixed(&b, out, out ? size : 0);
    if (out)
        build(&b, j->p, j->c, j->thread, j->annotation, j->m);
    char path[PATH_MAX];
    report_path(j->p, j->name, j->thread, path, sizeof path);
    j->rc = save(b.data ? b.data : "", b.len, b.failed, path, j->path_out, j->path_len);
    j->err = errno;
}

int ps_report_write_counts(const ps_counts_t *c, int thread, const char *annotation, const ps_measurement_t *m,
                           const char *name, char *path_out, size_t path_len)
{
    job_t j = {prepared(), c, thread, annotation, name, m, path_out, path_len, PS_HWPC_EIO, 0};
    ps_on_safe_stack(write_job, &j);
    errno = j.err;
    return j.rc;
}

/* The counts of the process-wide set (<annotation>: events not counted,
 * and what was counted instead). */
int ps_report_write(const ps_evset_t *set, const ps_measurement_t *m, const char *name, char *path_out,
                    size_t path_len)
{
    const char *names[PS_HWPC_MAX_EVENTS];
    int preset[PS_HWPC_MAX_EVENTS];
    for (int k = 0; k < set->ncounted; k++) {
        names[k] = set->ev[set->counted[k]].name;
        preset[k] = set->ev[set->counted[k]].preset;
    }
    ps_counts_t c = {set->backend == PS_BACKEND_PAPI ? "PAPI" : "perfmon",
                     set->backend == PS_BACKEND_PAPI ? set->backend_version : "perf_event",
                     set->domain, set->multiplexed, set->ncounted, names, preset};
    return ps_report_write_counts(&c, 0, set->annotation, m, name, path_out, path_len);
}
