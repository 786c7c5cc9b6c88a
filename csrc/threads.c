/* threads.c - the pthread_create hook: each thread the program creates
 * is measured (its own sampling source, or its own counters with psrun -p)
 * from its first instruction to its end (return, pthread_exit or
 * cancellation, through a key destructor). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct start {
    void *(*fn)(void *);
    void *arg;
};

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
    free(p);
    if (start_hook)
        start_hook();
    begin_thread();
    return s.fn(s.arg);
}

int ps_threads_created(void) { return __atomic_load_n(&created, __ATOMIC_RELAXED); }

PS_API int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    create_fn real = real_create();
    if (!real)
        return 11; /* EAGAIN: no C library pthread_create, which cannot happen with glibc */
    __atomic_fetch_add(&created, 1, __ATOMIC_RELAXED);
    if (!begin_hook && !start_hook)
        return real(thread, attr, fn, arg);
    struct start *s = malloc(sizeof *s);
    if (!s)
        return real(thread, attr, fn, arg); /* unsampled, but the program goes on */
    s->fn = fn;
    s->arg = arg;
    int rc = real(thread, attr, measured_start, s);
    if (rc)
        free(s);
    return rc;
}

int pthread_create_unhooked(void *thread, void *(*fn)(void *))
{
    create_fn real = real_create();
    return real ? real(thread, NULL, fn, NULL) : -1;
}
