/* profile_report.c - the <hwpcreport mode="profile"> documents
 * (hwpcreport-0.3.dtd): the sampled PCs grouped by the loaded object that
 * holds them - executable, shared libraries, objects loaded with dlopen -
 * each with its load offset, so psprocess can map them back to the files.
 * One document for the process (<thread>0</thread>); with per-thread
 * reports, one more per thread (<prefix>.<pid>.t<N>.<host>.xml with
 * <thread>N</thread>, N from 1: the main thread, then in creation order). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

typedef struct {
    unsigned long long lo, hi, base;
    char *file;
} module_t;

static char end_note[128]; /* how the program ended, when not by exit() */

void ps_profile_set_note(const char *note) { ps_strlcpy(end_note, note ? note : "", sizeof end_note); }

typedef struct {
    module_t *v;
    int n, cap;
} modules_t;

typedef struct {
    unsigned long long pc, count;
} pcount_t;

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    modules_t *m = data;
    char exe[PATH_MAX];
    const char *name = info->dlpi_name;
    if (!name || !*name) { /* the executable */
        ssize_t n = readlink("/proc/thread-self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        name = exe;
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (m->n == m->cap) {
            int cap = m->cap ? 2 * m->cap : 64;
            module_t *v = realloc(m->v, sizeof *v * (size_t)cap);
            if (!v)
                return 1;
            m->v = v;
            m->cap = cap;
        }
        module_t *mod = &m->v[m->n++];
        mod->base = info->dlpi_addr;
        mod->lo = info->dlpi_addr + ph->p_vaddr;
        mod->hi = mod->lo + ph->p_memsz;
        mod->file = strdup(name);
    }
    return 0;
}

static int by_lo(const void *a, const void *b)
{
    const module_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int by_pc(const void *a, const void *b)
{
    const pcount_t *x = a, *y = b;
    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static int module_of(const modules_t *m, unsigned long long pc)
{
    int lo = 0, hi = m->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (pc < m->v[mid].lo)
            hi = mid - 1;
        else if (pc >= m->v[mid].hi)
            lo = mid + 1;
        else
            return mid;
    }
    return -1;
}

/* The samples of one thread (index >= 0) or of all, merged and sorted by PC. */
static pcount_t *collect(int index, size_t *n, unsigned long long *samples, unsigned long long *lost)
{
    size_t cap = 1024, used = 0;
    pcount_t *v = malloc(sizeof *v * cap);
    *samples = *lost = 0;
    for (int i = 0; v && i < ps_sampler_nthreads(); i++) {
        const ps_sthread_t *t = ps_sampler_get(i);
        if (index >= 0 && t->index != index)
            continue;
        *samples += t->samples;
        *lost += t->lost;
        /* a running thread's table, or what an ended thread's held */
        const ps_slot_t *table = t->table ? t->table : t->kept;
        unsigned long slots = t->table ? PS_SAMPLE_SLOTS : t->nkept;
        if (t->table && !t->nused)
            slots = 0;
        for (unsigned long s = 0; table && s < slots; s++) {
            if (!table[s].pc || !table[s].count)
                continue;
            if (used == cap) {
                pcount_t *w = realloc(v, sizeof *v * (cap *= 2));
                if (!w) {
                    free(v);
                    return NULL;
                }
                v = w;
            }
            v[used].pc = table[s].pc;
            v[used++].count = table[s].count;
        }
    }
    if (!v)
        return NULL;
    qsort(v, used, sizeof *v, by_pc);
    size_t out = 0;
    for (size_t i = 0; i < used; i++) {
        if (out && v[out - 1].pc == v[i].pc)
            v[out - 1].count += v[i].count;
        else
            v[out++] = v[i];
    }
    *n = out;
    return v;
}

static void write_module(ps_buf_t *b, const char *file, unsigned long long base, const pcount_t *v, size_t from,
                         size_t to)
{
    ps_buf_printf(b, "    <module file=\"");
    ps_buf_escaped(b, file);
    ps_buf_printf(b, "\" offset=\"0x%llx\">\n      <samples pcbase=\"16\">\n", base);
    for (size_t i = from; i < to; i++)
        ps_buf_printf(b, "        <sample pc=\"%llx\">%llu</sample>\n", v[i].pc, v[i].count);
    ps_buf_printf(b, "      </samples>\n    </module>\n");
}

static int by_module_pc(const void *a, const void *b)
{
    const ps_retired_t *x = a, *y = b;
    if (x->module != y->module)
        return x->module < y->module ? -1 : 1;
    return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* The samples charged to modules unloaded with dlclose (of one thread, or
 * all), each module under the name and load address it had then.
 * Returns how many modules were written, -1 without memory. */
static int write_retired(ps_buf_t *b, int index)
{
    const ps_retired_t *all;
    size_t n = ps_sampler_retired(&all), used = 0;
    if (!n)
        return 0;
    ps_retired_t *r = malloc(sizeof *r * n);
    pcount_t *v = malloc(sizeof *v * n);
    if (!r || !v) {
        free(r);
        free(v);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (index < 0 || all[i].thread == index)
            r[used++] = all[i];
    qsort(r, used, sizeof *r, by_module_pc);
    int wrote = 0;
    for (size_t i = 0; i < used;) {
        size_t j = i, nv = 0;
        for (; j < used && r[j].module == r[i].module; j++) {
            if (nv && v[nv - 1].pc == r[j].pc)
                v[nv - 1].count += r[j].count;
            else
                v[nv++] = (pcount_t){r[j].pc, r[j].count};
        }
        unsigned long long base = 0;
        const char *file = ps_sampler_retired_module(r[i].module, &base);
        if (file) {
            write_module(b, file, base, v, 0, nv);
            wrote++;
        }
        i = j;
    }
    free(r);
    free(v);
    return wrote;
}

/* "; thread N blocked SIGPROF ..." for each thread (or the one) that was
 * seen blocking the sampling signal. */
static size_t note_blocked(char *note, size_t used, size_t size, int index)
{
    const ps_profcfg_t *cfg = ps_sampler_config();
    int shown = 0, more = 0;
    for (int i = 0; i < ps_sampler_nthreads(); i++) {
        const ps_sthread_t *t = ps_sampler_get(i);
        if (!t->sigblocked || (index >= 0 && t->index != index))
            continue;
        if (shown == 8 || used >= size) {
            more++;
            continue;
        }
        used += (size_t)snprintf(note + used, size - used, "; thread %d blocked SIGPROF: not sampled%s, its CPU "
                                 "time %.3f s", t->index + 1, cfg->kind == PS_PROF_ITIMER &&
                                 cfg->timer == PS_TIMER_REAL ? " while running" : "", t->blocked_cpu_s);
        shown++;
    }
    if (more && used < size)
        used += (size_t)snprintf(note + used, size - used, "; %d more threads blocked SIGPROF", more);
    return used;
}

/* user and system CPU time: the process's, or one thread's from its totals */
static void cpu_times(int index, double *user, double *sys)
{
    if (index < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
        *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
        return;
    }
    const ps_sthread_t *t = ps_sampler_get(index);
    long long user_ns = t->user_ns, sys_ns = t->sys_ns;
    if (__atomic_load_n(&t->live, __ATOMIC_ACQUIRE)) /* sampling paused before an exec: its times so far */
        ps_tid_times(t->tid, ps_tid_cpu_ns(t->tid), &user_ns, &sys_ns);
    *user = user_ns / 1e9;
    *sys = sys_ns / 1e9;
}

/* index: a thread's (from 0), or -1 for the process; with per_thread, the
 * process's report says it is the total of the threads' reports. */
static int write_one(int index, int per_thread, const modules_t *mods, char *path, size_t path_len, char *summary,
                     size_t summary_len)
{
    const ps_profcfg_t *cfg = ps_sampler_config();
    size_t n = 0;
    unsigned long long samples, lost;
    pcount_t *v = collect(index, &n, &samples, &lost);
    if (!v)
        return PS_HWPC_EIO;
    long long now = ps_wallclock_ns();
    const ps_sthread_t *t = index >= 0 ? ps_sampler_get(index) : NULL;
    ps_measurement_t m = {t ? (t->end_ns ? t->end_ns : now) - t->start_ns : now - ps_sampler_started_ns(), 0, 0,
                          NULL};
    cpu_times(index, &m.user_s, &m.system_s);

    /* State what was delivered: timers fire at the tick at best. */
    char note[1024];
    const char *source_note = "";
    const char *source = ps_sampler_source(&source_note);
    size_t used = (size_t)snprintf(note, sizeof note, "%ssampled by %s", index < 0 && per_thread ?
                                   PS_TOTAL_MARK "; " : "", source);
    if (cfg->kind == PS_PROF_ITIMER && samples) {
        double basis = cfg->timer == PS_TIMER_REAL ? (double)m.wall_ns / 1e9 : m.user_s + m.system_s;
        const char *of = cfg->timer == PS_TIMER_REAL ? "wall-clock time per thread" : "CPU time";
        if (cfg->timer == PS_TIMER_REAL && index < 0) {
            basis = 0; /* every thread is sampled over its own lifetime */
            for (int i = 0; i < ps_sampler_nthreads(); i++) {
                const ps_sthread_t *th = ps_sampler_get(i);
                basis += ((th->end_ns ? th->end_ns : now) - th->start_ns) / 1e9;
            }
        }
        double interval = basis / (double)samples;
        used += (size_t)snprintf(note + used, sizeof note - used,
                                 "; period requested %lld us, delivered %.0f us on average (%.1f Hz of %s)",
                                 cfg->threshold, interval * 1e6, 1.0 / interval, of);
    }
    if (used < sizeof note)
        used += (size_t)snprintf(note + used, sizeof note - used, "; %llu samples lost", lost);
    used = note_blocked(note, used, sizeof note, index);
    if (*source_note && used < sizeof note)
        used += (size_t)snprintf(note + used, sizeof note - used, "; %s", source_note);
    if (*end_note && used < sizeof note)
        used += (size_t)snprintf(note + used, sizeof note - used, "; %s", end_note);
    if (index < 0 && ps_sampler_unsampled() && used < sizeof note)
        used += (size_t)snprintf(note + used, sizeof note - used, "; %lu threads beyond %d not sampled", ps_sampler_unsampled(),
                 PS_MAX_THREADS);
    size_t unfit = 0;
    for (int k = 0; k < mods->n; k++)
        unfit += ps_xml_unfit(mods->v[k].file);
    if (unfit && used < sizeof note)
        snprintf(note + used, sizeof note - used, "; %zu U+FFFD in module paths: bytes that are not XML text (invalid "
                 "UTF-8, control characters ...) replaced by U+FFFD", unfit);

    if (summary)
        snprintf(summary, summary_len, "%llu samples; %s", samples, note);
    ps_buf_t b = {0};
    int thread = index >= 0 ? index + 1 : 0; /* the sampler counts threads from 0 */
    ps_report_header(&b, "profile", thread, note, &m);
    static const char *const domains[] = {"user", "user", "kernel", "all"};
    int is_timer = cfg->kind == PS_PROF_ITIMER;
    ps_buf_printf(&b, "  <hwpcprofiledata class=\"%s\" version=\"%s\">\n", is_timer ? "itimer" : "perfmon",
                  is_timer ? "1" : "perf_event");
    ps_buf_printf(&b, "    <profileinfo>\n      <profileevent domain=\"%s\" type=\"%s\" name=\"",
                  domains[cfg->domain & 3], strncmp(cfg->event, "PAPI_", 5) == 0 ? "preset" : "native");
    ps_buf_escaped(&b, cfg->event);
    ps_buf_printf(&b, "\" derived=\"no\">\n        <threshold>%lld</threshold>\n      </profileevent>\n"
                      "    </profileinfo>\n    <totalsamples>%llu</totalsamples>\n", cfg->threshold, samples);
    int wrote = 0;
    for (size_t i = 0; i < n;) {
        int k = module_of(mods, v[i].pc);
        size_t j = i + 1;
        if (k < 0) {
            while (j < n && module_of(mods, v[j].pc) < 0)
                j++;
            write_module(&b, "[unknown]", 0, v, i, j);
        } else {
            while (j < n && v[j].pc >= mods->v[k].lo && v[j].pc < mods->v[k].hi)
                j++;
            write_module(&b, mods->v[k].file, mods->v[k].base, v, i, j);
        }
        wrote = 1;
        i = j;
    }
    int retired = write_retired(&b, index);
    if (retired > 0)
        wrote = 1;
    if (!wrote) { /* the DTD wants a module: the executable's, with no samples */
        char exe[PATH_MAX];
        ssize_t len = readlink("/proc/thread-self/exe", exe, sizeof exe - 1);
        exe[len > 0 ? len : 0] = '\0';
        write_module(&b, exe, 0, v, 0, 0);
    }
    ps_buf_printf(&b, "  </hwpcprofiledata>\n</hwpcreport>\n");
    free(v);
    char where[PATH_MAX], tag[32];
    snprintf(tag, sizeof tag, "t%d", thread);
    ps_report_path(NULL, thread > 0 ? tag : NULL, where, sizeof where);
    return ps_report_save(&b, where, path, path_len);
}

static void said(int rc, const char *path)
{
    if (rc == PS_HWPC_EEXIST)
        ps_message("an output file existed already; report saved as %s", path);
    else if (rc != PS_HWPC_OK)
        ps_message("could not save the report %s: %m", path);
}

/* The profiles written before an exec, taken back if it fails: their paths
 * by report (0 the process's, i + 1 the i-th thread's) in one mmap'd area
 * sized for the reports there were.  The paths stay after they are taken
 * back, so the final profiles under those names are not announced again. */
static ps_pathtab_t exec_paths;
static int pending;

/* One report (k: 0 the process's, i + 1 the i-th thread's); with
 * `remember`, its path kept for ps_profile_take_back. */
static int write_report(int k, int per_thread, const modules_t *mods, int remember, int n, char *summary,
                        size_t summary_len)
{
    char path[PATH_MAX];
    path[0] = '\0';
    char *kept = ps_pathtab_at(&exec_paths, k);
    if (kept && kept[0]) /* taken back after a failed exec: announced already */
        ps_report_announced(kept);
    int rc = write_one(k - 1, per_thread, mods, path, sizeof path, summary, summary_len);
    said(rc, path);
    int saved = rc == PS_HWPC_OK || rc == PS_HWPC_EEXIST;
    char *slot = remember && saved ? ps_pathtab_slot(&exec_paths, k, n) : NULL;
    if (slot)
        ps_strlcpy(slot, path, PATH_MAX);
    else {
        if (remember && saved) /* nowhere to remember it: not left behind */
            unlink(path);
        if ((kept = ps_pathtab_at(&exec_paths, k)))
            kept[0] = '\0';
    }
    return rc;
}

static int write_all(int per_thread, int remember)
{
    modules_t mods = {0};
    dl_iterate_phdr(add_module, &mods);
    qsort(mods.v, (size_t)mods.n, sizeof *mods.v, by_lo);
    char summary[1200];
    int n = 1 + (per_thread ? ps_sampler_nthreads() : 0);
    int rc = write_report(0, per_thread, &mods, remember, n, summary, sizeof summary);
    ps_note("profile: %s", summary);
    for (int k = 1; k < n; k++) {
        int trc = write_report(k, per_thread, &mods, remember, n, NULL, 0);
        if (trc != PS_HWPC_OK && trc != PS_HWPC_EEXIST)
            rc = trc;
    }
    for (int i = 0; i < mods.n; i++)
        free(mods.v[i].file);
    free(mods.v);
    if (remember)
        pending = n;
    return rc == PS_HWPC_EEXIST ? PS_HWPC_OK : rc;
}

int ps_profile_write(int per_thread) { return write_all(per_thread, 0); }

/* Before an exec (sampling paused): the profiles under their final names,
 * in case the exec succeeds. */
int ps_profile_write_exec(int per_thread) { return write_all(per_thread, 1); }

/* The exec failed: the profiles written before it are removed; the final
 * ones come at the program's end. */
void ps_profile_take_back(void)
{
    int saved = errno;
    for (int k = 0; k < pending; k++) {
        const char *kept = ps_pathtab_at(&exec_paths, k);
        if (kept && kept[0])
            unlink(kept);
    }
    pending = 0;
    errno = saved;
}
