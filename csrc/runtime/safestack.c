/* safestack.c - run the report writer on a stack of its own.  exit() may
 * come from a thread with a small stack (64 KiB), _exit() and fatal signals
 * from anywhere: the writer must not depend on the caller's stack.  A few
 * stacks, each with a guard page below it and an output buffer above it,
 * are mapped when a writer first needs one (MAP_NORESERVE: only the pages
 * used cost memory) and kept for the next; a writer claims one with an
 * atomic exchange.  Nothing is mapped before: a program that never ends a
 * measurement (or ends it once) does not carry four stacks in its address
 * space.  The
 * switch is a few instructions of inline assembly (x86_64, aarch64);
 * elsewhere the function is called on the caller's stack. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define GUARD 4096
#define STACK_SIZE (256 * 1024)
#define OUT_SIZE (256 * 1024)
#define SLOT_SIZE (GUARD + STACK_SIZE + OUT_SIZE)
#define NSLOTS 4

static char *slot_mem[NSLOTS];
static int slot_busy[NSLOTS];
static int slots_pid;

static void *map_stack(void)
{
    return mmap(NULL, SLOT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1,
                0);
}

/* A program that used up its address-space limit (RLIMIT_AS) still gets its
 * report where the hard limit leaves room: the soft one is raised for the
 * mapping and set back (the stack stays mapped). */
static char *map_slot(void)
{
    void *mem = map_stack();
    struct rlimit was, raised;
    if (mem == MAP_FAILED && errno == ENOMEM && syscall(SYS_prlimit64, 0, RLIMIT_AS, NULL, &was) == 0 &&
        was.rlim_cur < was.rlim_max) {
        raised.rlim_cur = raised.rlim_max = was.rlim_max;
        if (syscall(SYS_prlimit64, 0, RLIMIT_AS, &raised, &was) == 0) {
            mem = map_stack();
            syscall(SYS_prlimit64, 0, RLIMIT_AS, &was, NULL);
        }
    }
    if (mem == MAP_FAILED)
        return NULL;
    mprotect(mem, GUARD, PROT_NONE);
    return mem;
}

void ps_stack_prepare(void)
{
    int pid = (int)getpid();
    if (slots_pid && slots_pid != pid) /* a forked child: the parent's other threads are not here */
        for (int i = 0; i < NSLOTS; i++)
            __atomic_store_n(&slot_busy[i], 0, __ATOMIC_SEQ_CST);
    slots_pid = pid;
}

typedef void (*job_fn)(void *, char *, size_t);

typedef struct {
    job_fn fn;
    void *arg;
    char *out;
} trampoline_t;

static void trampoline(void *p)
{
    trampoline_t *t = p;
    t->fn(t->arg, t->out, OUT_SIZE);
}

/* fn(arg) with the stack pointer at top (16-byte aligned). */
static __attribute__((noinline)) void call_on(char *top, void (*fn)(void *), void *arg)
{
#if defined(__x86_64__)
    register void *rdi __asm__("rdi") = arg;
    __asm__ volatile("mov %%rsp, %%rbx\n\t"
                     "mov %[top], %%rsp\n\t"
                     "call *%[fn]\n\t"
                     "mov %%rbx, %%rsp\n\t"
                     : "+r"(rdi), [fn] "+a"(fn), [top] "+c"(top)
                     :
                     : "rbx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3",
                       "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",
                       "xmm15");
#elif defined(__aarch64__)
    register void *x0 __asm__("x0") = arg;
    register void *x1 __asm__("x1") = (void *)fn;
    register void *x2 __asm__("x2") = top;
    __asm__ volatile("mov x19, sp\n\t"
                     "mov sp, x2\n\t"
                     "blr x1\n\t"
                     "mov sp, x19\n\t"
                     : "+r"(x0), "+r"(x1), "+r"(x2)
                     :
                     : "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x16",
                       "x17", "x18", "x19", "x30", "memory", "cc", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7",
                       "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28",
                       "v29", "v30", "v31");
#else
    (void)top;
    fn(arg);
#endif
}

void ps_on_safe_stack(job_fn fn, void *arg)
{
    int claimed = -1;
    char *mem = NULL;
    /* The slots are the program's (their pointers are in the memory shared
     * with the collector, their stacks are not): a collector maps its own. */
    for (int i = 0; i < NSLOTS && claimed < 0 && !ps_in_collector(); i++)
        if (!__atomic_exchange_n(&slot_busy[i], 1, __ATOMIC_SEQ_CST))
            claimed = i;
    if (claimed >= 0) {
        if (!slot_mem[claimed])
            __atomic_store_n(&slot_mem[claimed], map_slot(), __ATOMIC_RELEASE);
        mem = slot_mem[claimed];
    } else
        mem = map_slot(); /* all in use: one for this call */
    if (!mem) {
        fn(arg, NULL, 0);
        if (claimed >= 0)
            __atomic_store_n(&slot_busy[claimed], 0, __ATOMIC_SEQ_CST);
        return;
    }
    trampoline_t t = {fn, arg, mem + GUARD + STACK_SIZE};
    char *top = (char *)((unsigned long)(mem + GUARD + STACK_SIZE) & ~15UL);
    call_on(top, trampoline, &t);
    if (claimed >= 0)
        __atomic_store_n(&slot_busy[claimed], 0, __ATOMIC_SEQ_CST);
    else
        munmap(mem, SLOT_SIZE);
}
