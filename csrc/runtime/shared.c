/* shared.c - the recorder's memory, shared with its collector.
 *
 * Everything the report writers read lives in two places: the library's
 * own writable data (its globals) and the blocks psuite maps for samples,
 * call-path trees, module maps and per-thread counts.  Under psrun both
 * are made shared anonymous memory before the collector is forked
 * (collector.c): the collector, a fork of the program taken before main,
 * then sees every update at the same addresses, runs the same writers on
 * them, and still holds them after the program has died however it died
 * (SIGKILL, exit_group).  Shared anonymous memory needs no descriptor in
 * either process (a memfd would have to stay open in the program to grow),
 * and a fork shares it with the same addresses, so the writers' pointers
 * stay valid without translation.
 *
 * The blocks come from an arena reserved before the fork (MAP_NORESERVE:
 * pages cost memory only when touched).  Anonymous memory mapped after the
 * fork would not be seen by the collector, so the arena grows by System V
 * shared memory segments: no descriptor, removed (IPC_RMID) as soon as the
 * program has attached one, and attached by the collector at the same
 * address while the program still holds it (Linux lets a segment marked
 * for removal be attached by its id), so nothing outlives the two
 * processes however they end.  Without an RLIMIT_AS the first reservation
 * is large (address space costs nothing) and growth is rare; under one the
 * arena starts small and grows with what is recorded, so the program keeps
 * its room.  When no more can be had, ps_map returns private memory (the
 * program then writes its own reports) or NULL, and the callers count what
 * they could not record.
 *
 * A child the program forks must not write into its parent's records: the
 * first thing it does (an atfork child handler registered before any
 * other of psuite's) is to give itself private copies of the shared pages
 * it has (only the resident ones are copied: untouched shared pages read as
 * zeros anyway).  A child psrun -f measures then makes its copies shared
 * again for a collector of its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include "internal.h"

/* The library's own writable data past its RELRO part (page aligned). */
static unsigned long data_lo, data_hi;
/* The arena's extents: the first reserved before the fork, the others
 * System V segments.  The last one, [arena, arena + arena_size), is handed
 * out from the bottom. */
#define MAX_EXTENTS 256
static struct { char *p; size_t len; } extents[MAX_EXTENTS];
static int nextents;
static char *arena;
static size_t arena_size, arena_used;
#define GROW_MIN ((size_t)2 << 20)
#define GROW_MAX ((size_t)256 << 20)
#define GROW_TRIES 8 /* addresses offered to the collector for one segment */
static size_t extents_total; /* bytes in all extents */
static int shared_on;     /* the regions are shared (with a collector, or about to be) */
static int overflowed;    /* a block had to come from private memory: the collector cannot see it */
static int arena_lock;
/* Blocks given back, reused for requests of the same size or less. */
#define FREE_BLOCKS 256
static struct { char *p; size_t len; } freed[FREE_BLOCKS];
static int nfreed;

static size_t page(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

static int own_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    unsigned long self = (unsigned long)(void *)own_segment;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        unsigned long lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && self >= lo && self < lo + ph->p_memsz)
            mine = 1;
    }
    if (!mine)
        return 0;
    unsigned long rw_lo = 0, rw_hi = 0, relro_hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        unsigned long lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            rw_lo = lo;
            rw_hi = lo + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_RELRO)
            relro_hi = lo + ph->p_memsz;
    }
    unsigned long pg = page();
    unsigned long start = relro_hi > rw_lo ? relro_hi : rw_lo;
    data_lo = (start + pg - 1) & ~(pg - 1);
    data_hi = (rw_hi + pg - 1) & ~(pg - 1);
    return 1;
}

/* [lo, hi) replaced by memory of the kind `flags` holding the same bytes:
 * the resident pages copied (the others read as zeros in both). */
static int remap_copy(char *lo, size_t len, int flags)
{
    size_t pg = page(), npages = len / pg;
    char *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (copy == MAP_FAILED)
        return -1;
    unsigned char vec[4096];
    for (size_t at = 0; at < npages; at += sizeof vec) {
        size_t k = npages - at < sizeof vec ? npages - at : sizeof vec;
        if (mincore(lo + at * pg, k * pg, vec) != 0)
            memset(vec, 1, k); /* cannot tell: copy them all */
        for (size_t j = 0; j < k; j++)
            if (vec[j] & 1)
                memcpy(copy + (at + j) * pg, lo + (at + j) * pg, pg);
    }
    if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, lo) == MAP_FAILED) {
        munmap(copy, len);
        return -1;
    }
    return 0;
}

static void lock_arena(void)
{
    while (__atomic_exchange_n(&arena_lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}
static void unlock_arena(void) { __atomic_store_n(&arena_lock, 0, __ATOMIC_RELEASE); }

static void child_first(void)
{
    ps_shared_after_fork();
    ps_collector_after_fork();
}

int ps_shared_init(size_t arena_bytes)
{
    if (shared_on)
        return 0;
    if (!data_lo)
        dl_iterate_phdr(own_segment, NULL);
    if (!data_lo || data_hi <= data_lo)
        return -1;
    /* The arena first: once the globals are shared, a failure here would
     * leave them so for nothing. */
    size_t pg = page();
    arena_bytes = (arena_bytes + pg - 1) & ~(pg - 1);
    char *a = NULL;
    if (arena_bytes) {
        a = mmap(NULL, arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED)
            return -1;
    }
    if (remap_copy((char *)data_lo, data_hi - data_lo, MAP_SHARED) != 0) {
        if (a)
            munmap(a, arena_bytes);
        return -1;
    }
    static int hooked;
    if (!hooked++) /* registered before psuite's other fork handlers: it runs first in the child */
        pthread_atfork(NULL, NULL, child_first);
    /* from here on, every global is in shared memory */
    arena = a;
    arena_size = a ? arena_bytes : 0;
    arena_used = 0;
    nextents = 0;
    if (a) {
        extents[0].p = a;
        extents[0].len = arena_bytes;
        nextents = 1;
    }
    extents_total = arena_bytes;
    nfreed = 0;
    shared_on = 1;
    return 0;
}

int ps_shared_active(void) { return shared_on; }
int ps_shared_overflowed(void) { return __atomic_load_n(&overflowed, __ATOMIC_ACQUIRE); }

static int in_extents(const char *c)
{
    for (int i = 0; i < nextents; i++)
        if (c >= extents[i].p && c < extents[i].p + extents[i].len)
            return 1;
    return 0;
}

/* A new extent of at least `bytes`, seen by the collector, made the one
 * blocks are cut from; 0, or -1 when none can be had.  Called with the
 * arena locked. */
static int grow(size_t bytes)
{
    if (nextents >= MAX_EXTENTS)
        return -1;
    /* a quarter of what there is: few segments, little room unused */
    size_t len = extents_total / 4;
    len = len < GROW_MIN ? GROW_MIN : len > GROW_MAX ? GROW_MAX : len;
    len = (len + page() - 1) & ~(page() - 1);
    if (bytes > len)
        len = bytes;
    int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
    if (id < 0)
        return -1;
    char *p = shmat(id, NULL, 0);
    if (p == (char *)-1) {
        shmctl(id, IPC_RMID, NULL);
        return -1;
    }
    /* removed now: it goes when the last process holding it does */
    shmctl(id, IPC_RMID, NULL);
    /* The collector's address space is the program's as it was at the
     * fork, plus what the collector mapped since (its stack, which the
     * program unmapped): where the kernel put the segment here may be
     * taken there.  The refused attachment is held while the segment is
     * attached again (the kernel then picks another address) and let go
     * once one is accepted. */
    char *refused[GROW_TRIES];
    int nrefused = 0, rc;
    while ((rc = ps_collector_attach(id, p)) == -1 && nrefused < GROW_TRIES - 1) {
        refused[nrefused++] = p;
        if ((p = shmat(id, NULL, 0)) == (char *)-1)
            break;
    }
    while (nrefused > 0)
        shmdt(refused[--nrefused]);
    if (p == (char *)-1)
        return -1;
    if (rc < 0) {
        shmdt(p);
        return -1;
    }
    /* what is left of the current extent stays usable */
    if (arena && arena_size > arena_used && nfreed < FREE_BLOCKS) {
        freed[nfreed].p = arena + arena_used;
        freed[nfreed].len = arena_size - arena_used;
        nfreed++;
    }
    extents[nextents].p = p;
    extents[nextents].len = len;
    nextents++;
    extents_total += len;
    arena = p;
    arena_size = len;
    arena_used = 0;
    return 0;
}

void *ps_map(size_t bytes)
{
    if (!shared_on) {
        void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    size_t pg = page();
    bytes = ((bytes ? bytes : 1) + pg - 1) & ~(pg - 1);
    void *p = NULL;
    lock_arena();
    int best = -1;
    for (int i = 0; i < nfreed; i++)
        if (freed[i].len >= bytes && (best < 0 || freed[i].len < freed[best].len))
            best = i;
    if (best >= 0) {
        p = freed[best].p;
        /* the rest of a larger block stays free */
        if (freed[best].len > bytes) {
            freed[best].p += bytes;
            freed[best].len -= bytes;
        } else
            freed[best] = freed[--nfreed];
    } else if ((arena && arena_size - arena_used >= bytes) || grow(bytes) == 0) {
        p = arena + arena_used;
        arena_used += bytes;
    }
    unlock_arena();
    if (!p) {
        /* The arena is full: private memory, as without a collector.  The
         * program then writes its reports itself at a normal end, and a
         * collector writing after a kill leaves such blocks out (counted). */
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        __atomic_store_n(&overflowed, 1, __ATOMIC_RELEASE);
    }
    return p;
}

void ps_unmap(void *p, size_t bytes)
{
    if (!p)
        return;
    char *c = p;
    if (!in_extents(c)) {
        munmap(p, bytes ? bytes : 1);
        return;
    }
    size_t pg = page();
    bytes = ((bytes ? bytes : 1) + pg - 1) & ~(pg - 1);
    /* its pages given back to the system, zero when used again */
    madvise(c, bytes, MADV_REMOVE);
    lock_arena();
    if (nfreed < FREE_BLOCKS) {
        freed[nfreed].p = c;
        freed[nfreed].len = bytes;
        nfreed++;
    }
    unlock_arena();
}

/* [p, p + bytes) zero again, its memory given back: MADV_DONTNEED does
 * that for private memory only (shared pages come back as they were). */
int ps_zero(void *p, size_t bytes)
{
    if (in_extents(p))
        return madvise(p, bytes, MADV_REMOVE);
    return madvise(p, bytes, MADV_DONTNEED);
}

int ps_shared_contains(const void *p)
{
    const char *c = p;
    return shared_on && ((unsigned long)c >= data_lo && (unsigned long)c < data_hi ? 1 : in_extents(c));
}

/* In a forked child, before anything else of psuite's runs there. */
void ps_shared_after_fork(void)
{
    if (!shared_on)
        return;
    /* the parent's lock state is the parent's */
    arena_lock = 0;
    remap_copy((char *)data_lo, data_hi - data_lo, MAP_PRIVATE); /* from here on, the globals are the child's */
    size_t pg = page();
    for (int i = 0; i < nextents; i++) {
        /* the part in use copied; the rest of the current extent, where
         * the parent goes on allocating, replaced by fresh memory of the
         * child's own (a segment's whole extent is copied: mremap cannot
         * split one) */
        char *p = extents[i].p;
        size_t len = extents[i].len;
        if (p == arena && i == 0 && arena_used < len) {
            size_t used = (arena_used + pg - 1) & ~(pg - 1);
            if (used)
                remap_copy(p, used, MAP_PRIVATE);
            mmap(p + used, len - used, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
                 -1, 0);
        } else
            remap_copy(p, len, MAP_PRIVATE);
    }
    shared_on = 0;
    arena_lock = 0;
    overflowed = 0;
}

/* A child psrun -f measures: its private copies shared again, for its own
 * collector.  The arena keeps its size (the rest of it is reserved anew). */
int ps_shared_again(void)
{
    if (shared_on || !data_lo)
        return shared_on ? 0 : -1;
    if (remap_copy((char *)data_lo, data_hi - data_lo, MAP_SHARED) != 0)
        return -1;
    for (int i = 0; i < nextents; i++)
        if (remap_copy(extents[i].p, extents[i].len, MAP_SHARED) != 0) {
            /* the arena cannot be shared: the child records privately */
            for (int j = 0; j < i; j++)
                remap_copy(extents[j].p, extents[j].len, MAP_PRIVATE);
            remap_copy((char *)data_lo, data_hi - data_lo, MAP_PRIVATE);
            return -1;
        }
    shared_on = 1;
    return 0;
}
