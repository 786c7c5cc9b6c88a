/* papi.c - counting through PAPI, loaded at run time with dlopen so the
 * library has no build-time dependency on PAPI.  Only functions (no macros
 * or inline code) of papi.h are used; the few structure fields read are the
 * leading ones, whose layout has been stable since PAPI 5. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define PAPI_OK 0
#define PAPI_NULL (-1)
#define PAPI_ECNFLCT (-8)
#define PAPI_ENOEVNT (-7)
#define PAPI_EISRUN (-10)
#define PAPI_RUNNING 4
#define PAPI_DEFDOM 4
#define PAPI_DOMAIN 5
#define PAPI_PRESET_MASK ((int)0x80000000)
#define PAPI_NATIVE_MASK 0x40000000
#define PAPI_ENUM_EVENTS 0
#define PAPI_ENUM_FIRST 1
#define PAPI_INHERIT 28
#define PAPI_INHERIT_ALL 1
#define PAPI_DOM_USER 1
#define PAPI_DOM_KERNEL 2
#define PAPI_DOM_ALL 0xf
/* PAPI_event_info_t: event_code, symbol[1024], short_descr[64],
 * long_descr[1024], ... count at 2208.  PAPI_component_info_t: name[128],
 * short_name[64], description[128], version[64], support_version[64],
 * kernel_version[64], disabled_reason[1024 since PAPI 7, 128 before],
 * disabled. */
#define INFO_SYMBOL 4
#define INFO_LONG_DESCR 1092
#define INFO_COUNT 2208
#define CMP_NAME 0
#define CMP_DISABLED_REASON 512
#define CMP_DISABLED (papi_major >= 7 ? 1536 : 640)

static struct {
    int (*library_init)(int);
    int (*event_name_to_code)(const char *, int *);
    int (*event_code_to_name)(int, char *);
    int (*get_event_info)(int, void *);
    int (*enum_event)(int *, int);
    int (*enum_cmp_event)(int *, int, int);
    int (*num_components)(void);
    const void *(*get_component_info)(int);
    int (*num_cmp_hwctrs)(int);
    int (*get_event_component)(int);
    int (*create_eventset)(int *);
    int (*add_event)(int, int);
    int (*start)(int);
    int (*stop)(int, long long *);
    int (*read)(int, long long *);
    int (*cleanup_eventset)(int);
    int (*destroy_eventset)(int *);
    int (*multiplex_init)(void);
    int (*set_multiplex)(int);
    int (*assign_eventset_component)(int, int);
    int (*set_cmp_domain)(int, int);
    int (*get_cmp_opt)(int, void *, int);
    int (*set_opt)(int, void *);
    int (*state)(int, int *);
    char *(*strerror)(int);
} papi;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_state;          /* 1 loaded, -1 failed */
static char load_why[256];
static char version[64];
static int papi_major;
static int papi_version_code;   /* what PAPI_library_init accepted */
static pid_t papi_pid;          /* the process PAPI was initialised in */

/* psuite's event set while it counts, and the thread counting it (PAPI
 * counts one running event set per thread and component). */
static int running_set = -1;
static pid_t running_tid;

static void *papi_sym(void *h, const char *name, int *missing)
{
    void *p = dlsym(h, name);
    if (!p)
        *missing = 1;
    return p;
}

static void load(void)
{
    const char *named = getenv("PSUITE_PAPI_LIBRARY");
    static const char *const candidates[] = {"libpapi.so", "libpapi.so.7.2", "libpapi.so.7.1",
                                             "libpapi.so.7.0", "libpapi.so.7", "libpapi.so.6.0",
                                             "libpapi.so.5", NULL};
    void *h = NULL;
    if (named && *named) {
        h = dlopen(named, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(load_why, sizeof load_why, "PSUITE_PAPI_LIBRARY=%s: %s", named, dlerror());
            load_state = -1;
            return;
        }
    } else {
        for (int i = 0; candidates[i] && !h; i++)
            h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(load_why, sizeof load_why, "no libpapi found (install libpapi or set PSUITE_PAPI_LIBRARY)");
            load_state = -1;
            return;
        }
    }
    int missing = 0;
#define SYM(field, name) *(void **)&papi.field = papi_sym(h, name, &missing)
    SYM(library_init, "PAPI_library_init");
    SYM(event_name_to_code, "PAPI_event_name_to_code");
    SYM(event_code_to_name, "PAPI_event_code_to_name");
    SYM(get_event_info, "PAPI_get_event_info");
    SYM(enum_event, "PAPI_enum_event");
    SYM(enum_cmp_event, "PAPI_enum_cmp_event");
    SYM(num_components, "PAPI_num_components");
    SYM(get_component_info, "PAPI_get_component_info");
    SYM(num_cmp_hwctrs, "PAPI_num_cmp_hwctrs");
    SYM(get_event_component, "PAPI_get_event_component");
    SYM(create_eventset, "PAPI_create_eventset");
    SYM(add_event, "PAPI_add_event");
    SYM(start, "PAPI_start");
    SYM(stop, "PAPI_stop");
    SYM(read, "PAPI_read");
    SYM(cleanup_eventset, "PAPI_cleanup_eventset");
    SYM(destroy_eventset, "PAPI_destroy_eventset");
    SYM(multiplex_init, "PAPI_multiplex_init");
    SYM(set_multiplex, "PAPI_set_multiplex");
    SYM(assign_eventset_component, "PAPI_assign_eventset_component");
    SYM(set_cmp_domain, "PAPI_set_cmp_domain");
    SYM(get_cmp_opt, "PAPI_get_cmp_opt");
    SYM(set_opt, "PAPI_set_opt");
    SYM(state, "PAPI_state");
    SYM(strerror, "PAPI_strerror");
#undef SYM
    if (missing) {
        snprintf(load_why, sizeof load_why, "the libpapi found lacks PAPI 5+ functions");
        load_state = -1;
        return;
    }
    /* PAPI_library_init wants the header's PAPI_VER_CURRENT (major.minor);
     * we have no header, so offer each plausible version: a wrong one is
     * refused with PAPI_EVER before anything is initialised. */
    int got = -1;
    for (int major = 5; major <= 9 && got <= 0; major++)
        for (int minor = 0; minor <= 9 && got <= 0; minor++)
            got = papi.library_init(major << 24 | minor << 16);
    if (got <= 0) {
        snprintf(load_why, sizeof load_why, "PAPI_library_init failed (%d)", got);
        load_state = -1;
        return;
    }
    /* Full version from the library's file name (libpapi.so.7.0.0.0). */
    Dl_info info;
    char real[PATH_MAX];
    const char *dot;
    if (dladdr(*(void **)&papi.library_init, &info) && info.dli_fname && realpath(info.dli_fname, real) &&
        (dot = strstr(real, ".so.")))
        ps_strlcpy(version, dot + 4, sizeof version);
    else
        snprintf(version, sizeof version, "%d.%d", got >> 24 & 0xff, got >> 16 & 0xff);
    papi_major = got >> 24 & 0xff;
    papi_version_code = got;
    papi_pid = getpid();
    load_state = 1;
}

int ps_papi_load(char *why, size_t why_len)
{
    pthread_once(&load_once, load);
    if (load_state < 0 && why)
        ps_strlcpy(why, load_why, why_len);
    return load_state > 0;
}

const char *ps_papi_version_string(void) { return ps_papi_load(NULL, 0) ? version : ""; }

static const char *papi_error(int code)
{
    const char *s = papi.strerror ? papi.strerror(code) : NULL;
    return s ? s : "PAPI error";
}

static int name_to_code(const char *name, int *code)
{
    const char *alias = ps_perf_to_papi_native(name);
    return papi.event_name_to_code((char *)(alias ? alias : name), code);
}

/* The code of an event of psuite's set counting in domain dom.  A software
 * event the kernel counts only in kernel mode (context switches) would read
 * 0 in the user domain: it asks for every mode itself (":u=1:k=1", which
 * PAPI's perf_event component takes over the set's domain), as the
 * perf_event backend counts it; config.c says so in the report. */
static int set_event_code(const char *name, int dom, int *code)
{
    if (dom != PAPI_DOM_USER || !ps_event_kernel_only(name))
        return name_to_code(name, code);
    const char *alias = ps_perf_to_papi_native(name);
    char every[sizeof ((ps_event_t *)0)->name + 16];
    snprintf(every, sizeof every, "%s:u=1:k=1", alias ? alias : name);
    return papi.event_name_to_code(every, code);
}

/* A new event set of component cidx counting in domain dom, without
 * changing the component's default domain, which is the program's (its own
 * event sets count in it).  PAPI_set_opt(PAPI_DOMAIN) on the set would do,
 * but PAPI's perf_event component checks it by opening a hardware counter,
 * so it fails where there is no PMU.  A set takes the component's default
 * domain when it is assigned the component: the default is switched for
 * that call only, and put back. */
static int new_set(int cidx, int dom, int *es)
{
    int rc;
    *es = PAPI_NULL;
    if ((rc = papi.create_eventset(es)) != PAPI_OK)
        return rc;
    int was = papi.get_cmp_opt(PAPI_DEFDOM, NULL, cidx);
    int switched = was > 0 && was != dom && papi.set_cmp_domain(dom, cidx) == PAPI_OK;
    rc = papi.assign_eventset_component(*es, cidx);
    if (switched)
        papi.set_cmp_domain(was, cidx);
    if (rc == PAPI_OK && was != dom && !switched) {
        int opt[64] = {cidx, *es, dom}; /* PAPI_domain_option_t: def_cidx, eventset, domain */
        rc = papi.set_opt(PAPI_DOMAIN, opt);
    }
    if (rc != PAPI_OK)
        papi.destroy_eventset(es);
    return rc;
}

/* Create, add, start, stop, destroy: the only proof an event counts here.
 * With cidx >= 0 the set counts in domain dom, as psuite's own will. */
static int try_event(int code, int cidx, int dom, char *why, size_t why_len)
{
    int es = PAPI_NULL, rc;
    long long v[1];
    if ((rc = cidx >= 0 ? new_set(cidx, dom, &es) : papi.create_eventset(&es)) != PAPI_OK) {
        snprintf(why, why_len, "creating a PAPI event set: %s", papi_error(rc));
        return PS_EVENT_DROPPED;
    }
    const char *step = "PAPI_add_event";
    rc = papi.add_event(es, code);
    if (rc == PAPI_OK) {
        step = "PAPI_start";
        rc = papi.start(es);
        if (rc == PAPI_OK) {
            step = "PAPI_stop";
            rc = papi.stop(es, v);
        }
    }
    papi.cleanup_eventset(es);
    papi.destroy_eventset(&es);
    if (rc == PAPI_ENOEVNT)
        snprintf(why, why_len, "no counter for it on this machine (%s: %s)", step, papi_error(rc));
    else if (rc != PAPI_OK)
        snprintf(why, why_len, "%s: %s", step, papi_error(rc));
    return rc == PAPI_OK ? PS_EVENT_COUNTED : PS_EVENT_DROPPED;
}

/* Is PAPI's perf_event component disabled?  Its reason into reason. */
static int perf_component_disabled(char *reason, size_t len)
{
    int n = papi.num_components();
    for (int c = 0; c < n; c++) {
        const char *info = papi.get_component_info(c);
        if (info && strcmp(info + CMP_NAME, "perf_event") == 0 && *(const int *)(info + CMP_DISABLED)) {
            ps_strlcpy(reason, info + CMP_DISABLED_REASON, len);
            return 1;
        }
    }
    return 0;
}

/* A name PAPI does not know: a kernel event perf_event counts (its perf::
 * spelling missing from this PAPI's perf_event component, as
 * perf::ALIGNMENT-FAULTS is) exists and is dropped with the way to count
 * it; any other name is unknown. */
static int not_in_papi(const char *name, char *why, size_t why_len)
{
    if (ps_perf_to_papi_native(name) || strncmp(name, "perf::", 6) == 0) {
        unsigned type;
        unsigned long long config;
        char unused[8];
        if (ps_perf_lookup(name, &type, &config, unused, sizeof unused) == PS_EVENT_COUNTED) {
            char reason[160];
            if (perf_component_disabled(reason, sizeof reason))
                /* libpfm4 knows no PMU of this CPU (a model newer than it, no
                 * PMU in a VM): PAPI counts nothing, software events neither */
                snprintf(why, why_len, "PAPI's perf_event component is off (%s: its libpfm4 does not know this "
                         "CPU); --backend perf_event counts it", reason);
            else
                snprintf(why, why_len, "this PAPI does not know it (--backend perf_event counts it)");
            return PS_EVENT_DROPPED;
        }
    }
    snprintf(why, why_len, "no such PAPI event (see psinv -e)");
    return PS_EVENT_UNKNOWN;
}

int ps_papi_probe(const char *name, char *why, size_t why_len)
{
    if (!ps_papi_load(why, why_len))
        return PS_EVENT_DROPPED;
    int code;
    if (name_to_code(name, &code) != PAPI_OK)
        return not_in_papi(name, why, why_len);
    return try_event(code, -1, 0, why, why_len);
}

/* In a forked child, PAPI's tables are the parent's: psuite's set counts
 * there as running on this thread, so no set of the child can start.  PAPI
 * sets itself up anew in a child when PAPI_library_init is called again
 * (it checks the pid); that also discards the program's own event sets,
 * so it is done only when the program has none. */
static int own_set = PAPI_NULL; /* psuite's set in the process PAPI was set up in */

static int reinit_after_fork(char *why, size_t why_len)
{
    int st;
    for (int es = 0; es < 4096; es++)
        if (es != own_set && papi.state(es, &st) == PAPI_OK) {
            snprintf(why, why_len, "the program has PAPI event sets of its own, which setting PAPI up again "
                                   "in the child would discard");
            return -1;
        }
    int got = papi.library_init(papi_version_code);
    if (got != papi_version_code) {
        snprintf(why, why_len, "PAPI_library_init in the child: %s", papi_error(got));
        return -1;
    }
    papi_pid = getpid();
    own_set = PAPI_NULL;
    return 0;
}

int ps_papi_open(ps_evset_t *set)
{
    if (getpid() != papi_pid) {
        char why[256];
        if (reinit_after_fork(why, sizeof why) != 0) {
            size_t used = strlen(set->annotation);
            snprintf(set->annotation + used, sizeof set->annotation - used, "%snot measured: %s", used ? "; " : "",
                     why);
            if (!ps_env_flag("PSUITE_QUIET"))
                ps_message("forked child %d not measured through PAPI: %s (--backend perf_event measures it)",
                           (int)getpid(), why);
            return PS_HWPC_EBACKEND;
        }
    }
    int papi_dom = set->domain == PS_DOM_USER ? PAPI_DOM_USER
                 : set->domain == PS_DOM_KERNEL ? PAPI_DOM_KERNEL : PAPI_DOM_ALL;
    int codes[PS_HWPC_MAX_EVENTS];
    int cidx = -1, rc;
    ps_strlcpy(set->backend_version, version, sizeof set->backend_version);
    set->ncounted = 0;
    for (int i = 0; i < set->nrequested; i++) {
        ps_event_t *e = &set->ev[i];
        if (e->status != PS_EVENT_COUNTED)
            continue;
        if (set_event_code(e->name, papi_dom, &codes[i]) != PAPI_OK) {
            e->status = not_in_papi(e->name, e->why, sizeof e->why);
            continue;
        }
        int c = papi.get_event_component(codes[i]);
        if (cidx < 0 && c >= 0)
            cidx = c;
        e->status = try_event(codes[i], c, papi_dom, e->why, sizeof e->why);
    }
    if (cidx < 0)
        return PS_HWPC_ENOCOUNT;
    set->papi_eventset = PAPI_NULL;
    if (new_set(cidx, papi_dom, &set->papi_eventset) != PAPI_OK) {
        ps_message("not measured: PAPI cannot make psuite's event set here (--backend perf_event counts without PAPI)");
        return PS_HWPC_EBACKEND;
    }
    /* Threads and children created later are counted too (perf inherit).
     * PAPI's perf_event component checks this option by opening a hardware
     * instructions counter, so it fails where there is no PMU. */
    int inherit[64] = {set->papi_eventset, PAPI_INHERIT_ALL};
    if ((rc = papi.set_opt(PAPI_INHERIT, inherit)) != PAPI_OK)
        snprintf(set->no_inherit, sizeof set->no_inherit, "PAPI_INHERIT: %s", papi_error(rc));
    int counters = papi.num_cmp_hwctrs(cidx);
    for (int i = 0; i < set->nrequested; i++) {
        ps_event_t *e = &set->ev[i];
        if (e->status != PS_EVENT_COUNTED)
            continue;
        if (papi.get_event_component(codes[i]) != cidx) {
            e->status = PS_EVENT_DROPPED;
            snprintf(e->why, sizeof e->why, "belongs to another PAPI component than the first event");
            continue;
        }
        /* More events than counters: multiplex rather than drop. */
        if (!set->multiplexed && set->ncounted >= counters && counters > 0) {
            papi.multiplex_init();
            if (papi.set_multiplex(set->papi_eventset) == PAPI_OK)
                set->multiplexed = 1;
        }
        rc = papi.add_event(set->papi_eventset, codes[i]);
        if (rc == PAPI_ECNFLCT && !set->multiplexed) {
            papi.multiplex_init();
            if (papi.set_multiplex(set->papi_eventset) == PAPI_OK) {
                set->multiplexed = 1;
                rc = papi.add_event(set->papi_eventset, codes[i]);
            }
        }
        if (rc != PAPI_OK) {
            e->status = PS_EVENT_DROPPED;
            snprintf(e->why, sizeof e->why, "PAPI_add_event: %s", papi_error(rc));
            continue;
        }
        const char *alias = ps_perf_to_papi_native(e->name);
        if (alias)
            ps_strlcpy(e->name, alias, sizeof e->name);
        set->counted[set->ncounted++] = i;
    }
    own_set = set->papi_eventset;
    return set->ncounted ? PS_HWPC_OK : PS_HWPC_ENOCOUNT;
}

int ps_papi_start(ps_evset_t *set)
{
    if (papi.start(set->papi_eventset) != PAPI_OK)
        return PS_HWPC_EBACKEND;
    __atomic_store_n(&running_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
    __atomic_store_n(&running_set, set->papi_eventset, __ATOMIC_SEQ_CST);
    return PS_HWPC_OK;
}

/* PAPI_start resets the counters, so a suspend banks what was counted. */
int ps_papi_stop(ps_evset_t *set, long long *values)
{
    long long v[PS_HWPC_MAX_EVENTS];
    if (papi.stop(set->papi_eventset, v) != PAPI_OK)
        return PS_HWPC_EBACKEND;
    __atomic_store_n(&running_set, -1, __ATOMIC_SEQ_CST);
    for (int k = 0; k < set->ncounted; k++) {
        set->papi_acc[k] += v[k];
        if (values)
            values[k] = set->papi_acc[k];
    }
    return PS_HWPC_OK;
}

int ps_papi_read(ps_evset_t *set, long long *values)
{
    long long v[PS_HWPC_MAX_EVENTS];
    if (papi.read(set->papi_eventset, v) != PAPI_OK)
        return PS_HWPC_EBACKEND;
    for (int k = 0; k < set->ncounted; k++)
        values[k] = set->papi_acc[k] + v[k];
    return PS_HWPC_OK;
}

void ps_papi_close(ps_evset_t *set)
{
    if (getpid() != papi_pid) {
        /* a forked child: the set is the parent's copy in PAPI's tables,
         * its descriptors shared with the parent; stopping it here would
         * stop the parent's counters.  Forgotten, not touched. */
        set->papi_eventset = PAPI_NULL;
        __atomic_store_n(&running_set, -1, __ATOMIC_SEQ_CST);
    }
    if (set->papi_eventset != PAPI_NULL) {
        papi.cleanup_eventset(set->papi_eventset);
        papi.destroy_eventset(&set->papi_eventset);
    }
    memset(set->papi_acc, 0, sizeof set->papi_acc);
}

/* The catalogue: every preset, then the native events of each enabled
 * component, enumerated once. */
static int *catalogue;
static int catalogue_len;

static void build_catalogue(void)
{
    int cap = 256, code;
    catalogue = malloc(sizeof(int) * (size_t)cap);
    if (!catalogue)
        return;
#define PUSH(c)                                                        \
    do {                                                               \
        if (catalogue_len == cap) {                                    \
            int *p = realloc(catalogue, sizeof(int) * (size_t)cap * 2); \
            if (!p)                                                    \
                return;                                                \
            catalogue = p;                                             \
            cap *= 2;                                                  \
        }                                                              \
        catalogue[catalogue_len++] = (c);                              \
    } while (0)
    code = PAPI_PRESET_MASK;
    if (papi.enum_event(&code, PAPI_ENUM_FIRST) == PAPI_OK)
        do
            PUSH(code);
        while (papi.enum_event(&code, PAPI_ENUM_EVENTS) == PAPI_OK);
    int n = papi.num_components();
    for (int c = 0; c < n; c++) {
        const char *info = papi.get_component_info(c);
        if (!info || *(const int *)(info + CMP_DISABLED))
            continue;
        code = PAPI_NATIVE_MASK;
        if (papi.enum_cmp_event(&code, PAPI_ENUM_FIRST, c) == PAPI_OK)
            do
                PUSH(code);
            while (papi.enum_cmp_event(&code, PAPI_ENUM_EVENTS, c) == PAPI_OK);
    }
#undef PUSH
}

int ps_papi_catalogue(int index, char *name, size_t name_len, char *desc, size_t desc_len, const char **kind)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (!ps_papi_load(NULL, 0))
        return 0;
    pthread_once(&once, build_catalogue);
    if (index < 0 || index >= catalogue_len)
        return 0;
    /* PAPI_event_info_t is large (PAPI 7: over 15 KiB): one buffer, not
     * thread-local storage carved out of every thread of the program. */
    static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;
    static char info[16384];
    pthread_mutex_lock(&info_lock);
    int ok = papi.get_event_info(catalogue[index], info) == PAPI_OK;
    if (ok) {
        ps_strlcpy(name, info + INFO_SYMBOL, name_len);
        ps_strlcpy(desc, info + INFO_LONG_DESCR, desc_len);
        *kind = catalogue[index] & PAPI_PRESET_MASK ? "preset" : "native";
    }
    pthread_mutex_unlock(&info_lock);
    return ok;
}

PS_API const char *ps_papi_version(void) { return ps_papi_version_string(); }

PS_API int ps_papi_component(int index, char *name, size_t name_len, int *disabled, char *why, size_t why_len,
                             int *counters)
{
    if (!ps_papi_load(NULL, 0) || index < 0 || index >= papi.num_components())
        return 0;
    const char *info = papi.get_component_info(index);
    if (!info)
        return 0;
    ps_strlcpy(name, info + CMP_NAME, name_len);
    *disabled = *(const int *)(info + CMP_DISABLED) != 0;
    ps_strlcpy(why, *disabled ? info + CMP_DISABLED_REASON : "", why_len);
    *counters = *disabled ? 0 : papi.num_cmp_hwctrs(index);
    return 1;
}

/* papi_coexist.c: may the program's PAPI_start (through start, its libpapi's)
 * have failed with PAPI_EISRUN because psuite's set runs on this thread?
 * Only when it is the same libpapi, psuite's set runs on the calling
 * thread, and the program's set is another one and not running itself. */
int ps_papi_blocks_start(int (*start)(int), int eventset)
{
    int st;
    int running = __atomic_load_n(&running_set, __ATOMIC_SEQ_CST);
    if (load_state <= 0 || start != papi.start || running < 0 || eventset == running || getpid() != papi_pid ||
        __atomic_load_n(&running_tid, __ATOMIC_SEQ_CST) != (pid_t)syscall(SYS_gettid))
        return 0;
    return papi.state(eventset, &st) == PAPI_OK && !(st & PAPI_RUNNING);
}

/* libpapi's PAPI_start through psuite's own handle (NULL: not loaded). */
void *ps_papi_start_function(void) { return ps_papi_load(NULL, 0) ? *(void **)&papi.start : NULL; }
