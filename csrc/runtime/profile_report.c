/* profile_report.c - the <hwpcreport mode="profile"> documents
 * (hwpcreport-0.3.dtd): the sampled PCs grouped by the loaded object that
 * holds them - executable, shared libraries, objects loaded with dlopen -
 * each with its load offset, so psprocess can map them back to the files.
 * One document for the process (<thread>0</thread>); with per-thread
 * reports, one more per thread (<prefix>.<pid>.t<N>.<host>.xml with
 * <thread>N</thread>, N from 1: the main thread, then in creation order).
 *
 * Async-signal-safe, like the count report (report.c): the profiles may be
 * written from _exit(), an exec wrapper or a fatal signal's handler while
 * another thread holds malloc's lock or the loader's.  So the modules come
 * from the map modules.c keeps current (no dl_iterate_phdr here), the
 * samples are collected into mmap'd scratch memory and heap-sorted, the XML
 * is formatted without stdio into an output buffer mmap'd to the size the
 * sample and module counts call for, all on a stack of the writer's own
 * (safestack.c), and messages go out with ps_message_safe. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

static char end_note[128]; /* how the program ended, when not by exit() */

void ps_profile_set_note(const char *note) { ps_strlcpy(end_note, note ? note : "", sizeof end_note); }

typedef struct {
    const ps_module_t *v;
    int n;
} modules_t;

typedef struct {
    unsigned long long pc, count;
} pcount_t;

/* ---- memory from mmap ---------------------------------------------------- */

static void *map_bytes(size_t bytes)
{
    if (!bytes)
        bytes = 1;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void unmap_bytes(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes ? bytes : 1);
}

static int pc_less(const void *a, const void *b)
{
    return ((const pcount_t *)a)->pc < ((const pcount_t *)b)->pc;
}

/* Samples of a module unloaded with dlclose: its retired index
 * (ps_sampler_retired_module), PC and count. */
typedef struct {
    int module;
    unsigned long long pc, count;
} retired_t;

static int retired_less(const void *a, const void *b)
{
    const retired_t *x = a, *y = b;
    if (x->module != y->module)
        return x->module < y->module;
    return x->pc < y->pc;
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

/* A thread's samples: a running thread's table, or what an ended thread's
 * held. */
static const ps_slot_t *thread_slots(const ps_sthread_t *t, unsigned long *slots)
{
    const ps_slot_t *table = t->table ? t->table : t->kept;
    *slots = t->table ? PS_SAMPLE_SLOTS : t->nkept;
    if (t->table && !t->nused)
        *slots = 0;
    return table;
}

/* How many (pc, count) entries all threads hold: the scratch memory's size. */
static size_t count_entries(void)
{
    size_t total = 0;
    for (int i = 0; i < ps_sampler_nthreads(); i++) {
        unsigned long slots;
        const ps_slot_t *table = thread_slots(ps_sampler_get(i), &slots);
        for (unsigned long s = 0; table && s < slots; s++)
            if (table[s].pc && table[s].count)
                total++;
    }
    return total;
}

/* The samples of one thread (index >= 0) or of all, merged and sorted by PC,
 * into v (room for cap entries; more - samples taken since it was sized -
 * are left out); those of modules unloaded since go to r (as many) instead,
 * *nr of them, sorted by module and PC. */
static size_t collect(int index, pcount_t *v, size_t cap, retired_t *r, size_t *nr, unsigned long long *samples,
                      unsigned long long *lost)
{
    size_t used = 0, rused = 0;
    *samples = *lost = 0;
    for (int i = 0; i < ps_sampler_nthreads(); i++) {
        const ps_sthread_t *t = ps_sampler_get(i);
        if (index >= 0 && t->index != index)
            continue;
        *samples += t->samples;
        *lost += t->lost;
        unsigned long slots;
        const ps_slot_t *table = thread_slots(t, &slots);
        for (unsigned long s = 0; table && s < slots && used + rused < cap; s++) {
            unsigned long long key = table[s].pc, count = table[s].count, pc;
            if (!key || !count)
                continue;
            int module = ps_modules_resolve(key, &pc);
            if (module >= 0)
                r[rused++] = (retired_t){module, pc, count};
            else
                v[used++] = (pcount_t){pc, count};
        }
    }
    ps_heapsort(v, used, sizeof *v, pc_less);
    size_t out = 0;
    for (size_t i = 0; i < used; i++) {
        if (out && v[out - 1].pc == v[i].pc)
            v[out - 1].count += v[i].count;
        else
            v[out++] = v[i];
    }
    ps_heapsort(r, rused, sizeof *r, retired_less);
    size_t rout = 0;
    for (size_t i = 0; i < rused; i++) {
        if (rout && r[rout - 1].module == r[i].module && r[rout - 1].pc == r[i].pc)
            r[rout - 1].count += r[i].count;
        else
            r[rout++] = r[i];
    }
    *nr = rout;
    return out;
}

static void write_module(ps_buf_t *b, const char *file, unsigned long long base, const pcount_t *v, size_t from,
                         size_t to)
{
    ps_buf_str(b, "    <module file=\"");
    ps_buf_escaped(b, file);
    ps_buf_str(b, "\" offset=\"0x");
    ps_buf_hex(b, base);
    ps_buf_str(b, "\">\n      <samples pcbase=\"16\">\n");
    for (size_t i = from; i < to; i++) {
        ps_buf_str(b, "        <sample pc=\"");
        ps_buf_hex(b, v[i].pc);
        ps_buf_str(b, "\">");
        ps_buf_ull(b, v[i].count);
        ps_buf_str(b, "</sample>\n");
    }
    ps_buf_str(b, "      </samples>\n    </module>\n");
}

/* Scratch memory of one write, mmap'd: samples, room for as many for the
 * unloaded modules' and for one module's PCs of them. */
typedef struct {
    pcount_t *v;
    size_t vcap;
    retired_t *r;
    pcount_t *rv;
} scratch_t;

/* The samples charged to modules unloaded with dlclose (r, n of them, by
 * module and PC), each module under the name and load address it had then.
 * Returns how many modules were written. */
static int write_retired(ps_buf_t *b, const retired_t *r, size_t n, pcount_t *v)
{
    int wrote = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, nv = 0;
        for (; j < n && r[j].module == r[i].module; j++)
            v[nv++] = (pcount_t){r[j].pc, r[j].count};
        unsigned long long base = 0;
        const char *file = ps_sampler_retired_module(r[i].module, &base);
        if (file) {
            write_module(b, file, base, v, 0, nv);
            wrote++;
        }
        i = j;
    }
    return wrote;
}

/* Text appended as snprintf(dst + used, cap - used, ...) appended it: cut to
 * fit, `used` counting what would have been written. */
typedef struct {
    char *p;
    size_t cap, used;
} note_t;

static void note_str(note_t *n, const char *s)
{
    size_t len = strlen(s);
    if (n->used < n->cap) {
        size_t room = n->cap - 1 - n->used, c = len < room ? len : room;
        memcpy(n->p + n->used, s, c);
        n->p[n->used + c] = '\0';
    }
    n->used += len;
}

static void note_ull(note_t *n, unsigned long long v)
{
    char d[32];
    ps_buf_t b;
    ps_buf_fixed(&b, d, sizeof d);
    ps_buf_ull(&b, v);
    note_str(n, d);
}

static void note_double(note_t *n, double v, int decimals)
{
    char d[48];
    ps_buf_t b;
    ps_buf_fixed(&b, d, sizeof d);
    ps_buf_double(&b, v, decimals);
    note_str(n, d);
}

/* "; thread N blocked SIGTRAP ..." (or SIGPROF: the signal the sources
 * send) for each thread (or the one) that was seen blocking it. */
static void note_blocked(note_t *note, int index)
{
    const ps_profcfg_t *cfg = ps_sampler_config();
    int shown = 0, more = 0;
    for (int i = 0; i < ps_sampler_nthreads(); i++) {
        const ps_sthread_t *t = ps_sampler_get(i);
        if (!t->sigblocked || (index >= 0 && t->index != index))
            continue;
        if (shown == 8 || note->used >= note->cap) {
            more++;
            continue;
        }
        note_str(note, "; thread ");
        note_ull(note, (unsigned long long)ps_thread_number(t->index));
        note_str(note, " blocked ");
        note_str(note, ps_sampler_signal_name());
        note_str(note, ": not sampled");
        note_str(note, cfg->kind == PS_PROF_ITIMER && cfg->timer == PS_TIMER_REAL ? " while running" : "");
        note_str(note, ", its CPU time ");
        note_double(note, t->blocked_cpu_s, 3);
        note_str(note, " s");
        shown++;
    }
    if (more && note->used < note->cap) {
        note_str(note, "; ");
        note_ull(note, (unsigned long long)more);
        note_str(note, " more threads blocked ");
        note_str(note, ps_sampler_signal_name());
    }
}

/* "module build-ids: "PATH" HEX, ..." for the shared modules (and the vdso) this report
 * has samples in (the executable's is the header's "build-id HEX"), those
 * unloaded with dlclose too: the path quoted, '"' and '\\' in it escaped
 * with '\\', so that any path reads back.  Whole entries only; a module left
 * out for room has no recorded id. */
#define MODULE_IDS_BYTES 2560
#define MODULE_IDS_MAX 96
static void add_id(note_t *note, const char *file, const unsigned char *id, unsigned len)
{
    static const char head[] = "module build-ids: ";
    size_t need = (note->used ? 2 : sizeof head - 1) + 3 + 2 * (size_t)len;
    for (const char *c = file; *c; c++)
        need += *c == '"' || *c == '\\' ? 2 : 1;
    char hex[2 * PS_BUILDID_MAX + 1];
    if (note->used + need >= note->cap || ps_buildid_hex(id, len, hex, sizeof hex) != 0)
        return;
    note_str(note, note->used ? ", " : head);
    note_str(note, "\"");
    char one[2] = {0, 0};
    for (const char *c = file; *c; c++) {
        if (*c == '"' || *c == '\\')
            note_str(note, "\\");
        one[0] = *c;
        note_str(note, one);
    }
    note_str(note, "\" ");
    note_str(note, hex);
}

static void module_ids(const modules_t *mods, const pcount_t *v, size_t n, const retired_t *r, size_t nr, char *text,
                       size_t cap)
{
    note_t note = {text, cap, 0};
    text[0] = '\0';
    int listed[MODULE_IDS_MAX], nlisted = 0;
    for (size_t i = 0; i < n && nlisted < MODULE_IDS_MAX;) {
        int k = module_of(mods, v[i].pc);
        size_t j = i + 1;
        if (k < 0) {
            i = j;
            continue;
        }
        const ps_module_t *mod = &mods->v[k];
        while (j < n && v[j].pc >= mod->lo && v[j].pc < mod->hi)
            j++;
        i = j;
        int seen = mod->exe || !mod->buildid_len; /* the vdso's too: psprocess resolves it only on its kernel */
        for (int l = 0; l < nlisted && !seen; l++)
            seen = mods->v[listed[l]].base == mod->base && strcmp(mods->v[listed[l]].file, mod->file) == 0;
        if (!seen) {
            add_id(&note, mod->file, mod->buildid, mod->buildid_len);
            listed[nlisted++] = k;
        }
    }
    int retired[MODULE_IDS_MAX], nretired = 0;
    for (size_t i = 0; i < nr && nretired < MODULE_IDS_MAX; i++) {
        if (nretired && retired[nretired - 1] == r[i].module) /* r is sorted by module */
            continue;
        retired[nretired++] = r[i].module;
        unsigned long long base;
        unsigned len;
        const char *file = ps_sampler_retired_module(r[i].module, &base);
        const unsigned char *id = ps_sampler_retired_buildid(r[i].module, &len);
        if (file && file[0] == '/' && len)
            add_id(&note, file, id, len);
    }
}

/* user and system CPU time: the process's, or one thread's from its totals */
static void cpu_times(int index, double *user, double *sys)
{
    if (index < 0) {
        ps_process_cpu(user, sys);
        return;
    }
    const ps_sthread_t *t = ps_sampler_get(index);
    long long user_ns = t->user_ns, sys_ns = t->sys_ns;
    if (__atomic_load_n(&t->live, __ATOMIC_ACQUIRE) && !ps_in_collector()) /* paused before an exec: its times so far */
        ps_tid_times(t->tid, ps_tid_cpu_ns(t->tid), &user_ns, &sys_ns);
    *user = user_ns / 1e9;
    *sys = sys_ns / 1e9;
}

/* index: a thread's (from 0), or -1 for the process; with per_thread, the
 * process's report says it is the total of the threads' reports. */
static int write_one(const char *name, int index, int per_thread, const modules_t *mods, const scratch_t *sc,
                     char *out, size_t out_size, char *path, size_t path_len, char *summary, size_t summary_len)
{
    const ps_profcfg_t *cfg = ps_sampler_config();
    unsigned long long samples, lost;
    if ((!sc->v || !sc->r || !sc->rv) && sc->vcap) {
        errno = ENOMEM;
        return PS_HWPC_EIO;
    }
    pcount_t *v = sc->v;
    size_t nr = 0;
    size_t n = collect(index, v, v ? sc->vcap : 0, sc->r, &nr, &samples, &lost);
    long long now = ps_wallclock_ns();
    const ps_sthread_t *t = index >= 0 ? ps_sampler_get(index) : NULL;
    ps_measurement_t m = {t ? (t->end_ns ? t->end_ns : now) - t->start_ns : now - ps_sampler_started_ns(), 0, 0,
                          NULL};
    cpu_times(index, &m.user_s, &m.system_s);
    /* the program suspended sampling (ps_hwpc_suspend): the process's times
     * cover what was sampled */
    long long susp_wall = 0, susp_user = 0, susp_sys = 0;
    if (index < 0) {
        ps_sampler_suspended_time(&susp_wall, &susp_user, &susp_sys);
        m.wall_ns -= susp_wall;
        m.user_s -= susp_user / 1e9;
        m.system_s -= susp_sys / 1e9;
        if (m.user_s < 0)
            m.user_s = 0;
        if (m.system_s < 0)
            m.system_s = 0;
    }

    /* State what was delivered: timers fire at the tick at best. */
    char text[1024];
    note_t note = {text, sizeof text, 0};
    text[0] = '\0';
    const char *source_note = "";
    const char *source = ps_sampler_source(&source_note);
    if (index < 0 && per_thread)
        note_str(&note, PS_TOTAL_MARK "; ");
    note_str(&note, "sampled by ");
    note_str(&note, source);
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
        note_str(&note, "; period requested ");
        if (cfg->threshold < 0) {
            note_str(&note, "-");
            note_ull(&note, 0ULL - (unsigned long long)cfg->threshold);
        } else
            note_ull(&note, (unsigned long long)cfg->threshold);
        note_str(&note, " us, delivered ");
        note_double(&note, interval * 1e6, 0);
        note_str(&note, " us on average (");
        note_double(&note, 1.0 / interval, 1);
        note_str(&note, " Hz of ");
        note_str(&note, of);
        note_str(&note, ")");
    }
    if (note.used < note.cap) {
        note_str(&note, "; ");
        note_ull(&note, lost);
        note_str(&note, " samples lost");
    }
    note_blocked(&note, index);
    if (susp_wall > 0 && note.used < note.cap) {
        note_str(&note, "; sampling suspended by the program (ps_hwpc_suspend) for ");
        note_double(&note, susp_wall / 1e9, 3);
        note_str(&note, " s of wall-clock time and ");
        note_double(&note, (susp_user + susp_sys) / 1e9, 3);
        note_str(&note, " s of CPU time, left out of this report's times");
    }
    if (*source_note && note.used < note.cap) {
        note_str(&note, "; ");
        note_str(&note, source_note);
    }
    if (*end_note && note.used < note.cap) {
        note_str(&note, "; ");
        note_str(&note, end_note);
    }
    if (index < 0 && ps_sampler_unsampled() && note.used < note.cap) {
        note_str(&note, "; ");
        note_ull(&note, ps_sampler_unsampled());
        note_str(&note, " threads beyond ");
        note_ull(&note, PS_MAX_THREADS);
        note_str(&note, " not sampled");
    }
    size_t unfit = 0;
    for (int k = 0; k < mods->n; k++)
        unfit += ps_xml_unfit(mods->v[k].file);
    if (unfit && note.used < note.cap) {
        note_str(&note, "; ");
        note_ull(&note, unfit);
        note_str(&note, " U+FFFD in module paths: bytes that are not XML text (invalid UTF-8, control characters "
                        "...) replaced by U+FFFD");
    }

    if (summary) {
        note_t sum = {summary, summary_len, 0};
        summary[0] = '\0';
        note_ull(&sum, samples);
        note_str(&sum, " samples; ");
        note_str(&sum, text);
    }
    ps_buf_t b;
    ps_buf_fixed(&b, out, out ? out_size : 0);
    int thread = index >= 0 ? ps_thread_number(index) : 0;
    char ids[MODULE_IDS_BYTES];
    module_ids(mods, v, n, sc->r, nr, ids, sizeof ids);
    ps_report_header(&b, "profile", thread, text, ids, &m);
    static const char *const domains[] = {"user", "user", "kernel", "all"};
    int is_timer = cfg->kind == PS_PROF_ITIMER;
    ps_buf_str(&b, "  <hwpcprofiledata class=\"");
    ps_buf_str(&b, is_timer ? "itimer" : "perfmon");
    ps_buf_str(&b, "\" version=\"");
    ps_buf_str(&b, is_timer ? "1" : "perf_event");
    ps_buf_str(&b, "\">\n    <profileinfo>\n      <profileevent domain=\"");
    ps_buf_str(&b, domains[cfg->domain & 3]);
    ps_buf_str(&b, "\" type=\"");
    ps_buf_str(&b, strncmp(cfg->event, "PAPI_", 5) == 0 ? "preset" : "native");
    ps_buf_str(&b, "\" name=\"");
    ps_buf_escaped(&b, cfg->event);
    ps_buf_str(&b, "\" derived=\"no\">\n        <threshold>");
    ps_buf_ll(&b, cfg->threshold);
    ps_buf_str(&b, "</threshold>\n      </profileevent>\n    </profileinfo>\n    <totalsamples>");
    ps_buf_ull(&b, samples);
    ps_buf_str(&b, "</totalsamples>\n");
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
    int retired = write_retired(&b, sc->r, nr, sc->rv);
    if (retired > 0)
        wrote = 1;
    if (!wrote) { /* the DTD wants a module: the executable's, with no samples */
        char exe[PATH_MAX];
        ssize_t len = readlink("/proc/thread-self/exe", exe, sizeof exe - 1);
        exe[len > 0 ? len : 0] = '\0';
        write_module(&b, exe, 0, v, 0, 0);
    }
    ps_buf_str(&b, "  </hwpcprofiledata>\n</hwpcreport>\n");
    char where[PATH_MAX], tag[32];
    ps_buf_t tb;
    ps_buf_fixed(&tb, tag, sizeof tag);
    ps_buf_str(&tb, "t");
    ps_buf_ll(&tb, thread);
    ps_report_path(name, thread > 0 ? tag : NULL, where, sizeof where);
    return ps_report_save(&b, where, path, path_len);
}

static void said(int rc, const char *path)
{
    if (rc == PS_HWPC_EEXIST)
        ps_message_safe("an output file existed already; report saved as ", path, NULL, NULL);
    else if (rc != PS_HWPC_OK)
        ps_message_safe("could not save the report ", path, ": ", ps_save_errno_text(errno));
}

/* The profiles written before an exec, taken back if it fails: their paths
 * by report (0 the process's, i + 1 the i-th thread's) in one mmap'd area
 * sized for the reports there were.  The paths stay after they are taken
 * back, so the final profiles under those names are not announced again. */
static ps_pathtab_t exec_paths;
static int pending;

/* One report (k: 0 the process's, i + 1 the i-th thread's); with
 * `remember`, its path kept for ps_profile_take_back. */
static int write_report(const char *name, int k, int per_thread, const modules_t *mods, const scratch_t *sc,
                        char *out, size_t out_size, int remember, int n, char *summary, size_t summary_len,
                        char *path)
{
    path[0] = '\0';
    char *kept = ps_pathtab_at(&exec_paths, k);
    if (kept && kept[0]) /* taken back after a failed exec: announced already */
        ps_report_announced(kept);
    int rc = write_one(name, k - 1, per_thread, mods, sc, out, out_size, path, PATH_MAX, summary, summary_len);
    said(rc, path);
    int saved = rc == PS_HWPC_OK || rc == PS_HWPC_EEXIST;
    if (!saved)
        path[0] = '\0';
    char *slot = remember && saved ? ps_pathtab_slot(&exec_paths, k, n) : NULL;
    if (slot)
        ps_strlcpy(slot, path, PATH_MAX);
    else {
        if (remember && saved) { /* nowhere to remember it: not left behind */
            unlink(path);
            path[0] = '\0';
        }
        if ((kept = ps_pathtab_at(&exec_paths, k)))
            kept[0] = '\0';
    }
    return rc;
}

/* Bytes the XML of a module needs at most, besides its samples: each byte
 * of the name may become 6 ("&quot;"). */
static size_t module_bytes(const char *file) { return 160 + 6 * strlen(file); }

/* The header (report.c's prepared text: ident, user and command, machine
 * information, an annotation of up to 4 KiB escaped) and the fixed parts. */
#define HEADER_BYTES (192 * 1024)
#define SAMPLE_BYTES 80

typedef struct {
    const char *name;           /* ps_hwpc_stop's, NULL: the default */
    int per_thread, remember, say, rc;
} job_t;

static void write_job(void *arg, char *stack_out, size_t stack_out_size)
{
    job_t *j = arg;
    modules_t mods = {NULL, 0};
    const ps_modmap_t *held = ps_modules_hold(&mods.v, &mods.n);
    if (!held) { /* never taken (not started by psrun): now, unsafely */
        ps_modules_refresh();
        held = ps_modules_hold(&mods.v, &mods.n);
    }

    scratch_t sc = {0};
    sc.vcap = count_entries();
    sc.v = sc.vcap ? map_bytes(sc.vcap * sizeof *sc.v) : NULL;
    sc.r = sc.vcap ? map_bytes(sc.vcap * sizeof *sc.r) : NULL;
    sc.rv = sc.vcap ? map_bytes(sc.vcap * sizeof *sc.rv) : NULL;

    size_t out_size = HEADER_BYTES + sc.vcap * SAMPLE_BYTES + module_bytes("[unknown]") +
                      PATH_MAX * 6 + 160;
    for (int k = 0; k < mods.n; k++)
        out_size += module_bytes(mods.v[k].file) + module_bytes("[unknown]");
    unsigned long long base;
    const char *file;
    for (int k = 0; (file = ps_sampler_retired_module(k, &base)); k++)
        out_size += module_bytes(file);
    char *out = map_bytes(out_size);
    size_t out_cap = out_size;
    if (!out) { /* the output buffer that goes with the stack, if it is enough */
        out = stack_out;
        out_cap = stack_out_size;
    }

    char summary[1200], process_path[PATH_MAX], thread_path[PATH_MAX];
    int n = 1 + (j->per_thread ? ps_sampler_nthreads() : 0);
    int rc = write_report(j->name, 0, j->per_thread, &mods, &sc, out, out_cap, j->remember, n, summary,
                          sizeof summary, process_path);
    if (j->say)
        ps_note_safe("profile: ", summary);
    for (int k = 1; k < n; k++) {
        int trc = write_report(j->name, k, j->per_thread, &mods, &sc, out, out_cap, j->remember, n, NULL, 0,
                               thread_path);
        if (trc != PS_HWPC_OK && trc != PS_HWPC_EEXIST)
            rc = trc;
    }
    if (process_path[0]) /* psrun --callpath: the calling contexts beside the process's profile */
        ps_callpaths_write(process_path, j->remember);
    ps_modules_release(held);
    if (out != stack_out)
        unmap_bytes(out, out_size);
    unmap_bytes(sc.v, sc.vcap * sizeof *sc.v);
    unmap_bytes(sc.r, sc.vcap * sizeof *sc.r);
    unmap_bytes(sc.rv, sc.vcap * sizeof *sc.rv);
    if (j->remember)
        pending = n;
    j->rc = rc == PS_HWPC_EEXIST ? PS_HWPC_OK : rc;
}

static int write_all(const char *name, int per_thread, int remember, int say)
{
    int saved = errno;
    job_t j = {name, per_thread, remember, say, PS_HWPC_EIO};
    ps_on_safe_stack(write_job, &j);
    errno = saved;
    return j.rc;
}

int ps_profile_write(int per_thread) { return write_all(NULL, per_thread, 0, 1); }

int ps_profile_write_named(const char *name, int say) { return write_all(name, 0, 0, say); }

/* Before an exec (sampling paused): the profiles under their final names,
 * in case the exec succeeds. */
int ps_profile_write_exec(int per_thread) { return write_all(NULL, per_thread, 1, 1); }

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
    ps_callpaths_take_back();
    errno = saved;
}
