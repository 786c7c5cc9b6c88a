/*
 * pshwpc.h - public C API of psuite's measurement library (libpshwpc.so).
 *
 * Count hardware/software events around regions of code, PerfSuite style:
 *
 *     ps_hwpc_init();            // reads PS_HWPC_CONFIG (or the default list)
 *     ps_hwpc_start();
 *     ... work ...
 *     ps_hwpc_suspend();         // optional: pause, ps_hwpc_start() resumes
 *     ps_hwpc_stop("region");    // writes region.<pid>.<host>.xml
 *     ps_hwpc_shutdown();
 *
 * With a <ps_hwpc_profile> configuration the same calls drive sampling (the
 * sampler psrun --profile uses): init sets it up switched off, start starts
 * or resumes it, suspend stops it, stop(name) suspends it and writes the
 * profile of every sample since init (the format psrun writes, the
 * suspended time left out of its times), shutdown ends it.  Suspending is
 * process-wide: a call from any thread stops the sampling of every thread,
 * threads created while suspended included; the sample a thread's source
 * was already sending is dropped.  ps_hwpc_read answers PS_HWPC_ESTATE for
 * a profile.  Under psrun --profile the program's calls act on psrun's
 * sampling (one library, as in PerfSuite): it runs from before main, so
 * init and the first start return PS_HWPC_OK and change nothing, suspend
 * and start suspend and resume it, stop(name) writes the profile so far,
 * and shutdown leaves the rest to psrun's profile at the program's end.
 *
 * Every function returns PS_HWPC_OK (0) or one of the negative PS_HWPC_E*
 * codes below; ps_hwpc_strerror() turns a code into text.  Link with
 * -lpshwpc; header and library are installed together, in the directory
 * `python -c "import psuite.libperfsuite.native as n; print(n.include_dir())"`
 * prints.
 *
 * Fortran: every call has a variant with a trailing underscore whose last
 * argument is an INTEGER ierr (ps_hwpc_init_(ierr), ps_hwpc_stop_(prefix,
 * ierr) ...).
 */
#ifndef PSHWPC_H
#define PSHWPC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PS_HWPC_OK         0   /* success */
#define PS_HWPC_EINVAL    -1   /* invalid argument */
#define PS_HWPC_ESTATE    -2   /* call not allowed in the current state */
#define PS_HWPC_ECONFIG   -3   /* configuration file missing or malformed */
#define PS_HWPC_ENOEVENT  -4   /* an event name does not exist */
#define PS_HWPC_ENOCOUNT  -5   /* none of the events can be counted here */
#define PS_HWPC_EIO       -6   /* the report could not be written */
#define PS_HWPC_EBACKEND  -7   /* the counting backend failed */
#define PS_HWPC_EEXIST    -8   /* the report file exists already */

#define PS_HWPC_MAX_EVENTS 64

/* Event status, as reported by ps_hwpc_eventstatus(). */
#define PS_EVENT_COUNTED   0   /* counted */
#define PS_EVENT_DROPPED   1   /* exists but cannot be counted here */
#define PS_EVENT_UNKNOWN   2   /* no such event for this backend */

int ps_hwpc_init(void);
int ps_hwpc_start(void);
int ps_hwpc_suspend(void);
/* Current counts (scaled when multiplexed), one per counted event. */
int ps_hwpc_read(long long *values);
/* Stop counting and write the report.  `name` ending in ".xml" is used as
 * the file name; otherwise it is a prefix: <name>.<pid>.<host>.xml.  NULL
 * means the default (<exe>.<pid>.<host>.xml, or PSUITE_OUTPUT_PREFIX).  The
 * file is created exclusively: an existing file is never overwritten. */
int ps_hwpc_stop(const char *name);
int ps_hwpc_shutdown(void);
int ps_hwpc_numevents(int *count);
/* Names of the counted events; the array stays valid until shutdown. */
int ps_hwpc_eventnames(const char *const **names);
/* Measure the whole program from now to its exit, writing the report then
 * (what psrun does before main). */
int ps_hwpc_psrun(void);
const char *ps_hwpc_strerror(int code);

/* Status of requested event i (0 <= i < ps_hwpc_numrequested()): one of
 * PS_EVENT_*, with the reason when it is not counted. */
int ps_hwpc_numrequested(void);
int ps_hwpc_eventstatus(int i, const char **name, int *status, const char **why);
/* "PAPI" or "perf_event"; the backend's version in `version`. */
const char *ps_hwpc_backend(const char **version);
int ps_hwpc_multiplexed(void);

/* Configuration files (<ps_hwpc_eventlist>, <ps_hwpc_profile>), parsed by
 * the one parser every reader uses (expat, loaded privately): `data` holds
 * the file's `len` bytes, in any encoding expat reads (UTF-8, UTF-16 with a
 * byte order mark, ISO-8859-1, US-ASCII), of at most 16 MiB; `path` names
 * it in messages.  PS_HWPC_OK, or PS_HWPC_ECONFIG with a one-line message
 * in `err`.  Names are stripped of blanks; `types` are "preset"/"native". */
#define PS_CONFIG_EVENTLIST 1
#define PS_CONFIG_PROFILE   2
typedef struct {
    int kind;                   /* PS_CONFIG_EVENTLIST or PS_CONFIG_PROFILE */
    char cls[16];               /* class attribute (eventlist default PAPI) */
    char domain[16];            /* user, kernel or all */
    int nevents;
    char names[PS_HWPC_MAX_EVENTS][128];
    char types[PS_HWPC_MAX_EVENTS][8];
    int has_threshold;          /* profile: the event's threshold attribute */
    char threshold[64];
} ps_hwpc_config_t;
int ps_hwpc_config_parse(const char *path, const char *data, size_t len, ps_hwpc_config_t *out, char *err,
                         size_t err_len);

/* Fortran bindings. */
void ps_hwpc_init_(int *ierr);
void ps_hwpc_start_(int *ierr);
void ps_hwpc_suspend_(int *ierr);
void ps_hwpc_read_(long long *values, int *ierr);
void ps_hwpc_stop_(const char *name, int *ierr, size_t name_len);
void ps_hwpc_shutdown_(int *ierr);
void ps_hwpc_numevents_(int *count, int *ierr);
void ps_hwpc_psrun_(int *ierr);

/* ---- libperfsuite: machine facts and timers (no external dependency) ---- */

/* cpuid(leaf, subleaf) into regs[0..3] = eax, ebx, ecx, edx; -1 if the CPU
 * has no cpuid instruction. */
int ps_cpuid(unsigned leaf, unsigned subleaf, unsigned regs[4]);
/* Monotonic wall clock, process CPU time and thread CPU time, nanoseconds. */
long long ps_wallclock_ns(void);
long long ps_cputime_ns(void);
long long ps_thread_cputime_ns(void);

/* Machine facts read from the kernel (/proc, /sys) and cpuid. */
#define PS_MAX_CACHES 16
#define PS_MAX_TLBS 16
typedef struct {
    char type[16];          /* "data", "instruction", "unified" */
    int level;
    long long size_kb;
    int line_size;          /* bytes, 0 if unknown */
    int associativity;      /* ways; 0 = fully associative */
    int shared_cpus;        /* logical CPUs sharing it, 0 if unknown */
} ps_cache_t;

typedef struct {
    char type[16];          /* "data", "instruction", "unified" */
    int level;
    int entries;
    int associativity;      /* ways; 0 = fully associative */
    int page_kb;            /* page size this TLB maps */
} ps_tlb_t;

typedef struct {
    int cpu_count;          /* online logical CPUs */
    char vendor[32];        /* cpuid vendor id, e.g. GenuineIntel */
    char brand[80];
    int family, model, stepping;
    double mhz;
    char hypervisor[16];    /* cpuid hypervisor vendor, "" on bare metal */
    int cache_count;
    ps_cache_t caches[PS_MAX_CACHES];
    int tlb_count;
    ps_tlb_t tlbs[PS_MAX_TLBS];
    long long memory_kb;
    long long page_size;    /* bytes */
} ps_machineinfo_t;

int ps_machineinfo(ps_machineinfo_t *info);

/* ---- event probing, for inventories (psinv -e) ---- */

/* Try to count `name` with the given backend ("PAPI", "perf_event" or NULL
 * for the default): open, start, stop.  Returns PS_EVENT_*; `why` gets the
 * reason when the event is not counted. */
int ps_event_probe(const char *backend, const char *name, char *why, size_t why_len);
/* Iterate over the backend's event catalogue ("PAPI", "perf_event", or
 * "PAPI_presets" for the standard preset list): index 0, 1, ... until it
 * returns 0.  Fills name/description; `kind` gets "preset" or "native". */
int ps_event_catalogue(const char *backend, int index, char *name, size_t name_len,
                       char *desc, size_t desc_len, const char **kind);
/* PAPI library facts: version string ("" without PAPI), number of components,
 * and per component its name, whether it is disabled (and why), and its
 * hardware counter count. */
const char *ps_papi_version(void);
int ps_papi_component(int index, char *name, size_t name_len, int *disabled,
                      char *why, size_t why_len, int *counters);

#ifdef __cplusplus
}
#endif
#endif /* PSHWPC_H */
