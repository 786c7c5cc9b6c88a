/* callpath_report.c - the <callpaths> companion document of a profile
 * (docs/formats/callpaths.md, psuite/formats/schemas/callpaths-1.1.xsd):
 * every thread's calling-context tree, its addresses' modules numbered as
 * they are loaded now (or were, for modules unloaded with dlclose), each
 * with the same load offset as the flat profile's <module offset>.
 * Written right after the process's flat profile, by profile_report.c's
 * writer, on its stack: async-signal-safe like it (the module map modules.c
 * keeps, an output buffer mmap'd to the size the node count calls for, no
 * stdio, ps_report_save's safe placement). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef PSUITE_VERSION
#define PSUITE_VERSION "0"
#endif

static char exec_path[PATH_MAX]; /* written before an exec: removed if it fails */

typedef struct {
    const ps_module_t *v;
    int n;
    int *id;                    /* per map entry: its module id (entries of one object share it) */
    int nretired;
    int retired_base_id;        /* retired module k: id retired_base_id + k */
} mods_t;

static int module_id(const mods_t *m, unsigned long long a)
{
    int lo = 0, hi = m->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a < m->v[mid].lo)
            hi = mid - 1;
        else if (a >= m->v[mid].hi)
            lo = mid + 1;
        else
            return m->id[mid];
    }
    unsigned long long rlo, rhi;
    for (int k = 0; k < m->nretired; k++)
        if (ps_sampler_retired_span(k, &rlo, &rhi) && a >= rlo && a < rhi)
            return m->retired_base_id + k;
    return 0;
}

static void attr_str(ps_buf_t *b, const char *name, const char *value)
{
    ps_buf_str(b, " ");
    ps_buf_str(b, name);
    ps_buf_str(b, "=\"");
    ps_buf_escaped(b, value ? value : "");
    ps_buf_str(b, "\"");
}

static void attr_ull(ps_buf_t *b, const char *name, unsigned long long v)
{
    ps_buf_str(b, " ");
    ps_buf_str(b, name);
    ps_buf_str(b, "=\"");
    ps_buf_ull(b, v);
    ps_buf_str(b, "\"");
}

/* buildid: the module's GNU build-id as it was mapped (n bytes, 0: none) */
static void write_module(ps_buf_t *b, int id, const char *file, unsigned long long base,
                         const unsigned char *buildid, unsigned n)
{
    ps_buf_str(b, "  <module");
    attr_ull(b, "id", (unsigned long long)id);
    attr_str(b, "file", file);
    ps_buf_str(b, " offset=\"0x");
    ps_buf_hex(b, base);
    char hex[2 * PS_BUILDID_MAX + 1];
    if (n && ps_buildid_hex(buildid, n, hex, sizeof hex) == 0) {
        ps_buf_str(b, "\" buildid=\"");
        ps_buf_str(b, hex);
    }
    ps_buf_str(b, "\"/>\n");
}

static const char *const kinds[] = {"call", "sample", "truncated", "blocked"};

static void write_thread(ps_buf_t *b, const ps_sthread_t *t, const mods_t *m, unsigned long long *sum)
{
    unsigned long long samples, truncated, lost;
    ps_cct_counts(t->cct, &samples, &truncated, &lost);
    lost += t->cp_lost;
    sum[0] += samples;
    sum[2] += truncated;
    sum[3] += lost;
    ps_buf_str(b, "  <thread");
    attr_ull(b, "id", (unsigned long long)ps_thread_number(t->index));
    attr_ull(b, "tid", (unsigned long long)t->tid);
    attr_ull(b, "samples", samples);
    attr_ull(b, "truncated", truncated);
    attr_ull(b, "lost", lost);
    ps_buf_str(b, ">\n");
    unsigned n;
    const ps_cpnode_t *v = ps_cct_nodes(t->cct, &n);
    for (unsigned i = 1; v && i < n; i++) {
        const ps_cpnode_t *node = &v[i];
        unsigned kind = node->kind;
        /* a node another thread's insertion left unused, or one not written yet */
        if (kind > PS_CP_BLOCKED || ((kind == PS_CP_CALL || kind == PS_CP_SAMPLE) && !node->addr))
            continue;
        sum[1]++;
        ps_buf_str(b, "    <node");
        attr_ull(b, "id", i);
        attr_ull(b, "parent", node->parent);
        if (kind == PS_CP_CALL || kind == PS_CP_SAMPLE) {
            /* the address's load: a module unloaded since, or by address
             * (a return address is in its call instruction's module, at addr - 1) */
            unsigned long long addr;
            int retired = ps_modules_resolve(node->addr, &addr);
            int id = retired >= 0 && retired < m->nretired ? m->retired_base_id + retired
                                                           : module_id(m, addr - (kind == PS_CP_CALL));
            attr_ull(b, "module", (unsigned long long)id);
            ps_buf_str(b, " addr=\"");
            ps_buf_hex(b, addr);
            ps_buf_str(b, "\"");
        }
        if (kind != PS_CP_CALL)
            attr_str(b, "kind", kinds[kind]);
        if (node->samples)
            attr_ull(b, "samples", node->samples);
        ps_buf_str(b, "/>\n");
    }
    ps_buf_str(b, "  </thread>\n");
}

static void *map_bytes(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* "psrun: call paths: thread N: B bytes resident for K nodes" (PSUITE_VERBOSE) */
static void say_memory(const ps_sthread_t *t)
{
    char line[160];
    ps_buf_t b;
    unsigned n;
    ps_cct_nodes(t->cct, &n);
    ps_buf_fixed(&b, line, sizeof line);
    ps_buf_str(&b, "thread ");
    ps_buf_ull(&b, (unsigned long long)ps_thread_number(t->index));
    ps_buf_str(&b, ": ");
    ps_buf_ull(&b, (unsigned long long)ps_cct_resident(t->cct));
    ps_buf_str(&b, " bytes resident for ");
    ps_buf_ull(&b, n ? n - 1 : 0);
    ps_buf_str(&b, " nodes of ");
    ps_buf_ull(&b, (unsigned long long)ps_cct_node_bytes());
    ps_buf_str(&b, " bytes");
    if (!b.failed)
        ps_message_safe("call paths: memory: ", line, NULL, NULL);
}

int ps_callpaths_write(const char *profile_path, int remember)
{
    const ps_profcfg_t *cfg = ps_sampler_config();
    if (!cfg || !ps_sampler_callpath() || !profile_path || !*profile_path)
        return PS_HWPC_OK;
    /* its name: the profile's with .xml made .callpaths.xml */
    char path[PATH_MAX];
    ps_buf_t pb;
    ps_buf_fixed(&pb, path, sizeof path);
    size_t plen = strlen(profile_path);
    int has_xml = plen > 4 && strcmp(profile_path + plen - 4, ".xml") == 0;
    ps_buf_mem(&pb, profile_path, has_xml ? plen - 4 : plen);
    ps_buf_str(&pb, ".callpaths.xml");
    if (pb.failed) {
        ps_message_safe("could not save the call paths of ", profile_path, ": ", ps_errno_text(ENAMETOOLONG));
        return PS_HWPC_EIO;
    }
    const char *slash = strrchr(profile_path, '/');
    const char *host = NULL, *command = NULL;
    ps_report_ident(&host, &command);

    mods_t m = {0};
    const ps_modmap_t *held = ps_modules_hold(&m.v, &m.n);
    size_t id_bytes = sizeof(int) * (size_t)(m.n + 1);
    m.id = map_bytes(id_bytes);
    if (!m.id)
        m.n = 0;
    unsigned long long base;
    const char *file;
    while (ps_sampler_retired_module(m.nretired, &base))
        m.nretired++;

    size_t nodes = 0, bytes = 16384 + 6 * (command ? strlen(command) : 0) + 6 * plen + 6 * 256;
    for (int i = 0; i < ps_sampler_nthreads(); i++) {
        unsigned n;
        ps_cct_nodes(ps_sampler_get(i)->cct, &n);
        nodes += n;
        bytes += 256;
    }
    bytes += nodes * 144;
    for (int k = 0; k < m.n; k++)
        bytes += 96 + 2 * PS_BUILDID_MAX + 6 * strlen(m.v[k].file);
    for (int k = 0; (file = ps_sampler_retired_module(k, &base)); k++)
        bytes += 96 + 6 * strlen(file);
    char *out = map_bytes(bytes);
    ps_buf_t b;
    ps_buf_fixed(&b, out, out ? bytes : 0);

    ps_buf_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<callpaths version=\"1.1\" generator=\"psuite "
                   PSUITE_VERSION " libpshwpc\">\n  <profile");
    attr_str(&b, "file", slash ? slash + 1 : profile_path);
    attr_ull(&b, "pid", (unsigned long long)ps_self_pid());
    attr_str(&b, "hostname", host);
    if (command)
        attr_str(&b, "command", command);
    ps_buf_str(&b, "/>\n  <sampling");
    attr_str(&b, "event", cfg->event);
    attr_ull(&b, "threshold", cfg->threshold > 0 ? (unsigned long long)cfg->threshold : 0);
    attr_ull(&b, "maxdepth", (unsigned long long)ps_sampler_callpath());
    attr_str(&b, "unwinder", ps_unwind_name());
    ps_buf_str(&b, "/>\n");
    /* one id per object (file, load address), as the flat profile's modules */
    int next = 1;
    for (int k = 0; m.id && k < m.n; k++) {
        m.id[k] = 0;
        for (int j = 0; j < k && !m.id[k]; j++)
            if (m.v[j].base == m.v[k].base && strcmp(m.v[j].file, m.v[k].file) == 0)
                m.id[k] = m.id[j];
        if (!m.id[k]) {
            m.id[k] = next++;
            write_module(&b, m.id[k], m.v[k].file, m.v[k].base, m.v[k].buildid, m.v[k].buildid_len);
        }
    }
    m.retired_base_id = next;
    for (int k = 0; (file = ps_sampler_retired_module(k, &base)); k++) {
        unsigned idlen;
        const unsigned char *id = ps_sampler_retired_buildid(k, &idlen);
        write_module(&b, next + k, file, base, id, idlen);
    }
    unsigned long long sum[4] = {0, 0, 0, 0}; /* samples, contexts, truncated, lost */
    for (int i = 0; i < ps_sampler_nthreads(); i++)
        write_thread(&b, ps_sampler_get(i), &m, sum);
    ps_buf_str(&b, "</callpaths>\n");
    ps_modules_release(held);
    if (m.id)
        munmap(m.id, id_bytes);

    char saved_path[PATH_MAX];
    saved_path[0] = '\0';
    if (!out) {
        b.failed = 1;
        errno = ENOMEM;
    }
    int rc = ps_report_save(&b, path, saved_path, sizeof saved_path);
    if (out)
        munmap(out, bytes);
    if (rc != PS_HWPC_OK && rc != PS_HWPC_EEXIST) {
        ps_message_safe("could not save the call paths ", saved_path, ": ", ps_save_errno_text(errno));
        return rc;
    }
    if (remember)
        ps_strlcpy(exec_path, saved_path, sizeof exec_path);
    char line[256];
    ps_buf_t lb;
    ps_buf_fixed(&lb, line, sizeof line);
    ps_buf_ull(&lb, sum[0]);
    ps_buf_str(&lb, " samples in ");
    ps_buf_ull(&lb, sum[1]);
    ps_buf_str(&lb, " contexts, ");
    ps_buf_ull(&lb, sum[2]);
    ps_buf_str(&lb, " truncated, ");
    ps_buf_ull(&lb, sum[3]);
    ps_buf_str(&lb, " lost (");
    ps_buf_str(&lb, ps_unwind_name());
    ps_buf_str(&lb, ")");
    ps_note_safe("call paths: ", line);
    if (ps_cct_verbose()) {
        for (int i = 0; i < ps_sampler_nthreads(); i++)
            say_memory(ps_sampler_get(i));
        ps_buf_fixed(&lb, line, sizeof line);
        ps_buf_ull(&lb, (unsigned long long)ps_unwind_snapshot_calls());
        ps_buf_str(&lb, " calls by the unwinder in the sample handler, all answered from psuite's module map");
        ps_message_safe("call paths: dl_iterate_phdr: ", line, NULL, NULL);
    }
    return PS_HWPC_OK;
}

void ps_callpaths_take_back(void)
{
    if (exec_path[0]) {
        unlink(exec_path);
        exec_path[0] = '\0';
    }
}
