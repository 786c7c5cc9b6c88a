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
 * the loader's lock held: it cannot call dl_iterate_phdr then.
 *
 * A module is recorded by its absolute path: the loader keeps the name it
 * was opened by (dlopen("./plugin.so") is "./plugin.so"), which means
 * nothing once the working directory changes or the report is read
 * elsewhere.  Such a name is replaced by the file the kernel mapped (its
 * line in /proc/self/maps), looked up when the module enters the map. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define MAX_RANGES 8

/* The file mapped at addr, as /proc/self/maps names it (absolute), into out;
 * 0 when none is (an anonymous mapping, the vdso) or maps cannot be read.
 * No allocation: read in pieces into a buffer on the stack. */
static int mapped_file(unsigned long long addr, char *out, size_t cap)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[PATH_MAX + 512];
    size_t have = 0;
    int found = 0, eof = 0;
    while (!found) {
        if (!eof && have < sizeof buf) {
            ssize_t got = read(fd, buf + have, sizeof buf - have);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                eof = 1;
            else
                have += (size_t)got;
        }
        char *nl = memchr(buf, '\n', have);
        if (!nl) {
            if (eof || have == sizeof buf) /* the last line, or one longer than any path */
                break;
            continue;
        }
        *nl = '\0';
        unsigned long long lo = 0, hi = 0;
        const char *c = buf;
        for (; *c && *c != '-'; c++)
            lo = lo * 16 + (unsigned long long)(*c <= '9' ? *c - '0' : (*c | 0x20) - 'a' + 10);
        for (c += *c == '-'; *c && *c != ' '; c++)
            hi = hi * 16 + (unsigned long long)(*c <= '9' ? *c - '0' : (*c | 0x20) - 'a' + 10);
        if (addr >= lo && addr < hi) {
            for (int field = 0; field < 4 && *c; field++) { /* perms, offset, device, inode */
                while (*c == ' ')
                    c++;
                while (*c && *c != ' ')
                    c++;
            }
            while (*c == ' ')
                c++;
            if (*c == '/') {
                size_t len = strlen(c);
                static const char deleted[] = " (deleted)";
                if (len > sizeof deleted - 1 && strcmp(c + len - (sizeof deleted - 1), deleted) == 0)
                    len -= sizeof deleted - 1;
                if (len < cap) {
                    memcpy(out, c, len);
                    out[len] = '\0';
                    found = 1;
                }
            }
            break;
        }
        size_t used = (size_t)(nl + 1 - buf);
        memmove(buf, nl + 1, have - used);
        have -= used;
    }
    close(fd);
    return found;
}

typedef struct {
    ElfW(Addr) base;             /* the module's load address (l_addr) */
    const char *name;            /* to find it: its l_name */
    const void *phdr;            /* its program headers, as the module map has them */
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
    r->phdr = info->dlpi_phdr;
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

/* A module opened by a relative name: its samples keep the absolute path
 * the module map has for it (or the kernel's, when it is not in the map). */
static void root_name(ranges_t *r)
{
    const ps_module_t *v;
    int n, done = 0;
    const ps_modmap_t *held = ps_modules_hold(&v, &n);
    for (int i = 0; i < n && !done; i++)
        if (v[i].phdr == r->phdr && v[i].base == r->base && v[i].file[0] == '/') {
            ps_strlcpy(r->file, v[i].file, sizeof r->file);
            done = 1;
        }
    ps_modules_release(held);
    char path[PATH_MAX];
    if (!done && mapped_file(r->lo[0], path, sizeof path))
        ps_strlcpy(r->file, path, sizeof r->file);
}

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
    if (m->r.found && m->r.n && m->r.file[0] != '/' && strchr(m->r.file, '/'))
        root_name(&m->r);
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

/* The absolute paths of the modules loaded by a relative name, kept while
 * they stay loaded (each refresh drops the ones it did not see), so that
 * maps is read once per such module, not at every refresh; under the
 * refresh lock.  mmap'd when first needed. */
#define MAX_ROOTED 16
typedef struct {
    ElfW(Addr) base;
    const void *phdr;
    const char *name;           /* the loader's l_name, as dl_iterate_phdr gives it */
    int seen;
    char path[PATH_MAX];
} rooted_t;
static rooted_t *rooted;

/* The file of the executable segment at addr of the object: its mapping's
 * link in /proc/self/map_files, named by the mapping's exact bounds (the
 * segment's pages); 0 when that is not its mapping (or the kernel has no
 * map_files): maps is then searched.  One readlink instead of reading maps. */
static int segment_file(const struct dl_phdr_info *info, unsigned long long addr, char *out, size_t cap)
{
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; page > 0 && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || info->dlpi_addr + ph->p_vaddr != addr)
            continue;
        unsigned long long mask = (unsigned long long)page - 1;
        unsigned long long lo = addr & ~mask, hi = (addr + ph->p_memsz + mask) & ~mask;
        char link[64];
        snprintf(link, sizeof link, "/proc/self/map_files/%llx-%llx", lo, hi);
        ssize_t n = readlink(link, out, cap - 1);
        if (n <= 0 || out[0] != '/')
            return 0;
        out[n] = '\0';
        static const char deleted[] = " (deleted)";
        if ((size_t)n > sizeof deleted - 1 && strcmp(out + n - (sizeof deleted - 1), deleted) == 0)
            out[n - (sizeof deleted - 1)] = '\0';
        return 1;
    }
    return 0;
}

/* name, or the absolute path of the module at addr when name is relative
 * (a name without '/' - the vdso's "linux-vdso.so.1" - is no file's). */
static const char *rooted_name(const struct dl_phdr_info *info, unsigned long long addr, char *scratch, size_t cap)
{
    const char *name = info->dlpi_name;
    if (name[0] == '/' || !strchr(name, '/'))
        return name;
    int free_slot = -1;
    for (int i = 0; rooted && i < MAX_ROOTED; i++) {
        rooted_t *r = &rooted[i];
        if (r->name == name && r->base == info->dlpi_addr && r->phdr == info->dlpi_phdr) {
            r->seen = 1;
            return r->path;
        }
        if (!r->name && free_slot < 0)
            free_slot = i;
    }
    if (!segment_file(info, addr, scratch, cap) && !mapped_file(addr, scratch, cap))
        return name;
    if (!rooted) {
        void *p = mmap(NULL, MAX_ROOTED * sizeof *rooted, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            rooted = p;
            free_slot = 0;
        }
    }
    if (free_slot >= 0) {
        rooted_t *r = &rooted[free_slot];
        r->base = info->dlpi_addr;
        r->phdr = info->dlpi_phdr;
        r->name = name;
        r->seen = 1;
        ps_strlcpy(r->path, scratch, sizeof r->path);
    }
    return scratch;
}

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
    int named = is_exe;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        if (!named) {
            name = rooted_name(info, info->dlpi_addr + ph->p_vaddr, exe, sizeof exe);
            len = strlen(name) + 1;
            named = 1;
        }
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
            munmap(m, m->bytes);
        }
        bytes = (bytes + 65535) & ~(size_t)65535;
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
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
    for (int i = 0; rooted && i < MAX_ROOTED; i++)
        rooted[i].seen = 0;
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
        for (int i = 0; rooted && i < MAX_ROOTED; i++)
            if (!rooted[i].seen) /* unloaded: another object may come at its address */
                rooted[i].name = NULL;
        break;
    }
    __atomic_store_n(&refresh_lock, 0, __ATOMIC_SEQ_CST);
    errno = saved;
}

const ps_modmap_t *ps_modules_hold(const ps_module_t **v, int *n)
{
    for (;;) {
        ps_modmap_t *m = __atomic_load_n(&current, __ATOMIC_SEQ_CST);
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
