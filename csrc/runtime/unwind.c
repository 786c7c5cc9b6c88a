/* unwind.c - the call-path unwinder, chosen at run time (measured in
 * docs/design/callpath-unwinding.md):
 *   1. libunwind's unw_backtrace (.eh_frame CFI with a per-thread frame
 *      cache, about 1 us for 30 frames), from Debian's libunwind.so.8
 *      loaded with dlopen(RTLD_LOCAL): never linked, since it exports
 *      _Unwind_Backtrace and backtrace, which would interpose on the
 *      program's own unwinder;
 *   2. libgcc_s's _Unwind_Backtrace (CFI too, a few us; finds objects with
 *      glibc's lock-free _dl_find_object);
 *   3. a frame-pointer walk, right only for code built with frame pointers.
 * PSUITE_UNWINDER=libunwind|libgcc|framepointer forces one.
 * All three start in the handler: the frames up to the interrupted PC (the
 * handler's own, the kernel's signal trampoline) are dropped.
 *
 * libunwind looks up unknown PCs with dl_iterate_phdr, which takes the
 * loader's lock: a handler that interrupted dlopen on another thread would
 * wait, one that interrupted it on this thread would see a half-updated
 * list.  So dl_iterate_phdr is interposed here: while this thread unwinds
 * in the handler (a thread-local flag) it is answered from the module map
 * modules.c keeps current, otherwise passed on to the C library.
 *
 * libunwind validates addresses by writing them into a pipe of its own,
 * made when it initialises (first use, in ps_unwind_warm) and again in the
 * handler whenever its read end is found closed.  Its descriptors would be
 * the lowest free numbers, the very ones the program expects from its next
 * open(): pipe2 is interposed here, and a pipe made while libunwind runs for
 * psuite has both ends moved above the descriptor limit (util.c).
 *
 * No frame of psuite's own code is recorded (leave_out_own): a bare run has
 * none.  psuite's frames sit in a path in two ways.  A wrapper the program
 * called (exit, dlopen, dlclose, a thread's start routine, ...) calls the
 * real function, or the program's, through a pointer: the path goes on in
 * the program's code and the wrapper's frame is left out.  Otherwise the
 * sample was taken in psuite's own work (its start-up, dlclose
 * bookkeeping, the end of measurement): its frames and what they called are
 * left out and the sample is the program's call into psuite (the call
 * instruction in the innermost frame of the program's outside them). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "internal.h"

typedef int (*unw_backtrace_fn)(void **, int);
typedef int (*unw_flush_fn)(void *, unsigned long, unsigned long);
typedef int (*gcc_trace_fn)(void *, void *);
typedef unsigned long (*gcc_getip_fn)(void *);
typedef int (*phdr_cb)(struct dl_phdr_info *, size_t, void *);

static int which;
static unw_backtrace_fn unw_backtrace_p;
static unw_flush_fn unw_flush_p;
static void **unw_local_as;
static gcc_trace_fn gcc_trace;
static gcc_getip_fn gcc_getip;
static int (*real_iterate)(phdr_cb, void *);
static unsigned long page = 4096; /* sysconf's, at ps_unwind_init */

/* Set while this thread unwinds in the sample handler.  initial-exec: the
 * library is preloaded (static TLS), so reading it never allocates. */
static __thread int in_unwinder __attribute__((tls_model("initial-exec")));
/* Set while this thread runs libunwind for psuite outside the handler. */
static __thread int in_libunwind __attribute__((tls_model("initial-exec")));

static const char *const names[] = {"", "libunwind", "libgcc", "framepointer"};

const char *ps_unwind_name(void) { return names[which]; }

static int load_libunwind(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_LOCAL | RTLD_NOW);
    if (!h)
        return 0;
    unw_backtrace_p = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
    unw_flush_p = (unw_flush_fn)dlsym(h, "_Ux86_64_flush_cache");
    unw_local_as = (void **)dlsym(h, "_ULx86_64_local_addr_space");
    return unw_backtrace_p != NULL;
}

static int load_libgcc(void)
{
    void *h = dlopen("libgcc_s.so.1", RTLD_LOCAL | RTLD_NOW);
    if (!h)
        return 0;
    gcc_trace = (gcc_trace_fn)dlsym(h, "_Unwind_Backtrace");
    gcc_getip = (gcc_getip_fn)dlsym(h, "_Unwind_GetIP");
    return gcc_trace && gcc_getip;
}

/* psuite's own executable segments (this library's), found at init */
#define OWN_MAX 4
static unsigned long long own_lo[OWN_MAX], own_hi[OWN_MAX];
static int nown;

static int find_own(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    unsigned long long here = (unsigned long long)(unsigned long)data;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        mine = ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && here >= info->dlpi_addr + ph->p_vaddr &&
               here < info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    for (int i = 0; mine && i < info->dlpi_phnum && nown < OWN_MAX; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            own_lo[nown] = info->dlpi_addr + ph->p_vaddr;
            own_hi[nown++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
    }
    return mine;
}

static int own(unsigned long long a)
{
    for (int i = 0; i < nown; i++)
        if (a >= own_lo[i] && a < own_hi[i])
            return 1;
    return 0;
}

/* The call before return address r is a direct call (e8 rel32) into
 * psuite's text - one of its functions, or a PLT stub: psuite's work.  The
 * wrappers reach the real functions through pointers (indirect calls). */
static int direct_call(unsigned long long r)
{
    if (!own(r - 5) || *(const unsigned char *)(r - 5) != 0xe8)
        return 0;
    int rel;
    memcpy(&rel, (const void *)(r - 4), sizeof rel);
    return own(r + (unsigned long long)(long long)rel);
}

/* f[0] the interrupted PC, then return addresses: psuite's frames left out
 * (see the top); the frames left, 0 when none is the program's.  A run of
 * psuite's frames is its work when it is more than a wrapper (several
 * frames, or the interrupted PC), or when it called out directly; what the
 * outermost such run called (the C library on psuite's behalf, psuite
 * again) is psuite's work too. */
static int leave_out_own(void **f, int n)
{
    if (!nown)
        return n;
    int any = 0, work_end = -1; /* the first frame outside the outermost run of psuite's work */
    for (int j = 0; j < n;) {
        if (!own((unsigned long long)f[j] - (j > 0))) {
            j++;
            continue;
        }
        int end = j + 1;
        while (end < n && own((unsigned long long)f[end] - 1))
            end++;
        if (j == 0 || end > j + 1 || direct_call((unsigned long long)f[j]))
            work_end = end;
        any = 1;
        j = end;
    }
    if (!any)
        return n;
    int k = 0, from = 0;
    if (work_end >= 0) {
        if (work_end == n || (unsigned long long)f[work_end] < 2) /* none, or no address (a frame-pointer walk's garbage) */
            return 0;
        f[k++] = (void *)((unsigned long long)f[work_end] - 1); /* the program's call into psuite */
        from = work_end + 1;
    }
    for (int j = from; j < n; j++)
        if (!own((unsigned long long)f[j] - (j > 0)))
            f[k++] = f[j];
    return k;
}

int ps_unwind_init(char *note, size_t len)
{
    if (!real_iterate)
        real_iterate = (int (*)(phdr_cb, void *))dlsym(RTLD_NEXT, "dl_iterate_phdr");
    if (real_iterate && !nown)
        real_iterate(find_own, (void *)(unsigned long)ps_unwind_init);
    long pagesize = sysconf(_SC_PAGESIZE);
    if (pagesize > 0)
        page = (unsigned long)pagesize;
    const char *force = getenv("PSUITE_UNWINDER");
    int want = PS_UNW_NONE;
    note[0] = '\0';
    if (force && *force) {
        for (int k = 1; k <= PS_UNW_FRAMEPOINTER; k++)
            if (strcmp(force, names[k]) == 0)
                want = k;
        if (!want) { /* the library without psrun, which refuses the value before the program runs */
            ps_strlcpy(note, "PSUITE_UNWINDER=", len);
            size_t used = strlen(note);
            if (used < len) /* the value, cut to keep the note one short line */
                ps_strlcpy(note + used, force, len - used < 41 ? len - used : 41);
            ps_strlcpy(note + strlen(note), " ignored: it must be libunwind, libgcc or framepointer",
                       len - strlen(note));
        }
    }
    which = PS_UNW_NONE;
    /* libunwind's pipe would take two descriptors the program could have had */
    int tight = ps_fd_limit_tight();
    if (((want == PS_UNW_NONE && !tight) || want == PS_UNW_LIBUNWIND) && load_libunwind())
        which = PS_UNW_LIBUNWIND;
    else if ((want == PS_UNW_NONE || want == PS_UNW_LIBGCC) && load_libgcc())
        which = PS_UNW_LIBGCC;
    else
        which = PS_UNW_FRAMEPOINTER;
    if (want && want != which)
        ps_append_part(note, len, "the unwinder asked for (PSUITE_UNWINDER) is not available");
    if (which == PS_UNW_LIBGCC && !want && tight)
        ps_append_part(note, len, "no room above the descriptor limit: libgcc_s's unwinder used (slower), as "
                                  "libunwind's pipe would take two of the program's descriptors");
    else if (which == PS_UNW_LIBGCC && !want)
        ps_append_part(note, len, "libunwind.so.8 not found (apt-get install libunwind8): using libgcc_s's "
                                  "unwinder (slower)");
    if (which == PS_UNW_FRAMEPOINTER)
        ps_append_part(note, len, "unwinding by frame pointers: code built -O2 without frame pointers will "
                                  "have broken paths");
    ps_unwind_warm();
    return which;
}

static int gcc_collect(void *ctx, void *arg)
{
    void ***v = arg; /* v[0] cursor, v[1] end */
    void *ip = (void *)gcc_getip(ctx);
    if (v[0] >= v[1] || !ip) /* the outermost frame's return address is 0 */
        return 5;             /* _URC_END_OF_STACK: stop */
    *v[0]++ = ip;
    return 0;
}

/* First use per thread costs (libunwind maps its frame cache, libgcc runs
 * its pthread_once): done here, outside the handler. */
void ps_unwind_warm(void)
{
    void *frames[64];
    if (which == PS_UNW_LIBUNWIND) {
        in_libunwind = 1;
        unw_backtrace_p(frames, 64);
        in_libunwind = 0;
    }
    else if (which == PS_UNW_LIBGCC) {
        void **v[2] = {frames, frames + 64};
        gcc_trace((void *)gcc_collect, v);
    }
}

void ps_unwind_flush(void)
{
    if (unw_flush_p && unw_local_as)
        unw_flush_p(*unw_local_as, 0, 0);
}

static unsigned long long uc_pc(const ucontext_t *uc)
{
#if defined(__x86_64__)
    return (unsigned long long)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (unsigned long long)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

#if defined(__x86_64__)
/* The module-map entry holding a, or NULL. */
static const ps_module_t *module_at(const ps_module_t *v, int n, unsigned long long a)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (a < v[mid].lo)
            hi = mid - 1;
        else if (a >= v[mid].hi)
            lo = mid + 1;
        else
            return &v[mid];
    }
    return NULL;
}

/* A frameless leaf (GCC keeps leaves without a frame even with
 * -fno-omit-frame-pointer) leaves its return address at the stack
 * pointer and the caller's frame in rbp: without this its caller would be
 * missing.  [sp] is taken as the return address when it follows a direct
 * call (e8 rel32) to code at most 1 MiB before the PC, in the same loaded
 * object; only mapped code is read. */
static unsigned long long leaf_return(unsigned long long pc, unsigned long long sp, unsigned long long stack_hi)
{
    if (!stack_hi || sp >= stack_hi || sp + 8 > stack_hi || (sp & 7))
        return 0;
    unsigned long long r = *(const unsigned long long *)sp, found = 0;
    const ps_module_t *v;
    int n;
    const ps_modmap_t *held = ps_modules_hold(&v, &n);
    const ps_module_t *m = module_at(v, n, r), *here = module_at(v, n, pc);
    if (m && here && m->base == here->base && r - 5 >= m->lo && *(const unsigned char *)(r - 5) == 0xe8) {
        int rel;
        memcpy(&rel, (const void *)(r - 4), sizeof rel);
        unsigned long long target = r + (unsigned long long)(long long)rel;
        if (target <= pc && pc - target < (1u << 20))
            found = r;
    }
    ps_modules_release(held);
    return found;
}
#endif

/* From the interrupted frame's frame pointer, within [sp, stack_hi). */
static int fp_walk(const ucontext_t *uc, void **frames, int cap, unsigned long long stack_hi, int *more)
{
    int n = 0;
    frames[n++] = (void *)uc_pc(uc);
#if defined(__x86_64__)
    unsigned long long fp = (unsigned long long)uc->uc_mcontext.gregs[REG_RBP];
    unsigned long long sp = (unsigned long long)uc->uc_mcontext.gregs[REG_RSP];
    unsigned long long leaf = leaf_return(uc_pc(uc), sp, stack_hi);
    if (leaf && n < cap)
        frames[n++] = (void *)leaf;
    while (stack_hi && fp >= sp && fp + 16 <= stack_hi && !(fp & 7)) {
        const unsigned long long *f = (const unsigned long long *)fp;
        if (!f[1])
            break;
        if (n == cap) {
            *more = 1;
            break;
        }
        if (n != 2 || !leaf || f[1] != leaf) /* a framed function's own return address: once */
            frames[n++] = (void *)f[1];
        if (f[0] <= fp)
            break;
        fp = f[0];
    }
#else
    (void)stack_hi;
    (void)more;
    (void)cap;
#endif
    return n;
}

/* The handler's frames up to the interrupted PC are in scratch[0..got):
 * the rest goes to frames. */
static int from_pc(void **scratch, int got, int scratch_cap, void *pc, void **frames, int cap, int *more)
{
    int s = 0;
    while (s < got && s < 32 && scratch[s] != pc)
        s++;
    if (s == got || s == 32)
        return -1;
    int n = got - s;
    if (n > cap || got == scratch_cap)
        *more = 1;
    if (n > cap)
        n = cap;
    memcpy(frames, scratch + s, (size_t)n * sizeof *frames);
    while (n > 1 && !frames[n - 1]) /* no address is no frame (a tree node needs one) */
        n--;
    return n;
}

/* libunwind and libgcc take locks of their own (libunwind with every signal
 * blocked): a fork while another thread's handler holds one would leave it
 * held for good in the child, whose first sample would then wait forever.
 * Around a fork, handlers keep out of the unwinders (their call paths are
 * counted lost) and the fork waits for those inside to leave. */
static int unwinding; /* handlers inside an unwinder now, all threads */
static int forking;

void ps_unwind_fork_prepare(void)
{
    __atomic_store_n(&forking, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 200000 && __atomic_load_n(&unwinding, __ATOMIC_SEQ_CST); i++)
        sched_yield(); /* a handler unwinds in microseconds; bounded all the same */
}

void ps_unwind_fork_done(void) { __atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST); }

static int enter_unwinder(void)
{
    __atomic_add_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&forking, __ATOMIC_SEQ_CST))
        return 1;
    __atomic_sub_fetch(&unwinding, 1, __ATOMIC_SEQ_CST);
    return 0;
}

static void leave_unwinder(void) { __atomic_sub_fetch(&unwinding, 1, __ATOMIC_SEQ_CST); }

static int unwound(void *ucv, void **frames, int cap, void **scratch, int scratch_cap, unsigned long long stack_hi,
                   int *more)
{
    const ucontext_t *uc = ucv;
    *more = 0;
    void *pc = (void *)uc_pc(uc);
    int got;
    switch (which) {
    case PS_UNW_LIBUNWIND:
        if (!enter_unwinder())
            return -1;
        in_unwinder = 1;
        got = unw_backtrace_p(scratch, scratch_cap);
        in_unwinder = 0;
        leave_unwinder();
        return got > 0 ? from_pc(scratch, got, scratch_cap, pc, frames, cap, more) : -1;
    case PS_UNW_LIBGCC: {
        void **v[2] = {scratch, scratch + scratch_cap};
        if (!enter_unwinder())
            return -1;
        in_unwinder = 1;
        gcc_trace((void *)gcc_collect, v);
        in_unwinder = 0;
        leave_unwinder();
        return from_pc(scratch, (int)(v[0] - scratch), scratch_cap, pc, frames, cap, more);
    }
    case PS_UNW_FRAMEPOINTER: return fp_walk(uc, frames, cap, stack_hi, more);
    default: return -1;
    }
}

int ps_unwind(void *ucv, void **frames, int cap, void **scratch, int scratch_cap, unsigned long long stack_hi,
              int *more)
{
    int got = unwound(ucv, frames, cap, scratch, scratch_cap, stack_hi, more);
    return got > 0 ? leave_out_own(frames, got) : got;
}

/* The loaded objects as dl_iterate_phdr shows them, from modules.c's map
 * (no lock, no allocation). */
static int readers; /* handlers in from_snapshot now */

static int from_snapshot(phdr_cb cb, void *data)
{
    const ps_module_t *v;
    int n, rc = 0;
    /* with ps_unwind_quiesce: either dlclose waits for this reader, or this
     * reader sees the dlclose and keeps to the permanent objects */
    __atomic_add_fetch(&readers, 1, __ATOMIC_SEQ_CST);
    /* The thread in dlclose itself sees them all: only it unmaps (the
     * loader's lock held), and it is in this handler now; its destructors'
     * frames are in the objects going. */
    int closing = __atomic_load_n(&ps_modules_closing, __ATOMIC_SEQ_CST) && !ps_modules_closing_here;
    const ps_modmap_t *held = ps_modules_hold(&v, &n);
    for (int i = 0; i < n && !rc; i++) {
        if (!v[i].phdr || (!v[i].permanent && closing))
            continue;
        /* an object loaded later may have been unloaded by the C library
         * itself (gconv modules, bypassing the dlclose wrapper): its program
         * headers still mapped, or it is left out */
        unsigned char in;
        if (!v[i].permanent && syscall(SYS_mincore, (void *)((unsigned long)v[i].phdr & ~(page - 1)), page, &in) != 0)
            continue;
        int dup = 0; /* an object with several executable segments: once */
        for (int k = 0; k < i && !dup; k++)
            dup = v[k].phdr == v[i].phdr;
        if (dup)
            continue;
        struct dl_phdr_info info;
        memset(&info, 0, sizeof info);
        info.dlpi_addr = (ElfW(Addr))v[i].base;
        info.dlpi_name = v[i].exe ? "" : v[i].file;
        info.dlpi_phdr = v[i].phdr;
        info.dlpi_phnum = (ElfW(Half))v[i].phnum;
        rc = cb(&info, sizeof info, data);
    }
    ps_modules_release(held);
    __atomic_sub_fetch(&readers, 1, __ATOMIC_SEQ_CST);
    return rc;
}

void ps_unwind_quiesce(void)
{
    while (__atomic_load_n(&readers, __ATOMIC_SEQ_CST))
        sched_yield();
}

static unsigned long snapshot_calls;

unsigned long ps_unwind_snapshot_calls(void) { return __atomic_load_n(&snapshot_calls, __ATOMIC_RELAXED); }

PS_API int dl_iterate_phdr(phdr_cb cb, void *data)
{
    if (in_unwinder) { /* the map is taken when call paths start: never the loader's lock here */
        __atomic_fetch_add(&snapshot_calls, 1, __ATOMIC_RELAXED);
        return from_snapshot(cb, data);
    }
    if (!real_iterate)
        real_iterate = (int (*)(phdr_cb, void *))dlsym(RTLD_NEXT, "dl_iterate_phdr");
    return real_iterate ? real_iterate(cb, data) : 0;
}

/* The program's pipe2 is the system call, as the C library's; libunwind's,
 * for psuite, gets descriptors above the program's limit. */
PS_API int pipe2(int fds[2], int flags)
{
    long rc = syscall(SYS_pipe2, fds, flags);
    if (rc == 0 && (in_unwinder || in_libunwind)) {
        fds[0] = ps_fd_above_limit(fds[0]);
        fds[1] = ps_fd_above_limit(fds[1]);
    }
    return (int)rc;
}
