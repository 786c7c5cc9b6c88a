/* report.c - the <hwpcreport mode="count"> document (hwpcreport-0.3.dtd),
 * written atomically and exclusively: temporary file, then link() to the
 * final name, which never overwrites and never follows a planted symlink. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef PSUITE_VERSION
#define PSUITE_VERSION "0"
#endif

/* /proc/thread-self, not /proc/self: when main has called pthread_exit the
 * report is written by another thread, and the exited leader's /proc/self
 * entries (exe, cmdline) can no longer be read. */
#define PROC_SELF "/proc/thread-self/"

/* The MPI rank from the launcher's environment (Open MPI, MPICH/PMI,
 * PMIx, Slurm), or -1 outside MPI. */
int ps_mpi_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (v && *v) {
            long r = strtol(v, &end, 10);
            if (!*end && r >= 0 && r < 1 << 30)
                return (int)r;
        }
    }
    return -1;
}

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

/* <date> as the original PerfSuite wrote it: C's ctime() form, local time,
 * without ctime's newline, and with the day of the month zero-padded, i.e.
 * strftime's "%a %b %d %H:%M:%S %Y" in the C locale ("Tue Mar 04 10:12:09
 * 2014").  Eclipse PTP's PerfSuite parser (ExecutionInfo.java) reads <date>
 * with SimpleDateFormat("EEE MMM dd HH:mm:ss yyyy", Locale.US) and fails on
 * anything else; %d is what its "dd" stands for (ctime's space-padded %e,
 * "Mar  4", is accepted only because SimpleDateFormat skips blanks before a
 * number).  The names are spelled here rather than by strftime so that the
 * program's LC_TIME cannot translate them. */
static void ctime_date(char *out, size_t len)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm))
        gmtime_r(&now, &tm);
    snprintf(out, len, "%s %s %02d %02d:%02d:%02d %d", days[(unsigned)tm.tm_wday % 7], months[(unsigned)tm.tm_mon % 12],
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_year + 1900);
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
        ps_buf_printf(b, "  <wallclock units=\"ticks\">%llu</wallclock>\n", (unsigned long long)(t / 1000000));
    } else
        ps_buf_printf(b, "  <wallclock units=\"seconds\">%lld.%09lld</wallclock>\n", wall_ns / 1000000000,
                      wall_ns % 1000000000);
}

/* Seconds with six decimals, whatever the program's LC_NUMERIC. */
static void seconds_element(ps_buf_t *b, const char *tag, double s)
{
    long long us = s > 0 ? (long long)(s * 1e6 + 0.5) : 0;
    ps_buf_printf(b, "    <%s>%lld.%06lld</%s>\n", tag, us / 1000000, us % 1000000, tag);
}

void ps_report_header(ps_buf_t *b, const char *mode, int thread, const char *annotation,
                      const ps_measurement_t *m)
{
    char text[8192], host[256], domain[256];
    host_names(host, sizeof host, domain, sizeof domain);
    ps_machineinfo_t machine;
    ps_machineinfo(&machine);

    ps_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n%s\n", DOCTYPE);
    ps_buf_printf(b, "<hwpcreport version=\"0.3\" generator=\"psuite %s libpshwpc\" mode=\"%s\">\n",
                  PSUITE_VERSION, mode);
    ctime_date(text, sizeof text);
    ps_buf_element(b, 2, "date", text);
    ps_buf_element(b, 2, "hostname", host);
    ps_buf_element(b, 2, "domainname", domain);
    ps_buf_printf(b, "  <pid>%d</pid>\n", (int)getpid());
    /* Always present, a plain decimal (TAU starts a thread of data at each
     * <thread> and reads it with Integer.parseInt): 0 is the process total,
     * 1, 2 ... the threads of psrun -p, so (pid, thread) never collide. */
    ps_buf_printf(b, "  <thread>%d</thread>\n", thread > 0 ? thread : 0);
    struct passwd pw, *res = NULL;
    char pwbuf[4096];
    getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &res);
    if (res)
        ps_buf_element(b, 2, "username", res->pw_name);
    char md5[33];
    int cut = command_line(text, sizeof text);
    size_t unfit = ps_xml_unfit(text) + ps_xml_unfit(host) + ps_xml_unfit(domain) +
                   (res ? ps_xml_unfit(res->pw_name) : 0);
    /* md5sum of the whole executable only when asked (PSUITE_MD5=1): it reads
     * the file, over a second for a large one, in every process */
    if (ps_env_flag("PSUITE_MD5") && ps_md5_file(PROC_SELF "exe", md5) == 0)
        ps_buf_printf(b, "  <command md5sum=\"%s\">", md5);
    else
        ps_buf_printf(b, "  <command>");
    ps_buf_escaped(b, text);
    ps_buf_printf(b, "</command>\n");
    char note[4096] = "";
    int rank = ps_mpi_rank();
    if (rank >= 0) /* the DTD has no rank element: readers find "MPI rank N" here */
        snprintf(note, sizeof note, "MPI rank %d%s%s", rank, annotation && *annotation ? "; " : "",
                 annotation ? annotation : "");
    else if (annotation)
        ps_strlcpy(note, annotation, sizeof note);
    size_t used = strlen(note);
    if (unfit && used < sizeof note)
        used += (size_t)snprintf(note + used, sizeof note - used,
                                 "%s%zu U+FFFD in the command line, host or user name: bytes that are not XML text "
                                 "(invalid UTF-8, surrogates, U+FFFE/U+FFFF, control characters) replaced by U+FFFD",
                                 used ? "; " : "", unfit);
    if (cut && used < sizeof note)
        used += (size_t)snprintf(note + used, sizeof note - used, "%scommand line cut to its first %zu bytes",
                                 used ? "; " : "", strlen(text));
    /* The executable's GNU build-id, from its mapped notes (no file read).
     * hwpcreport-0.3.dtd declares only md5sum on <command>, so it is the
     * last part of <annotation>: "build-id HEX", whole or not at all. */
    char buildid[130];
    if (ps_buildid(buildid, sizeof buildid) == 0 && used + strlen(buildid) + 12 < sizeof note)
        snprintf(note + used, sizeof note - used, "%sbuild-id %s", used ? "; " : "", buildid);
    if (note[0])
        ps_buf_element(b, 2, "annotation", note);
    wallclock(b, m->wall_ns, ps_machineinfo_clock_millimhz(&machine));
    ps_buf_printf(b, "  <cputime units=\"seconds\">\n");
    seconds_element(b, "usertime", m->user_s);
    seconds_element(b, "systemtime", m->system_s);
    ps_buf_printf(b, "  </cputime>\n");
    ps_machineinfo_xml(b, 2, &machine);
}

static void build(ps_buf_t *b, const ps_counts_t *c, int thread, const char *annotation, const ps_measurement_t *m)
{
    ps_report_header(b, "count", thread, annotation, m);
    static const char *const domains[] = {"user", "user", "kernel", "all"};
    ps_buf_printf(b, "  <hwpceventdata class=\"%s\" version=\"", c->cls);
    ps_buf_escaped(b, c->version);
    ps_buf_printf(b, "\" domain=\"%s\" multiplexed=\"%s\">\n", domains[c->domain & 3], c->multiplexed ? "yes" : "no");
    for (int k = 0; k < c->n; k++) {
        ps_buf_printf(b, "    <hwpcevent type=\"%s\" name=\"", c->preset[k] ? "preset" : "native");
        ps_buf_escaped(b, c->names[k]);
        ps_buf_printf(b, "\" derived=\"no\">%lld</hwpcevent>\n", m->values[k]);
    }
    ps_buf_printf(b, "  </hwpceventdata>\n</hwpcreport>\n");
}

int ps_report_write_counts(const ps_counts_t *c, int thread, const char *annotation, const ps_measurement_t *m,
                           const char *name, char *path_out, size_t path_len)
{
    ps_buf_t b = {0};
    build(&b, c, thread, annotation, m);
    char path[PATH_MAX], tag[32];
    snprintf(tag, sizeof tag, "t%d", thread);
    ps_report_path(name, thread > 0 ? tag : NULL, path, sizeof path);
    return ps_report_save(&b, path, path_out, path_len);
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Final path for `name`: "x.xml" as is, else <prefix>.<pid>[.<tag>].<host>.xml
 * in PSUITE_OUTPUT_DIR (default: the current directory); the tag names a
 * thread (t1, t2 ..., the number in its <thread>). */
void ps_report_path(const char *name, const char *tag, char *path, size_t len)
{
    char prefix[PATH_MAX], host[256], domain[256];
    const char *dir = getenv("PSUITE_OUTPUT_DIR");
    size_t nlen = name ? strlen(name) : 0;
    if (nlen > 4 && strcmp(name + nlen - 4, ".xml") == 0) {
        if (dir && *dir && name[0] != '/')
            snprintf(path, len, "%s/%s", dir, name);
        else
            ps_strlcpy(path, name, len);
        return;
    }
    if (name && *name)
        ps_strlcpy(prefix, name, sizeof prefix);
    else if (getenv("PSUITE_OUTPUT_PREFIX") && *getenv("PSUITE_OUTPUT_PREFIX"))
        ps_strlcpy(prefix, getenv("PSUITE_OUTPUT_PREFIX"), sizeof prefix);
    else
        exe_name(prefix, sizeof prefix);
    host_names(host, sizeof host, domain, sizeof domain);
    for (char *p = host; *p; p++)
        if (*p == '/')
            *p = '_';
    char pid[96], rank[32] = "";
    int r = ps_mpi_rank();
    if (r >= 0) /* ranks sort together and never collide, whatever the hosts' pids */
        snprintf(rank, sizeof rank, "r%d.", r);
    snprintf(pid, sizeof pid, "%s%d%s%s", rank, (int)getpid(), tag ? "." : "", tag ? tag : "");
    if (dir && *dir && prefix[0] != '/')
        snprintf(path, len, "%s/%s.%s.%s.xml", dir, prefix, pid, host);
    else
        snprintf(path, len, "%s.%s.%s.xml", prefix, pid, host);
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

int ps_report_save(ps_buf_t *b, const char *path, char *path_out, size_t path_len)
{
    if (b->failed) {
        ps_buf_free(b);
        return PS_HWPC_EIO;
    }
    char tmp[PATH_MAX + 32];
    ps_strlcpy(path_out, path, path_len);
    char dir[PATH_MAX];
    ps_strlcpy(dir, path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        dir[0] = '\0';
    snprintf(tmp, sizeof tmp, "%s.psuite-XXXXXX", dir);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        ps_buf_free(b);
        errno = err;
        return PS_HWPC_EIO;
    }
    mode_t mask = umask(0); /* mkostemp made it 0600: give it the usual mode */
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    int rc = write_all(fd, b->data, b->len);
    ps_buf_free(b);
    if (close(fd) || rc) {
        int err = errno;
        unlink(tmp);
        errno = err;
        return PS_HWPC_EIO;
    }
    /* link() fails with EEXIST on any existing name, symlinks included. */
    char candidate[PATH_MAX];
    ps_strlcpy(candidate, path, sizeof candidate);
    for (int k = 1; k < 1000; k++) {
        if (link(tmp, candidate) == 0) {
            unlink(tmp);
            ps_report_note(candidate);
            ps_strlcpy(path_out, candidate, path_len);
            return strcmp(candidate, path) == 0 ? PS_HWPC_OK : PS_HWPC_EEXIST;
        }
        if (errno != EEXIST)
            break;
        size_t plen = strlen(path);
        snprintf(candidate, sizeof candidate, "%.*s.%d.xml", (int)(plen - 4), path, k);
    }
    int err = errno;
    unlink(tmp);
    errno = err;
    return PS_HWPC_EIO;
}
