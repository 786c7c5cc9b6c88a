"""C declarations of libpshwpc that Python uses, for cffi (ABI mode).

Kept in step with csrc/pshwpc.h; tests/libperfsuite/test_native.py checks
that every function declared here is exported by the built library.
Imported by setup.py at build time, so it must not import psuite.
"""

CDEFS = """
#define PS_HWPC_MAX_EVENTS 64
#define PS_MAX_CACHES 16
#define PS_MAX_TLBS 16

int ps_hwpc_init(void);
int ps_hwpc_start(void);
int ps_hwpc_suspend(void);
int ps_hwpc_read(long long *values);
int ps_hwpc_stop(const char *name);
int ps_hwpc_shutdown(void);
int ps_hwpc_numevents(int *count);
int ps_hwpc_eventnames(const char *const **names);
int ps_hwpc_psrun(void);
const char *ps_hwpc_strerror(int code);
int ps_hwpc_numrequested(void);
int ps_hwpc_eventstatus(int i, const char **name, int *status, const char **why);
const char *ps_hwpc_backend(const char **version);
int ps_hwpc_multiplexed(void);

#define PS_CONFIG_EVENTLIST 1
#define PS_CONFIG_PROFILE 2
typedef struct {
    int kind;
    char cls[16];
    char domain[16];
    int nevents;
    char names[64][128];
    char types[64][8];
    int has_threshold;
    char threshold[64];
} ps_hwpc_config_t;
int ps_hwpc_config_parse(const char *path, const char *data, size_t len, ps_hwpc_config_t *out, char *err,
                         size_t err_len);

int ps_cpuid(unsigned leaf, unsigned subleaf, unsigned regs[4]);
long long ps_wallclock_ns(void);
long long ps_cputime_ns(void);
long long ps_thread_cputime_ns(void);

typedef struct {
    char type[16];
    int level;
    long long size_kb;
    int line_size;
    int associativity;
    int shared_cpus;
} ps_cache_t;

typedef struct {
    char type[16];
    int level;
    int entries;
    int associativity;
    int page_kb;
} ps_tlb_t;

typedef struct {
    int cpu_count;
    char vendor[32];
    char brand[80];
    int family, model, stepping;
    double mhz;
    char hypervisor[16];
    int cache_count;
    ps_cache_t caches[16];
    int tlb_count;
    ps_tlb_t tlbs[16];
    long long memory_kb;
    long long page_size;
} ps_machineinfo_t;

int ps_machineinfo(ps_machineinfo_t *info);

int ps_event_probe(const char *backend, const char *name, char *why, size_t why_len);
int ps_event_catalogue(const char *backend, int index, char *name, size_t name_len,
                       char *desc, size_t desc_len, const char **kind);
const char *ps_papi_version(void);
int ps_papi_component(int index, char *name, size_t name_len, int *disabled,
                      char *why, size_t why_len, int *counters);

"""

# The source-mapping decoder (csrc/decoder/psdwarf.h, libpsdwarf.so): psprocess only.
DECODER_CDEFS = """
typedef struct ps_dwarf ps_dwarf_t;
int ps_dwarf_open(const char *path, ps_dwarf_t **out);
int ps_dwarf_has_dwarf(const ps_dwarf_t *d);
void ps_dwarf_lookup_many(ps_dwarf_t *d, const unsigned long long *addrs, int n, int *files, int *lines,
                          int *functions);
int ps_dwarf_frames_many(ps_dwarf_t *d, const unsigned long long *addrs, int n, int *counts, int *functions,
                         int *files, int *lines, unsigned char *inlined, int cap);
long ps_dwarf_names(ps_dwarf_t *d, int kind, const int *ids, int n, char *buf, long cap);
const char *ps_dwarf_file(const ps_dwarf_t *d, int id);
const char *ps_dwarf_function(const ps_dwarf_t *d, int id, int *linkage);
void ps_dwarf_close(ps_dwarf_t *d);
int ps_dwarf_group(int n, const int *files, const int *functions, const int *lines, const long long *counts,
                   int *out_files, int *out_functions, int *out_lines, long long *out_sums);
long ps_report_summary(int n, const char *a, long a_size, const char *b, long b_size, const long long *lines,
                       const long long *counts, int shape, long long total, double threshold, char *out, long cap,
                       long *hidden);
long ps_report_json_locations(int n, const char *modules, long m_size, const char *files, long f_size,
                              const char *functions, long g_size, const long long *lines,
                              const long long *samples, char *out, long cap);
int ps_report_samples(int n, const char *pc_blob, long pc_size, const char *count_blob, long count_size,
                      unsigned long long *pcs, long long *counts);
long ps_report_json_samples(int n, const unsigned long long *pcs, const long long *counts, char *out, long cap);
"""
