/* psrun - the native launcher: measure an unmodified program.
 *
 * psrun parses its options, checks them before the program runs, sets up
 * the environment (PSUITE_*, PS_HWPC_CONFIG) and LD_PRELOAD of
 * libpshwpc.so (found beside this executable or in the Python package it
 * was installed with) and starts the program.  Without -R it simply execs
 * the program: the exit status, the signal and everything else are the
 * program's own.  With -R it forks, samples the load averages while the
 * program runs, writes a <resourcereport> and ends as the program ended
 * (the same exit code, or the same fatal signal raised on itself).
 * With --archive (or PSUITE_ARCHIVE) it forks and waits in the same way,
 * then files the documents the run wrote into a psbase archive by running
 * psuite's Python (python -m psuite.psbase.filing) after the program has
 * ended: the runtime lists each document it saves in a private manifest
 * file (PSUITE_MANIFEST, taken out of the program's environment).
 *
 * psrun never changes a signal disposition or the signal mask the program
 * inherits, never writes to stdout (except --help and --version), and its
 * own messages on stderr ("psrun: ...") never change the program's status,
 * whatever stderr is (full, closed, a pipe nobody reads).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/env_values.h"
#include "../common/fsize_limit.h"
#include "../common/mpi_rank.h"
#include "../common/quiet_write.h"

#ifndef PSUITE_VERSION
#define PSUITE_VERSION "unknown"
#endif
#ifndef PSRUN_PYVER
#define PSRUN_PYVER "3"
#endif

extern char **environ;

#define USAGE_EXIT 2
#define LIBNAME "libpshwpc.so"
#define DEFAULT_TIMER_PERIOD_US 10000L
#define MIN_PERF_TIMER_US 100L      /* perf_event task clock (hrtimer driven) */
#define MIN_REAL_TIMER_US 1000L     /* ITIMER_REAL: a sampler thread reading /proc */
#define MIN_CLOCK_EVENT_NS 100000L  /* task-clock / cpu-clock overflow: 100 us */
#define MAX_PREFIX 155              /* room for .r<rank>.<pid>.t<N>.<host>.resource.<k>.xml in NAME_MAX */
#define LOAD_RESOLUTION 0.5
#define LOAD_MAX 64.0
#define NLOADS 128 /* LOAD_MAX / LOAD_RESOLUTION */

static const char HELP[] =
"usage: psrun [-h] [--version] [-c FILE] [-e LIST] [--domain {user,kernel,all}]\n"
"             [--backend {PAPI,perf_event}] [-o PREFIX] [-d DIR] [-q]\n"
"             [--profile SOURCE] [--period N] [--callpath[=DEPTH]] [-p] [-R]\n"
"             [--interval SEC] [--checkpoint SEC] [-f] [--archive EXPERIMENT]\n"
"             [--db URL]\n"
"             ...\n"
"\n"
"psrun starts the program with psuite's C library preloaded; the library\n"
"counts the configured events from just before main to the program's exit\n"
"and writes one PerfSuite XML report (<exe>.<pid>.<host>.xml).  psrun's own\n"
"messages go to stderr prefixed \"psrun:\"; the program's input, output, exit\n"
"status and signals are its own.\n"
"\n"
"positional arguments:\n"
"  PROGRAM [ARGS...]     the program to measure and its arguments\n"
"\n"
"options:\n"
"  -h, --help            show this help message and exit\n"
"  --version             show program's version number and exit\n"
"  -c FILE, --config FILE\n"
"                        PerfSuite event list (<ps_hwpc_eventlist>)\n"
"  -e LIST, --events LIST\n"
"                        comma-separated event names (see psinv -e)\n"
"  --domain {user,kernel,all}\n"
"                        count in this domain (default: the configuration's,\n"
"                        else user)\n"
"  --backend {PAPI,perf_event}\n"
"                        force a counting backend\n"
"  -o PREFIX, --output PREFIX\n"
"                        report file prefix (default: the program name)\n"
"  -d DIR, --directory DIR\n"
"                        directory for the report (default: current)\n"
"  -q, --quiet           only errors; no notes on dropped events\n"
"  --profile SOURCE      sample instead of counting: ITIMER_PROF (CPU time),\n"
"                        ITIMER_VIRTUAL (user CPU time), ITIMER_REAL (wall\n"
"                        time) or an event to sample on overflow (task-clock,\n"
"                        PAPI_TOT_CYC ...)\n"
"  --period N            sampling period: microseconds for the timers (default\n"
"                        10000), events between samples for an event\n"
"  --callpath[=DEPTH]    also record each sample's calling context, up to\n"
"                        DEPTH frames (default 128, at most 1024), into a\n"
"                        companion <exe>.<pid>.<host>.callpaths.xml beside the\n"
"                        profile; without --profile or a <ps_hwpc_profile>\n"
"                        configuration it samples ITIMER_PROF\n"
"  -p, --per-thread      also one report per thread\n"
"  -R, --resources       also a resource report: load, memory, CPU time,\n"
"                        faults, sampled while the program runs\n"
"  --interval SEC        with -R: seconds between samples (default 1)\n"
"  --checkpoint SEC      also write the reports so far every SEC seconds while\n"
"                        the program runs, each replacing the last (a job\n"
"                        killed together with psuite keeps all but the last\n"
"                        period); also PSUITE_CHECKPOINT=SEC\n"
"  -f, --follow          measure the processes the program forks and execs too,\n"
"                        each in its own report\n"
"  --archive EXPERIMENT  after the program ends, file the documents it wrote\n"
"                        into EXPERIMENT (made with psbase setup --psuite) of\n"
"                        the archive; also PSUITE_ARCHIVE=EXPERIMENT (the\n"
"                        option wins)\n"
"  --db URL              with --archive: the archive, an SQLite file or a\n"
"                        database URL (default: $PSBASE_DB, else psbase.db\n"
"                        in the current directory)\n"
"\n"
"programs: a dynamically linked 64-bit program for this machine, or a script\n"
"with a #! line, whose interpreter is measured (a note says so; -f also\n"
"measures the programs it starts).  Refused before anything runs (exit 2):\n"
"32-bit and statically linked programs, programs for another machine,\n"
"set-user-ID and set-group-ID programs, shared libraries, object files and\n"
"scripts without a #! line.\n"
"\n"
"configuration (first that applies):\n"
"  -e NAME[,NAME...]      ad hoc events, e.g. -e task-clock,page-faults\n"
"  -c FILE                a PerfSuite <ps_hwpc_eventlist> (counting) or\n"
"                         <ps_hwpc_profile> (sampling) file\n"
"  PS_HWPC_CONFIG=FILE    the same, from the environment\n"
"  --profile SOURCE       sampling, e.g. --profile ITIMER_PROF --period 1000\n"
"  (none)                 the default list: PAPI presets + software events\n"
"\n"
"profiles: samples go to the thread they interrupt; the report states the\n"
"rate actually delivered.  Timer periods are microseconds; ITIMER_PROF and\n"
"ITIMER_VIRTUAL use perf_event's task clock (not limited to the kernel\n"
"tick), ITIMER_REAL samples blocked threads without interrupting them.\n"
"Shortest periods (a shorter one is raised to it, with a note): 100 us for\n"
"ITIMER_PROF and ITIMER_VIRTUAL on perf_event, the kernel tick (e.g. 4000 us\n"
"at 250 Hz) where they fall back on POSIX CPU-time timers, 1000 us for\n"
"ITIMER_REAL, 100000 (ns) for task-clock and cpu-clock overflow.\n"
"call paths (--callpath, or callpath=\"yes|no|N\" on <ps_hwpc_profile>): stacks\n"
"are unwound in the program with libunwind (libunwind.so.8, found at run\n"
"time), else libgcc_s, else frame pointers (psrun says which); deeper\n"
"stacks keep their innermost DEPTH frames and are counted as truncated.\n"
"\n"
"output: <exe>.<pid>.<host>.xml in the current directory; -o PREFIX sets the\n"
"first part, -d DIR the directory (also PSUITE_OUTPUT_PREFIX,\n"
"PSUITE_OUTPUT_DIR).  An existing file is never overwritten.\n"
"\n"
"backends: PAPI through the system's libpapi (or PSUITE_PAPI_LIBRARY) when\n"
"present, else Linux perf_event; --backend chooses.  Events that exist but\n"
"cannot be counted here are dropped with a message before the program\n"
"starts; an event name that does not exist is an error (exit 2).\n"
"\n"
"archive (--archive, PSUITE_ARCHIVE): psrun waits for the program, then\n"
"files its documents with the Python psuite is installed in (psbase input):\n"
"one run per document, one per process with -p (its threads' reports), and\n"
"the resource report of -R as a run of its own; one line on stderr says what\n"
"was filed (none with -q).  If filing fails (no archive, no such experiment\n"
"...), one line says why and the documents stay on disk.  The program's\n"
"environment is its own (PSUITE_ARCHIVE and PSBASE_DB unchanged).  Under MPI\n"
"each rank's psrun would file its own run: file an MPI run's reports as one\n"
"run with psprocess -c --archive EXPERIMENT 'app.*.xml' instead.\n"
"\n"
"exit status: the program's own: psrun execs it, or with -R or --archive\n"
"ends as it ended (a shell shows 128+N if it was killed by signal N, and\n"
"psrun dies of the same signal); 2 for psrun's usage errors, and 2 when\n"
"filing into the archive fails after a program that exited 0.\n"
"\n"
"examples:\n"
"  psrun ./app input.dat\n"
"  psrun -e PAPI_TOT_CYC,PAPI_TOT_INS ./app\n"
"  psrun -c mylist.xml -d results/ ./app\n"
"  psrun --profile ITIMER_PROF --period 1000 ./app\n"
"  psrun --callpath --period 1000 ./app\n"
"  psrun --archive myapp ./app     (after psbase setup --psuite myapp)\n"
"  psprocess app.*.xml\n";

/* ---- messages: stderr only, never an error for psrun ---------------- */


/* One line whatever the message quotes: line breaks and other control
 * characters are shown as escapes (\n, \r, \x1b ...). */
static void vmessage(const char *fmt, va_list ap)
{
    char text[PATH_MAX + 1024], line[4 * (PATH_MAX + 1024) + 16];
    int k = vsnprintf(text, sizeof text, fmt, ap);
    if (k < 0)
        text[0] = '\0';
    size_t n = 7;
    memcpy(line, "psrun: ", n);
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p >= 0x20 && *p != 0x7f) || *p == '\t') {
            line[n++] = (char)*p;
            continue;
        }
        line[n++] = '\\';
        if (*p == '\n')
            line[n++] = 'n';
        else if (*p == '\r')
            line[n++] = 'r';
        else {
            line[n++] = 'x';
            line[n++] = hex[*p >> 4];
            line[n++] = hex[*p & 15];
        }
    }
    line[n++] = '\n';
    ps_write_quietly(STDERR_FILENO, line, n);
}

static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

static __attribute__((noreturn)) void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
    _exit(USAGE_EXIT);
}

/* ---- options ---------------------------------------------------------- */

enum { OPT_CONFIG, OPT_EVENTS, OPT_DOMAIN, OPT_BACKEND, OPT_OUTPUT, OPT_DIRECTORY, OPT_QUIET, OPT_PROFILE, OPT_PERIOD,
       OPT_CALLPATH,       OPT_PER_THREAD, OPT_RESOURCES, OPT_INTERVAL, OPT_CHECKPOINT, OPT_FOLLOW, OPT_ARCHIVE, OPT_DB, OPT_HELP,
       OPT_VERSION, OPT_COUNT };

struct option_def {
    char short_flag;
    const char *long_flag;
    int takes_value;
    const char *const *choices;
};

static const char *const DOMAINS[] = {"user", "kernel", "all", NULL};
static const char *const BACKENDS[] = {"PAPI", "perf_event", NULL};

static const struct option_def OPTIONS[OPT_COUNT] = {
    [OPT_CONFIG] = {'c', "--config", 1, NULL},
    [OPT_EVENTS] = {'e', "--events", 1, NULL},
    [OPT_DOMAIN] = {0, "--domain", 1, DOMAINS},
    [OPT_BACKEND] = {0, "--backend", 1, BACKENDS},
    [OPT_OUTPUT] = {'o', "--output", 1, NULL},
    [OPT_DIRECTORY] = {'d', "--directory", 1, NULL},
    [OPT_QUIET] = {'q', "--quiet", 0, NULL},
    [OPT_PROFILE] = {0, "--profile", 1, NULL},
    [OPT_PERIOD] = {0, "--period", 1, NULL},
    [OPT_CALLPATH] = {0, "--callpath", 2, NULL}, /* 2: a value only as --callpath=DEPTH */
    [OPT_PER_THREAD] = {'p', "--per-thread", 0, NULL},
    [OPT_RESOURCES] = {'R', "--resources", 0, NULL},
    [OPT_INTERVAL] = {0, "--interval", 1, NULL},
    [OPT_CHECKPOINT] = {0, "--checkpoint", 1, NULL},
    [OPT_FOLLOW] = {'f', "--follow", 0, NULL},
    [OPT_ARCHIVE] = {0, "--archive", 1, NULL},
    [OPT_DB] = {0, "--db", 1, NULL},
    [OPT_HELP] = {'h', "--help", 0, NULL},
    [OPT_VERSION] = {0, "--version", 0, NULL},
};

static const char *opt_value[OPT_COUNT];
static int opt_set[OPT_COUNT];

static const char *option_name(int o)
{
    static char buf[40];
    if (OPTIONS[o].short_flag)
        snprintf(buf, sizeof buf, "-%c/%s", OPTIONS[o].short_flag, OPTIONS[o].long_flag);
    else
        snprintf(buf, sizeof buf, "%s", OPTIONS[o].long_flag);
    return buf;
}

static __attribute__((noreturn)) void option_error(const char *fmt, ...)
{
    char msg[PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    usage_error("%s (see psrun --help)", msg);
}

static void write_stdout_or_fail(const char *s)
{
    size_t n = strlen(s);
    if (!ps_write_fits(STDOUT_FILENO, n))
        usage_error("cannot write to standard output: it would exceed the file size limit (ulimit -f); raise it");
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            usage_error("cannot write to standard output: %s", strerror(w < 0 ? errno : EIO));
        s += w;
        n -= (size_t)w;
    }
}

/* Long option by name or unambiguous prefix (as argparse allows). */
static int find_long(const char *flag, size_t len)
{
    int found = -1, matches = 0;
    for (int o = 0; o < OPT_COUNT; o++) {
        const char *name = OPTIONS[o].long_flag;
        if (strlen(name) == len && strncmp(name, flag, len) == 0)
            return o;
        if (len > 2 && strncmp(name, flag, len) == 0) {
            found = o;
            matches++;
        }
    }
    if (matches > 1) {
        char what[64];
        snprintf(what, sizeof what, "%.*s", (int)(len < 40 ? len : 40), flag);
        option_error("ambiguous option: %s", what);
    }
    return found;
}

static void set_option(int o, const char *value)
{
    if (o == OPT_HELP) {
        write_stdout_or_fail(HELP);
        _exit(0);
    }
    if (o == OPT_VERSION) {
        write_stdout_or_fail("psrun (psuite) " PSUITE_VERSION "\n");
        _exit(0);
    }
    if (OPTIONS[o].choices && value) {
        int ok = 0;
        for (const char *const *c = OPTIONS[o].choices; *c; c++)
            ok |= strcmp(*c, value) == 0;
        if (!ok) {
            char list[128] = "";
            for (const char *const *c = OPTIONS[o].choices; *c; c++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s'%s'", c == OPTIONS[o].choices ? "" : ", ",
                         *c);
            option_error("argument %s: invalid choice: '%.200s' (choose from %s)", option_name(o), value, list);
        }
    }
    opt_set[o] = 1;
    opt_value[o] = value;
}

/* As argparse: "-x..." is an option, "-" and negative numbers are values. */
static int looks_like_option(const char *arg)
{
    if (arg[0] != '-' || arg[1] == '\0')
        return 0;
    char *end;
    strtod(arg, &end);
    return *end != '\0';
}

/* The index of the program in argv. */
static int parse_options(int argc, char **argv)
{
    int i = 1;
    while (i < argc) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] == '\0')
            break;
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[1] == '-') {
            const char *eq = strchr(arg, '=');
            size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
            int o = find_long(arg, len);
            if (o < 0)
                option_error("unrecognized arguments: %.200s", arg);
            if (!OPTIONS[o].takes_value || (OPTIONS[o].takes_value == 2 && !eq)) {
                if (eq)
                    option_error("argument %s: ignored explicit argument '%.200s'", option_name(o), eq + 1);
                set_option(o, NULL);
                i++;
                continue;
            }
            if (eq) {
                set_option(o, eq + 1);
                i++;
                continue;
            }
            if (i + 1 >= argc || looks_like_option(argv[i + 1]))
                option_error("argument %s: expected one argument", option_name(o));
            set_option(o, argv[i + 1]);
            i += 2;
            continue;
        }
        /* short flags, possibly clustered: -qp, -qeLIST, -e LIST */
        for (const char *p = arg + 1; *p; p++) {
            int o = -1;
            for (int k = 0; k < OPT_COUNT; k++)
                if (OPTIONS[k].short_flag == *p)
                    o = k;
            if (o < 0)
                option_error("unrecognized arguments: %.200s", arg);
            if (!OPTIONS[o].takes_value) {
                set_option(o, NULL);
                continue;
            }
            if (p[1]) {
                set_option(o, p[1] == '=' ? p + 2 : p + 1);
                break;
            }
            if (i + 1 >= argc || looks_like_option(argv[i + 1]))
                option_error("argument %s: expected one argument", option_name(o));
            set_option(o, argv[++i]);
            break;
        }
        i++;
    }
    return i;
}

/* ---- small helpers ------------------------------------------------------ */

static int env_count(char **env)
{
    int n = 0;
    while (env && env[n])
        n++;
    return n;
}

/* Whole decimal number with optional sign and surrounding spaces. */
static int parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || errno)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return -1;
    *out = v;
    return 0;
}

/* The PSUITE_* variables the README documents for the library inside the
 * program, checked here, before the program runs: a bad value is one line
 * and exit 2, not a note the program's output buries (or nothing at all).
 * An empty value means unset, as the library reads it.  Limits are the
 * library's (cct.c, unwind.c, sampler.c). */
static void check_environment(void)
{
    static const struct {
        const char *name, *words[4], *said; /* the words the library takes (unwind.c, sampler.c) */
    } words[] = {
        {"PSUITE_UNWINDER", {"libunwind", "libgcc", "framepointer", NULL}, "libunwind, libgcc or framepointer"},
        {"PSUITE_SAMPLE_SIGNAL", {"sigtrap", "sigprof", NULL}, "sigtrap or sigprof"},
    };
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        const char *v = getenv(words[k].name);
        int ok = !v || !*v;
        for (const char *const *w = words[k].words; *w && !ok; w++)
            ok = strcmp(*w, v) == 0;
        if (!ok)
            usage_error("%s=%.60s is not valid: use %s, or unset it for the default", words[k].name, v,
                        words[k].said);
    }
    const char *nodes = getenv("PSUITE_CALLPATH_NODES");
    unsigned long v;
    if (nodes && *nodes && !ps_callpath_nodes_value(nodes, &v))
        usage_error("PSUITE_CALLPATH_NODES=%.60s is not valid: use a whole number of call-path contexts from %lu "
                    "to %lu (default 262144), or unset it",
                    nodes, PS_CALLPATH_NODES_MIN, PS_CALLPATH_NODES_MAX);
}

static void absolute_path(const char *path, char *out, size_t size, const char *what)
{
    char buf[PATH_MAX * 2 + 2];
    if (path[0] == '/') {
        if (strlen(path) >= sizeof buf)
            usage_error("%s: path too long (%zu bytes; at most %d)", what, strlen(path), PATH_MAX - 1);
        strcpy(buf, path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            usage_error("cannot find the current directory: %s", strerror(errno));
        if (strlen(cwd) + 1 + strlen(path) >= sizeof buf)
            usage_error("%s: path too long (at most %d bytes)", what, PATH_MAX - 1);
        snprintf(buf, sizeof buf, "%s/%s", cwd, path);
    }
    /* normalise as os.path.abspath: //, /./, /../ and a trailing / */
    char *parts[PATH_MAX];
    int n = 0;
    for (char *tok = strtok(buf, "/"); tok; tok = strtok(NULL, "/")) {
        if (strcmp(tok, ".") == 0)
            continue;
        if (strcmp(tok, "..") == 0) {
            if (n > 0)
                n--;
            continue;
        }
        parts[n++] = tok;
    }
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < n; k++) {
        size_t l = strlen(parts[k]);
        if (len + 1 + l + 1 > size || len + 1 + l >= PATH_MAX)
            usage_error("%s: path too long (at most %d bytes)", what, PATH_MAX - 1);
        out[len++] = '/';
        memcpy(out + len, parts[k], l);
        len += l;
        out[len] = '\0';
    }
    if (len == 0)
        strcpy(out, "/");
}

/* ---- the program ----------------------------------------------------- */

/* The program's path as execvp would find it, or NULL. */
static const char *find_program(const char *prog, char *buf, size_t size)
{
    if (strchr(prog, '/'))
        return prog;
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    while (1) {
        const char *colon = strchrnul(path, ':');
        size_t dl = (size_t)(colon - path);
        if (dl + 1 + strlen(prog) < size) {
            if (dl == 0)
                snprintf(buf, size, "./%s", prog);
            else
                snprintf(buf, size, "%.*s/%s", (int)dl, path, prog);
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
                return buf;
        }
        if (!*colon)
            return NULL;
        path = colon + 1;
    }
}

static uint64_t get_u(const unsigned char *p, int size, int little)
{
    uint64_t v = 0;
    for (int k = 0; k < size; k++)
        v |= (uint64_t)p[little ? k : size - 1 - k] << (8 * k);
    return v;
}

/* The machine psrun (and so libpshwpc.so) is built for, and its 32-bit
 * companion, told apart from it by the ELF class. */
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#define HOST_MACHINE32 EM_386
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#define HOST_MACHINE32 EM_ARM
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#define HOST_MACHINE32 EM_PPC
#elif defined(__s390x__)
#define HOST_MACHINE EM_S390
#define HOST_MACHINE32 EM_S390
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#define HOST_MACHINE32 EM_RISCV
#endif
#if defined(__LP64__)
#define HOST_CLASS ELFCLASS64
#else
#define HOST_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

static const char *machine_name(unsigned machine)
{
    static const struct {
        unsigned machine;
        const char *name;
    } names[] = {
        {EM_X86_64, "x86-64"}, {EM_386, "32-bit x86"}, {EM_AARCH64, "AArch64"},  {EM_ARM, "32-bit ARM"},
        {EM_PPC64, "PowerPC64"}, {EM_PPC, "32-bit PowerPC"}, {EM_S390, "IBM Z"}, {EM_RISCV, "RISC-V"},
        {EM_MIPS, "MIPS"}, {EM_SPARCV9, "SPARC V9"}, {EM_IA_64, "IA-64"}, {258, "LoongArch"},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (names[k].machine == machine)
            return names[k].name;
    return NULL;
}

/* What psrun can tell of a program from its first bytes and, for an ELF
 * file, its program headers, before anything runs. */
enum program_kind {
    PROGRAM_UNJUDGED,      /* not judged here (odd or truncated tables ...): exec decides */
    PROGRAM_DYNAMIC,       /* an ELF program with an interpreter: measurable */
    PROGRAM_SCRIPT,        /* #! line: its interpreter is measured */
    PROGRAM_NO_SHEBANG,    /* text the kernel will not run: a shell would give it to /bin/sh */
    PROGRAM_EMPTY,         /* an empty file */
    PROGRAM_STATIC,        /* no interpreter: cannot load the library */
    PROGRAM_LIBRARY,       /* a shared object without an interpreter or an entry point */
    PROGRAM_OBJECT,        /* ET_REL */
    PROGRAM_CORE,          /* ET_CORE */
    PROGRAM_OTHER_MACHINE, /* e_machine or byte order not this machine's */
    PROGRAM_OTHER_CLASS,   /* 32-bit on a 64-bit machine (or the reverse) */
};

struct program_facts {
    enum program_kind kind;
    unsigned machine;   /* e_machine, for PROGRAM_OTHER_MACHINE */
    int big_endian;     /* for PROGRAM_OTHER_MACHINE */
    char shebang[96];   /* the #! line, for PROGRAM_SCRIPT */
};

/* 1: a set DF_1_PIE in the dynamic section at [off, off+size) (a static
 * PIE rather than a shared library); 0: none; -1: unreadable. */
static int dynamic_says_pie(int fd, uint64_t off, uint64_t size, int is64, int little)
{
    unsigned char entries[4096];
    size_t esize = is64 ? 16 : 8, step = is64 ? 8 : 4;
    if (size > sizeof entries)
        size = sizeof entries; /* 256 entries: more than a program's dynamic section holds */
    ssize_t n = pread(fd, entries, (size_t)size, (off_t)off);
    if (n < 0)
        return -1;
    for (size_t k = 0; k + esize <= (size_t)n; k += esize) {
        uint64_t tag = get_u(entries + k, (int)step, little);
        if (tag == DT_NULL)
            break;
        if (tag == DT_FLAGS_1)
            return (get_u(entries + k + step, (int)step, little) & DF_1_PIE) != 0;
    }
    return 0;
}

/* The ELF header in head[0..n) (at least 52 bytes read), the program
 * headers read from fd: one pread, two for a file without an interpreter. */
static enum program_kind elf_kind(int fd, const unsigned char *eh, size_t n, off_t file_size, struct program_facts *f)
{
    int is64 = eh[EI_CLASS] == ELFCLASS64, little = eh[EI_DATA] == ELFDATA2LSB;
    if ((eh[EI_CLASS] != ELFCLASS32 && !is64) || (eh[EI_DATA] != ELFDATA2LSB && eh[EI_DATA] != ELFDATA2MSB))
        return PROGRAM_UNJUDGED;
    if (n < (is64 ? 64u : 52u))
        return PROGRAM_UNJUDGED;
    unsigned type = (unsigned)get_u(eh + 16, 2, little);
    if (type == ET_REL)
        return PROGRAM_OBJECT;
    if (type == ET_CORE)
        return PROGRAM_CORE;
    if (type != ET_EXEC && type != ET_DYN)
        return PROGRAM_UNJUDGED;
    f->machine = (unsigned)get_u(eh + 18, 2, little);
    f->big_endian = !little;
#ifdef HOST_MACHINE
    if (eh[EI_DATA] != HOST_DATA || (f->machine != HOST_MACHINE && f->machine != HOST_MACHINE32))
        return PROGRAM_OTHER_MACHINE;
#endif
    if (eh[EI_CLASS] != HOST_CLASS)
        return PROGRAM_OTHER_CLASS;
    uint64_t phoff = is64 ? get_u(eh + 32, 8, little) : get_u(eh + 28, 4, little);
    unsigned phentsize = (unsigned)get_u(eh + (is64 ? 54 : 42), 2, little);
    unsigned phnum = (unsigned)get_u(eh + (is64 ? 56 : 44), 2, little);
    if (phnum == 0 || phentsize < (is64 ? 56u : 32u) || phnum == 0xffff)
        return PROGRAM_UNJUDGED;
    if (phoff > (uint64_t)file_size || (uint64_t)phentsize * phnum > (uint64_t)file_size - phoff)
        return PROGRAM_UNJUDGED;
    size_t size = (size_t)phentsize * phnum;
    unsigned char *table = malloc(size);
    if (!table)
        return PROGRAM_UNJUDGED;
    enum program_kind kind = PROGRAM_UNJUDGED;
    if (pread(fd, table, size, (off_t)phoff) == (ssize_t)size) {
        int dynamic = 0;
        uint64_t dyn_off = 0, dyn_size = 0;
        for (unsigned k = 0; k < phnum; k++) {
            const unsigned char *ph = table + (size_t)k * phentsize;
            uint32_t ptype = (uint32_t)get_u(ph, 4, little);
            if (ptype == PT_INTERP)
                dynamic = 1;
            if (ptype == PT_DYNAMIC) {
                dyn_off = is64 ? get_u(ph + 8, 8, little) : get_u(ph + 4, 4, little);
                dyn_size = is64 ? get_u(ph + 32, 8, little) : get_u(ph + 16, 4, little);
            }
        }
        if (dynamic)
            kind = PROGRAM_DYNAMIC;
        else if (type == ET_EXEC || !dyn_size)
            kind = PROGRAM_STATIC;
        else {
            /* ET_DYN without an interpreter: a static PIE says so in
             * DT_FLAGS_1; a shared library has no entry point; one with an
             * entry point (the dynamic loader run as a program, which
             * honours LD_PRELOAD) is left to exec */
            int pie = dynamic_says_pie(fd, dyn_off, dyn_size, is64, little);
            uint64_t entry = is64 ? get_u(eh + 24, 8, little) : get_u(eh + 24, 4, little);
            kind = pie > 0 ? PROGRAM_STATIC : pie == 0 && entry == 0 ? PROGRAM_LIBRARY : PROGRAM_UNJUDGED;
        }
    }
    free(table);
    return kind;
}

/* As bash judges a file the kernel will not run: binary if a NUL byte is
 * in the first line of its first 80 bytes. */
static int binary_head(const unsigned char *head, size_t n)
{
    for (size_t k = 0; k < n && k < 80 && head[k] != '\n'; k++)
        if (head[k] == '\0')
            return 1;
    return 0;
}

/* binfmt_misc may hand files without ELF magic or #! to an interpreter of
 * its own: with any handler registered, exec decides. */
static int binfmt_misc_handlers(void)
{
    DIR *d = opendir("/proc/sys/fs/binfmt_misc");
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)))
        found = e->d_name[0] != '.' && strcmp(e->d_name, "register") != 0 && strcmp(e->d_name, "status") != 0;
    closedir(d);
    return found;
}

static void program_kind(int fd, const struct stat *st, struct program_facts *f)
{
    unsigned char head[128];
    memset(f, 0, sizeof *f);
    f->kind = PROGRAM_UNJUDGED;
    ssize_t got = pread(fd, head, sizeof head, 0);
    if (got < 0)
        return;
    size_t n = (size_t)got;
    if (n >= SELFMAG && memcmp(head, ELFMAG, SELFMAG) == 0) {
        f->kind = n >= 52 ? elf_kind(fd, head, n, st->st_size, f) : PROGRAM_UNJUDGED;
    } else if (n >= 2 && head[0] == '#' && head[1] == '!') {
        size_t k = 0;
        while (k < n && k < sizeof f->shebang - 1 && head[k] != '\n')
            k++;
        memcpy(f->shebang, head, k);
        while (k > 2 && isspace((unsigned char)f->shebang[k - 1]))
            k--;
        f->shebang[k] = '\0';
        f->kind = PROGRAM_SCRIPT;
    } else if (n == 0) {
        f->kind = PROGRAM_EMPTY;
    } else if (!binary_head(head, n) && !binfmt_misc_handlers()) {
        f->kind = PROGRAM_NO_SHEBANG;
    }
}

/* 1 if exec would change the effective user or group (set-user-ID or
 * set-group-ID to another one, on a mount that honours it, without
 * no_new_privs): the loader then runs in secure-execution mode and ignores
 * an LD_PRELOAD library given by path. */
static int changes_identity(const char *path, const struct stat *st)
{
    int uid = (st->st_mode & S_ISUID) && st->st_uid != geteuid();
    int gid = (st->st_mode & S_ISGID) && (st->st_mode & S_IXGRP) && st->st_gid != getegid();
    if (!uid && !gid)
        return 0;
    struct statvfs fs;
    if (statvfs(path, &fs) == 0 && (fs.f_flag & ST_NOSUID))
        return 0;
    return prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1;
}

static __attribute__((noreturn)) void no_shebang(const char *prog)
{
    usage_error("%s is a script without a #! line, so psrun cannot tell what would run it: add one (e.g. #!/bin/sh) "
                "or give the interpreter (psrun sh %s); the interpreter is measured, and -f also measures the "
                "programs the script starts", prog, prog);
}

/* PROGRAM as execvp finds it, refused in one line if psrun cannot measure
 * it.  For a script, its #! line goes to shebang (else ""). */
static const char *check_program(const char *prog, char *buf, size_t size, char *shebang, size_t shebang_size)
{
    const char *path = find_program(prog, buf, size);
    struct stat st;
    if (!path || stat(path, &st) != 0)
        usage_error("%s: command not found (give a path or a program on PATH)", prog);
    if (S_ISDIR(st.st_mode))
        usage_error("%s is a directory, not a program", prog);
    if (access(path, X_OK) != 0)
        usage_error("%s is not executable (chmod +x it, or run it through its interpreter)", prog);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        usage_error("cannot read %s: %s", prog, strerror(errno));
    struct program_facts f;
    f.kind = PROGRAM_UNJUDGED;
    shebang[0] = '\0';
    if (S_ISREG(st.st_mode))
        program_kind(fd, &st, &f);
    close(fd);
    switch (f.kind) {
    case PROGRAM_UNJUDGED:
        break;
    case PROGRAM_DYNAMIC: /* the kernel ignores the bits on a script */
        if (changes_identity(path, &st))
            usage_error("%s is set-user-ID or set-group-ID, so the loader ignores psuite's library in it: measure "
                        "a copy, which cp makes without that bit (cp %s ./copy, then psrun ./copy)", prog, prog);
        break;
    case PROGRAM_SCRIPT:
        snprintf(shebang, shebang_size, "%s", f.shebang);
        break;
    case PROGRAM_NO_SHEBANG:
        no_shebang(prog);
    case PROGRAM_EMPTY:
        usage_error("%s is an empty file, not a program", prog);
    case PROGRAM_STATIC:
        usage_error("%s is statically linked, so it cannot load psuite's library: relink it dynamically (without "
                    "-static) to measure it with psrun, or count it from outside with perf stat", prog);
    case PROGRAM_LIBRARY:
        usage_error("%s is a shared library, not a program: give psrun the program that loads it", prog);
    case PROGRAM_OBJECT:
        usage_error("%s is an object file (ELF relocatable), not a program: link it into a program first", prog);
    case PROGRAM_CORE:
        usage_error("%s is a core dump, not a program: give psrun the program that dumped it", prog);
    case PROGRAM_OTHER_MACHINE: {
        const char *name = machine_name(f.machine);
        char other[64];
        if (name)
            snprintf(other, sizeof other, "%s%s", f.big_endian ? "big-endian " : "", name);
        else
            snprintf(other, sizeof other, "%sELF machine %u", f.big_endian ? "big-endian " : "", f.machine);
#ifdef HOST_MACHINE
        usage_error("%s is a program for another machine (%s); psrun here measures %s programs: run it with psrun "
                    "on a machine it was built for, or rebuild it for this one", prog, other,
                    machine_name(HOST_MACHINE));
#else
        break;
#endif
    }
    case PROGRAM_OTHER_CLASS:
        if (HOST_CLASS == ELFCLASS64)
            usage_error("%s is a 32-bit (ELFCLASS32) program; psrun measures 64-bit programs: rebuild it as a "
                        "64-bit program (without -m32 or -mx32) to measure it", prog);
        usage_error("%s is a 64-bit (ELFCLASS64) program; this psrun measures 32-bit programs: measure it with "
                    "a 64-bit build of psuite", prog);
    }
    return path;
}

/* ---- the library ------------------------------------------------------ */

static int readable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* libpshwpc.so beside this executable (psuite/_native/psrun), in the
 * package installed with a copy of it in bin/ (../lib/pythonX.Y/...), or
 * in the source tree it was built in (editable installs). */
static void find_library(char *out, size_t size)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(out, size, "%s/" LIBNAME, exe);
            if (readable_file(out))
                return;
            const char *libdirs[] = {"lib", "lib64"};
            for (int k = 0; k < 2; k++) {
                char cand[PATH_MAX];
                snprintf(cand, sizeof cand, "%s/../%s/python" PSRUN_PYVER "/site-packages/psuite/_native/" LIBNAME,
                         exe, libdirs[k]);
                if (readable_file(cand) && realpath(cand, out))
                    return;
            }
        }
    }
#ifdef PSRUN_SOURCE_NATIVE_DIR
    snprintf(out, size, "%s/" LIBNAME, PSRUN_SOURCE_NATIVE_DIR);
    if (readable_file(out))
        return;
#endif
    usage_error("cannot find psuite's " LIBNAME " beside %s (reinstall psuite: pip install .)",
                n > 0 ? exe : "psrun");
}

/* ---- environment -------------------------------------------------------- */

static char **new_env;
static int new_env_n;

static void env_set(const char *name, const char *value)
{
    size_t nl = strlen(name);
    char *entry = malloc(nl + 1 + strlen(value) + 1);
    if (!entry)
        usage_error("out of memory");
    sprintf(entry, "%s=%s", name, value);
    for (int k = 0; k < new_env_n; k++)
        if (strncmp(new_env[k], name, nl) == 0 && new_env[k][nl] == '=') {
            new_env[k] = entry;
            return;
        }
    new_env[new_env_n++] = entry;
    new_env[new_env_n] = NULL;
}

/* ---- periods ---------------------------------------------------------- */

/* Whether the library's per-thread task clock can be opened as it opens it
 * (ITIMER_PROF counts kernel time too, which perf_event_paranoid may refuse:
 * the library then falls back on POSIX CPU-time timers). */
static int perf_task_clock_works(int exclude_kernel)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.disabled = 1;
    attr.exclude_kernel = (unsigned)exclude_kernel;
    attr.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* The kernel tick in microseconds: CONFIG_HZ from the kernel's
 * configuration where it is installed, else 250 Hz. */
static long tick_us(void)
{
    struct utsname u;
    char path[512], line[256];
    long hz = 0;
    if (uname(&u) == 0) {
        snprintf(path, sizeof path, "/boot/config-%s", u.release);
        FILE *f = fopen(path, "re");
        if (f) {
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "CONFIG_HZ=", 10) == 0)
                    hz = strtol(line + 10, NULL, 10);
            fclose(f);
        }
    }
    if (hz <= 0 || hz > 100000)
        hz = 250;
    return 1000000L / hz;
}

static int is_clock_event(const char *name)
{
    const char *n = strncasecmp(name, "perf::", 6) == 0 ? name + 6 : name;
    return strcasecmp(n, "task-clock") == 0 || strcasecmp(n, "cpu-clock") == 0 ||
           strcasecmp(n, "PERF_COUNT_SW_TASK_CLOCK") == 0 || strcasecmp(n, "PERF_COUNT_SW_CPU_CLOCK") == 0;
}

static long checked_period(const char *source, const char *text, int quiet)
{
    int timer = strcmp(source, "ITIMER_PROF") == 0 || strcmp(source, "ITIMER_VIRTUAL") == 0 ||
                strcmp(source, "ITIMER_REAL") == 0;
    long period;
    if (!text) {
        if (timer)
            return DEFAULT_TIMER_PERIOD_US;
        return 0; /* the library says whether SOURCE is an event at all, or an event without its threshold */
    }
    if (parse_long(text, &period) != 0)
        usage_error("--period takes a whole number, not '%s'", text);
    if (period <= 0)
        usage_error("--period: the threshold must be a positive integer, not %ld", period);
    long minimum = 0;
    const char *why = NULL;
    char whybuf[128];
    if (strcmp(source, "ITIMER_REAL") == 0) {
        minimum = MIN_REAL_TIMER_US;
        why = "us, the shortest for ITIMER_REAL's sampler";
    } else if (timer) {
        if (period < tick_us() && !perf_task_clock_works(strcmp(source, "ITIMER_VIRTUAL") == 0)) {
            minimum = tick_us();
            snprintf(whybuf, sizeof whybuf, "us, the kernel tick: without perf_event %s uses POSIX CPU-time timers",
                     source);
            why = whybuf;
        } else {
            minimum = MIN_PERF_TIMER_US;
            why = "us, the shortest perf_event's task clock delivers";
        }
    } else if (is_clock_event(source)) {
        minimum = MIN_CLOCK_EVENT_NS;
        why = "ns, the shortest a clock event delivers";
    }
    if (period < minimum) {
        if (!quiet)
            note("--period %ld is too short for %s: sampling every %ld %s", period, source, minimum, why);
        period = minimum;
    }
    return period;
}

/* ---- resource monitor (-R) --------------------------------------------- */

struct monitor {
    double interval;
    long samples, outofrange;
    long loads[NLOADS];
    double maxloads[3];
    long hwm_kb, peak_kb;
    char started[64];
};

static int read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

static void status_memory(struct monitor *m, const char *path)
{
    char buf[8192];
    if (read_small(path, buf, sizeof buf) <= 0)
        return;
    const char *hwm = strstr(buf, "VmHWM:"), *peak = strstr(buf, "VmPeak:");
    if (hwm && strtol(hwm + 6, NULL, 10) > m->hwm_kb)
        m->hwm_kb = strtol(hwm + 6, NULL, 10);
    if (peak && strtol(peak + 7, NULL, 10) > m->peak_kb)
        m->peak_kb = strtol(peak + 7, NULL, 10);
}

static void tick(struct monitor *m, pid_t pid)
{
    char buf[256];
    double l[3];
    m->samples++;
    if (read_small("/proc/loadavg", buf, sizeof buf) <= 0 || sscanf(buf, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3)
        return;
    for (int k = 0; k < 3; k++)
        if (l[k] > m->maxloads[k])
            m->maxloads[k] = l[k];
    if (l[0] >= LOAD_MAX || l[0] < 0)
        m->outofrange++;
    else
        m->loads[(int)(l[0] / LOAD_RESOLUTION)]++;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    status_memory(m, path);
}

struct xbuf {
    char *s;
    size_t n, cap;
};

static void xput(struct xbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap + n + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p)
            return;
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void xprintf(struct xbuf *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        xput(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Text as XML character data: markup escaped; bytes that are not UTF-8
 * and characters XML 1.0 does not allow become U+FFFD. */
static void xtext(struct xbuf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int len = 1;
        uint32_t cp = c;
        if (c >= 0x80) {
            if (c >= 0xc2 && c <= 0xdf)
                len = 2, cp = c & 0x1f;
            else if (c >= 0xe0 && c <= 0xef)
                len = 3, cp = c & 0x0f;
            else if (c >= 0xf0 && c <= 0xf4)
                len = 4, cp = c & 0x07;
            else
                len = 0;
            for (int k = 1; k < len; k++) {
                if ((p[k] & 0xc0) != 0x80) {
                    len = 0;
                    break;
                }
                cp = (cp << 6) | (p[k] & 0x3f);
            }
            if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff))
                len = -3;
            if (len == 4 && (cp < 0x10000 || cp > 0x10ffff))
                len = 0;
            if (len <= 0) {
                xput(b, "\xef\xbf\xbd", 3);
                p += len < 0 ? -len : 1;
                continue;
            }
            xput(b, (const char *)p, (size_t)len);
            p += len;
            continue;
        }
        if (c == '&')
            xput(b, "&amp;", 5);
        else if (c == '<')
            xput(b, "&lt;", 4);
        else if (c == '>')
            xput(b, "&gt;", 4);
        else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            xput(b, "\xef\xbf\xbd", 3);
        else
            xput(b, (const char *)p, 1);
        p++;
    }
}

static void short_host(char *out, size_t size)
{
    struct utsname u;
    if (uname(&u) != 0)
        snprintf(u.nodename, sizeof u.nodename, "localhost");
    snprintf(out, size, "%s", u.nodename);
    char *dot = strchr(out, '.');
    if (dot)
        *dot = '\0';
    for (char *p = out; *p; p++)
        if (*p == '/')
            *p = '_';
}

/* Why a file could not be saved: EFBIG is the file size limit, checked
 * before any write, so the line says which limit and how to raise it (as
 * the runtime says it of its reports). */
static const char *save_error_text(int err)
{
    if (err == EFBIG)
        return "it would exceed the file size limit (ulimit -f); raise the limit "
               "(ulimit -f unlimited) and run again";
    return strerror(err);
}

/* The MPI rank, read as the runtime reads it: the resource report is
 * named with the rank as the counting report is. */
static int mpi_rank(void) { return ps_common_mpi_rank(); }

/* The program's name in report names, as the runtime takes it (the file
 * the kernel runs: /proc/PID/exe, so python3 is python3.11 and a script is
 * its interpreter), read once the exec succeeded; if the program is gone
 * already, the file psrun started, symbolic links resolved. */
static const char *program_name(pid_t pid, const char *path, char *out, size_t size)
{
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0)
        target[n] = '\0';
    else if (!realpath(path, target))
        snprintf(target, sizeof target, "%s", path);
    const char *slash = strrchr(target, '/');
    snprintf(out, size, "%s", slash ? slash + 1 : target);
    return out;
}

static void write_resource_report(struct monitor *m, pid_t pid, int status, const struct rusage *ru, char **cmd,
                                  const char *dir, const char *prefix, char *saved, size_t saved_len)
{
    saved[0] = '\0';
    struct xbuf b = {0};
    struct utsname u;
    if (uname(&u) != 0)
        u.nodename[0] = '\0';
    xprintf(&b, "<?xml version='1.0' encoding='UTF-8'?>\n<resourcereport version=\"0.1\" generator=\"psuite psrun\">\n");
    if (u.nodename[0]) {
        xprintf(&b, "  <hostname>");
        xtext(&b, u.nodename);
        xprintf(&b, "</hostname>\n");
    }
    xprintf(&b, "  <command>");
    for (int k = 0; cmd[k]; k++) {
        if (k)
            xput(&b, " ", 1);
        xtext(&b, cmd[k]);
    }
    xprintf(&b, "</command>\n  <pid>%d</pid>\n  <starttime>%s</starttime>\n", (int)pid, m->started);
    int signalled = WIFSIGNALED(status);
    xprintf(&b, "  <exitcode type=\"%s\">%d</exitcode>\n", signalled ? "signal" : "exit",
            signalled ? WTERMSIG(status) : WEXITSTATUS(status));
    xprintf(&b, "  <samples frequency=\"%g\">%ld</samples>\n", 1.0 / m->interval, m->samples);
    int any = 0;
    for (int k = 0; k < NLOADS; k++)
        any |= m->loads[k] != 0;
    xprintf(&b, "  <loadavgs min=\"0\" max=\"%g\" resolution=\"%g\" outofrange=\"%ld\"%s>\n", LOAD_MAX,
            LOAD_RESOLUTION, m->outofrange, any ? "" : "/");
    if (any) {
        for (int k = 0; k < NLOADS; k++)
            if (m->loads[k])
                xprintf(&b, "    <loadavg load=\"%g\">%ld</loadavg>\n", k * LOAD_RESOLUTION, m->loads[k]);
        xprintf(&b, "  </loadavgs>\n");
    }
    static const int intervals[3] = {1, 5, 15};
    xprintf(&b, "  <maxloads>\n");
    for (int k = 0; k < 3; k++)
        xprintf(&b, "    <maxload interval=\"%d\" unit=\"minute\">%.2f</maxload>\n", intervals[k], m->maxloads[k]);
    xprintf(&b, "  </maxloads>\n");
    xprintf(&b, "  <maxrss units=\"MB\">%.3f</maxrss>\n  <maxvm units=\"MB\">%.3f</maxvm>\n", m->hwm_kb / 1024.0,
            m->peak_kb / 1024.0);
    xprintf(&b, "  <cputime units=\"seconds\">\n    <usertime>%.6f</usertime>\n    <systemtime>%.6f</systemtime>\n"
            "  </cputime>\n", ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6,
            ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6);
    xprintf(&b, "  <faults>\n    <major>%ld</major>\n    <minor>%ld</minor>\n  </faults>\n  <swaps>%ld</swaps>\n"
            "</resourcereport>\n", ru->ru_majflt, ru->ru_minflt, ru->ru_nswap);
    if (!b.s) {
        note("could not save the resource report: out of memory");
        return;
    }

    /* a temporary file linked into place: never a half-written report, never
     * an existing file replaced */
    char host[HOST_NAME_MAX + 2], tmp[PATH_MAX], base[PATH_MAX + 64], path[PATH_MAX + 80];
    short_host(host, sizeof host);
    int rank = mpi_rank();
    if (rank >= 0)
        snprintf(base, sizeof base, "%s/%s.r%d.%d.%s.resource", dir, prefix, rank, (int)pid, host);
    else
        snprintf(base, sizeof base, "%s/%s.%d.%s.resource", dir, prefix, (int)pid, host);
    snprintf(tmp, sizeof tmp, "%s/.psuite-XXXXXX", dir);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        note("could not save the resource report %s.xml: %s", base, strerror(errno));
        free(b.s);
        return;
    }
    size_t off = 0;
    int err = ps_write_fits(fd, b.n) ? 0 : EFBIG; /* never past ulimit -f: SIGXFSZ would kill psrun */
    while (!err && off < b.n) {
        ssize_t w = write(fd, b.s + off, b.n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            err = w < 0 ? errno : ENOSPC;
            break;
        }
        off += (size_t)w;
    }
    if (!err && fchmod(fd, 0644) != 0)
        err = 0; /* the mode is a courtesy */
    if (close(fd) != 0 && !err)
        err = errno;
    free(b.s);
    if (err) {
        unlink(tmp);
        note("could not save the resource report %s.xml: %s", base, save_error_text(err));
        return;
    }
    for (int k = 0; k < 1000; k++) {
        if (k == 0)
            snprintf(path, sizeof path, "%s.xml", base);
        else
            snprintf(path, sizeof path, "%s.%d.xml", base, k);
        if (link(tmp, path) == 0) {
            unlink(tmp);
            snprintf(saved, saved_len, "%s", path);
            return;
        }
        if (errno != EEXIST) {
            note("could not save the resource report %s: %s", path, strerror(errno));
            break;
        }
    }
    unlink(tmp);
}

/* ---- starting the program -------------------------------------------- */

/* Why PATH (PROGRAM on the command line) did not run, in one line: a text
 * file the kernel will not run is a script without a #! line (psrun does
 * not hand it to /bin/sh as a shell would: /bin/sh would be measured). */
static __attribute__((noreturn)) void cannot_run(const char *prog, const char *path, int err)
{
    if (err == ENOEXEC) {
        unsigned char head[80];
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        ssize_t n = fd >= 0 ? read(fd, head, sizeof head) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0 && !binary_head(head, (size_t)n))
            no_shebang(prog);
    }
    usage_error("cannot run %s: %s", prog, strerror(err));
}

static pid_t child_pid;
static void forward(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

static __attribute__((noreturn)) void end_as(int status)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none); /* the program dumped its own core */
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(sig);
        _exit(128 + sig);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* ---- filing into an archive (--archive) ------------------------------- */

struct filing {
    const char *experiment;  /* NULL: no filing */
    const char *db;          /* --db, or NULL: the filer reads PSBASE_DB itself */
    int per_process;         /* -p: a process's thread reports make one run */
    int quiet;               /* -q: no line when filing succeeds */
    char manifest[PATH_MAX]; /* the runtime's list of the documents it saved */
    char python[PATH_MAX];   /* the interpreter psuite is installed in */
    char pythonpath[PATH_MAX]; /* "" or the directory holding the psuite package */
};

/* The interpreter of a script pip installed ("#!/abs/python"), or 0. */
static int shebang_python(const char *script, char *out, size_t size)
{
    char buf[PATH_MAX + 8];
    if (read_small(script, buf, sizeof buf) < 4 || strncmp(buf, "#!/", 3) != 0)
        return 0;
    size_t n = strcspn(buf + 2, " \t\r\n");
    if (buf[2 + n] != '\n' && buf[2 + n] != '\r') /* arguments or a cut line: not this simple form */
        return 0;
    buf[2 + n] = '\0';
    if (n >= size || access(buf + 2, X_OK) != 0)
        return 0;
    memcpy(out, buf + 2, n + 1);
    return 1;
}

/* Where psuite's Python is: the interpreter of the psbase script installed
 * beside this launcher (bin/psrun, bin/psbase) or in the prefix of the
 * package holding it (.../site-packages/psuite/_native/psrun); else, for a
 * launcher in a source tree, python<version> on PATH with that tree on
 * PYTHONPATH. */
static void find_python(struct filing *f)
{
    char exe[PATH_MAX], cand[PATH_MAX + 64];
    f->pythonpath[0] = '\0';
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(cand, sizeof cand, "%s/psbase", exe);
            if (shebang_python(cand, f->python, sizeof f->python))
                return;
            snprintf(cand, sizeof cand, "%s/../../../../../bin/psbase", exe);
            if (shebang_python(cand, f->python, sizeof f->python))
                return;
            snprintf(cand, sizeof cand, "%s/../__init__.py", exe);
            char buf[PATH_MAX];
            if (readable_file(cand) && find_program("python" PSRUN_PYVER, buf, sizeof buf) &&
                strlen(exe) + 8 < sizeof f->pythonpath) {
                snprintf(f->python, sizeof f->python, "%s", buf);
                snprintf(f->pythonpath, sizeof f->pythonpath, "%s/../..", exe);
                return;
            }
        }
    }
    usage_error("--archive: cannot find the Python psuite is installed in (no psbase beside %s); reinstall psuite "
                "(pip install .)", n > 0 ? exe : "psrun");
}

static void filer_env_set(char **env, int *count, char *entry)
{
    size_t nl = strcspn(entry, "=") + 1;
    for (int k = 0; k < *count; k++)
        if (strncmp(env[k], entry, nl) == 0) {
            env[k] = entry;
            return;
        }
    env[(*count)++] = entry;
    env[*count] = NULL;
}

/* Run the filer (python -m psuite.psbase.filing) on what the program wrote
 * and wait for it: 0 when the documents are filed.  It says in one line on
 * stderr what was filed or why not; its stdout goes to stderr too, since
 * psrun's stdout is the program's.  It gets psrun's own environment, not
 * the program's (no preload). */
static int file_documents(struct filing *f, const char *resource_report, const sigset_t *caller_mask)
{
    const char *argv[16];
    int a = 0;
    argv[a++] = f->python;
    argv[a++] = "-m";
    argv[a++] = "psuite.psbase.filing";
    if (f->db) {
        argv[a++] = "--db";
        argv[a++] = f->db;
    }
    if (f->per_process)
        argv[a++] = "--per-process";
    if (f->quiet)
        argv[a++] = "--quiet";
    if (resource_report && *resource_report) {
        argv[a++] = "--also";
        argv[a++] = resource_report;
    }
    argv[a++] = "--";
    argv[a++] = f->experiment;
    argv[a++] = f->manifest;
    argv[a] = NULL;

    int n = env_count(environ);
    char **env = malloc(sizeof *env * (size_t)(n + 2));
    char *pp = NULL;
    if (!env) {
        note("not filed in %s: out of memory; the reports stay on disk", f->experiment);
        return -1;
    }
    memcpy(env, environ, sizeof *env * (size_t)(n + 1));
    if (f->pythonpath[0]) {
        const char *old = getenv("PYTHONPATH");
        pp = malloc(strlen(f->pythonpath) + (old ? strlen(old) : 0) + 16);
        if (pp) {
            sprintf(pp, "PYTHONPATH=%s%s%s", f->pythonpath, old && *old ? ":" : "", old && *old ? old : "");
            filer_env_set(env, &n, pp);
        }
    }
    pid_t pid = fork();
    if (pid < 0) {
        note("not filed in %s: cannot start %s: %s; the reports stay on disk", f->experiment, f->python,
             strerror(errno));
        free(env);
        free(pp);
        return -1;
    }
    if (pid == 0) {
        /* stdout onto stderr, or /dev/null when there is no stderr */
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0 && null >= 0)
            dup2(null, STDOUT_FILENO);
        sigprocmask(SIG_SETMASK, caller_mask, NULL); /* psrun's blocked signals are not the filer's */
        execve(f->python, (char **)argv, env);
        note("not filed in %s: cannot run %s: %s; the reports stay on disk", f->experiment, f->python,
             strerror(errno));
        _exit(2);
    }
    child_pid = pid; /* psrun's forwarded signals go to the filer now */
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    child_pid = 0;
    free(env);
    free(pp);
    if (WIFSIGNALED(status)) {
        const char *name = sigabbrev_np(WTERMSIG(status));
        note("not filed in %s: the filing was killed by SIG%s; the reports stay on disk", f->experiment,
             name ? name : "?");
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* 1 if child pid is a collector of psuite's still running (its name). */
static int running_collector(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int n = read_small(path, buf, sizeof buf);
    if (n <= 0)
        return 0;
    const char *end = strrchr(buf, ')');
    return strstr(buf, "(psuite-collect)") != NULL && end && end[1] == ' ' && end[2] != 'Z';
}

/* Under --archive, the program ended: its collectors (psrun's children, as
 * the subreaper) finish writing the reports before they are filed; each
 * one reaped as it ends.  Bounded: a collector still running after 60 s
 * is left to finish alone, and what it has not written is not filed. */
static void wait_for_collectors(void)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)getpid(), (long)getpid());
    for (int waited_ms = 0; waited_ms < 60000; waited_ms += 10) {
        while (waitpid(-1, NULL, WNOHANG) > 0) /* ended collectors (and orphans the program left) */
            ;
        int n = read_small(path, buf, sizeof buf);
        int running = 0;
        for (char *p = buf; n > 0 && *p && !running;) {
            char *end;
            long child = strtol(p, &end, 10);
            if (end == p)
                break;
            running = running_collector((pid_t)child);
            p = end;
        }
        if (!running)
            return;
        struct timespec ms10 = {0, 10000000};
        nanosleep(&ms10, NULL);
    }
}

static __attribute__((noreturn)) void run_monitored(const char *path, char **cmd, char **env, double interval,
                                                    const char *dir, const char *prefix, const char *peak_file,
                                                    int quiet, int dir_absolute, int resources, struct filing *filing)
{
    struct monitor m;
    memset(&m, 0, sizeof m);
    m.interval = interval;
    time_t now = time(NULL);
    struct tm tm;
    strftime(m.started, sizeof m.started, "%Y-%m-%dT%H:%M:%S%z", localtime_r(&now, &tm));

    /* Signals psrun forwards (or, for SIGINT/SIGQUIT sent to the whole
     * group, outlives) are blocked across fork; the child restores the
     * caller's mask before exec, so it inherits everything as it was. */
    static const int forwarded[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
    static const int ignored[] = {SIGINT, SIGQUIT};
    sigset_t block, caller_mask;
    sigemptyset(&block);
    for (size_t k = 0; k < 4; k++)
        sigaddset(&block, forwarded[k]);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGQUIT);
    sigprocmask(SIG_BLOCK, &block, &caller_mask);

    /* A caller that ignores SIGCHLD would have the program reaped before
     * psrun sees how it ended: the default for psrun, the caller's for the
     * program (restored in the child before exec). */
    struct sigaction caller_chld, dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, NULL, &caller_chld);
    int chld_ignored = caller_chld.sa_handler == SIG_IGN || (caller_chld.sa_flags & SA_NOCLDWAIT);
    if (chld_ignored)
        sigaction(SIGCHLD, &dfl, NULL);

    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) != 0)
        usage_error("cannot run %s: %s", cmd[0], strerror(errno));
    pid_t parent = getpid();
    /* Filing waits for the reports: a program that dies of a signal has
     * them written by its collector (and a followed process's by its own)
     * after it is gone.  The collectors, orphaned at their start, become
     * psrun's children, so psrun sees them end (wait_for_collectors). */
    if (filing->experiment)
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t pid = fork();
    if (pid < 0)
        usage_error("cannot run %s: %s", cmd[0], strerror(errno));
    if (pid == 0) {
        close(errpipe[0]);
        if (chld_ignored)
            sigaction(SIGCHLD, &caller_chld, NULL);
        sigprocmask(SIG_SETMASK, &caller_mask, NULL);
        /* only this process writes the resource file, not those psrun -f
         * follows (its children inherit the variable, not the pid) */
        char me[24];
        snprintf(me, sizeof me, "%ld", (long)getpid());
        env_set("PSUITE_RESOURCE_PID", me);
        /* psrun killed (SIGKILL, which it cannot pass on): the program
         * ends as it would have, killed, not left running alone */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        execve(path, cmd, new_env);
        int err = errno;
        ssize_t w = write(errpipe[1], &err, sizeof err);
        (void)w;
        _exit(127);
    }
    close(errpipe[1]);
    child_pid = pid;
    for (size_t k = 0; k < 4; k++) {
        struct sigaction sa, old;
        sigaction(forwarded[k], NULL, &old);
        if (old.sa_handler == SIG_IGN)
            continue; /* ignored by the caller: the program ignores it too */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = forward;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(forwarded[k], &sa, NULL);
    }
    for (size_t k = 0; k < 2; k++)
        signal(ignored[k], SIG_IGN);
    sigset_t unblock;
    sigemptyset(&unblock);
    for (size_t k = 0; k < 4; k++)
        if (!sigismember(&caller_mask, forwarded[k]))
            sigaddset(&unblock, forwarded[k]);
    sigprocmask(SIG_UNBLOCK, &unblock, NULL);

    int err = 0;
    ssize_t r;
    do
        r = read(errpipe[0], &err, sizeof err);
    while (r < 0 && errno == EINTR);
    close(errpipe[0]);
    if (r == (ssize_t)sizeof err) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (filing->experiment)
            unlink(filing->manifest);
        cannot_run(cmd[0], path, err);
    }
    char name[NAME_MAX + 1];
    if (!prefix) /* -o or PSUITE_OUTPUT_PREFIX names both reports alike */
        prefix = program_name(pid, path, name, sizeof name);

    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    int timeout_ms = resources ? (int)(interval * 1000 + 0.5) : -1; /* --archive alone: no samples */
    if (resources)
        tick(&m, pid);
    for (;;) {
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid && (WIFEXITED(status) || WIFSIGNALED(status)))
            break;
        if (w < 0 && errno != EINTR) {
            status = 0;
            break;
        }
        int ended = 0;
        if (pidfd >= 0) {
            struct pollfd pfd = {pidfd, POLLIN, 0};
            int p = poll(&pfd, 1, timeout_ms);
            ended = p > 0;
            if (p < 0)
                continue;
        } else {
            struct timespec ts = {(time_t)interval, (long)((interval - (time_t)interval) * 1e9)};
            nanosleep(&ts, NULL);
        }
        if (resources && !ended && kill(pid, 0) == 0)
            tick(&m, pid);
    }
    if (pidfd >= 0)
        close(pidfd);

    /* the program's own VmHWM/VmPeak, written by the library at its end */
    char buf[128];
    long hwm, peak;
    int got = read_small(peak_file, buf, sizeof buf);
    int refused = got > 0 && strncmp(buf, "refused", 7) == 0;
    if (got > 0 && sscanf(buf, "%ld %ld", &hwm, &peak) == 2) {
        if (hwm > m.hwm_kb)
            m.hwm_kb = hwm;
        if (peak > m.peak_kb)
            m.peak_kb = peak;
    }
    /* The library refused the configuration before the program ran (its
     * one-line message is out, exit status 2): no resource report of a
     * program that never ran. */
    if (refused && WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        if (filing->experiment)
            unlink(filing->manifest);
        sigprocmask(SIG_SETMASK, &caller_mask, NULL);
        end_as(status);
    }
    char saved[PATH_MAX + 80];
    saved[0] = '\0';
    if (resources)
        write_resource_report(&m, pid, status, &ru, cmd, dir, prefix, saved, sizeof saved);
    if (WIFSIGNALED(status)) {
        const char *name = sigabbrev_np(WTERMSIG(status));
        note("%s was killed by SIG%s", cmd[0], name ? name : "?");
    }
    /* The library notes the reports it writes; psrun notes its own. */
    if (!quiet && saved[0]) {
        char cwd[PATH_MAX];
        int have_cwd = !dir_absolute && getcwd(cwd, sizeof cwd) != NULL;
        size_t cl = have_cwd ? strlen(cwd) : 0;
        if (have_cwd && strncmp(saved, cwd, cl) == 0 && saved[cl] == '/')
            note("report: %s", saved + cl + 1);
        else
            note("report: %s", saved);
    }
    if (filing->experiment) {
        wait_for_collectors();
        int filed = file_documents(filing, saved, &caller_mask);
        unlink(filing->manifest);
        /* the program's status, unless that was success and filing failed */
        if (filed != 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            sigprocmask(SIG_SETMASK, &caller_mask, NULL);
            _exit(USAGE_EXIT);
        }
    }
    sigprocmask(SIG_SETMASK, &caller_mask, NULL);
    end_as(status);
}

/* A configuration that cannot be read, worded as the library in the
 * program (csrc/runtime/config.c) and psuite's Python front ends word it. */
static __attribute__((noreturn)) void unreadable_configuration(const char *path, int err)
{
    if (err == ENOENT || err == ENOTDIR)
        usage_error("configuration %s: no such file", path);
    if (err == EACCES || err == EPERM)
        usage_error("cannot read configuration %s: permission denied; check its permissions", path);
    char text[128];
    snprintf(text, sizeof text, "%s", strerror(err));
    for (char *c = text; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    usage_error("cannot read configuration %s: %s; check the file and its device", path, text);
}

static __attribute__((noreturn)) void not_a_configuration_file(const char *path, mode_t mode)
{
    if (S_ISDIR(mode))
        usage_error("configuration %s is a directory; give a file", path);
    const char *kind = S_ISFIFO(mode) ? "a named pipe" : S_ISCHR(mode) ? "a character device" :
                       S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a file";
    usage_error("configuration %s is not a regular file (%s); give a regular file", path, kind);
}

/* ---- main -------------------------------------------------------------- */

int main(int argc, char **argv)
{
    int first = parse_options(argc, argv);
    if (first >= argc)
        usage_error("no program given: psrun [options] PROGRAM [ARGS...] (see psrun --help)");
    char **cmd = argv + first;
    int quiet = opt_set[OPT_QUIET];

    if (opt_set[OPT_EVENTS] + (opt_value[OPT_CONFIG] && *opt_value[OPT_CONFIG]) +
        (opt_value[OPT_PROFILE] && *opt_value[OPT_PROFILE]) > 1)
        usage_error("-e, -c and --profile each choose what to measure; give one (see psrun --help)");

    char progbuf[PATH_MAX], shebang[96];
    const char *path = check_program(cmd[0], progbuf, sizeof progbuf, shebang, sizeof shebang);

    int n = env_count(environ);
    new_env = malloc(sizeof *new_env * (size_t)(n + 20));
    if (!new_env)
        usage_error("out of memory");
    for (int k = 0; k < n; k++)
        new_env[k] = environ[k];
    new_env_n = n;
    new_env[n] = NULL;

    /* what to measure */
    char buf[PATH_MAX + 64];
    if (opt_set[OPT_CALLPATH]) {
        long depth = 128;
        const char *v = opt_value[OPT_CALLPATH];
        if (v && (strlen(v) > 8 || parse_long(v, &depth) != 0 || depth < 1 || depth > 1024))
            usage_error("--callpath=DEPTH takes the most frames per sample, from 1 to 1024, not '%.40s'", v);
        if (opt_set[OPT_EVENTS])
            usage_error("--callpath samples, -e counts; give --callpath alone or with --profile (see psrun --help)");
        snprintf(buf, sizeof buf, "%ld", depth);
        env_set("PSUITE_CALLPATH", buf);
        const char *envcfg = getenv("PS_HWPC_CONFIG");
        if (!(opt_value[OPT_PROFILE] && *opt_value[OPT_PROFILE]) && !(opt_value[OPT_CONFIG] && *opt_value[OPT_CONFIG]) &&
            !(envcfg && *envcfg))
            opt_value[OPT_PROFILE] = "ITIMER_PROF"; /* call paths without a source: CPU time */
    }
    if (opt_value[OPT_PROFILE] && *opt_value[OPT_PROFILE]) {
        long period = checked_period(opt_value[OPT_PROFILE], opt_value[OPT_PERIOD], quiet);
        env_set("PSUITE_PROFILE", opt_value[OPT_PROFILE]);
        buf[0] = '\0'; /* 0: no threshold given (empty: none, for the library) */
        if (period)
            snprintf(buf, sizeof buf, "%ld", period);
        env_set("PSUITE_PERIOD", buf);
    } else if (opt_set[OPT_PERIOD]) {
        usage_error("--period goes with --profile");
    } else if (opt_set[OPT_EVENTS]) {
        /* names stripped of spaces, empty ones dropped */
        const char *s = opt_value[OPT_EVENTS];
        char *list = malloc(strlen(s) + 1);
        if (!list)
            usage_error("out of memory");
        size_t len = 0;
        while (*s) {
            const char *end = strchrnul(s, ',');
            const char *a = s, *z = end;
            while (a < z && isspace((unsigned char)*a))
                a++;
            while (z > a && isspace((unsigned char)z[-1]))
                z--;
            if (z > a) {
                if (len)
                    list[len++] = ',';
                memcpy(list + len, a, (size_t)(z - a));
                len += (size_t)(z - a);
            }
            s = *end ? end + 1 : end;
        }
        list[len] = '\0';
        if (!len)
            usage_error("-e needs at least one event name");
        env_set("PSUITE_EVENTS", list);
    } else {
        const char *cfg = opt_value[OPT_CONFIG] && *opt_value[OPT_CONFIG] ? opt_value[OPT_CONFIG] : getenv("PS_HWPC_CONFIG");
        if (cfg && *cfg) {
            const char *what = opt_value[OPT_CONFIG] && *opt_value[OPT_CONFIG] ? "-c" : "PS_HWPC_CONFIG";
            struct stat st;
            if (stat(cfg, &st) != 0)
                unreadable_configuration(cfg, errno);
            if (!S_ISREG(st.st_mode)) /* never opened: a device or a pipe is not touched */
                not_a_configuration_file(cfg, st.st_mode);
            if (access(cfg, R_OK) != 0)
                unreadable_configuration(cfg, errno);
            char abs[PATH_MAX];
            absolute_path(cfg, abs, sizeof abs, what);
            env_set("PS_HWPC_CONFIG", abs);
        }
    }
    if (opt_value[OPT_DOMAIN])
        env_set("PSUITE_DOMAIN", opt_value[OPT_DOMAIN]);
    if (opt_value[OPT_BACKEND])
        env_set("PSUITE_BACKEND", opt_value[OPT_BACKEND]);
    if (quiet)
        env_set("PSUITE_QUIET", "1");
    if (opt_set[OPT_PER_THREAD])
        env_set("PSUITE_PER_THREAD", "1");
    if (opt_set[OPT_FOLLOW]) {
        env_set("PSUITE_FOLLOW", "1");
        /* where the followed processes' collectors send their lines: the
         * collector of this process (the program keeps this pid) */
        char notes[64];
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        snprintf(notes, sizeof notes, "psuite-%ld-%lx", (long)getpid(), (unsigned long)now.tv_nsec ^ (unsigned long)now.tv_sec);
        env_set("PSUITE_NOTES", notes);
    }

    check_environment();

    /* where the reports go */
    const char *dir = opt_value[OPT_DIRECTORY] && *opt_value[OPT_DIRECTORY] ? opt_value[OPT_DIRECTORY] : getenv("PSUITE_OUTPUT_DIR");
    if (!dir || !*dir)
        dir = ".";
    const char *dir_what = opt_value[OPT_DIRECTORY] && *opt_value[OPT_DIRECTORY] ? "-d" : "PSUITE_OUTPUT_DIR";
    if (strlen(dir) >= PATH_MAX)
        usage_error("%s: directory name too long (%zu bytes; at most %d)", dir_what, strlen(dir), PATH_MAX - 1);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        usage_error("%s%s%s: no such directory (create it first)", dir_what,
                    strcmp(dir_what, "-d") == 0 ? " " : "=", dir);
    if (access(dir, W_OK | X_OK) != 0 && !quiet)
        note("cannot write in %s: the program runs, but its report cannot be saved there", dir);
    char absdir[PATH_MAX];
    absolute_path(dir, absdir, sizeof absdir, dir_what);
    env_set("PSUITE_OUTPUT_DIR", absdir);

    const char *prefix = NULL;
    if (opt_value[OPT_OUTPUT] && *opt_value[OPT_OUTPUT]) {
        prefix = opt_value[OPT_OUTPUT];
        if (strchr(prefix, '/'))
            usage_error("-o takes a file name prefix; use -d for the directory");
        if (strlen(prefix) > MAX_PREFIX)
            usage_error("-o: a prefix of %zu bytes is too long for a report name (at most %d)", strlen(prefix),
                        MAX_PREFIX);
        env_set("PSUITE_OUTPUT_PREFIX", prefix);
    } else {
        const char *envp = getenv("PSUITE_OUTPUT_PREFIX");
        if (envp && *envp) {
            if (strchr(envp, '/'))
                usage_error("PSUITE_OUTPUT_PREFIX takes a file name prefix; use -d or PSUITE_OUTPUT_DIR for the "
                            "directory");
            if (strlen(envp) > MAX_PREFIX)
                usage_error("PSUITE_OUTPUT_PREFIX: a prefix of %zu bytes is too long for a report name (at most %d)",
                            strlen(envp), MAX_PREFIX);
            prefix = envp;
        }
    }

    /* --checkpoint (the collector reads PSUITE_CHECKPOINT) */
    const char *checkpoint = opt_set[OPT_CHECKPOINT] ? opt_value[OPT_CHECKPOINT] : getenv("PSUITE_CHECKPOINT");
    const char *checkpoint_what = opt_set[OPT_CHECKPOINT] ? "--checkpoint" : "PSUITE_CHECKPOINT";
    if (checkpoint && (*checkpoint || opt_set[OPT_CHECKPOINT])) {
        char *end;
        errno = 0;
        double period = strtod(checkpoint, &end);
        if (end == checkpoint || *end || errno || !(period >= 0.1 && period <= 86400))
            usage_error("%s takes seconds between 0.1 and 86400, not '%s'", checkpoint_what, checkpoint);
        env_set("PSUITE_CHECKPOINT", checkpoint);
    }

    /* -R */
    double interval = 1.0;
    if (opt_set[OPT_INTERVAL] && !opt_set[OPT_RESOURCES])
        usage_error("--interval goes with -R");
    if (opt_set[OPT_RESOURCES] && opt_value[OPT_INTERVAL]) {
        char *end;
        errno = 0;
        interval = strtod(opt_value[OPT_INTERVAL], &end);
        while (end != opt_value[OPT_INTERVAL] && isspace((unsigned char)*end))
            end++;
        if (end == opt_value[OPT_INTERVAL] || *end || errno || !(interval >= 0.01 && interval <= 3600))
            usage_error("--interval takes seconds between 0.01 and 3600, not '%s'", opt_value[OPT_INTERVAL]);
    }

    /* --archive: the filer found now, before the program runs */
    static struct filing filing;
    const char *experiment = opt_set[OPT_ARCHIVE] ? opt_value[OPT_ARCHIVE] : getenv("PSUITE_ARCHIVE");
    if (opt_set[OPT_ARCHIVE] && !*experiment)
        usage_error("--archive needs an experiment name (see psbase ls)");
    if (experiment && *experiment) {
        filing.experiment = experiment;
        filing.per_process = opt_set[OPT_PER_THREAD];
        filing.quiet = quiet;
        find_python(&filing);
    }
    if (opt_set[OPT_DB] && !filing.experiment)
        usage_error("--db goes with --archive (or PSUITE_ARCHIVE)");
    if (opt_set[OPT_DB] && !*opt_value[OPT_DB])
        usage_error("--db needs an archive: an SQLite file name or a database URL");
    filing.db = opt_set[OPT_DB] ? opt_value[OPT_DB] : NULL;

    /* the preload */
    char lib[PATH_MAX];
    find_library(lib, sizeof lib);
    const char *current = getenv("LD_PRELOAD");
    if (current && *current) {
        char *both = malloc(strlen(lib) + 1 + strlen(current) + 1);
        if (!both)
            usage_error("out of memory");
        sprintf(both, "%s:%s", lib, current);
        env_set("LD_PRELOAD", both);
    } else {
        env_set("LD_PRELOAD", lib);
    }
    env_set("PSUITE_PRELOAD", "1");

    /* A script is measured as its interpreter; -f follows what it starts. */
    if (shebang[0] && !quiet && !opt_set[OPT_FOLLOW])
        note("%s is a script: psrun measures its interpreter (%s), not the programs the script starts; -f measures "
             "those too, each in its own report", cmd[0], shebang);

    if (!opt_set[OPT_RESOURCES] && !filing.experiment) {
        execve(path, cmd, new_env);
        cannot_run(cmd[0], path, errno);
    }

    char peak[PATH_MAX];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(peak, sizeof peak, "%s/psuite-peak-XXXXXX", tmpdir && *tmpdir && strlen(tmpdir) < PATH_MAX - 32 ? tmpdir : "/tmp");
    int fd = mkostemp(peak, O_CLOEXEC);
    if (fd < 0)
        usage_error("cannot make a temporary file in %s: %s", tmpdir && *tmpdir ? tmpdir : "/tmp", strerror(errno));
    /* Unlinked at once and reached through psrun's descriptor: however
     * psrun ends (SIGKILL included), no file is left behind. */
    unlink(peak);
    snprintf(peak, sizeof peak, "/proc/%ld/fd/%d", (long)getpid(), fd);
    if (filing.experiment) {
        /* the runtime's list of the documents it saves: private, psrun's */
        snprintf(filing.manifest, sizeof filing.manifest, "%s/psuite-manifest-XXXXXX",
                 tmpdir && *tmpdir && strlen(tmpdir) < PATH_MAX - 32 ? tmpdir : "/tmp");
        int mfd = mkostemp(filing.manifest, O_CLOEXEC);
        if (mfd < 0) {
            unlink(peak);
            usage_error("cannot make a temporary file in %s: %s", tmpdir && *tmpdir ? tmpdir : "/tmp",
                        strerror(errno));
        }
        close(mfd);
        env_set("PSUITE_MANIFEST", filing.manifest);
    }
    env_set("PSUITE_RESOURCE_FILE", peak);
    env_set("PSUITE_RESOURCE_PID", ""); /* its slot: the child sets its pid there before the exec */
    run_monitored(path, cmd, new_env, interval, absdir, prefix, peak, quiet,
                  opt_value[OPT_DIRECTORY] ? opt_value[OPT_DIRECTORY][0] == '/' : dir[0] == '/',
                  opt_set[OPT_RESOURCES], &filing);
}
