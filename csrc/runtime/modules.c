/* modules.c - modules that come and go while sampling.  A profile's PCs
 * are resolved against the modules loaded when it is written, so a plugin
 * unloaded with dlclose would lose its samples to whatever is loaded at
 * its address later.  dlclose is interposed: the samples in the closing
 * module's executable segments are charged to it (its name and load
 * address recorded with them) before the real call - and once more after
 * it, for its destructors' samples, when it is really gone (dlclose only
 * unloads when the last reference goes).
 *
 * The map of the loaded modules the profile writer resolves PCs with is
 * kept here too, current at all times: taken when the library starts under
 * psrun, refreshed after each dlopen, dlmopen and dlclose, into mmap'd
 * storage (a few maps, reused when no writer holds them).  The writer may
 * run in a signal handler that interrupted dlopen in another thread, with
 * the loader's lock held: it cannot call dl_iterate_phdr then. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define MAX_RANGES 8

typedef struct {
    ElfW(Addr) base;             /* the module's load address (l_addr) */
    const char *name;            /* to find it: its l_name */
    char file[PATH_MAX];
    unsigned long long lo[MAX_RANGES], hi[MAX_RANGES];
    int n, found;
    unsigned char buildid[PS_BUILDID_MAX]; /* its GNU build-id, kept with its samples once it is gone */
    unsigned buildid_len;
} ranges_t;

static int find_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    ranges_t *r = data;
    if (info->dlpi_addr != r->base || !info->dlpi_name || strcmp(info->dlpi_name, r->name) != 0)
        return 0;
    r->found = 1;
    ps_strlcpy(r->file, info->dlpi_name, sizeof r->file);
    r->buildid_len = (unsigned)ps_buildid_of(info->dlpi_phdr, info->dlpi_phnum, info->dlpi_addr, r->buildid,
                                             sizeof r->buildid);
    for (int i = 0; i < info->dlpi_phnum && r->n < MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        r->lo[r->n] = info->dlpi_addr + ph->p_vaddr;
        r->hi[r->n++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    return 1;
}

/* ps_sampler_retire takes the sampler's lock (and allocates): the end of
 * measurement, which takes that lock too, must not interrupt it on this
 * thread.  The asynchronous signals are held back meanwhile (the kernel's
 * mask directly: psuite's sigprocmask wrapper shows the program its own
 * view); faults and SIGPROF, the sampler's, are not. */
static void retire(const ranges_t *r)
{
    sigset_t old;
    int held = ps_hold_async_signals(&old);
    for (int i = 0; i < r->n; i++)
        ps_sampler_retire(r->lo[i], r->hi[i], r->file, r->base, r->buildid, r->buildid_len);
    if (held)
        ps_release_signals(&old);
}

static int kept(void);
int ps_modules_closing;

/* a program's dlclose(NULL) is its own business: passed on untouched */
#pragma GCC diagnostic ignored "-Wnonnull-compare"
PS_API int dlclose(void *handle)
{
    static int (*real)(void *);
    if (!real)
        real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    struct link_map *map = NULL;
    if (!handle || !ps_sampler_active() || dlinfo(handle, RTLD_DI_LINKMAP, &map) || !map || !map->l_name ||
        !*map->l_name)
        return real(handle);
    /* No lock held across the real call: a destructor may dlclose too. */
    struct {
        ranges_t r, still;
        char name[PATH_MAX];
    } *m = calloc(1, sizeof *m);
    if (!m)
        return real(handle);
    ps_strlcpy(m->name, map->l_name, sizeof m->name);
    m->r.base = m->still.base = map->l_addr;
    m->r.name = m->still.name = m->name;
    dl_iterate_phdr(find_ranges, &m->r);
    if (m->r.found)
        retire(&m->r);
    /* unwind.c's snapshot keeps to the permanent objects until the map is
     * current again: this one and the dependencies that go with it are unmapped */
    __atomic_add_fetch(&ps_modules_closing, 1, __ATOMIC_SEQ_CST);
    ps_unwind_quiesce();
    int rc = real(handle);
    int saved = errno;
    if (m->r.found && rc == 0) {
        dl_iterate_phdr(find_ranges, &m->still);
        if (!m->still.found) { /* unloaded: what its destructors were sampled in is its too */
            retire(&m->r);
            ps_unwind_flush(); /* libunwind's caches forget its frames */
        }
    }
    free(m);
    if (rc == 0 && kept())
        ps_modules_refresh();
    __atomic_sub_fetch(&ps_modules_closing, 1, __ATOMIC_SEQ_CST);
    errno = saved;
    return rc;
}


/* ---- the module map ------------------------------------------------------ */

struct ps_modmap {
    size_t bytes;               /* of the mapping */
    int readers;                /* writers holding it (ps_modules_hold) */
    int n;
    ps_module_t v[];            /* then the file names */
};

#define MAP_POOL 8
static ps_modmap_t *pool[MAP_POOL];
/* The objects of the first map (loaded before measurement: never unloaded),
 * by program headers; under the refresh lock. */
#define MAX_INITIAL 1024
static const void *initial[MAX_INITIAL];
static int ninitial = -1;
static ps_modmap_t *current;
static int refresh_lock;        /* the pid holding it: a fork child takes it over */

typedef struct {
    ps_modmap_t *m;             /* NULL: count only */
    int n;
    size_t names, cap;          /* bytes of names used; room for them */
    char *text;
    int overflow;
} fill_t;

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    fill_t *f = data;
    char exe[PATH_MAX];
    const char *name = info->dlpi_name;
    int is_exe = !name || !*name;
    if (is_exe) { /* the executable */
        ssize_t n = readlink("/proc/thread-self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        name = exe;
    }
    size_t len = strlen(name) + 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (f->m) {
            if ((size_t)f->n >= f->cap || f->names + len > (size_t)((char *)f->m + f->m->bytes - f->text)) {
                f->overflow = 1;
                return 1;
            }
            ps_module_t *mod = &f->m->v[f->n];
            memcpy(f->text + f->names, name, len);
            mod->file = f->text + f->names;
            mod->base = info->dlpi_addr;
            mod->lo = info->dlpi_addr + ph->p_vaddr;
            mod->hi = mod->lo + ph->p_memsz;
            mod->phdr = info->dlpi_phdr;
            mod->phnum = info->dlpi_phnum;
            mod->exe = is_exe;
            /* kept with the record: the report names it for a module long dlclose'd too */
            mod->buildid_len = (unsigned)ps_buildid_of(info->dlpi_phdr, info->dlpi_phnum, info->dlpi_addr,
                                                       mod->buildid, sizeof mod->buildid);
        }
        f->n++;
        f->names += len;
    }
    return 0;
}

static int lo_less(const void *a, const void *b)
{
    return ((const ps_module_t *)a)->lo < ((const ps_module_t *)b)->lo;
}

/* Held by one thread at a time; the lock holds the holder's pid, so that a
 * child forked while a thread of its parent held it takes it over (that
 * thread is not in the child). */
static void lock_refresh(void)
{
    int me = (int)getpid(), held = 0;
    while (!__atomic_compare_exchange_n(&refresh_lock, &held, me, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        if (held != me) /* the parent's */
            __atomic_compare_exchange_n(&refresh_lock, &held, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        else
            sched_yield();
        held = 0;
    }
}

/* A slot for a map of `bytes`: not the current map and held by no writer. */
static ps_modmap_t *claim(size_t bytes)
{
    for (int i = 0; i < MAP_POOL; i++) {
        ps_modmap_t *m = pool[i];
        if (m && (m == __atomic_load_n(&current, __ATOMIC_SEQ_CST) || __atomic_load_n(&m->readers, __ATOMIC_SEQ_CST)))
            continue;
        if (m && m->bytes >= bytes)
            return m;
        if (m) {
            pool[i] = NULL;
            ps_unmap(m, m->bytes);
        }
        bytes = (bytes + 65535) & ~(size_t)65535;
        void *p = ps_map(bytes); /* shared with the collector (shared.c) */
        if (!p)
            return NULL;
        m = p;
        m->bytes = bytes;
        m->readers = 0;
        pool[i] = m;
        return m;
    }
    return NULL; /* every map held (never in practice): the current one stays */
}

void ps_modules_refresh(void)
{
    int saved = errno;
    lock_refresh();
    for (int tries = 0; tries < 4; tries++) {
        fill_t f = {0};
        dl_iterate_phdr(add_module, &f);
        /* room for a few more: another thread's dlopen may add some meanwhile */
        size_t cap = (size_t)f.n + 16;
        size_t bytes = sizeof(ps_modmap_t) + cap * sizeof(ps_module_t) + f.names + 16 * PATH_MAX;
        ps_modmap_t *m = claim(bytes);
        if (!m)
            break;
        f = (fill_t){m, 0, 0, cap, (char *)&m->v[cap], 0};
        dl_iterate_phdr(add_module, &f);
        if (f.overflow)
            continue;
        ps_heapsort(m->v, (size_t)f.n, sizeof *m->v, lo_less);
        m->n = f.n;
        if (ninitial < 0)
            for (int i = ninitial = 0; i < f.n && ninitial < MAX_INITIAL; i++)
                initial[ninitial++] = m->v[i].phdr;
        for (int i = 0; i < f.n; i++) {
            m->v[i].permanent = 0;
            for (int k = 0; k < ninitial && !m->v[i].permanent; k++)
                m->v[i].permanent = initial[k] == m->v[i].phdr;
        }
        __atomic_store_n(&current, m, __ATOMIC_SEQ_CST);
        break;
    }
    __atomic_store_n(&refresh_lock, 0, __ATOMIC_SEQ_CST);
    errno = saved;
}

const ps_modmap_t *ps_modules_hold(const ps_module_t **v, int *n)
{
    for (;;) {
        ps_modmap_t *m = __atomic_load_n(&current, __ATOMIC_SEQ_CST);
        if (m && ps_in_collector() && !ps_shared_contains(m))
            m = NULL; /* a map in memory the collector does not share (shared.c) */
        if (!m) {
            *v = NULL;
            *n = 0;
            return NULL;
        }
        __atomic_add_fetch(&m->readers, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&current, __ATOMIC_SEQ_CST) == m) { /* not reused meanwhile */
            *v = m->v;
            *n = m->n;
            return m;
        }
        __atomic_sub_fetch(&m->readers, 1, __ATOMIC_SEQ_CST);
    }
}

void ps_modules_release(const ps_modmap_t *m)
{
    if (m)
        __atomic_sub_fetch(&((ps_modmap_t *)m)->readers, 1, __ATOMIC_SEQ_CST);
}

static int kept(void) { return __atomic_load_n(&current, __ATOMIC_ACQUIRE) != NULL; }

/* dlopen finds what a name without '/' means from its caller's DT_RUNPATH
 * (or DT_RPATH), expands $ORIGIN from the caller, and loads into the
 * caller's namespace: through this wrapper the caller would be psuite.  In
 * those cases the real call is the wrapper's last (a sibling call: the
 * C library sees the program's return address) and the map is refreshed
 * at the next dlopen or dlclose. */
static __attribute__((noinline)) int caller_matters(const char *file, const void *ra, int check_ns)
{
    if (!file || strchr(file, '$'))
        return 1;
    if (strchr(file, '/'))
        return 0;
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(ra, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return 0;
    if (check_ns) {
        Lmid_t lmid = LM_ID_BASE;
        if (dlinfo(lm, RTLD_DI_LMID, &lmid) == 0 && lmid != LM_ID_BASE)
            return 1;
    }
    for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_RUNPATH || d->d_tag == DT_RPATH)
            return 1;
    return 0;
}

PS_API void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (!real)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    if (!real)
        return NULL;
    if (!kept() || caller_matters(file, __builtin_return_address(0), 1))
        return real(file, mode);
    void *h = real(file, mode);
    if (h)
        ps_modules_refresh();
    return h;
}

PS_API void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
    static void *(*real)(Lmid_t, const char *, int);
    if (!real)
        real = (void *(*)(Lmid_t, const char *, int))dlsym(RTLD_NEXT, "dlmopen");
    if (!real)
        return NULL;
    if (!kept() || caller_matters(file, __builtin_return_address(0), 0))
        return real(lmid, file, mode);
    void *h = real(lmid, file, mode);
    if (h)
        ps_modules_refresh();
    return h;
}
