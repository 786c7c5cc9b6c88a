/* modules.c - modules that come and go while sampling.  A profile's PCs
 * are resolved against the modules loaded when it is written, so a plugin
 * unloaded with dlclose would lose its samples to whatever is loaded at
 * its address later.  So every object loaded after start gets a number
 * when it enters the module map (its instance), and samples and call-path
 * nodes in it are keyed by (instance, PC) (ps_modules_key); when it leaves
 * the map its name, load address and build-id are kept with its number,
 * and the reports charge its keys to it.  Nothing is scanned at dlclose:
 * the map is refreshed (as after dlopen) and the instances gone from it
 * recorded.  A refresh copies the entries of the objects still loaded
 * (known again by their program headers, through a hash) and builds only
 * the new objects' (see refresh_from).
 *
 * The map of the loaded modules the profile writer resolves PCs with is
 * kept here too: taken when the library starts under psrun, refreshed
 * after each dlopen, dlmopen and dlclose (a flat profile's after a dlopen
 * only once a sample has fallen outside it: numbered_lazily), into mmap'd
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
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

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

static int kept(void);
int ps_modules_closing;
__thread unsigned long long ps_modules_on_behalf __attribute__((tls_model("initial-exec")));
__thread int ps_modules_closing_here __attribute__((tls_model("initial-exec")));
static unsigned long long map_adds; /* dlpi_adds when the map was taken */
static unsigned long long map_subs; /* and dlpi_subs */
/* A flat profile (no call paths) numbers what a dlopen loads only once a
 * sample has fallen outside the map (such a sample takes the number the
 * next refresh gives, ps_modules_key_at): a plugin loaded and unloaded
 * with no sample in it costs no refresh at its dlopen and no numbering at
 * its dlclose.  Call paths need the map current at once: the unwinder in
 * the handler finds the objects in it (unwind.c). */
static int unmapped_seen;
static int transient; /* objects in the map loaded after measurement began */
static __thread struct ps_modmap *seen_view; /* the collector's map with what /proc showed besides */
static __thread int nseen;                     /* mappings in it from /proc (hold_with_seen) */

static int numbered_lazily(void) { return ps_cct_maxdepth() == 0; }

/* A sample in a wrapper before it says whose work it does
 * (ps_modules_on_behalf) is charged to the real function too
 * (ps_modules_charge): the wrappers' extents, from their symbols. */
static void *(*real_dlopen)(const char *, int);
static void *(*real_dlmopen)(Lmid_t, const char *, int);
static int (*real_dlclose)(void *);
static unsigned long long wrapper_lo[3], wrapper_hi[3]; /* dlopen, dlmopen, dlclose */

static void find_wrappers(void);

/* This library's executable segment: a sample there that is not on the
 * program's behalf is psuite's own time (its exit path, the instructions
 * around a call into the program's main), which a bare run has none of. */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
static unsigned long long self_lo, self_hi;

static void find_self(void)
{
    const ElfW(Ehdr) *eh = &__ehdr_start;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    unsigned long long base = 0, lo = 0, hi = 0;
    for (int i = 0; i < eh->e_phnum; i++) /* the headers' own segment gives the load base */
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
            base = (unsigned long long)(uintptr_t)eh - ph[i].p_vaddr;
            break;
        }
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
            lo = base + ph[i].p_vaddr;
            hi = lo + ph[i].p_memsz;
        }
    self_lo = lo;
    __atomic_store_n(&self_hi, hi, __ATOMIC_RELEASE);
}

int ps_modules_is_self(unsigned long long pc)
{
    return pc >= self_lo && pc < __atomic_load_n(&self_hi, __ATOMIC_ACQUIRE);
}

unsigned long long ps_modules_charge(unsigned long long pc)
{
    unsigned long long instead = ps_modules_on_behalf;
    if (instead)
        return instead;
    void *real[3] = {(void *)real_dlopen, (void *)real_dlmopen, (void *)real_dlclose};
    for (int i = 0; i < 3; i++)
        if (pc >= wrapper_lo[i] && pc < __atomic_load_n(&wrapper_hi[i], __ATOMIC_ACQUIRE) && real[i])
            return (unsigned long long)(uintptr_t)real[i];
    return pc;
}

/* The loader's counts of objects loaded and unloaded so far. */
static int read_counts(struct dl_phdr_info *info, size_t size, void *data)
{
    unsigned long long *v = data;
    int known = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs;
    v[0] = known ? info->dlpi_adds : 0;
    v[1] = known ? info->dlpi_subs : 0;
    return 1;
}

/* The object a flat profile's dlclose is about to unload, while the map
 * does not have it: what the report needs of it, should a sample fall in
 * it during the real call (its destructors).  Found in the same pass that
 * reads the loader's counts. */
typedef struct {
    int counted;
    unsigned long long adds, subs;
    const struct link_map *lm;
    const ElfW(Phdr) *phdr;
    int phnum;
    unsigned long long base, lo, hi;
    unsigned char buildid[PS_BUILDID_MAX];
    unsigned buildid_len;
    char name[256];
} closing_t;

static int read_counts_and_find(struct dl_phdr_info *info, size_t size, void *data)
{
    closing_t *c = data;
    if (!c->counted) {
        unsigned long long v[2];
        read_counts(info, size, v);
        c->adds = v[0];
        c->subs = v[1];
        c->counted = 1;
        if (!c->lm)
            return 1;
    }
    if (info->dlpi_addr != c->lm->l_addr || info->dlpi_name != c->lm->l_name)
        return 0;
    c->phdr = info->dlpi_phdr;
    c->phnum = info->dlpi_phnum;
    c->base = info->dlpi_addr;
    return 1;
}

static int describe_closing(closing_t *c)
{
    const char *name = c->lm && c->phdr ? c->lm->l_name : NULL;
    size_t len = name ? strlen(name) : 0;
    if (!len || name[0] != '/' || len >= sizeof c->name)
        return 0; /* a relative or long name: numbered now, the usual way */
    memcpy(c->name, name, len + 1);
    c->lo = c->hi = 0;
    for (int i = 0; i < c->phnum; i++) {
        const ElfW(Phdr) *ph = &c->phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        unsigned long long lo = c->base + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!c->lo || lo < c->lo)
            c->lo = lo;
        if (hi > c->hi)
            c->hi = hi;
    }
    if (!c->lo)
        return 0;
    c->buildid_len = (unsigned)ps_buildid_of(c->phdr, (size_t)c->phnum, c->base, c->buildid, sizeof c->buildid);
    return 1;
}

static void retire_described(const closing_t *c);

/* a program's dlclose(NULL) is its own business: passed on untouched */
#pragma GCC diagnostic ignored "-Wnonnull-compare"
PS_API int dlclose(void *handle)
{
    int (*real)(void *) = real_dlclose;
    if (!real)
        real = real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    ps_modules_on_behalf = (unsigned long long)(uintptr_t)real;
    if (!handle || !ps_sampler_active() || !kept()) {
        ps_modules_on_behalf = 0;
        return real(handle);
    }
    /* An object loaded without a refresh (a dlopen passed on as is, the C
     * library's own, a flat profile's) gets its number before it can go;
     * in a flat profile only once a sample fell outside the map, else it is
     * described (closing_t) in case one falls in its destructors. */
    unsigned long long before[2], after[2];
    closing_t gone = {0};
    /* (the real dlclose clears a failed dlinfo's error, as it would any earlier one) */
    if (numbered_lazily() && dlinfo(handle, RTLD_DI_LINKMAP, (void *)&gone.lm) != 0)
        gone.lm = NULL;
    dl_iterate_phdr(read_counts_and_find, &gone);
    before[0] = gone.adds;
    before[1] = gone.subs;
    int described = 0;
    if (before[0] != __atomic_load_n(&map_adds, __ATOMIC_RELAXED)) {
        if (numbered_lazily() && !__atomic_load_n(&unmapped_seen, __ATOMIC_ACQUIRE))
            described = describe_closing(&gone);
        if (!described)
            ps_modules_refresh();
    }
    /* unwind.c's snapshot keeps to the permanent objects in the other
     * threads until the map is current again: what goes is unmapped */
    __atomic_add_fetch(&ps_modules_closing, 1, __ATOMIC_SEQ_CST);
    ps_unwind_quiesce();
    ps_modules_closing_here++;
    ps_modules_on_behalf = 0;
    int rc = real(handle);
    ps_modules_on_behalf = (unsigned long long)(uintptr_t)real;
    int saved = errno;
    ps_modules_closing_here--;
    dl_iterate_phdr(read_counts, after);
    if (described && rc == 0 && after[1] != before[1] && __atomic_load_n(&unmapped_seen, __ATOMIC_ACQUIRE))
        retire_described(&gone); /* a sample fell outside the map meanwhile: perhaps in it */
    /* nothing in the map can have gone when it holds only objects loaded
     * before measurement (a flat profile numbering lazily) */
    int map_unchanged = numbered_lazily() && !__atomic_load_n(&transient, __ATOMIC_ACQUIRE) && after[0];
    if (rc == 0 && (after[1] != before[1] || !after[0]) && !map_unchanged) { /* something was unloaded (or no counts) */
        unsigned unloads_before = ps_modules_unloads();
        ps_modules_refresh(); /* the instances gone from it are retired */
        if (ps_modules_unloads() != unloads_before)
            ps_unwind_flush(); /* libunwind's caches forget their frames */
    }
    __atomic_sub_fetch(&ps_modules_closing, 1, __ATOMIC_SEQ_CST);
    errno = saved;
    ps_modules_on_behalf = 0;
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
static char exe_path[PATH_MAX]; /* the executable's, read once */

/* Loads (instances) by number, from 1: the span of their executable
 * segments, the first number given by the refresh that numbered them, and
 * once unloaded their retired-module index.  Written under the refresh
 * lock, read by the report writers.  Numbers go up to KEY_OVERFLOW - 1 (the
 * key's bits above PS_KEY_SHIFT); later loads all share KEY_OVERFLOW, and
 * their samples go by address (to the last module unloaded there, when
 * none is loaded there now). */
#define KEY_OVERFLOW ((1u << (64 - PS_KEY_SHIFT)) - 1)
typedef struct {
    unsigned long long lo, hi;
    unsigned first;
    int rmod;                   /* -1: loaded */
} instance_t;
static instance_t *instances;   /* KEY_OVERFLOW entries, mmap'd (touched as used) */
static unsigned next_instance = 1;
static unsigned unloads;

unsigned ps_modules_unloads(void) { return __atomic_load_n(&unloads, __ATOMIC_ACQUIRE); }

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

/* The rooted entry of the object info describes, marked seen (NULL: none;
 * *free_slot the first free entry, if asked). */
static rooted_t *rooted_seen(const struct dl_phdr_info *info, int *free_slot)
{
    for (int i = 0; rooted && i < MAX_ROOTED; i++) {
        rooted_t *r = &rooted[i];
        if (r->name == info->dlpi_name && r->base == info->dlpi_addr && r->phdr == info->dlpi_phdr) {
            r->seen = 1;
            return r;
        }
        if (!r->name && free_slot && *free_slot < 0)
            *free_slot = i;
    }
    return NULL;
}

/* name, or the absolute path of the module at addr when name is relative
 * (a name without '/' - the vdso's "linux-vdso.so.1" - is no file's). */
static const char *rooted_name(const struct dl_phdr_info *info, unsigned long long addr, char *scratch, size_t cap)
{
    const char *name = info->dlpi_name;
    if (name[0] == '/' || !strchr(name, '/'))
        return name;
    int free_slot = -1;
    rooted_t *known = rooted_seen(info, &free_slot);
    if (known)
        return known->path;
    if (!segment_file(info, addr, scratch, cap) && !mapped_file(addr, scratch, cap))
        return name;
    if (!rooted) {
        void *p = ps_map(MAX_ROOTED * sizeof *rooted);
        if (p) {
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
    unsigned long long adds;    /* dlpi_adds, read in the same pass */
    unsigned long long subs;    /* dlpi_subs */
} fill_t;

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
    fill_t *f = data;
    int known = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs;
    f->adds = known ? info->dlpi_adds : 0;
    f->subs = known ? info->dlpi_subs : 0;
    char exe[PATH_MAX];
    const char *name = info->dlpi_name;
    int is_exe = !name || !*name;
    if (is_exe) { /* the executable */
        if (!exe_path[0]) {
            ssize_t n = readlink("/proc/thread-self/exe", exe, sizeof exe - 1);
            exe[n > 0 ? n : 0] = '\0';
            ps_strlcpy(exe_path, exe, sizeof exe_path);
        }
        name = exe_path;
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
            mod->lname = info->dlpi_name;
            mod->file_len = (unsigned)len - 1;
            mod->phnum = info->dlpi_phnum;
            mod->exe = is_exe;
            mod->instance = 0;
            mod->buildid_len = 0; /* number() reads it, for an object new to the map */
        }
        f->n++;
        f->names += len;
    }
    return 0;
}

/* By lo: dl_iterate_phdr lists the executable, then the libraries mostly
 * from the top of the address space down (mmap's order), so the list
 * reversed is nearly sorted and an insertion sort about linear. */
static void sort_by_lo(ps_module_t *v, int n)
{
    for (int i = 0, j = n - 1; i < j; i++, j--) {
        ps_module_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
    for (int i = 1; i < n; i++) {
        ps_module_t t = v[i];
        int j = i;
        for (; j > 0 && v[j - 1].lo > t.lo; j--)
            v[j] = v[j - 1];
        v[j] = t;
    }
}

/* Held by one thread at a time; the lock holds the holder's pid, so that a
 * child forked while a thread of its parent held it takes it over (that
 * thread is not in the child). */
static int lock_pid; /* getpid(), kept: a refresh comes with every dlopen and dlclose */

static void forget_lock_pid(void) { lock_pid = 0; }

static void lock_refresh(void)
{
    if (!lock_pid) {
        static int hooked;
        if (!hooked) /* a forked child asks again */
            hooked = pthread_atfork(NULL, NULL, forget_lock_pid) == 0;
        lock_pid = (int)getpid();
    }
    int me = lock_pid, held = 0;
    for (unsigned spins = 1; !__atomic_compare_exchange_n(&refresh_lock, &held, me, 0, __ATOMIC_SEQ_CST,
                                                          __ATOMIC_SEQ_CST); spins++) {
        if (held == me && spins % 1024 == 0) /* a child forked without the fork handlers? */
            me = lock_pid = (int)getpid();
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

/* The entry of map m for the same object segment as e, or NULL (m sorted by lo). */
static const ps_module_t *same_entry(const ps_modmap_t *m, const ps_module_t *e)
{
    int lo = 0, hi = m->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const ps_module_t *x = &m->v[mid];
        if (x->lo < e->lo)
            lo = mid + 1;
        else if (x->lo > e->lo)
            hi = mid - 1;
        else
            return x->phdr == e->phdr && x->base == e->base && strcmp(x->file, e->file) == 0 ? x : NULL;
    }
    return NULL;
}

/* Under the refresh lock: the next load number, for a load spanning
 * [lo, hi) numbered by the refresh whose first number is `first` (0: by
 * itself); KEY_OVERFLOW once numbers are used up or without memory. */
static unsigned take_instance(unsigned long long lo, unsigned long long hi, unsigned first)
{
    if (!instances)
        instances = ps_map(sizeof(instance_t) * KEY_OVERFLOW); /* the collector reads it (shared.c) */
    if (!instances || next_instance >= KEY_OVERFLOW)
        return KEY_OVERFLOW;
    unsigned n = next_instance;
    instances[n] = (instance_t){lo, hi, first ? first : n, -1};
    __atomic_store_n(&next_instance, n + 1, __ATOMIC_RELEASE);
    return n;
}

/* Under the refresh lock: m's objects numbered - as in the last map, or
 * anew for those it did not have (one number per object, its segments
 * sharing it). */
static void number(ps_modmap_t *m, const ps_modmap_t *old, const int *from)
{
    unsigned first = next_instance;
    for (int i = 0; i < m->n; i++) {
        ps_module_t *e = &m->v[i];
        if (from && from[i] >= 0)
            continue; /* copied whole from the old map: numbered as it was */
        const ps_module_t *was = from ? NULL : old ? same_entry(old, e) : NULL;
        if (was) { /* as it was */
            e->permanent = was->permanent;
            e->instance = was->instance;
            e->buildid_len = was->buildid_len;
            memcpy(e->buildid, was->buildid, was->buildid_len);
            continue;
        }
        /* kept with the record: the report names it for a module long dlclose'd too */
        e->buildid_len = (unsigned)ps_buildid_of(e->phdr, e->phnum, e->base, e->buildid, sizeof e->buildid);
        e->permanent = 0;
        for (int k = 0; k < ninitial && !e->permanent; k++)
            e->permanent = initial[k] == e->phdr;
        if (e->permanent)
            continue;
        for (int k = 0; k < i && !e->instance; k++) /* another segment of an object numbered just now */
            if (m->v[k].phdr == e->phdr && m->v[k].base == e->base && m->v[k].instance >= first)
                e->instance = m->v[k].instance;
        if (!e->instance) {
            e->instance = take_instance(e->lo, e->hi, first);
            continue;
        }
        if (e->instance < KEY_OVERFLOW) {
            instance_t *r = &instances[e->instance];
            if (e->lo < r->lo)
                r->lo = e->lo;
            if (e->hi > r->hi)
                r->hi = e->hi;
        }
    }
}

/* After the real dlclose: the described object numbered and retired at
 * once, so that samples in it resolve to it (ps_modules_resolve looks
 * past their own number's refresh). */
static void retire_described(const closing_t *c)
{
    lock_refresh();
    unsigned n = take_instance(c->lo, c->hi, 0);
    if (n && n < KEY_OVERFLOW) {
        int rmod = ps_sampler_retired_add(c->name, c->base, c->lo, c->hi, c->buildid, c->buildid_len);
        __atomic_store_n(&instances[n].rmod, rmod < 0 ? -2 : rmod, __ATOMIC_RELEASE);
        __atomic_add_fetch(&unloads, 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&refresh_lock, 0, __ATOMIC_SEQ_CST);
}

/* Under the refresh lock: m becomes the map. */
static void publish(ps_modmap_t *m)
{
    int later = 0;
    for (int i = 0; i < m->n; i++)
        later += !m->v[i].permanent;
    __atomic_store_n(&transient, later, __ATOMIC_RELEASE);
    __atomic_store_n(&current, m, __ATOMIC_SEQ_CST);
}

/* Under the refresh lock: the objects of the old map that the new one has
 * not are unloaded; each is kept under its number (its samples go to it).
 * kept: per old entry, whether the new map has it (NULL: look it up). */
static void retire_gone(const ps_modmap_t *old, const ps_modmap_t *m, const unsigned char *kept)
{
    for (int i = 0; i < old->n; i++) {
        const ps_module_t *e = &old->v[i];
        if (!e->instance || (kept ? kept[i] : same_entry(m, e) != NULL))
            continue;
        unsigned long long lo = e->lo, hi = e->hi;
        if (e->instance < KEY_OVERFLOW) {
            instance_t *r = &instances[e->instance];
            if (r->rmod != -1)
                continue; /* another segment of it, retired already */
            lo = r->lo;
            hi = r->hi;
        }
        int rmod = ps_sampler_retired_add(e->file, e->base, lo, hi, e->buildid, e->buildid_len);
        if (e->instance < KEY_OVERFLOW)
            __atomic_store_n(&instances[e->instance].rmod, rmod < 0 ? -2 : rmod, __ATOMIC_RELEASE);
        __atomic_add_fetch(&unloads, 1, __ATOMIC_RELEASE);
    }
}

/* ---- the incremental refresh -------------------------------------------
 * After a dlopen or dlclose the map changes by the objects loaded or
 * unloaded, not more: the objects still loaded are known again by their
 * program headers (a hash of the old map's), their entries copied with
 * their numbers, build-ids and absolute names; only new objects go through
 * add_module.  So psuite's part of a dlopen or dlclose costs a pass of the
 * loader's list and a copy, not a map built anew (a program with hundreds
 * of libraries paid for all of them at every plugin load). */

typedef struct {
    const void *phdr;           /* NULL: free */
    ElfW(Addr) base;
    const char *lname;
    unsigned long long lo, hi;  /* its lowest executable segment (its shape: a name's memory may be reused) */
    int phnum;
    int present;                /* seen in this pass */
} known_t;

typedef struct {
    known_t *hash;
    unsigned mask, bits;        /* mask = 2^bits - 1 */
    fill_t fresh;               /* the new objects' entries */
    unsigned long long adds, subs;
    int shape;                  /* -1: not known yet; 1: check the shape of objects known again */
    int changed;                /* an object of the old map not matched by pointers: rebuild */
} inc_t;

/* Scratch for one refresh (under the refresh lock), grown as needed. */
static void *inc_area;
static size_t inc_bytes;

static known_t *known_slot(const inc_t *c, const void *phdr)
{
    /* Fibonacci hashing: the product's top bits (only they mix all of the
     * address; headers lie at page-aligned bases plus one offset) */
    unsigned h = (unsigned)(((unsigned long long)(uintptr_t)phdr * 0x9E3779B97F4A7C15ull) >> (64 - c->bits));
    while (c->hash[h].phdr && c->hash[h].phdr != phdr)
        h = (h + 1) & c->mask;
    return &c->hash[h];
}

static int inc_module(struct dl_phdr_info *info, size_t size, void *data)
{
    inc_t *c = data;
    if (c->shape < 0) {
        int counted = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs;
        c->adds = counted ? info->dlpi_adds : 0;
        c->subs = counted ? info->dlpi_subs : 0;
        /* An object can have taken the place (headers, name's memory) of
         * one unloaded only if objects were both unloaded and loaded since
         * the last refresh: then the shape is compared too. */
        c->shape = !counted || (c->adds != __atomic_load_n(&map_adds, __ATOMIC_RELAXED) &&
                                c->subs != __atomic_load_n(&map_subs, __ATOMIC_RELAXED));
    }
    known_t *k = known_slot(c, info->dlpi_phdr);
    unsigned long long lo = 0, hi = 0;
    for (int i = 0; c->shape && k->phdr && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && (!lo || info->dlpi_addr + ph->p_vaddr < lo)) {
            lo = info->dlpi_addr + ph->p_vaddr;
            hi = lo + ph->p_memsz;
        }
    }
    if (k->phdr && k->base == info->dlpi_addr && k->lname == info->dlpi_name && k->phnum == info->dlpi_phnum &&
        (!c->shape || (k->lo == lo && k->hi == hi))) {
        k->present = 1;
        const char *name = info->dlpi_name;
        if (name && name[0] && name[0] != '/' && strchr(name, '/')) /* its rooted name stays in use */
            rooted_seen(info, NULL);
        return 0;
    }
    if (k->phdr) { /* same headers, another load or name: the full refresh tells them apart */
        c->changed = 1;
        return 1;
    }
    add_module(info, size, &c->fresh);
    return c->fresh.overflow;
}

/* Under the refresh lock: the new map from the old one and the loader's
 * list; 0 when it could not be done so (the full refresh follows). */
static int refresh_from(ps_modmap_t *old)
{
    unsigned hsize = 64, bits = 6;
    while (hsize < 2u * (unsigned)old->n + 64) {
        hsize *= 2;
        bits++;
    }
    size_t fresh_cap = 64;
    size_t need = hsize * sizeof(known_t) + sizeof(ps_modmap_t) + fresh_cap * sizeof(ps_module_t) +
                  fresh_cap * PATH_MAX / 4 + (size_t)old->n * (sizeof(int) + 1) + 4096;
    if (need > inc_bytes) {
        if (inc_area)
            munmap(inc_area, inc_bytes);
        inc_bytes = (need + 65535) & ~(size_t)65535;
        inc_area = mmap(NULL, inc_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (inc_area == MAP_FAILED) {
            inc_area = NULL;
            inc_bytes = 0;
            return 0;
        }
    }
    char *p = inc_area;
    inc_t c = {0};
    c.shape = -1;
    c.hash = (known_t *)p;
    c.mask = hsize - 1;
    c.bits = bits;
    memset(c.hash, 0, hsize * sizeof(known_t));
    p += hsize * sizeof(known_t);
    ps_modmap_t *fresh = (ps_modmap_t *)p;
    size_t fresh_bytes = sizeof(ps_modmap_t) + fresh_cap * sizeof(ps_module_t) + fresh_cap * PATH_MAX / 4;
    fresh->bytes = fresh_bytes;
    fresh->n = 0;
    p += (fresh_bytes + 15) & ~(size_t)15;
    unsigned char *kept = (unsigned char *)p;
    for (int i = 0; i < old->n; i++) {
        const ps_module_t *e = &old->v[i];
        known_t *k = known_slot(&c, e->phdr);
        if (!k->phdr) /* its first entry by lo: its lowest executable segment */
            *k = (known_t){e->phdr, e->base, e->lname, e->lo, e->hi, e->phnum, 0};
        else if (k->base != e->base || k->lname != e->lname)
            return 0; /* two objects with one header address: never, but not here */
    }
    c.fresh = (fill_t){fresh, 0, 0, fresh_cap, (char *)&fresh->v[fresh_cap], 0, 0, 0};
    dl_iterate_phdr(inc_module, &c);
    if (c.changed || c.fresh.overflow)
        return 0;
    int nold = 0;
    size_t names = 0;
    for (int i = 0; i < old->n; i++) {
        kept[i] = known_slot(&c, old->v[i].phdr)->present;
        if (kept[i]) {
            nold++;
            names += old->v[i].file_len + 1;
        }
    }
    if (nold == old->n && !c.fresh.n) { /* nothing came or went */
        __atomic_store_n(&map_adds, c.adds, __ATOMIC_RELAXED);
        __atomic_store_n(&map_subs, c.subs, __ATOMIC_RELAXED);
        return 1;
    }
    int n = nold + c.fresh.n;
    size_t bytes = sizeof(ps_modmap_t) + (size_t)(n + 16) * sizeof(ps_module_t) + names + c.fresh.names + PATH_MAX;
    ps_modmap_t *m = claim(bytes);
    if (!m)
        return 0;
    sort_by_lo(fresh->v, c.fresh.n);
    /* merged by lo: the old map's entries (sorted) and the new ones */
    char *text = (char *)&m->v[n], *end = (char *)m + m->bytes;
    int *from = (int *)(kept + ((old->n + 7) & ~7));
    int i = 0, j = 0, k = 0;
    while (i < old->n || j < c.fresh.n) {
        if (i < old->n && !kept[i]) {
            i++;
            continue;
        }
        int take_old = j >= c.fresh.n || (i < old->n && old->v[i].lo <= fresh->v[j].lo);
        const ps_module_t *e = take_old ? &old->v[i] : &fresh->v[j];
        size_t len = e->file_len + 1;
        if (text + len > end)
            return 0;
        m->v[k] = *e;
        memcpy(text, e->file, len);
        m->v[k].file = text;
        text += len;
        from[k] = take_old ? i : -1;
        k++;
        if (take_old)
            i++;
        else
            j++;
    }
    m->n = k;
    number(m, old, from);
    publish(m);
    retire_gone(old, m, kept);
    __atomic_store_n(&map_adds, c.adds, __ATOMIC_RELAXED);
    __atomic_store_n(&map_subs, c.subs, __ATOMIC_RELAXED);
    return 1;
}

void ps_modules_refresh(void)
{
    int saved = errno;
    lock_refresh();
    /* samples from here on see this map or the next: outside it, they say so again */
    __atomic_store_n(&unmapped_seen, 0, __ATOMIC_RELEASE);
    if (!wrapper_hi[2])
        find_wrappers();
    if (!self_hi)
        find_self();
    /* sized as the last one needed, counted first only when it overflows */
    static size_t last_n, last_names;
    for (int i = 0; rooted && i < MAX_ROOTED; i++)
        rooted[i].seen = 0;
    ps_modmap_t *was = __atomic_load_n(&current, __ATOMIC_SEQ_CST);
    if (was && refresh_from(was)) {
        for (int i = 0; rooted && i < MAX_ROOTED; i++)
            if (!rooted[i].seen) /* unloaded: another object may come at its address */
                rooted[i].name = NULL;
        __atomic_store_n(&refresh_lock, 0, __ATOMIC_SEQ_CST);
        errno = saved;
        return;
    }
    for (int i = 0; rooted && i < MAX_ROOTED; i++)
        rooted[i].seen = 0;
    for (int tries = 0; tries < 4; tries++) {
        fill_t f = {0};
        if (tries || !last_n) {
            dl_iterate_phdr(add_module, &f);
            last_n = (size_t)f.n;
            last_names = f.names;
        }
        /* room for a few more: another thread's dlopen may add some meanwhile */
        size_t cap = last_n + 16;
        size_t bytes = sizeof(ps_modmap_t) + cap * sizeof(ps_module_t) + last_names + 16 * PATH_MAX;
        ps_modmap_t *m = claim(bytes);
        if (!m)
            break;
        f = (fill_t){m, 0, 0, cap, (char *)&m->v[cap], 0};
        dl_iterate_phdr(add_module, &f);
        if (f.overflow)
            continue;
        last_n = (size_t)f.n;
        last_names = f.names;
        sort_by_lo(m->v, f.n);
        m->n = f.n;
        if (ninitial < 0)
            for (int i = ninitial = 0; i < f.n && ninitial < MAX_INITIAL; i++)
                initial[ninitial++] = m->v[i].phdr;
        ps_modmap_t *old = __atomic_load_n(&current, __ATOMIC_SEQ_CST);
        number(m, old, NULL);
        publish(m);
        if (old)
            retire_gone(old, m, NULL);
        __atomic_store_n(&map_adds, f.adds, __ATOMIC_RELAXED);
        __atomic_store_n(&map_subs, f.subs, __ATOMIC_RELAXED);
        for (int i = 0; rooted && i < MAX_ROOTED; i++)
            if (!rooted[i].seen) /* unloaded: another object may come at its address */
                rooted[i].name = NULL;
        break;
    }
    __atomic_store_n(&refresh_lock, 0, __ATOMIC_SEQ_CST);
    errno = saved;
}

static const ps_modmap_t *hold_with_seen(const ps_module_t **v, int *n);

const ps_modmap_t *ps_modules_hold(const ps_module_t **v, int *n)
{
    if (ps_in_collector() && nseen)
        return hold_with_seen(v, n);
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
    if (m && m != seen_view)
        __atomic_sub_fetch(&((ps_modmap_t *)m)->readers, 1, __ATOMIC_SEQ_CST);
}

/* ---- the collector's view of modules the map does not have ------------
 * A flat profile numbers a dlopen'd object once a sample falls in it, at
 * the program's next refresh (its next dlopen or dlclose, its end).  A
 * program that dies before (SIGKILL, a fatal signal) has its reports
 * written by its collector, which cannot ask the program's loader: while a
 * sample has fallen outside the map (unmapped_seen, shared), the collector
 * reads the program's executable file mappings from /proc/PID/maps (at
 * most once a second), and its writers see them beside the map's entries
 * (hold_with_seen), so those samples keep their module (no build-id is
 * known for them). */
#define SEEN_MAX 256
typedef struct {
    unsigned long long lo, hi, base;
    char file[PATH_MAX];
} seen_t;
static __thread seen_t *seen;          /* collector-private, mmap'd */
static __thread long long seen_ns;

/* One line of /proc/PID/maps: an executable mapping of a file kept. */
static void seen_line(char *line)
{
    unsigned long long lo, hi, off;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &path_at) < 4 || !path_at)
        return;
    if (perms[2] != 'x' || line[path_at] != '/' || nseen == SEEN_MAX)
        return;
    seen_t *e = &seen[nseen];
    if (ps_strlcpy(e->file, line + path_at, sizeof e->file) >= sizeof e->file)
        return;
    e->lo = lo;
    e->hi = hi;
    e->base = lo - off; /* the load bias where segments keep their file offsets (as linkers lay them out) */
    nseen++;
}

void ps_modules_collector_tick(pid_t pid, long long now)
{
    if (!__atomic_load_n(&unmapped_seen, __ATOMIC_ACQUIRE))
        return;
    if (seen && now - seen_ns < 1000000000LL)
        return;
    if (!seen) {
        void *m = mmap(NULL, sizeof(seen_t) * SEEN_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return;
        seen = m;
    }
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    int was = nseen;
    nseen = 0;
    size_t have = 0;
    for (;;) {
        ssize_t got = read(fd, buf + have, sizeof buf - 1 - have);
        if (got <= 0)
            break;
        have += (size_t)got;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = '\0';
            seen_line(line);
            line = nl + 1;
        }
        have = (size_t)(buf + have - line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) /* a line longer than the buffer: dropped */
            have = 0;
    }
    close(fd);
    if (!nseen && was) /* read nothing (the program gone meanwhile): keep the last look */
        nseen = was;
    seen_ns = now;
}

/* In the collector: the map with the mappings seen added where it has
 * nothing (built anew at each hold, in private memory). */
static const ps_modmap_t *hold_with_seen(const ps_module_t **v, int *n)
{
    const ps_module_t *cv;
    int cn;
    ps_modmap_t *m = __atomic_load_n(&current, __ATOMIC_SEQ_CST);
    if (m && !ps_shared_contains(m))
        m = NULL;
    cv = m ? m->v : NULL;
    cn = m ? m->n : 0;
    size_t bytes = sizeof(ps_modmap_t) + (size_t)(cn + nseen) * sizeof(ps_module_t);
    if (!seen_view || seen_view->bytes < bytes) {
        if (seen_view)
            munmap(seen_view, seen_view->bytes);
        bytes = (bytes + 65535) & ~(size_t)65535;
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        seen_view = p == MAP_FAILED ? NULL : p;
        if (!seen_view) {
            *v = cv;
            *n = cn;
            return NULL;
        }
        seen_view->bytes = bytes;
    }
    int k = 0;
    for (int i = 0; i < cn; i++)
        seen_view->v[k++] = cv[i];
    for (int j = 0; j < nseen; j++) {
        int covered = 0;
        for (int i = 0; i < cn && !covered; i++)
            covered = seen[j].lo < cv[i].hi && cv[i].lo < seen[j].hi;
        if (covered)
            continue;
        ps_module_t *e = &seen_view->v[k++];
        memset(e, 0, sizeof *e);
        e->lo = seen[j].lo;
        e->hi = seen[j].hi;
        e->base = seen[j].base;
        e->file = seen[j].file;
        e->file_len = (unsigned)strlen(seen[j].file);
        e->instance = KEY_OVERFLOW; /* a load of its own, not one of the map's */
    }
    seen_view->n = k;
    sort_by_lo(seen_view->v, k);
    seen_view->readers = 0;
    *v = seen_view->v;
    *n = k;
    return seen_view;
}

static int kept(void) { return __atomic_load_n(&current, __ATOMIC_ACQUIRE) != NULL; }

unsigned long long ps_modules_key_at(unsigned long long addr, unsigned long long look)
{
    if (addr >> PS_KEY_SHIFT)
        return addr;
    const ps_module_t *v;
    int n;
    const ps_modmap_t *held = ps_modules_hold(&v, &n);
    if (!held)
        return addr;
    unsigned tag = 0;
    int lo = 0, hi = n - 1, found = 0;
    while (lo <= hi && !found) {
        int mid = (lo + hi) / 2;
        if (look < v[mid].lo)
            hi = mid - 1;
        else if (look >= v[mid].hi)
            lo = mid + 1;
        else {
            found = 1;
            tag = v[mid].instance;
        }
    }
    ps_modules_release(held);
    if (!found) { /* loaded since the map was taken: it will have the next number */
        tag = __atomic_load_n(&next_instance, __ATOMIC_ACQUIRE);
        if (!__atomic_load_n(&unmapped_seen, __ATOMIC_RELAXED))
            __atomic_store_n(&unmapped_seen, 1, __ATOMIC_RELEASE);
    }
    return addr | (unsigned long long)tag << PS_KEY_SHIFT;
}

int ps_modules_resolve(unsigned long long key, unsigned long long *pc)
{
    unsigned tag = (unsigned)(key >> PS_KEY_SHIFT);
    unsigned long long a = *pc = PS_KEY_PC(key);
    if (!tag)
        return -1;
    unsigned next = __atomic_load_n(&next_instance, __ATOMIC_ACQUIRE);
    if (tag < KEY_OVERFLOW) {
        if (tag >= next || !instances || (ps_in_collector() && !ps_shared_contains(instances)))
            return -1;
        /* its own number, or (a PC sampled before its object was numbered)
         * one of those the next numbering gave, or (numbered apart: an
         * object a flat profile's dlclose retired at once, retire_described)
         * one of the few numbers after */
        for (unsigned u = tag; u < next && (instances[u].first == instances[tag].first || u < tag + 64); u++)
            if (a >= instances[u].lo && a < instances[u].hi) {
                int rmod = __atomic_load_n(&instances[u].rmod, __ATOMIC_ACQUIRE);
                return rmod >= 0 ? rmod : -1;
            }
        return -1;
    }
    /* numbers used up: loaded there now, else the last module unloaded there */
    const ps_module_t *v;
    int n, here = 0;
    const ps_modmap_t *held = ps_modules_hold(&v, &n);
    for (int i = 0; i < n && !here; i++)
        here = a >= v[i].lo && a < v[i].hi;
    ps_modules_release(held);
    unsigned long long base, lo, hi;
    int last = -1;
    for (int k = 0; !here && ps_sampler_retired_module(k, &base); k++)
        if (ps_sampler_retired_span(k, &lo, &hi) && a >= lo && a < hi)
            last = k;
    return last;
}

/* After a dlopen: the map refreshed if it loaded something (not for an
 * object loaded already). */
static void refresh_if_loaded(void)
{
    unsigned long long counts[2];
    dl_iterate_phdr(read_counts, counts);
    if (!counts[0] || counts[0] != __atomic_load_n(&map_adds, __ATOMIC_RELAXED))
        ps_modules_refresh();
}

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

/* After the real dlopen or dlmopen: what it loaded numbered and mapped, the
 * time spent on it charged to the real call (ps_modules_on_behalf).  Inlined:
 * the wrapper's own extent charges its instructions to the real call too. */
static inline __attribute__((always_inline)) void *loaded(void *h, void *real)
{
    if (h && (!numbered_lazily() || __atomic_load_n(&unmapped_seen, __ATOMIC_ACQUIRE))) {
        ps_modules_on_behalf = (unsigned long long)(uintptr_t)real;
        int saved = errno;
        refresh_if_loaded();
        errno = saved;
        ps_modules_on_behalf = 0;
    }
    return h;
}

PS_API void *dlopen(const char *file, int mode)
{
    void *(*real)(const char *, int) = real_dlopen;
    if (!real)
        real = real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    if (!real)
        return NULL;
    ps_modules_on_behalf = (unsigned long long)(uintptr_t)real;
    if (!kept() || caller_matters(file, __builtin_return_address(0), 1)) {
        ps_modules_on_behalf = 0;
        return real(file, mode);
    }
    ps_modules_on_behalf = 0;
    return loaded(real(file, mode), (void *)real);
}

PS_API void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
    void *(*real)(Lmid_t, const char *, int) = real_dlmopen;
    if (!real)
        real = real_dlmopen = (void *(*)(Lmid_t, const char *, int))dlsym(RTLD_NEXT, "dlmopen");
    if (!real)
        return NULL;
    ps_modules_on_behalf = (unsigned long long)(uintptr_t)real;
    if (!kept() || caller_matters(file, __builtin_return_address(0), 0)) {
        ps_modules_on_behalf = 0;
        return real(lmid, file, mode);
    }
    ps_modules_on_behalf = 0;
    return loaded(real(lmid, file, mode), (void *)real);
}

/* The wrappers under names of the library's own (never interposed). */
extern __typeof(dlopen) self_dlopen __attribute__((alias("dlopen"), visibility("hidden")));
extern __typeof(dlmopen) self_dlmopen __attribute__((alias("dlmopen"), visibility("hidden")));
extern __typeof(dlclose) self_dlclose __attribute__((alias("dlclose"), visibility("hidden")));

static void find_wrappers(void)
{
    void *fn[3] = {(void *)self_dlopen, (void *)self_dlmopen, (void *)self_dlclose};
    for (int i = 0; i < 3; i++) {
        Dl_info info;
        const ElfW(Sym) *sym = NULL;
        if (!wrapper_hi[i] && dladdr1(fn[i], &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
            info.dli_saddr == fn[i] && sym->st_size) {
            wrapper_lo[i] = (unsigned long long)(uintptr_t)fn[i];
            __atomic_store_n(&wrapper_hi[i], wrapper_lo[i] + sym->st_size, __ATOMIC_RELEASE);
        }
    }
}
