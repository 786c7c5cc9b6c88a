/* machine.c - machine facts from cpuid, /proc and /sys; timers. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal.h"

PS_API int ps_cpuid(unsigned leaf, unsigned subleaf, unsigned regs[4])
{
#if defined(__x86_64__) || defined(__i386__)
    __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
    return 0;
#else
    (void)leaf;
    (void)subleaf;
    regs[0] = regs[1] = regs[2] = regs[3] = 0;
    return -1;
#endif
}

static long long clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts))
        return -1;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

PS_API long long ps_wallclock_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
PS_API long long ps_cputime_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }
PS_API long long ps_thread_cputime_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

/* Value of the first "key : value" line of /proc/cpuinfo, or NULL. */
static const char *cpuinfo_field(const char *text, const char *key, char *out, size_t len)
{
    size_t klen = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, klen) == 0 && (line[klen] == ' ' || line[klen] == '\t' || line[klen] == ':')) {
            const char *colon = strchr(line, ':');
            const char *eol = strchr(line, '\n');
            if (!colon || (eol && colon > eol))
                continue;
            colon++;
            while (*colon == ' ')
                colon++;
            size_t n = eol ? (size_t)(eol - colon) : strlen(colon);
            if (n >= len)
                n = len - 1;
            memcpy(out, colon, n);
            out[n] = '\0';
            return out;
        }
    }
    return NULL;
}

static void trim(char *s)
{
    char *p = s;
    while (*p == ' ')
        p++;
    memmove(s, p, strlen(p) + 1);
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
        s[--n] = '\0';
}

static void cpuid_identity(ps_machineinfo_t *m)
{
    unsigned r[4];
    if (ps_cpuid(0, 0, r))
        return;
    memcpy(m->vendor, &r[1], 4);
    memcpy(m->vendor + 4, &r[3], 4);
    memcpy(m->vendor + 8, &r[2], 4);
    m->vendor[12] = '\0';
    ps_cpuid(1, 0, r);
    unsigned base_family = (r[0] >> 8) & 0xf, base_model = (r[0] >> 4) & 0xf;
    m->stepping = (int)(r[0] & 0xf);
    m->family = (int)base_family + (base_family == 0xf ? (int)((r[0] >> 20) & 0xff) : 0);
    m->model = (int)base_model;
    if (base_family == 0x6 || base_family == 0xf)
        m->model += (int)(((r[0] >> 16) & 0xf) << 4);
    if (r[2] & (1u << 31)) { /* hypervisor present */
        ps_cpuid(0x40000000, 0, r);
        char hv[13];
        memcpy(hv, &r[1], 4);
        memcpy(hv + 4, &r[2], 4);
        memcpy(hv + 8, &r[3], 4);
        hv[12] = '\0';
        ps_strlcpy(m->hypervisor, hv[0] ? hv : "unknown", sizeof m->hypervisor);
    }
    ps_cpuid(0x80000000, 0, r);
    if (r[0] >= 0x80000004) {
        char brand[49];
        for (unsigned i = 0; i < 3; i++) {
            ps_cpuid(0x80000002 + i, 0, r);
            memcpy(brand + 16 * i, r, 16);
        }
        brand[48] = '\0';
        trim(brand);
        ps_strlcpy(m->brand, brand, sizeof m->brand);
    }
}

static const char *cache_type(const char *sysfs_type)
{
    if (strncmp(sysfs_type, "Data", 4) == 0)
        return "data";
    if (strncmp(sysfs_type, "Instruction", 11) == 0)
        return "instruction";
    return "unified";
}

static int count_cpu_list(const char *list)
{
    int count = 0;
    const char *p = list;
    while (*p && *p != '\n') {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        count += (int)(b - a + 1);
        p = *end == ',' ? end + 1 : end;
    }
    return count;
}

static void sysfs_caches(ps_machineinfo_t *m)
{
    char path[128], text[256];
    for (int i = 0; i < 32 && m->cache_count < PS_MAX_CACHES; i++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (ps_read_file(path, text, sizeof text) <= 0)
            break;
        ps_cache_t *c = &m->caches[m->cache_count++];
        ps_strlcpy(c->type, cache_type(text), sizeof c->type);
#define CACHE_ATTR(name) \
    (snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/" name, i), ps_read_ll(path, 0))
        c->level = (int)CACHE_ATTR("level");
        c->size_kb = CACHE_ATTR("size"); /* "32K": strtoll stops at K */
        c->line_size = (int)CACHE_ATTR("coherency_line_size");
        c->associativity = (int)CACHE_ATTR("ways_of_associativity");
        if (CACHE_ATTR("number_of_sets") == 1)
            c->associativity = 0;
#undef CACHE_ATTR
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
        if (ps_read_file(path, text, sizeof text) > 0)
            c->shared_cpus = count_cpu_list(text);
    }
}

/* Deterministic cache parameters (Intel leaf 4, AMD leaf 0x8000001D), for
 * kernels without the sysfs cache directory. */
static void cpuid_caches(ps_machineinfo_t *m)
{
    unsigned r[4], leaf = strcmp(m->vendor, "AuthenticAMD") == 0 ? 0x8000001D : 4;
    for (unsigned sub = 0; sub < 16 && m->cache_count < PS_MAX_CACHES; sub++) {
        if (ps_cpuid(leaf, sub, r) || (r[0] & 0x1f) == 0)
            break;
        ps_cache_t *c = &m->caches[m->cache_count++];
        unsigned type = r[0] & 0x1f;
        ps_strlcpy(c->type, type == 1 ? "data" : type == 2 ? "instruction" : "unified", sizeof c->type);
        c->level = (int)((r[0] >> 5) & 7);
        c->line_size = (int)((r[1] & 0xfff) + 1);
        c->associativity = (r[0] & (1u << 9)) ? 0 : (int)((r[1] >> 22) + 1);
        long long size = (long long)((r[1] >> 22) + 1) * (((r[1] >> 12) & 0x3ff) + 1) * c->line_size * (r[2] + 1);
        c->size_kb = size / 1024;
        c->shared_cpus = (int)(((r[0] >> 14) & 0xfff) + 1);
    }
}

static void add_tlb(ps_machineinfo_t *m, const char *type, int level, int entries, int assoc, int page_kb)
{
    if (entries <= 0 || m->tlb_count >= PS_MAX_TLBS)
        return;
    ps_tlb_t *t = &m->tlbs[m->tlb_count++];
    ps_strlcpy(t->type, type, sizeof t->type);
    t->level = level;
    t->entries = entries;
    t->associativity = assoc;
    t->page_kb = page_kb;
}

/* AMD's 4-bit associativity code of the L2 TLB and cache leaves. */
static int amd_assoc(unsigned code)
{
    static const int ways[16] = {0, 1, 2, 3, 4, 6, 8, 0, 16, 0, 32, 48, 64, 96, 128, -1};
    int w = ways[code & 0xf];
    return w < 0 ? 0 : w; /* 0xF: fully associative */
}

static void amd_tlbs(ps_machineinfo_t *m)
{
    unsigned r[4];
    ps_cpuid(0x80000000, 0, r);
    unsigned max = r[0];
    if (max >= 0x80000005) {
        ps_cpuid(0x80000005, 0, r);
        /* L1: 8-bit entries and associativity (0xFF = fully). */
#define L1(reg, shift) ((int)((reg >> shift) & 0xff))
#define L1A(reg, shift) (L1(reg, shift) == 0xff ? 0 : L1(reg, shift))
        add_tlb(m, "data", 1, L1(r[1], 16), L1A(r[1], 24), 4);
        add_tlb(m, "instruction", 1, L1(r[1], 0), L1A(r[1], 8), 4);
        add_tlb(m, "data", 1, L1(r[0], 16), L1A(r[0], 24), 2048);
        add_tlb(m, "instruction", 1, L1(r[0], 0), L1A(r[0], 8), 2048);
#undef L1
#undef L1A
    }
    if (max >= 0x80000006) {
        ps_cpuid(0x80000006, 0, r);
        add_tlb(m, "data", 2, (int)((r[1] >> 16) & 0xfff), amd_assoc(r[1] >> 28), 4);
        add_tlb(m, "instruction", 2, (int)(r[1] & 0xfff), amd_assoc(r[1] >> 12), 4);
        add_tlb(m, "data", 2, (int)((r[0] >> 16) & 0xfff), amd_assoc(r[0] >> 28), 2048);
        add_tlb(m, "instruction", 2, (int)(r[0] & 0xfff), amd_assoc(r[0] >> 12), 2048);
    }
    if (max >= 0x80000019) {
        ps_cpuid(0x80000019, 0, r);
        add_tlb(m, "data", 1, (int)((r[0] >> 16) & 0xfff), amd_assoc(r[0] >> 28), 1048576);
        add_tlb(m, "instruction", 1, (int)(r[0] & 0xfff), amd_assoc(r[0] >> 12), 1048576);
        add_tlb(m, "data", 2, (int)((r[1] >> 16) & 0xfff), amd_assoc(r[1] >> 28), 1048576);
        add_tlb(m, "instruction", 2, (int)(r[1] & 0xfff), amd_assoc(r[1] >> 12), 1048576);
    }
}

/* Intel leaf 0x18: deterministic address translation parameters. */
static void intel_tlbs(ps_machineinfo_t *m)
{
    unsigned r[4];
    ps_cpuid(0, 0, r);
    if (r[0] < 0x18)
        return;
    ps_cpuid(0x18, 0, r);
    unsigned max_sub = r[0];
    for (unsigned sub = 0; sub <= max_sub && sub < 32; sub++) {
        ps_cpuid(0x18, sub, r);
        unsigned type = r[3] & 0x1f;
        if (type == 0)
            continue;
        const char *name = type == 2 ? "instruction" : type == 3 ? "unified" : "data";
        int level = (int)((r[3] >> 5) & 7);
        int ways = (int)(r[1] >> 16);
        int entries = ways * (int)r[2];
        int assoc = (r[3] & (1u << 8)) ? 0 : ways;
        static const int pages[4] = {4, 2048, 4096, 1048576};
        for (int p = 0; p < 4; p++)
            if (r[1] & (1u << p))
                add_tlb(m, name, level, entries, assoc, pages[p]);
    }
}

PS_API int ps_machineinfo(ps_machineinfo_t *m)
{
    if (!m)
        return PS_HWPC_EINVAL;
    memset(m, 0, sizeof *m);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->cpu_count = n > 0 ? (int)n : 1;
    m->page_size = sysconf(_SC_PAGESIZE);

    /* /proc/cpuinfo and /proc/meminfo are read into memory of this call:
     * not static (concurrent callers), not the caller's stack (64 KiB) */
    enum { CPUINFO_SIZE = 65536, MEMINFO_SIZE = 8192 };
    char *cpuinfo = mmap(NULL, CPUINFO_SIZE + MEMINFO_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (cpuinfo == MAP_FAILED)
        cpuinfo = NULL;
    char *meminfo = cpuinfo ? cpuinfo + CPUINFO_SIZE : NULL;
    char field[128];
    int have_cpuinfo = cpuinfo && ps_read_file("/proc/cpuinfo", cpuinfo, CPUINFO_SIZE) > 0;
    cpuid_identity(m);
    if (!m->vendor[0] && have_cpuinfo && cpuinfo_field(cpuinfo, "vendor_id", field, sizeof field))
        ps_strlcpy(m->vendor, field, sizeof m->vendor);
    if (!m->brand[0] && have_cpuinfo && cpuinfo_field(cpuinfo, "model name", field, sizeof field))
        ps_strlcpy(m->brand, field, sizeof m->brand);

    /* Clock: the nominal maximum from cpufreq, else what /proc/cpuinfo says,
     * else cpuid leaf 0x16. */
    long long khz = ps_read_ll("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", 0);
    if (khz > 0)
        m->mhz = (double)khz / 1000.0;
    else if (have_cpuinfo && cpuinfo_field(cpuinfo, "cpu MHz", field, sizeof field))
        m->mhz = atof(field);
    else {
        unsigned r[4];
        ps_cpuid(0, 0, r);
        if (r[0] >= 0x16) {
            ps_cpuid(0x16, 0, r);
            m->mhz = r[0];
        }
    }

    sysfs_caches(m);
    if (m->cache_count == 0)
        cpuid_caches(m);
    if (strcmp(m->vendor, "AuthenticAMD") == 0 || strcmp(m->vendor, "HygonGenuine") == 0)
        amd_tlbs(m);
    else if (strcmp(m->vendor, "GenuineIntel") == 0)
        intel_tlbs(m);

    if (meminfo && ps_read_file("/proc/meminfo", meminfo, MEMINFO_SIZE) > 0 &&
        cpuinfo_field(meminfo, "MemTotal", field, sizeof field))
        m->memory_kb = atoll(field);
    if (cpuinfo)
        munmap(cpuinfo, CPUINFO_SIZE + MEMINFO_SIZE);
    return PS_HWPC_OK;
}

/* The clock speed in thousandths of a MHz, exactly as <clockspeed> shows
 * it (0: unknown).  Reports compute <wallclock units="ticks"> from this
 * same number, so a reader dividing the ticks by clockspeed x 10^6 gets
 * the seconds back.  Printed as integer and fraction, not with %f, so the
 * program's LC_NUMERIC cannot turn the point into a comma. */
long long ps_machineinfo_clock_millimhz(const ps_machineinfo_t *m)
{
    return m->mhz > 0 && m->mhz < 1e9 ? (long long)(m->mhz * 1000.0 + 0.5) : 0;
}

/* <machineinfo> of m per machineinfo-0.3.dtd.  TLBs are listed for the base
 * page size only: the DTD has no page-size attribute to tell the others
 * apart. */
void ps_machineinfo_xml(ps_buf_t *b, int in, const ps_machineinfo_t *m)
{
    char text[160];
    ps_buf_printf(b, "%*s<machineinfo>\n", in, "");
    ps_buf_printf(b, "%*s<cpucount>%d</cpucount>\n", in + 2, "", m->cpu_count);
    ps_buf_printf(b, "%*s<cpuinfo>\n", in + 2, "");
    ps_buf_element(b, in + 4, "vendor", m->vendor);
    if (m->brand[0])
        ps_buf_element(b, in + 4, "brand", m->brand);
    snprintf(text, sizeof text, "Family %d Model %d Stepping %d", m->family, m->model, m->stepping);
    ps_buf_element(b, in + 4, "cpuidinfo", text);
    ps_buf_printf(b, "%*s<revision>%d</revision>\n", in + 4, "", m->stepping);
    long long milli = ps_machineinfo_clock_millimhz(m);
    ps_buf_printf(b, "%*s<clockspeed units=\"MHz\">%lld.%03lld</clockspeed>\n", in + 4, "", milli / 1000, milli % 1000);
    int levels = 0;
    for (int i = 0; i < m->cache_count; i++)
        levels = m->caches[i].level > levels ? m->caches[i].level : levels;
    ps_buf_printf(b, "%*s<cacheinfo>\n%*s<levels>%d</levels>\n", in + 4, "", in + 6, "", levels);
    for (int i = 0; i < m->cache_count; i++) {
        const ps_cache_t *c = &m->caches[i];
        ps_buf_printf(b, "%*s<cache type=\"%s\" level=\"%d\">\n", in + 6, "", c->type, c->level);
        ps_buf_printf(b, "%*s<size units=\"KB\">%lld</size>\n", in + 8, "", c->size_kb);
        if (c->line_size)
            ps_buf_printf(b, "%*s<linesize units=\"B\">%d</linesize>\n", in + 8, "", c->line_size);
        if (c->associativity)
            ps_buf_printf(b, "%*s<associativity type=\"set\">%d</associativity>\n", in + 8, "", c->associativity);
        else
            ps_buf_printf(b, "%*s<associativity type=\"full\">0</associativity>\n", in + 8, "");
        ps_buf_printf(b, "%*s</cache>\n", in + 6, "");
    }
    ps_buf_printf(b, "%*s</cacheinfo>\n%*s<tlbinfo>\n", in + 4, "", in + 4, "");
    for (int i = 0; i < m->tlb_count; i++) {
        const ps_tlb_t *t = &m->tlbs[i];
        if (t->page_kb != 4)
            continue;
        ps_buf_printf(b, "%*s<tlb type=\"%s\" level=\"%d\">\n", in + 6, "", t->type, t->level);
        ps_buf_printf(b, "%*s<entries>%d</entries>\n", in + 8, "", t->entries);
        if (t->associativity)
            ps_buf_printf(b, "%*s<associativity type=\"set\">%d</associativity>\n", in + 8, "", t->associativity);
        else
            ps_buf_printf(b, "%*s<associativity type=\"full\">0</associativity>\n", in + 8, "");
        ps_buf_printf(b, "%*s</tlb>\n", in + 6, "");
    }
    ps_buf_printf(b, "%*s</tlbinfo>\n%*s</cpuinfo>\n", in + 4, "", in + 2, "");
    ps_buf_printf(b, "%*s<memoryinfo units=\"MB\">%lld</memoryinfo>\n", in + 2, "", m->memory_kb / 1024);
    ps_buf_printf(b, "%*s<syspagesize units=\"KB\">%lld</syspagesize>\n", in + 2, "", m->page_size / 1024);
    ps_buf_printf(b, "%*s</machineinfo>\n", in, "");
}
