/* events.c - event names: the PAPI preset list, and the kernel's generic
 * perf_event events with the PAPI preset and perf:: names that mean them. */
#include <ctype.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#ifndef PERF_COUNT_SW_CGROUP_SWITCHES /* Linux 5.13; older headers lack it */
#define PERF_COUNT_SW_CGROUP_SWITCHES 11
#endif

typedef struct {
    const char *name;
    const char *desc;
} preset_t;

static const preset_t presets[] = {
#define PS_PRESET(n, d) {n, d},
#include "papi_presets.inc"
#undef PS_PRESET
};

int ps_preset_exists(const char *name, const char **desc)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0) {
            if (desc)
                *desc = presets[i].desc;
            return 1;
        }
    return 0;
}

const char *ps_preset_name(int index, const char **desc)
{
    if (index < 0 || (size_t)index >= sizeof presets / sizeof presets[0])
        return NULL;
    if (desc)
        *desc = presets[index].desc;
    return presets[index].name;
}

#define CACHE(id, op, res) \
    (PERF_COUNT_HW_CACHE_##id | (PERF_COUNT_HW_CACHE_OP_##op << 8) | (PERF_COUNT_HW_CACHE_RESULT_##res << 16))

typedef struct {
    const char *name;        /* perf tool's name */
    const char *perf_alias;  /* PAPI perf_event component's name, without perf:: */
    const char *papi;        /* PAPI preset with the same meaning, or NULL */
    unsigned type;
    unsigned long long config;
    const char *desc;
} generic_t;

static const generic_t generic[] = {
    {"task-clock", "TASK-CLOCK", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
     "CPU time of the measured task, nanoseconds"},
    {"cpu-clock", "CPU-CLOCK", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
     "CPU clock (high-resolution timer per CPU), nanoseconds"},
    {"page-faults", "PAGE-FAULTS", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "Page faults"},
    {"minor-faults", "MINOR-FAULTS", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN,
     "Minor page faults (no I/O)"},
    {"major-faults", "MAJOR-FAULTS", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
     "Major page faults (I/O needed)"},
    {"context-switches", "CONTEXT-SWITCHES", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
     "Context switches"},
    {"cpu-migrations", "CPU-MIGRATIONS", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS,
     "Migrations of the task to another CPU"},
    {"alignment-faults", "ALIGNMENT-FAULTS", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS,
     "Alignment faults"},
    {"emulation-faults", "EMULATION-FAULTS", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS,
     "Emulation faults"},
    {"cgroup-switches", "CGROUP-SWITCHES", NULL, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CGROUP_SWITCHES,
     "Context switches to a task in another cgroup"},
    {"cycles", "CYCLES", "PAPI_TOT_CYC", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "CPU cycles"},
    {"instructions", "INSTRUCTIONS", "PAPI_TOT_INS", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS,
     "Instructions retired"},
    {"cache-references", "CACHE-REFERENCES", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES,
     "Cache references (usually last level)"},
    {"cache-misses", "CACHE-MISSES", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES,
     "Cache misses (usually last level)"},
    {"branch-instructions", "BRANCH-INSTRUCTIONS", "PAPI_BR_INS", PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "Branch instructions retired"},
    {"branch-misses", "BRANCH-MISSES", "PAPI_BR_MSP", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES,
     "Mispredicted branches"},
    {"bus-cycles", "BUS-CYCLES", NULL, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, "Bus cycles"},
    {"stalled-cycles-frontend", "STALLED-CYCLES-FRONTEND", "PAPI_STL_ICY", PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, "Cycles with no instruction issued (front-end stalls)"},
    {"stalled-cycles-backend", "STALLED-CYCLES-BACKEND", "PAPI_RES_STL", PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_STALLED_CYCLES_BACKEND, "Cycles stalled on a resource (back-end stalls)"},
    {"ref-cycles", "REF-CYCLES", "PAPI_REF_CYC", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES,
     "Reference cycles (constant rate)"},
    {"L1-dcache-loads", "L1-DCACHE-LOADS", "PAPI_L1_DCA", PERF_TYPE_HW_CACHE, CACHE(L1D, READ, ACCESS),
     "Level 1 data cache loads"},
    {"L1-dcache-load-misses", "L1-DCACHE-LOAD-MISSES", "PAPI_L1_DCM", PERF_TYPE_HW_CACHE,
     CACHE(L1D, READ, MISS), "Level 1 data cache load misses"},
    {"L1-dcache-stores", "L1-DCACHE-STORES", NULL, PERF_TYPE_HW_CACHE, CACHE(L1D, WRITE, ACCESS),
     "Level 1 data cache stores"},
    {"L1-icache-loads", "L1-ICACHE-LOADS", "PAPI_L1_ICA", PERF_TYPE_HW_CACHE, CACHE(L1I, READ, ACCESS),
     "Level 1 instruction cache loads"},
    {"L1-icache-load-misses", "L1-ICACHE-LOAD-MISSES", "PAPI_L1_ICM", PERF_TYPE_HW_CACHE,
     CACHE(L1I, READ, MISS), "Level 1 instruction cache misses"},
    {"LLC-loads", "LLC-LOADS", NULL, PERF_TYPE_HW_CACHE, CACHE(LL, READ, ACCESS), "Last level cache loads"},
    {"LLC-load-misses", "LLC-LOAD-MISSES", NULL, PERF_TYPE_HW_CACHE, CACHE(LL, READ, MISS),
     "Last level cache load misses"},
    {"dTLB-loads", "DTLB-LOADS", NULL, PERF_TYPE_HW_CACHE, CACHE(DTLB, READ, ACCESS), "Data TLB loads"},
    {"dTLB-load-misses", "DTLB-LOAD-MISSES", "PAPI_TLB_DM", PERF_TYPE_HW_CACHE, CACHE(DTLB, READ, MISS),
     "Data TLB load misses"},
    {"iTLB-load-misses", "ITLB-LOAD-MISSES", "PAPI_TLB_IM", PERF_TYPE_HW_CACHE, CACHE(ITLB, READ, MISS),
     "Instruction TLB misses"},
    {"branch-loads", "BRANCH-LOADS", NULL, PERF_TYPE_HW_CACHE, CACHE(BPU, READ, ACCESS),
     "Branch prediction unit lookups"},
    {"branch-load-misses", "BRANCH-LOAD-MISSES", NULL, PERF_TYPE_HW_CACHE, CACHE(BPU, READ, MISS),
     "Branch prediction unit misses"},
};
#define NGENERIC (sizeof generic / sizeof generic[0])

const char *ps_perf_catalogue(int index, const char **desc, const char **papi_alias)
{
    if (index < 0 || (size_t)index >= NGENERIC)
        return NULL;
    *desc = generic[index].desc;
    *papi_alias = generic[index].papi;
    return generic[index].name;
}

/* The other names PAPI's perf_event component (libpfm4's perf table) gives
 * the same events, without perf::, as psinv lists them: its short names, and
 * the PERF_COUNT_* spellings that do not turn into perf_alias by dropping
 * PERF_COUNT_[HS]W_ and writing '-' for '_'.  -> the perf tool's name. */
static const struct {
    const char *papi_name, *perf_name;
    int pfm_name; /* a name of libpfm4's own table (perf::CS), kept as written for PAPI; else only the
                   * PERF_COUNT_* spelling's (PAGE-FAULTS-MIN), which PAPI knows as perf::MINOR-FAULTS */
} papi_spellings[] = {
    {"FAULTS", "page-faults", 1},          {"CS", "context-switches", 1},
    {"MIGRATIONS", "cpu-migrations", 1},   {"PAGE-FAULTS-MIN", "minor-faults", 0},
    {"PAGE-FAULTS-MAJ", "major-faults", 0}, {"CPU-CYCLES", "cycles", 1},
    {"REF-CPU-CYCLES", "ref-cycles", 0},
};

/* "perf::PAGE-FAULTS" (or "page-faults", "perf::FAULTS") -> the generic
 * entry.  The PAPI perf_event component also knows PERF_COUNT_SW_*
 * spellings; accept those. */
static const generic_t *find_generic(const char *name)
{
    const char *bare = strncmp(name, "perf::", 6) == 0 ? name + 6 : name;
    char spelled[96];
    if (strncasecmp(bare, "PERF_COUNT_", 11) == 0) {
        /* PERF_COUNT_SW_TASK_CLOCK -> TASK-CLOCK */
        const char *p = bare + 11;
        p += strncasecmp(p, "HW_", 3) == 0 || strncasecmp(p, "SW_", 3) == 0 ? 3 : 0;
        size_t i = 0;
        for (; *p && i + 1 < sizeof spelled; p++)
            spelled[i++] = *p == '_' ? '-' : *p;
        spelled[i] = '\0';
        bare = spelled;
    }
    for (size_t i = 0; i < sizeof papi_spellings / sizeof papi_spellings[0]; i++)
        if (strcasecmp(papi_spellings[i].papi_name, bare) == 0) {
            bare = papi_spellings[i].perf_name;
            break;
        }
    for (size_t i = 0; i < NGENERIC; i++) {
        if (strcmp(generic[i].name, bare) == 0 || strcasecmp(generic[i].perf_alias, bare) == 0)
            return &generic[i];
        if (generic[i].papi && strcmp(generic[i].papi, name) == 0)
            return &generic[i];
    }
    return NULL;
}

int ps_perf_kernel_only(unsigned type, unsigned long long config)
{
    return type == PERF_TYPE_SOFTWARE &&
           (config == PERF_COUNT_SW_CONTEXT_SWITCHES || config == PERF_COUNT_SW_CPU_MIGRATIONS ||
            config == PERF_COUNT_SW_CGROUP_SWITCHES);
}

int ps_event_kernel_only(const char *name)
{
    const generic_t *g = find_generic(name);
    return g && ps_perf_kernel_only(g->type, g->config);
}

/* Resolve a name for the perf_event backend.  Returns PS_EVENT_COUNTED with
 * type/config filled, PS_EVENT_DROPPED for a PAPI preset with no perf
 * equivalent, PS_EVENT_UNKNOWN for a name that means nothing. */
int ps_perf_lookup(const char *name, unsigned *type, unsigned long long *config, char *why, size_t why_len)
{
    const generic_t *g = find_generic(name);
    if (g) {
        *type = g->type;
        *config = g->config;
        return PS_EVENT_COUNTED;
    }
    /* Raw PMU event: r<hex>, as perf accepts. */
    if (name[0] == 'r' && name[1] && strspn(name + 1, "0123456789abcdefABCDEF") == strlen(name + 1)) {
        *type = PERF_TYPE_RAW;
        *config = strtoull(name + 1, NULL, 16);
        return PS_EVENT_COUNTED;
    }
    if (ps_preset_exists(name, NULL)) {
        snprintf(why, why_len, ps_perf_hardware_pmu() ? "PAPI preset with no perf_event generic equivalent (needs libpapi)"
                                                      : "no hardware counters on this machine (no PMU)");
        return PS_EVENT_DROPPED;
    }
    snprintf(why, why_len, "no such event (see psinv -e)");
    return PS_EVENT_UNKNOWN;
}

/* For the PAPI backend: "task-clock" -> "perf::TASK-CLOCK", so perf-style
 * names work with either backend.  NULL when the name is not a perf name. */
const char *ps_perf_to_papi_native(const char *name)
{
    static __thread char spelled[96];
    const generic_t *g = find_generic(name);
    if (!g || strncmp(name, "PAPI_", 5) == 0)
        return NULL;
    if (strncmp(name, "perf::", 6) == 0) /* PAPI's own short names (perf::CS) stay as the user wrote them */
        for (size_t i = 0; i < sizeof papi_spellings / sizeof papi_spellings[0]; i++)
            if (papi_spellings[i].pfm_name && strcasecmp(papi_spellings[i].papi_name, name + 6) == 0)
                return NULL;
    snprintf(spelled, sizeof spelled, "perf::%s", g->perf_alias);
    return spelled;
}
