/* cct.c - per-thread calling-context trees for call-path sampling.
 * A node is (parent, address, kind); a sample adds its frames from the
 * outermost in, then counts itself at its innermost node.  Each live
 * thread's tree is one mapping reserved with MAP_NORESERVE at its start -
 * a header, the unwinder's frame buffers, an open-addressing hash of the
 * nodes (bounded probes, see child()) and the node array, used in order - so resident
 * memory grows with distinct contexts, not with samples, and the handler
 * neither allocates nor locks.  Insertion is lock-free (a CAS claims a
 * hash slot), since the ITIMER_REAL sampler thread adds blocked samples to
 * a tree while its thread may be in the handler.  The handler also keeps
 * the path of the last sample: consecutive samples share most of their
 * outer frames, which are then not looked up again.
 * A node's address is a key (ps_modules_key): a return address or PC with
 * the load of the module it is in, so that what is loaded where a module
 * was unloaded gets nodes of its own, and dlclose touches no tree.
 * When a thread ends its tree is copied into a mapping of its nodes' size
 * (retired) and, once the copy is published, the big one is unmapped. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "../common/env_values.h"

#define DEFAULT_NODES (1u << 18)
#define MAX_PROBE 128
#define WINDOW_LOG2 8 /* a node's children start within 256 slots of its own */
#define SCRATCH_EXTRA 40 /* the handler's own frames before the interrupted PC */

struct ps_cct {
    size_t bytes;               /* of the mapping */
    int retired;
    unsigned cap;               /* nodes, node 0 the root */
    unsigned mask;              /* hash slots - 1 */
    unsigned long long next;    /* the next free node (may pass cap: then full) */
    unsigned long long samples, truncated, lost;
    unsigned last_leaf;         /* the last sample's innermost node */
    int last_truncated;         /* it is under the truncated node */
    unsigned cache_gen;         /* ps_modules_unloads() when the path cache was filled */
    int busy;                   /* the handler is on this tree (its thread) */
    int warm;                   /* ps_cct_thread_warm ran in the thread: the unwinder may be entered */
    unsigned long long stack_lo, stack_hi; /* the thread's own stack (pthread_getattr_np) */
    size_t resident;            /* retired: what the live tree had in memory */
    /* the last sample's path, outermost first, under cache_root */
    unsigned cache_root, cache_depth;
    unsigned long long *cache_addr;
    unsigned *cache_node;
    void **frames, **scratch;
    int scratch_cap;
    unsigned *hash;
    ps_cpnode_t *nodes;
};

static int maxdepth;
static unsigned capacity = DEFAULT_NODES;

static int verbose;

int ps_cct_verbose(void) { return verbose; }

size_t ps_cct_node_bytes(void) { return sizeof(ps_cpnode_t); }

int ps_cct_init(int depth)
{
    maxdepth = depth;
    verbose = getenv("PSUITE_VERBOSE") != NULL;
    const char *env = getenv("PSUITE_CALLPATH_NODES");
    if (env && *env) {
        unsigned long v;
        if (ps_callpath_nodes_value(env, &v))
            capacity = (unsigned)v;
        else /* the library without psrun, which refuses the value before the program runs */
            ps_message("PSUITE_CALLPATH_NODES=%.40s ignored: it must be a whole number from %lu to %lu; %u used", env,
                       PS_CALLPATH_NODES_MIN, PS_CALLPATH_NODES_MAX, capacity);
    }
    return 0;
}

int ps_cct_maxdepth(void) { return maxdepth; }

static size_t align(size_t n) { return (n + 63) & ~(size_t)63; }

ps_cct_t *ps_cct_new(void)
{
    unsigned slots = 2;
    while (slots < 2 * capacity + (1u << WINDOW_LOG2) + MAX_PROBE)
        slots <<= 1;
    int scratch_cap = maxdepth + 1 + SCRATCH_EXTRA;
    size_t off_cache_addr = align(sizeof(ps_cct_t));
    size_t off_cache_node = off_cache_addr + align(sizeof(unsigned long long) * (size_t)(maxdepth + 1));
    size_t off_frames = off_cache_node + align(sizeof(unsigned) * (size_t)(maxdepth + 1));
    size_t off_scratch = off_frames + align(sizeof(void *) * (size_t)(maxdepth + 1));
    size_t off_hash = off_scratch + align(sizeof(void *) * (size_t)scratch_cap);
    size_t off_nodes = off_hash + align(sizeof(unsigned) * slots);
    size_t bytes = off_nodes + sizeof(ps_cpnode_t) * capacity;
    char *p = ps_map(bytes); /* shared with the collector (shared.c) */
    if (!p)
        return NULL;
    ps_cct_t *c = (ps_cct_t *)p;
    c->bytes = bytes;
    c->cap = capacity;
    c->mask = slots - 1;
    c->next = 1;
    c->cache_addr = (unsigned long long *)(p + off_cache_addr);
    c->cache_node = (unsigned *)(p + off_cache_node);
    c->frames = (void **)(p + off_frames);
    c->scratch = (void **)(p + off_scratch);
    c->scratch_cap = scratch_cap;
    c->hash = (unsigned *)(p + off_hash);
    c->nodes = (ps_cpnode_t *)(p + off_nodes);
    return c;
}

void ps_cct_thread_warm(ps_cct_t *c)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    if (c && ps_threads_own_stack(&c->stack_lo, &c->stack_hi)) {
        /* worked out without allocating (threads.c) */
    } else if (c && pthread_getattr_np(pthread_self(), &a) == 0) { /* the main thread, or one psuite did not start */
        if (pthread_attr_getstack(&a, &addr, &size) == 0) {
            c->stack_lo = (unsigned long long)addr;
            c->stack_hi = (unsigned long long)addr + size;
        }
        pthread_attr_destroy(&a);
    }
    ps_unwind_warm();
    if (c)
        __atomic_store_n(&c->warm, 1, __ATOMIC_RELEASE);
}

/* The child of parent with (addr, kind), added if new; 0 when the tree is
 * full.  A node's children have their home slots in a window just past
 * slot 2 * parent: nodes are numbered in order of creation, so the slots in
 * use stay together at the start of the hash and its resident pages grow
 * with the contexts (8 bytes each), instead of one page per context a hash
 * over the whole table would touch.  Probing is linear and goes on past the
 * window (a parent with thousands of children - a hot function's sampled
 * instructions - fills the slots after it, still together) until an empty
 * slot: the table is at most half full, so one is always found. */
static unsigned child(ps_cct_t *c, unsigned parent, unsigned long long addr, unsigned kind)
{
    unsigned long long h = (addr ^ ((unsigned long long)kind << 60)) * 0x9E3779B97F4A7C15ull;
    unsigned i = 2 * parent + (unsigned)(h >> (64 - WINDOW_LOG2));
    for (unsigned probe = 0; probe <= c->mask; probe++) {
        unsigned *slot = &c->hash[(i + probe) & c->mask];
        unsigned n = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (!n) {
            unsigned long long id = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
            if (id >= c->cap)
                return 0;
            ps_cpnode_t *node = &c->nodes[id];
            node->addr = addr;
            node->parent = parent;
            node->kind = kind;
            unsigned expected = 0;
            if (__atomic_compare_exchange_n(slot, &expected, (unsigned)id, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return (unsigned)id;
            node->kind = PS_CP_DEAD; /* another thread took the slot first: this node is not used */
            n = expected;
        }
        const ps_cpnode_t *node = &c->nodes[n];
        if (node->addr == addr && node->parent == parent && node->kind == kind)
            return n;
    }
    return 0;
}

static unsigned used_nodes(const ps_cct_t *c);

void ps_cct_lost(ps_cct_t *c, unsigned long long n)
{
    if (c)
        __atomic_fetch_add(&c->lost, n, __ATOMIC_RELAXED);
}

/* running: a sample of the thread's own source (where a preempted thread
 * resumes, for ps_cct_again), not one read from /proc */
static void count_leaf(ps_cct_t *c, unsigned leaf, unsigned long long n, int truncated, int running)
{
    __atomic_fetch_add(&c->nodes[leaf].samples, n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->samples, n, __ATOMIC_RELAXED);
    if (truncated)
        __atomic_fetch_add(&c->truncated, n, __ATOMIC_RELAXED);
    if (running) {
        __atomic_store_n(&c->last_truncated, truncated, __ATOMIC_RELAXED);
        __atomic_store_n(&c->last_leaf, leaf, __ATOMIC_RELAXED);
    }
}

/* The frame-pointer walk's upper bound: the thread's stack top when the
 * interrupted stack pointer is on the thread's own stack, else 0 (the PC
 * alone).  On another stack (makecontext, coroutines) rbp may point
 * anywhere between it and the thread's stack - unmapped memory included. */
static unsigned long long walk_limit(const ps_cct_t *c, const void *ucv)
{
    const ucontext_t *uc = ucv;
    unsigned long long sp;
#if defined(__x86_64__)
    sp = (unsigned long long)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    sp = (unsigned long long)uc->uc_mcontext.sp;
#else
    (void)uc;
    return 0;
#endif
    return sp >= c->stack_lo && sp < c->stack_hi ? c->stack_hi : 0;
}

/* The unwinder stopped at addr, the outermost frame found, before the
 * real outermost one: addr lies in no object of the module map (one loaded
 * since the last refresh: a dlopen by bare name from an object with a
 * RUNPATH is passed on without one, modules.c), or - while another
 * thread's dlclose made the unwinder keep to the permanent objects
 * (unwind.c) - in an object loaded later.  0 without a map. */
static int cut_short(unsigned long long addr, int closing)
{
    const ps_module_t *v;
    int n;
    const ps_modmap_t *held = ps_modules_hold(&v, &n);
    if (!held)
        return 0;
    int lo = 0, hi = n; /* v sorted by lo: the last one starting at or below addr */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (v[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    int found = lo > 0 && addr < v[lo - 1].hi;
    int cut = !found || (closing && !v[lo - 1].permanent);
    ps_modules_release(held);
    return cut;
}

void ps_cct_sample(ps_cct_t *c, void *uc, unsigned long long n)
{
    if (!c || c->retired)
        return;
    if (c->busy) { /* a sample in the handler itself (never with SIGPROF blocked there) */
        ps_cct_lost(c, n);
        return;
    }
    /* A thread never warmed in normal context (adopted at start, already
     * running): its first unwind would pay the unwinder's first-use costs
     * in the handler - dynamic TLS, pthread_setspecific, mmap - which may
     * malloc while the thread was in malloc.  Its call paths are lost. */
    if (!__atomic_load_n(&c->warm, __ATOMIC_ACQUIRE)) {
        ps_cct_lost(c, n);
        return;
    }
    c->busy = 1;
    unsigned gen = ps_modules_unloads();
    if (gen != c->cache_gen) { /* a module was unloaded: the same addresses may be another's now */
        c->cache_depth = 0;
        c->cache_gen = gen;
    }
    int more = 0;
    void **f = c->frames;
    int closing = __atomic_load_n(&ps_modules_closing, __ATOMIC_SEQ_CST);
    int got = ps_unwind(uc, f, maxdepth, c->scratch, c->scratch_cap, walk_limit(c, uc), &more);
    closing = (closing || __atomic_load_n(&ps_modules_closing, __ATOMIC_SEQ_CST)) && !ps_modules_closing_here;
    if (got <= 0) {
        ps_cct_lost(c, n);
        c->busy = 0;
        return;
    }
    /* A path cut short (the unwinder could not go on): its outer frames are
     * missing, as a truncated one's are. */
    if (!more && cut_short((unsigned long long)f[got - 1] - (got > 1), closing))
        more = 1;
    unsigned root = 0;
    if (more && !(root = child(c, 0, 0, PS_CP_TRUNCATED))) {
        ps_cct_lost(c, n);
        c->busy = 0;
        return;
    }
    /* f[got-1] outermost .. f[1]: calls; f[0]: the sample */
    unsigned depth = 0, calls = (unsigned)got - 1;
    if (c->cache_root == root)
        while (depth < c->cache_depth && depth < calls && c->cache_addr[depth] == (unsigned long long)f[got - 1 - depth])
            depth++;
    unsigned parent = depth ? c->cache_node[depth - 1] : root;
    for (unsigned k = depth; k < calls; k++) {
        unsigned long long a = (unsigned long long)f[got - 1 - k];
        /* a return address is in its call instruction's module, at a - 1 */
        parent = child(c, parent, ps_modules_key_at(a, a - 1), PS_CP_CALL);
        if (!parent) {
            c->cache_depth = k;
            ps_cct_lost(c, n);
            c->busy = 0;
            return;
        }
        c->cache_addr[k] = a;
        c->cache_node[k] = parent;
    }
    c->cache_root = root;
    c->cache_depth = calls;
    unsigned leaf = child(c, parent, ps_modules_key((unsigned long long)f[0]), PS_CP_SAMPLE);
    if (leaf)
        count_leaf(c, leaf, n, more, 1);
    else
        ps_cct_lost(c, n);
    c->busy = 0;
}

void ps_cct_blocked(ps_cct_t *c, unsigned long long pc)
{
    if (!c || c->retired)
        return;
    unsigned b = child(c, 0, 0, PS_CP_BLOCKED), leaf = b ? child(c, b, ps_modules_key(pc), PS_CP_SAMPLE) : 0;
    if (leaf)
        count_leaf(c, leaf, 1, 0, 0);
    else
        ps_cct_lost(c, 1);
}

void ps_cct_again(ps_cct_t *c)
{
    if (!c || c->retired)
        return;
    unsigned leaf = __atomic_load_n(&c->last_leaf, __ATOMIC_RELAXED);
    if (leaf)
        count_leaf(c, leaf, 1, __atomic_load_n(&c->last_truncated, __ATOMIC_RELAXED), 1);
    else
        ps_cct_lost(c, 1);
}

static unsigned used_nodes(const ps_cct_t *c)
{
    unsigned long long n = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
    return n > c->cap ? c->cap : (unsigned)n;
}

size_t ps_cct_resident(const ps_cct_t *c)
{
    if (!c)
        return 0;
    if (c->retired)
        return c->resident;
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = (c->bytes + (size_t)page - 1) / (size_t)page, in = 0;
    unsigned char vec[4096];
    for (size_t at = 0; at < pages; at += sizeof vec) {
        size_t k = pages - at < sizeof vec ? pages - at : sizeof vec;
        if (mincore((char *)c + at * (size_t)page, k * (size_t)page, vec))
            return 0;
        for (size_t j = 0; j < k; j++)
            in += vec[j] & 1;
    }
    return in * (size_t)page;
}

ps_cct_t *ps_cct_retire(ps_cct_t *c)
{
    if (!c || c->retired)
        return c;
    unsigned n = used_nodes(c);
    size_t bytes = align(sizeof *c) + sizeof(ps_cpnode_t) * n;
    char *p = ps_map(bytes);
    if (!p)
        return c;
    ps_cct_t *r = (ps_cct_t *)p;
    *r = *c;
    r->resident = ps_cct_resident(c);
    r->bytes = bytes;
    r->retired = 1;
    r->cap = n;
    r->next = n;
    r->hash = NULL;
    r->frames = r->scratch = NULL;
    r->cache_addr = NULL;
    r->cache_node = NULL;
    r->nodes = (ps_cpnode_t *)(p + align(sizeof *c));
    memcpy(r->nodes, c->nodes, sizeof(ps_cpnode_t) * n);
    /* c is not unmapped here: the caller publishes r first, then frees c
     * (ps_cct_free), so a report written meanwhile never reads unmapped memory */
    return r;
}

void ps_cct_free(ps_cct_t *c)
{
    if (c)
        ps_unmap(c, c->bytes);
}

const ps_cpnode_t *ps_cct_nodes(const ps_cct_t *c, unsigned *n)
{
    *n = c ? used_nodes(c) : 0;
    return c ? c->nodes : NULL;
}

void ps_cct_counts(const ps_cct_t *c, unsigned long long *samples, unsigned long long *truncated,
                   unsigned long long *lost)
{
    *samples = c ? c->samples : 0;
    *truncated = c ? c->truncated : 0;
    *lost = c ? c->lost : 0;
}
