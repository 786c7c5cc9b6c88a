/* internal.h - declarations shared by the library's objects; not installed.
 * The library is built with -fvisibility=hidden: only PS_API symbols are
 * exported. */
#ifndef PS_INTERNAL_H
#define PS_INTERNAL_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include "pshwpc.h"

#define PS_API __attribute__((visibility("default")))

enum { PS_BACKEND_NONE = 0, PS_BACKEND_PAPI, PS_BACKEND_PERF };
enum { PS_DOM_USER = 1, PS_DOM_KERNEL = 2, PS_DOM_ALL = 3 };

typedef struct {
    char name[128];
    int preset;                 /* 1: PAPI preset name, 0: native */
    int status;                 /* PS_EVENT_* */
    char why[192];
    /* perf_event backend */
    int fd;
    unsigned long long id;      /* fd's event (PERF_EVENT_IOC_ID): checked before each use */
    unsigned perf_type;
    unsigned long long perf_config;
    int multiplexed;            /* ran less than it was enabled */
    /* Under psrun, the same event on each thread that was running before
     * measurement started (shared-library constructors' thread pools),
     * with inheritance: summed with fd on read.  nxfd of them open. */
#define PS_PERF_MAX_XFD 128
    int nxfd;
    int xfd[PS_PERF_MAX_XFD];
} ps_event_t;

typedef struct {
    int backend;
    char backend_version[64];
    int domain;
    int nrequested;
    ps_event_t ev[PS_HWPC_MAX_EVENTS];
    int ncounted;
    int counted[PS_HWPC_MAX_EVENTS];          /* indexes into ev */
    const char *counted_names[PS_HWPC_MAX_EVENTS + 1];
    int multiplexed;
    int papi_eventset;
    long long papi_acc[PS_HWPC_MAX_EVENTS];  /* PAPI counts before a suspend */
    char annotation[1024];      /* what psrun counted instead, and why */
    char no_inherit[192];       /* why PAPI cannot follow threads here ("": it can) */
} ps_evset_t;

/* util.c */
size_t ps_strlcpy(char *dst, const char *src, size_t size);
void ps_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ps_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ps_env_flag(const char *name);  /* the variable is set to "1" (psrun's switches: PSUITE_QUIET ...) */
int ps_quiet(void);  /* notes silenced: PSUITE_QUIET=1 (psrun -q) or =reports (processes psrun -f follows) */
void ps_notes_init(void);  /* under psrun: the "report: PATH" lines on, unless -q */
void ps_report_note(const char *path);  /* "psrun: report: PATH" on stderr (async-signal-safe) */
int ps_read_file(const char *path, char *buf, size_t size);
int ps_each_thread(void (*fn)(int tid, void *arg), void *arg); /* every tid in /proc/self/task; signal-safe */
/* Paths of reports written before an exec (taken back if it fails), by
 * report index, in an mmap'd table; "" where none.  Signal-safe. */
typedef struct {
    char (*paths)[PATH_MAX];
    int n;
} ps_pathtab_t;
char *ps_pathtab_at(ps_pathtab_t *t, int k); /* NULL beyond the table */
char *ps_pathtab_slot(ps_pathtab_t *t, int k, int n);
void ps_pathtab_free(ps_pathtab_t *t);
/* A lock whose holder is known atomically (see util.c): the end of
 * measurement takes it bounded, never waiting for the thread it interrupted. */
typedef struct {
    int tid;         /* the holder, 0: free */
    int end_waiting; /* the end of measurement waits: others let it pass */
} ps_lock_t;
void ps_lock_take(ps_lock_t *l);
void ps_lock_give(ps_lock_t *l);
int ps_lock_take_bounded(ps_lock_t *l); /* 1: held (give it back); signal-safe */
void ps_lock_reset(ps_lock_t *l);       /* in a forked child */
void ps_heapsort(void *base, size_t n, size_t size, int (*less)(const void *, const void *)); /* signal-safe */
void ps_append_part(char *dst, size_t cap, const char *text); /* "; " between parts, cut to fit; signal-safe */
long long ps_read_ll(const char *path, long long dflt);
/* Descriptors psuite keeps in the program: moved above the soft RLIMIT_NOFILE
 * (as high as the limit allows where the hard limit leaves no room above);
 * returns the new descriptor, the old one closed, or fd where it cannot
 * move.  Signal-safe.  ps_fd_room_above: the limit leaves room above. */
int ps_fd_above_limit(int fd);
int ps_fd_room_above(void);
int ps_fd_limit_tight(void); /* no room above the descriptor limit, which is at most 4096: a descriptor of psuite's is one the program could have had */
unsigned long long ps_fd_ident(int fd); /* the open file's device and inode, folded; 0: not open */
/* open(2) that still succeeds when the program has used up its descriptor
 * limit (the soft limit raised for the call, where the hard one allows). */
int ps_open_anyway(const char *path, int flags, int mode);
long long ps_tid_cpu_ns(int tid);  /* CPU time of a live thread of this process, -1 if gone */
void ps_settle_thread_times(void);  /* every live thread's pending CPU time accounted, before getrusage */
/* user/system split of cpu_ns from the thread's /proc stat ticks */
void ps_tid_times(int tid, long long cpu_ns, long long *user_ns, long long *sys_ns);

/* events.c: names, aliases and the perf_event generic event table */
int ps_preset_exists(const char *name, const char **desc);
const char *ps_preset_name(int index, const char **desc);
int ps_perf_lookup(const char *name, unsigned *type, unsigned long long *config,
                   char *why, size_t why_len);
const char *ps_perf_catalogue(int index, const char **desc, const char **papi_alias);
const char *ps_perf_to_papi_native(const char *name);
/* Software events the kernel counts only in kernel mode (a task's context
 * switches and migrations happen in the scheduler): 0 in the user domain,
 * so they are counted in every domain whatever the set's. */
int ps_perf_kernel_only(unsigned type, unsigned long long config);
int ps_event_kernel_only(const char *name);

/* perfev.c: direct perf_event backend */
int ps_perf_available(char *why, size_t why_len);
int ps_perf_hardware_pmu(void);
int ps_perf_open(ps_evset_t *set);
int ps_perf_enable(ps_evset_t *set, int on);
int ps_perf_read(ps_evset_t *set, long long *values);
void ps_perf_close(ps_evset_t *set);
int ps_perf_counters_lost(void); /* PS_PERF_LOST_*: why the counters' descriptors are gone (0: they are not) */
enum { PS_PERF_LOST_CLOSED = 1, PS_PERF_LOST_COLLECTOR = 2 };
/* The counters held by the collector (perfev.c): the program hands them over
 * once its collector runs, then asks it for each PS_PERF_OP_*. */
enum { PS_PERF_OP_ENABLE = 1, PS_PERF_OP_DISABLE, PS_PERF_OP_READ };
void ps_perf_hand_over(ps_evset_t *set);
int ps_perf_serve(int op); /* in the collector */
int ps_perf_probe(const char *name, char *why, size_t why_len);
/* Descriptors of psuite's own counters (per-thread ones too): moved above
 * the soft descriptor limit (ps_fd_above_limit); where the hard limit leaves
 * no room above, to at least base (base <= 0: as high as the limit allows),
 * and whether fd is still a perf_event descriptor (the
 * program may have closed and reused the number).  ps_perf_close_fd closes
 * it only then. */
int ps_perf_move_high(int fd, long base);
int ps_perf_still_ours(int fd);
void ps_perf_close_fd(int fd);
/* The event's identity (PERF_EVENT_IOC_ID; 0: unknown), and whether fd is
 * still that event (id 0: any perf_event descriptor); close only then. */
unsigned long long ps_perf_id(int fd);
int ps_perf_is(int fd, unsigned long long id);
void ps_perf_close_id(int fd, unsigned long long id);
/* The other threads of this process, tids into out (at most max), the
 * caller excluded; the count. */
int ps_perf_other_threads(int *out, int max); /* all there are; the first max in out */

/* papi.c: PAPI through a libpapi loaded with dlopen */
int ps_papi_load(char *why, size_t why_len);
const char *ps_papi_version_string(void);
int ps_papi_open(ps_evset_t *set);
int ps_papi_start(ps_evset_t *set);
int ps_papi_stop(ps_evset_t *set, long long *values);
int ps_papi_read(ps_evset_t *set, long long *values);
void ps_papi_close(ps_evset_t *set);
int ps_papi_probe(const char *name, char *why, size_t why_len);
int ps_papi_catalogue(int index, char *name, size_t name_len, char *desc,
                      size_t desc_len, const char **kind);
/* the program's PAPI_start (start: its libpapi's) may have failed with
 * PAPI_EISRUN only because psuite's set runs on this thread */
int ps_papi_blocks_start(int (*start)(int), int eventset);
void *ps_papi_start_function(void);  /* libpapi's PAPI_start through psuite's handle */

/* config.c: PerfSuite event list files and PSUITE_EVENTS */
void ps_config_after_fork(void);
void ps_hwpc_yield(void); /* counting stopped for good: the program counts with PAPI itself */
int ps_hwpc_yielded(void);
int ps_config_load(ps_evset_t *set, const char *events, char *why, size_t why_len);

/* Profiling configuration (<ps_hwpc_profile> or PSUITE_PROFILE). */
#define PS_CALLPATH_DEFAULT 128     /* frames per sample of psrun --callpath, callpath="yes" */
#define PS_CALLPATH_MAX 1024
enum { PS_PROF_ITIMER = 1, PS_PROF_EVENT = 2 };
enum { PS_TIMER_PROF = 0, PS_TIMER_VIRTUAL = 1, PS_TIMER_REAL = 2 };
typedef struct {
    int kind;                   /* PS_PROF_ITIMER or PS_PROF_EVENT */
    int timer;                  /* PS_TIMER_* for itimer */
    char cls[16];               /* the configuration's class: itimer, PAPI, perfmon */
    char event[128];            /* ITIMER_PROF, PAPI_TOT_CYC, task-clock ... */
    long long threshold;        /* microseconds for timers, events for overflow */
    int domain;                 /* PS_DOM_* */
    int callpath;               /* call paths: the most frames per sample (0: flat only) */
} ps_profcfg_t;
/* 1: a profiling configuration was given (cfg filled); 0: counting; <0: error (why). */
int ps_config_profile(ps_profcfg_t *cfg, char *why, size_t why_len);

/* sampler.c: per-thread sampling into preallocated tables */
#define PS_MAX_THREADS 16384
#define PS_SAMPLE_SLOTS_LOG2 16
#define PS_SAMPLE_SLOTS (1u << PS_SAMPLE_SLOTS_LOG2)
typedef struct {
    /* A sampled location and its count.  The key is a PC with the load of
     * its module (ps_modules_key); a call-stack id can take its place
     * without changing the table. */
    unsigned long long pc, count;
} ps_slot_t;
typedef struct {
    int index;                  /* 0: the main thread, then in creation order (numbered ps_thread_number) */
    int tid;
    ps_slot_t *table;           /* PS_SAMPLE_SLOTS entries, mmap'd (touched as used); NULL once ended */
    unsigned long long samples, lost;
    int perf_fd, syscall_fd, has_timer, failed, live;
    unsigned long long perf_id;  /* perf_fd's event (PERF_EVENT_IOC_ID): checked before each use and close */
    int source_lost;            /* its sampling descriptor was closed or replaced by the program */
    int outside;                /* perf_fd is the collector's descriptor, not the program's (sampler.c) */
    unsigned long long syscall_ident; /* syscall_fd's file (ps_fd_ident), checked before its close */
    void *timer;                /* timer_t */
    long long start_ns, end_ns, cpu_ns, user_ns, sys_ns;
    /* An ended thread's samples, copied out of its table (which goes to
     * the next thread): nkept (pc, count) pairs. */
    ps_slot_t *kept;
    unsigned long nkept;
    unsigned long long nused;   /* distinct PCs in table */
    unsigned long long proc_samples; /* ITIMER_REAL: taken from /proc while blocked (no signal) */
    unsigned long long starttime; /* adopted threads: /proc start time, to tell a reused tid */
    int adopted;                /* running before sampling started (a library constructor's) */
    int sigblocked;             /* seen blocking the sampling signal (ps_sampler_signal_name): its samples
                                   while running are lost */
    double blocked_cpu_s;       /* its CPU time then */
    /* ITIMER_REAL: time runnable but waiting for a CPU, charged to the PC
     * its own source sampled last (where a preempted thread resumes) */
    unsigned long long last_pc, last_count, wait_samples;
    long long wait_ns;
    int was_running;
    int mask_seen;              /* consecutive looks that found the sampling signal blocked */
    struct ps_cct *cct;         /* call paths (cct.c): the thread's calling-context tree, NULL without */
    unsigned long long cp_lost; /* call paths: samples of a thread without a tree (no memory) */
} ps_sthread_t;
/* The number a thread goes by in every document (docs/formats/numbering.md):
 * thread index i (from 0, the main thread first) is number i + 1, as 0 is
 * the process total of psrun -p. */
static inline int ps_thread_number(int index) { return index + 1; }
#define PS_BUILDID_MAX 32       /* bytes of a GNU build-id kept at most (sha1: 20) */
int ps_sampler_init(const ps_profcfg_t *cfg, char *why, size_t why_len);
ps_sthread_t *ps_sampler_thread_begin(void);   /* in the new thread */
void ps_sampler_thread_end(ps_sthread_t *t);   /* in the ending thread */
void ps_sampler_stop(void);                    /* all threads, at process end */
void ps_sampler_stop_dead(long long user_ns, long long sys_ns); /* in the collector: the process is gone */
void ps_sampler_close_inherited(void);         /* in the collector: the sampling descriptors it inherited */
void ps_sampler_collector_started(void);       /* in the collector, first: what it samples for the program */
/* in the collector: records it cannot see left out, their samples counted lost */
unsigned long long ps_sampler_drop_unshared(unsigned long long *paths_dropped);
size_t ps_sampler_table_bytes(void);           /* the thread table's memory (mapped when profiling starts) */
size_t ps_thread_counts_bytes(void);           /* a chunk of 256 per-thread count records (psrun -p) */
size_t ps_thread_counts_all_bytes(void);       /* every chunk: records for PS_MAX_THREADS threads */
void ps_sampler_forget_after_fork(void);
void ps_sampler_restart_after_fork(void);      /* in a forked child (psrun -f) */
void ps_sampler_pause(int on);                 /* before an exec (1), after it failed (0): sources held, samples ignored */
/* The C API's suspend (1) and resume (0) of every thread's sampling; called
 * before ps_sampler_init, it says whether sampling starts suspended. */
void ps_sampler_suspend(int on);
void ps_sampler_starting(int on);        /* psrun's start-up: its samples dropped */
/* The process's wall-clock, user and system time while suspended so far. */
void ps_sampler_suspended_time(long long *wall_ns, long long *user_ns, long long *sys_ns);
void ps_sampler_reset(void);                   /* after ps_sampler_stop: sampling may start again */
int ps_sampler_nthreads(void);
const ps_sthread_t *ps_sampler_get(int i);
const ps_profcfg_t *ps_sampler_config(void);
long long ps_sampler_started_ns(void);
unsigned long ps_sampler_unsampled(void);
const char *ps_sampler_source(const char **note);
const char *ps_sampler_signal_name(void);      /* the signal the sources send: "SIGTRAP" or "SIGPROF" */
/* The program's constructors have run (main is about to be called): the
 * ITIMER_REAL sampler thread starts here, not before.  preload.c may call
 * it at main; until then the sampler hooks the executable's last
 * constructor itself (idempotent). */
void ps_sampler_at_main(void);
/* modules.c, when a module instance has left the map (dlclose): its name,
 * load address, build-id and the span of its executable segments kept;
 * returns its retired-module index (one per file and load address), -1
 * without memory.  Normal context. */
int ps_sampler_retired_add(const char *file, unsigned long long base, unsigned long long lo, unsigned long long hi,
                           const unsigned char *buildid, unsigned buildid_len);
const char *ps_sampler_retired_module(int module, unsigned long long *base);
const unsigned char *ps_sampler_retired_buildid(int module, unsigned *len); /* *len 0: none recorded */
int ps_sampler_retired_span(int module, unsigned long long *lo, unsigned long long *hi); /* 0: no such module */
int ps_sampler_active(void);
int ps_sampler_callpath(void);  /* call paths recorded: the most frames per sample; 0: flat only */

/* modules.c: the loaded modules' executable segments (one entry each, sorted
 * by lo), their file names with them, kept current in mmap'd storage: taken
 * when the library starts under psrun, refreshed after each dlopen, dlmopen
 * and dlclose.  The end of measurement reads them without the loader's
 * lock, malloc or stdio. */
typedef struct {
    unsigned long long lo, hi, base;
    const char *file;
    const void *phdr;           /* the object's program headers (dl_phdr_info), for unwind.c's snapshot */
    const char *lname;          /* the loader's name for it (dlpi_name), as given: to know it again */
    unsigned file_len;          /* strlen(file) */
    int phnum, exe;             /* exe: the executable (dlpi_name "") */
    int permanent;              /* loaded before measurement started (never unloaded) */
    unsigned char buildid[PS_BUILDID_MAX]; /* its GNU build-id, read when it entered the map */
    unsigned buildid_len;       /* 0: none */
    unsigned instance;          /* 0: permanent; else its load's number (ps_modules_key) */
} ps_module_t;
typedef struct ps_modmap ps_modmap_t;
void ps_modules_refresh(void);  /* not async-signal-safe (dl_iterate_phdr) */
/* The current map, held until ps_modules_release (refreshes then use other
 * storage); NULL when none was ever taken.  Async-signal-safe. */
const ps_modmap_t *ps_modules_hold(const ps_module_t **v, int *n);
void ps_modules_release(const ps_modmap_t *m);
/* dlclose calls under way: objects may be being unmapped (a closed
 * module's dependencies with it), so unwind.c's snapshot serves only the
 * permanent ones meanwhile. */
extern int ps_modules_closing;
/* Set in the thread running a dlclose: the objects it unloads are unmapped
 * by this thread alone (the loader's lock held), so its own handler may
 * still read them (its destructors' frames) while it is interrupted. */
extern __thread int ps_modules_closing_here __attribute__((tls_model("initial-exec")));
/* Set in a thread while psuite's dlopen, dlmopen or dlclose works for the
 * program around the real call (the module map's refresh): the real
 * function's address, where the flat profile charges the samples taken
 * meanwhile - the program asked for that call; psuite's code is no part of
 * its profile. */
extern __thread unsigned long long ps_modules_on_behalf __attribute__((tls_model("initial-exec")));
/* The PC a flat sample at pc is charged to: the real function a wrapper
 * works for, when pc is in one of them.  Async-signal-safe. */
unsigned long long ps_modules_charge(unsigned long long pc);
int ps_modules_is_self(unsigned long long pc); /* pc in psuite's library (async-signal-safe) */
/* Samples and call-path nodes are keyed by PC and the load they belong to,
 * so that dlclose costs nothing in the tables: a PC in a module loaded
 * after start carries its load's number (its instance) above bit
 * PS_KEY_SHIFT; permanent modules' PCs are plain.  A PC in no module of
 * the map (an object being loaded, not yet in it) carries the number the
 * next load will get.  ps_modules_key_at: the key of addr, looked up at
 * look (a return address's call instruction, addr - 1).  Async-signal-safe. */
#define PS_KEY_SHIFT 48
#define PS_KEY_PC(key) ((key) & ((1ull << PS_KEY_SHIFT) - 1))
unsigned long long ps_modules_key_at(unsigned long long addr, unsigned long long look);
static inline unsigned long long ps_modules_key(unsigned long long pc) { return ps_modules_key_at(pc, pc); }
/* A key's retired-module index (ps_sampler_retired_module) if the load it
 * belongs to has been unloaded, else -1; *pc: the PC.  Async-signal-safe. */
int ps_modules_resolve(unsigned long long key, unsigned long long *pc);
/* In the collector, at each of its ticks (now: CLOCK_MONOTONIC ns): the
 * program's file mappings read while a sample has fallen outside the module
 * map (modules.c). */
void ps_modules_collector_tick(pid_t pid, long long now);
unsigned ps_modules_unloads(void);  /* loads unloaded so far: a call-path cache is dropped when it changes */

/* unwind.c: the call-path unwinder (libunwind, libgcc_s or frame pointers),
 * loaded at run time.  ps_unwind_init once (normal context); ps_unwind_warm
 * in each thread before it is sampled; ps_unwind in the sample handler. */
enum { PS_UNW_NONE = 0, PS_UNW_LIBUNWIND, PS_UNW_LIBGCC, PS_UNW_FRAMEPOINTER };
int ps_hold_async_signals(sigset_t *old);     /* 1: held, give back with ps_release_signals(old) */
void ps_release_signals(const sigset_t *old);
int ps_unwind_init(char *note, size_t len);   /* the unwinder used; note: what psrun says */
const char *ps_unwind_name(void);
void ps_unwind_warm(void);
/* frames[0] the interrupted PC, then return addresses, outermost last;
 * at most cap.  Returns how many, -1 when the stack could not be read;
 * *more: frames beyond cap exist (or may). stack_hi: the top of the
 * thread's stack (framepointer walk only; 0 unknown, or the interrupted
 * stack pointer is off the thread's own stack).  Async-signal-safe. */
int ps_unwind(void *uc, void **frames, int cap, void **scratch, int scratch_cap, unsigned long long stack_hi,
              int *more);
void ps_unwind_fork_prepare(void);            /* pthread_atfork: handlers out of the unwinders (their locks) */
void ps_unwind_fork_done(void);
void ps_fd_window_enter(void); /* a descriptor of psuite's being opened, not yet recorded (util.c) */
void ps_fd_window_leave(void);
void ps_fd_window_fork_prepare(void); /* pthread_atfork: the windows open closed first (bounded) */
void ps_fd_window_fork_done(int child);
void ps_unwind_flush(void);                   /* after dlclose unloaded something */
unsigned long ps_unwind_snapshot_calls(void);
/* dlclose, after counting itself in ps_modules_closing: the handlers reading
 * the module map from before are done with it. */
void ps_unwind_quiesce(void); /* dl_iterate_phdr calls answered from the module map in the handler */

/* cct.c: per-thread calling-context trees in preallocated memory */
typedef struct ps_cct ps_cct_t;
typedef struct {
    unsigned long long addr, samples; /* addr: a key (ps_modules_key_at) */
    unsigned parent, kind;      /* PS_CP_* */
} ps_cpnode_t;
enum { PS_CP_CALL = 0, PS_CP_SAMPLE, PS_CP_TRUNCATED, PS_CP_BLOCKED, PS_CP_DEAD };
int ps_cct_init(int maxdepth);                /* capacity from PSUITE_CALLPATH_NODES; 0 ok */
int ps_cct_verbose(void);                     /* PSUITE_VERBOSE was set: the trees' memory is said at the end */
size_t ps_cct_node_bytes(void);
int ps_cct_maxdepth(void);                    /* 0: call paths off */
ps_cct_t *ps_cct_new(void);                   /* a live thread's tree (mmap'd), NULL without memory */
void ps_cct_thread_warm(ps_cct_t *c);         /* in the thread itself: its stack's bounds, the unwinder primed */
/* The handler: the calling thread's stack unwound from uc into its tree,
 * n samples at its leaf; counted lost when it cannot be stored. */
void ps_cct_sample(ps_cct_t *c, void *uc, unsigned long long n);
void ps_cct_blocked(ps_cct_t *c, unsigned long long pc);  /* ITIMER_REAL: a blocked thread's PC from /proc */
void ps_cct_again(ps_cct_t *c);               /* one more sample at the last sample's leaf (run-queue wait) */
void ps_cct_lost(ps_cct_t *c, unsigned long long n);
ps_cct_t *ps_cct_retire(ps_cct_t *c);         /* an ended thread's tree, compacted (c kept: the caller publishes
                                                 the copy, then ps_cct_free(c)); c without memory */
void ps_cct_free(ps_cct_t *c);
/* Reading a tree (its nodes 1 .. n-1: node 0 is the root). */
const ps_cpnode_t *ps_cct_nodes(const ps_cct_t *c, unsigned *n);
void ps_cct_counts(const ps_cct_t *c, unsigned long long *samples, unsigned long long *truncated,
                   unsigned long long *lost);
size_t ps_cct_resident(const ps_cct_t *c);   /* bytes of it in memory (mincore) */

/* callpath_report.c: the <callpaths> companion of the profile at
 * profile_path (async-signal-safe, on the writer's stack); remember: its
 * path kept for ps_callpaths_take_back (before an exec). */
int ps_callpaths_write(const char *profile_path, int remember);
void ps_callpaths_take_back(void);

/* threads.c: the pthread_create (and thrd_create) hook */
int pthread_create_unhooked(void *thread, void *(*fn)(void *));
/* What every new thread does first (begin, whose result goes to end when
 * the thread ends): the sampler's or the per-thread counters'. */
void ps_threads_hook(void *(*begin)(void), void (*end)(void *));
void ps_threads_on_start(void (*start)(void)); /* called first in each thread the program creates */
void ps_threads_adopt(void *state);            /* end(state) when the calling thread ends */
int ps_threads_created(void);                  /* how many the program has created (0: it is single-threaded) */
int ps_threads_own_stack(unsigned long long *lo, unsigned long long *hi); /* a thread psuite started: its stack */
void ps_threads_after_fork(int inert);         /* in a forked child: locks anew; inert: no hooks any more */

/* signals.c: the sampling signals (SIGPROF, SIGTRAP) shared with the program */
int ps_signals_take(int sig, const void *action);     /* install ours (a struct sigaction) */
void ps_signals_forward(int sig, void *si, void *uc); /* a signal that is not ours */
/* sig pending for the calling thread (which blocks it): psuite's samples
 * taken off, the program's own left pending; 1 if one of the program's is. */
int ps_signals_unpend_samples(int sig);
int ps_sampler_is_sample(int sig, const void *siginfo); /* a siginfo_t of one of psuite's samples */

/* In <annotation> of the process total of a run with per-thread reports
 * (<thread>0</thread>), so readers combining the reports of a process do
 * not count it with its threads (psprocess -c leaves it out). */
#define PS_TOTAL_MARK "process total"

/* profile_report.c: the <hwpcreport mode="profile"> documents */
int ps_profile_write(int per_thread);
/* The C API's ps_hwpc_stop(name): the process's profile of the samples so
 * far (name as ps_hwpc_stop takes it), the summary line said when `say`. */
int ps_profile_write_named(const char *name, int say);
void ps_profile_set_note(const char *note);  /* how the program ended, for <annotation> */
int ps_profile_write_exec(int per_thread);   /* before an exec: the profiles, their paths remembered */
void ps_profile_take_back(void);             /* the exec failed: those profiles removed */

/* thread_counts.c: psrun -p in counting mode (after the process set is initialised) */
int ps_thread_counts_init(void);
void ps_thread_counts_freeze(void);  /* stop the running threads' counters, at process end */
void ps_thread_counts_finish(void);  /* then write their reports */
int ps_thread_counts_hand_over(void); /* the collector started: 1 when it holds the threads' counters now */
void ps_thread_counts_stop_dead(void); /* in the collector, the process gone: the running threads' counters it holds read */
int ps_thread_counts_running(void);  /* in the collector, the process gone: threads whose counts went with it */
void ps_thread_counts_write_dead(const char *how); /* then the reports of those whose counts are final */
/* Before an exec: freeze (the threads' own reports held back until
 * exec_failed), write the running threads' reports; if the exec fails,
 * take them back and count on. */
void ps_thread_counts_exec_freeze(void);
void ps_thread_counts_exec_write(const char *why);
void ps_thread_counts_exec_failed(void);
/* In a forked child: the parent's thread records forgotten (their
 * descriptors closed, never switched off: they are the parent's counters),
 * the lock anew; follow: the calling thread counted on as the child's first. */
void ps_thread_counts_after_fork(int follow);
/* Threads beyond PS_MAX_THREADS (no report of their own): how many; the
 * note for the total's annotation in out ("" if none). */
int ps_thread_counts_overflow(char *out, size_t len);

/* hwpc.c: add to the counting report's <annotation> */
void ps_hwpc_annotate(const char *text);
int ps_hwpc_domain(void);  /* PS_DOM_* of the initialised set */
void ps_hwpc_forget_after_fork(void);
/* psrun profiles this process (preload.c): the program's ps_hwpc_* calls
 * act on that sampling. */
void ps_hwpc_profile_psrun(void);

/* exitpaths.c: finish(why) on _exit, exec and fatal signals; resume() after a failed exec */
void ps_exitpaths_init(void (*finish)(const char *why), void (*resume)(void));
const char *ps_rt_signal_name(int sig, char *buf); /* SIGRTMIN+N, SIGRTMAX-N (buf: 16 bytes); NULL: not one */
void ps_exitpaths_hook_fatal(void); /* the fatal signals' actions: the process writes its report itself */
int ps_exitpaths_is_ours(const void *action);  /* a struct sigaction holding psuite's fatal handler */
/* Between exitpaths.c and signals.c: psuite's own use of SIGPROF, and what
 * the program's sigaction() changes on the signals psuite reports. */
int ps_signals_owned(int sig);
void ps_exitpaths_noted(int sig, const void *action);
int ps_exitpaths_handles(int sig);
void ps_exitpaths_signal_report(int sig);
int ps_exitpaths_is_watchdog(const void *siginfo);
int ps_exitpaths_default_action(int sig, void *action);
unsigned long ps_exitpaths_enter_mask(sigset_t *set);
void ps_exitpaths_leave_mask(unsigned long saved);

/* hwpc.c: initialise with an explicit event list (NULL: the configuration)
 * and a note for the report's <annotation> (NULL: none) */
int ps_hwpc_init_events(const char *events, const char *annotation);
/* "not counted: A, B: reason" per distinct reason, joined by "; " into out;
 * with `say`, also one message per reason on stderr.  Returns the length. */
size_t ps_hwpc_dropped(char *out, size_t len, int say);

/* report.c: the hwpcreport document */
typedef struct {
    long long wall_ns;
    double user_s, system_s;
    const long long *values;    /* one per counted event */
} ps_measurement_t;
int ps_report_write(const ps_evset_t *set, const ps_measurement_t *m, const char *name,
                    char *path_out, size_t path_len);
/* Any set of counts: the process total (thread 0), or the thread-th thread
 * (1, 2 ...; the report is named .t<thread>). */
typedef struct {
    const char *cls, *version;  /* hwpceventdata class and version */
    int domain, multiplexed, n;
    const char *const *names;
    const int *preset;
} ps_counts_t;
int ps_report_write_counts(const ps_counts_t *c, int thread, const char *annotation, const ps_measurement_t *m,
                           const char *name, char *path_out, size_t path_len);
typedef struct ps_buf ps_buf_t;
/* From <?xml ...?> through <machineinfo>; <thread>: 0 the process total,
 * N >= 1 the N-th thread (psrun -p).  modules: a last clause of <annotation>
 * after the executable's build-id (whole or not at all), or NULL. */
void ps_report_header(ps_buf_t *b, const char *mode, int thread, const char *annotation, const char *modules,
                      const ps_measurement_t *m);
void ps_report_path(const char *name, const char *tag, char *path, size_t len);
int ps_mpi_rank(void);  /* from OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID; -1 outside MPI */
/* Write b (then freed) exclusively at path or the next free name; the name used in path_out. */
int ps_report_save(ps_buf_t *b, const char *path, char *path_out, size_t path_len);
/* psrun --archive: PSUITE_MANIFEST read (and taken out of the environment unless keep) */
void ps_report_manifest_init(int keep_in_environment);

/* report.c: what a report needs that is not async-signal-safe to find
 * (host, user, command line, executable, build-id, MPI rank, machine
 * information, the output name's parts, the UTC offset), gathered once when
 * measurement starts (hwpc.c's init) and again in a forked child that is
 * measured (its pid differs).  After it, writing a count report takes no
 * lock, allocates nothing and calls no stdio: it is async-signal-safe, and
 * runs on a preallocated stack of its own.  Writers that find it missing
 * or made by another process (the pid) prepare first, unsafely. */
void ps_report_prepare(void);
void ps_report_defer_machine(void);   /* the next ps_report_prepare leaves the machine's part to the collector */
void ps_report_prepare_machine(void); /* that part, if it was left out */
/* The prepared host name and command line, as text (NULL before prepared). */
void ps_report_ident(const char **host, const char **command);

/* safestack.c: fn(arg, out, size) on a preallocated stack, with an output
 * buffer of `size` bytes that goes with it.  ps_stack_prepare maps a few
 * once per process (in a forked child it frees the slots the parent's
 * threads held); when all are in use one is mmap'd for the call, and
 * without memory fn runs on the caller's stack with out NULL.
 * ps_on_safe_stack is async-signal-safe. */
void ps_stack_prepare(void);
void ps_on_safe_stack(void (*fn)(void *arg, char *out, size_t size), void *arg);

/* util.c: messages without printf (async-signal-safe once prepared):
 * "psrun: " or "pshwpc: ", then the non-NULL parts. ps_note_safe: unless quiet. */
void ps_messages_prepare(void);
void ps_message_safe(const char *a, const char *b, const char *c, const char *d);
void ps_note_safe(const char *a, const char *b);
const char *ps_errno_text(int err);  /* untranslated, static: async-signal-safe */
const char *ps_save_errno_text(int err); /* ps_errno_text, EFBIG told as the file size limit */

/* buildid.c: the executable's GNU build-id in hex, from its mapped notes
 * (async-signal-safe); -1 when it has none */
int ps_buildid(char *hex, size_t len);
/* The GNU build-id in the mapped notes of an object (its program headers,
 * load bias): its length in bytes, 0 without one (or longer than cap). */
size_t ps_buildid_of(const void *phdr, size_t phnum, unsigned long long bias, unsigned char *id, size_t cap);
int ps_buildid_hex(const unsigned char *id, size_t n, char *hex, size_t len); /* 0: written, -1: no room */

/* md5.c */
int ps_md5_file(const char *path, char hex[33]);

/* xmlbuf.c: a growable buffer for writing XML */
struct ps_buf {
    char *data;
    size_t len, cap;
    int failed;
    int fixed;                  /* preallocated by the caller (ps_buf_fixed): never grows */
};
/* Async-signal-safe on a fixed buffer (no allocation, no stdio): */
void ps_buf_fixed(ps_buf_t *b, char *mem, size_t size);
void ps_buf_mem(ps_buf_t *b, const char *p, size_t n);
void ps_buf_str(ps_buf_t *b, const char *s);
void ps_buf_ll(ps_buf_t *b, long long v);
void ps_buf_ull(ps_buf_t *b, unsigned long long v);
void ps_buf_zpad(ps_buf_t *b, unsigned long long v, int width);     /* zero-padded to width digits */
void ps_buf_fixedpoint(ps_buf_t *b, long long v, int decimals);     /* v / 10^decimals, all decimals */
void ps_buf_indent(ps_buf_t *b, int n);
void ps_buf_elem(ps_buf_t *b, int indent, const char *tag, const char *text); /* ps_buf_element, safely */
void ps_buf_hex(ps_buf_t *b, unsigned long long v);                 /* %llx */
void ps_buf_double(ps_buf_t *b, double v, int decimals);            /* %.<decimals>f, C locale */
void ps_buf_printf(ps_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* text escaped for XML; what is not XML 1.0 text becomes U+FFFD: each byte
 * of invalid UTF-8 (encoded surrogates included), each U+FFFE/U+FFFF, each
 * C0 control other than tab and newline. */
void ps_buf_escaped(ps_buf_t *b, const char *text);
/* How many U+FFFD ps_buf_escaped would write for text (0: it is XML text). */
size_t ps_xml_unfit(const char *text);
/* The length of text[0..len) cut back so that no UTF-8 character is split. */
size_t ps_utf8_cut(const char *text, size_t len);
void ps_buf_element(ps_buf_t *b, int indent, const char *tag, const char *text);
void ps_buf_free(ps_buf_t *b);
void ps_machineinfo_xml(ps_buf_t *b, int indent, const ps_machineinfo_t *m);
long long ps_machineinfo_clock_millimhz(const ps_machineinfo_t *m);  /* as <clockspeed> prints it; 0: unknown */

int ps_hwpc_exec_write(const char *why, char *path_out, size_t path_len);
void ps_hwpc_exec_failed(const char *path);

extern const char ps_exec_why[];
void ps_report_announced(const char *path);

/* shared.c: the recorder's memory shared with its collector (see there) */
int ps_shared_init(size_t arena_bytes);
int ps_shared_active(void);
void *ps_map(size_t bytes);             /* from the shared arena when sharing, else private; NULL: none */
void ps_unmap(void *p, size_t bytes);
int ps_shared_contains(const void *p);
int ps_zero(void *p, size_t bytes);    /* zero again, the memory given back (madvise), shared or not */
int ps_shared_overflowed(void);         /* some block is private: the collector cannot see all */
void ps_shared_after_fork(void);        /* in a forked child, first: private copies */
int ps_shared_again(void);              /* a child psrun -f measures: shared again */

/* collector.c: the process that writes the reports (see there) */
typedef struct {
    int (*write_end)(const char *why);  /* records frozen by the program: write them (0: written) */
    void (*write_dead)(const char *how); /* the process ended without freezing */
    void (*write_checkpoint)(void);     /* the reports so far, while it runs */
    void (*started)(void);              /* run first in the collector (NULL: nothing) */
} ps_collector_writers_t;
int ps_collector_start(const ps_collector_writers_t *w);
void ps_collector_title_area(int argc, char **argv); /* what a collector writes its own title over */
int ps_collector_running(void);         /* this process has a collector */
int ps_collector_sees_deaths(void);     /* the kernel tells the collector how the process ended */
int ps_collector_handoff(const char *why); /* 1: the collector wrote the reports */
/* the arena grew: 1 the collector attached it, 0 none runs, -1 it has
 * something of its own there, -2 no answer */
int ps_collector_attach(int shmid, void *at);
void ps_collector_exec_written(int on); /* the reports were written before an exec (0: it failed) */
void ps_collector_after_fork(void);
void ps_collector_child_settled(void);  /* a followed child's measurement set up or given up */
pid_t ps_self_pid(void);                /* the measured process's pid, in it or in its collector */
int ps_in_collector(void);
int ps_collector_call(int (*fn)(long, long), long a, long b, int *rc); /* fn(a, b) run in the collector; 0: no answer */
int ps_collector_counters(int op, int *rc); /* the collector ran op on the counters (rc its result); 0: no answer */
int ps_collector_say(const char *line, size_t n); /* the program's line said by its collector (0: not) */
void ps_process_cpu(double *user_s, double *sys_s); /* the measured process's CPU time (getrusage in it) */
long long ps_collector_cpu(long long *user_ns, long long *sys_ns); /* last seen CPU time of the process */

/* hwpc.c: the end of counting read now, written by ps_hwpc_stop(NULL) later */
int ps_hwpc_freeze(void);
void ps_hwpc_hand_over(void); /* the collector holds the counters from now on */
int ps_hwpc_freeze_dead(long long user_ns, long long sys_ns);
int ps_hwpc_checkpoint(const char *note);  /* the collector, while the process runs */
/* report.c: reports written now are checkpoints (the collector's) */
void ps_report_checkpointing(int on);
int ps_report_is_checkpointing(void);

/* environ.c: LD_PRELOAD's entry for this library and the PSUITE_* psrun
 * sets out of environ, before main, unless psrun -f follows the children */
void ps_environ_remove_psuite(int follow);
char **ps_environ_for_main(char **envp); /* main's envp: that array, if it was made */
int ps_environ_following(void);          /* psrun -f: new images get psrun's variables back */
size_t ps_environ_follow_slots(char *const envp[]);
size_t ps_environ_follow_bytes(char *const envp[]);
char **ps_environ_follow(char *const envp[], char **out, char *buf); /* envp for a followed image */

#endif
