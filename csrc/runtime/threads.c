/* threads.c - the pthread_create hook: each thread the program creates
 * is measured (its own sampling source, or its own counters with psrun -p)
 * from its first instruction to its end (return, pthread_exit or
 * cancellation, through a key destructor).
 *
 * Nothing here allocates in the new thread: glibc gives a thread's first
 * malloc or free an arena of its own, 64 MiB of address space that a bare
 * thread which never allocates does not have.  The start record comes from
 * a pool, and the thread's stack bounds are worked out from its size and
 * its descriptor instead of pthread_getattr_np (which allocates). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>
#include <unistd.h>

#include "internal.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct start {
    void *(*fn)(void *);
    void *arg;
    int c11; /* fn is a C11 thrd_start_t: int (*)(void *) */
    int pooled;
    size_t stack_size; /* as the thread was created with; 0 unknown */
};

#define START_POOL 256
static struct start start_pool[START_POOL];
static int start_taken[START_POOL];

static struct start *start_take(void)
{
    for (int i = 0; i < START_POOL; i++)
        if (!__atomic_exchange_n(&start_taken[i], 1, __ATOMIC_ACQUIRE)) {
            start_pool[i].pooled = 1;
            return &start_pool[i];
        }
    struct start *s = malloc(sizeof *s); /* more threads starting at once than the pool holds */
    if (s)
        s->pooled = 0;
    return s;
}

static void start_give(struct start *s)
{
    if (s->pooled)
        __atomic_store_n(&start_taken[s - start_pool], 0, __ATOMIC_RELEASE);
    else
        free(s);
}

/* The stack size a thread created with attr gets (its guard pages are
 * extra); 0 when it cannot be told. */
static size_t stack_size_of(const pthread_attr_t *attr)
{
    size_t size = 0;
    if (attr)
        return pthread_attr_getstacksize(attr, &size) == 0 ? size : 0;
    pthread_attr_t a;
    if (pthread_getattr_default_np(&a) != 0)
        return 0;
    if (pthread_attr_getstacksize(&a, &size) != 0)
        size = 0;
    pthread_attr_destroy(&a);
    return size;
}

static __thread size_t own_stack_size;

/* In a thread the program created: [lo, hi) within its stack, for the
 * unwinder's bounds.  glibc places the thread's descriptor (pthread_self)
 * at the top of the stack block, above every frame, and the block is the
 * stack size plus the guard, of which the descriptor takes less than two
 * pages at the top.  0: not known (psuite did not start this thread). */
int ps_threads_own_stack(unsigned long long *lo, unsigned long long *hi)
{
    size_t size = own_stack_size;
    unsigned long long top = (unsigned long long)(uintptr_t)pthread_self();
    unsigned long long page = (unsigned long long)sysconf(_SC_PAGESIZE);
    if (!size || size <= 4 * page || top < size)
        return 0;
    *hi = top;
    *lo = (top - size + 2 * page + page - 1) & ~(page - 1);
    return 1;
}

static pthread_key_t end_key;
static int created; /* threads the program created through pthread_create */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static void *(*begin_hook)(void);
static void (*end_hook)(void *);
static void (*start_hook)(void); /* first thing in every new thread (the alternate signal stack) */

void ps_threads_on_start(void (*start)(void)) { start_hook = start; }

void ps_threads_hook(void *(*begin)(void), void (*end)(void *))
{
    begin_hook = begin;
    end_hook = end;
}

static create_fn real_create(void)
{
    static create_fn real;
    if (!real)
        real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    return real;
}

static void thread_ends(void *state)
{
    if (end_hook)
        end_hook(state);
}

static void make_key(void) { pthread_key_create(&end_key, thread_ends); }

void ps_threads_adopt(void *state)
{
    if (state) {
        pthread_once(&key_once, make_key);
        pthread_setspecific(end_key, state);
    }
}

/* Register the calling thread: measured until it ends. */
static void begin_thread(void)
{
    if (begin_hook)
        ps_threads_adopt(begin_hook());
}

static void *measured_start(void *p)
{
    struct start s = *(struct start *)p;
    start_give(p);
    own_stack_size = s.stack_size;
    if (start_hook)
        start_hook();
    begin_thread();
    if (s.c11) /* as glibc's start_thread does for thrd_create's threads */
        return (void *)(intptr_t)((int (*)(void *))(void *)s.fn)(s.arg);
    return s.fn(s.arg);
}

int ps_threads_created(void) { return __atomic_load_n(&created, __ATOMIC_RELAXED); }

/* In a forked child: the once and the key stay valid (no lock is held
 * across them); without psrun -f the child is not measured and every hook
 * passes straight through from now on. */
void ps_threads_after_fork(int inert)
{
    if (inert) {
        begin_hook = NULL;
        end_hook = NULL;
        start_hook = NULL;
    }
}

static int create_hooked(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg, int c11)
{
    create_fn real = real_create();
    if (!real)
        return EAGAIN; /* no C library pthread_create, which cannot happen with glibc */
    __atomic_fetch_add(&created, 1, __ATOMIC_RELAXED);
    struct start *s = begin_hook || start_hook ? start_take() : NULL;
    if (!s) /* not measured (or unsampled: the program goes on) */
        return c11 ? -1 : real(thread, attr, fn, arg);
    s->fn = fn;
    s->arg = arg;
    s->c11 = c11;
    s->stack_size = stack_size_of(attr);
    int rc = real(thread, attr, measured_start, s);
    if (rc)
        start_give(s);
    return rc;
}

PS_API int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    return create_hooked(thread, attr, fn, arg, 0);
}

/* C11 threads: glibc's thrd_create calls its internal create function,
 * never the pthread_create above; its threads are measured the same way. */
typedef int (*thrd_create_fn)(thrd_t *, thrd_start_t, void *);
PS_API int thrd_create(thrd_t *thr, thrd_start_t func, void *arg)
{
    if (begin_hook || start_hook) {
        int rc = create_hooked((pthread_t *)thr, NULL, (void *(*)(void *))(void *)func, arg, 1);
        if (rc != -1) /* glibc's thrd_err_map */
            return rc == 0 ? thrd_success : rc == ENOMEM ? thrd_nomem : rc == EBUSY ? thrd_busy : thrd_error;
        __atomic_fetch_sub(&created, 1, __ATOMIC_RELAXED); /* counted again below */
    }
    static thrd_create_fn real;
    if (!real)
        real = (thrd_create_fn)dlsym(RTLD_NEXT, "thrd_create");
    if (!real)
        return thrd_error;
    __atomic_fetch_add(&created, 1, __ATOMIC_RELAXED);
    return real(thr, func, arg);
}

/* psuite's own threads (the ITIMER_REAL sampler) need little stack: 256 KiB
 * rather than the default (RLIMIT_STACK, often 8 MiB) of the program's
 * address space. */
#define OWN_STACK (256 * 1024)

int pthread_create_unhooked(void *thread, void *(*fn)(void *))
{
    create_fn real = real_create();
    if (!real)
        return -1;
    pthread_attr_t attr;
    int small = pthread_attr_init(&attr) == 0;
    if (small && pthread_attr_setstacksize(&attr, OWN_STACK) != 0) {
        pthread_attr_destroy(&attr);
        small = 0;
    }
    int rc = real(thread, small ? &attr : NULL, fn, NULL);
    if (small)
        pthread_attr_destroy(&attr);
    return rc;
}
