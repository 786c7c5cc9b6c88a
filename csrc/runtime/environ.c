/* environ.c - the program's environment as its caller set it.
 *
 * psrun hands the program LD_PRELOAD (this library first) and its PSUITE_*
 * settings.  Without psrun -f they are taken out of environ before the
 * program's code runs, so that the program and everything it starts see
 * the environment they would see bare.  Only the variables psrun sets are
 * (PSUITE_SET_BY_PSRUN): the caller's own PSUITE_* (PSUITE_ARCHIVE,
 * PSUITE_UNWINDER ...) stay as the caller set them.  unsetenv(3) cannot do this: a
 * program may define getenv/setenv/unsetenv itself (bash does, and builds
 * its variables from environ at its start), and the library's calls then
 * reach the program's functions, not the C library's.  So environ becomes
 * a new array without those entries, with LD_PRELOAD rewritten to the
 * other libraries the caller preloaded, in their order, and main is given
 * it as its envp too.  The array on the initial stack is left as it was:
 * runtimes that walk past it to the auxiliary vector (Go's) need its
 * terminator where the kernel put it.
 *
 * The library reads its settings when it writes reports too, long after
 * main started; getenv is therefore defined here for the library's own
 * code (hidden: the linker binds every getenv call inside libpshwpc.so to
 * it, and the program never sees it).  It answers from the entries taken
 * out, then from environ, as the C library's getenv does: never through
 * the program's own getenv, whose answers are the program's (bash's are
 * its shell variables, empty before its main, once anything called its
 * setenv).
 *
 * With psrun -f the same is done: the program sees the environment its
 * caller set, and the programs it starts are measured all the same,
 * because every way the C library offers to start one (the exec family,
 * posix_spawn, system, popen: exitpaths.c) hands the new image an
 * environment with psrun's variables and this library put back
 * (ps_environ_follow).  A program that builds its children's environment
 * from the initial stack (Go's runtime does) still finds them there. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

extern char **environ;

#define PRELOAD_NAME "LD_PRELOAD"

/* The variables psrun sets for the library (csrc/psrun/psrun.c, env_set). */
static const char *const PSUITE_SET_BY_PSRUN[] = {
    "PSUITE_PRELOAD",       "PSUITE_EVENTS",        "PSUITE_PROFILE",       "PSUITE_PERIOD",
    "PSUITE_CALLPATH",      "PSUITE_DOMAIN",        "PSUITE_BACKEND",       "PSUITE_QUIET",
    "PSUITE_PER_THREAD",    "PSUITE_FOLLOW",        "PSUITE_OUTPUT_DIR",    "PSUITE_OUTPUT_PREFIX",
    "PSUITE_MANIFEST",      "PSUITE_RESOURCE_FILE", "PSUITE_RESOURCE_PID",  "PSUITE_CHECKPOINT",
    "PSUITE_NOTES",
};
#define MAX_TAKEN (sizeof PSUITE_SET_BY_PSRUN / sizeof *PSUITE_SET_BY_PSRUN)

/* "NAME=value" entries taken out of environ (the strings themselves are
 * never freed: they live in the process's initial stack or were set for
 * good).  taken_n is published once filled, before main. */
static const char *taken[MAX_TAKEN];
static int taken_n;

/* psrun -f: this library's path, for the LD_PRELOAD of the images the
 * program starts. */
static int following;
static char self_path[PATH_MAX];

static int set_by_psrun(const char *entry)
{
    for (size_t k = 0; k < MAX_TAKEN; k++) {
        size_t len = strlen(PSUITE_SET_BY_PSRUN[k]);
        if (strncmp(entry, PSUITE_SET_BY_PSRUN[k], len) == 0 && entry[len] == '=')
            return 1;
    }
    return 0;
}

static const char *value_in(const char *entry, const char *name, size_t len)
{
    return strncmp(entry, name, len) == 0 && entry[len] == '=' ? entry + len + 1 : NULL;
}

char *getenv(const char *name)
{
    size_t len = strlen(name);
    for (int k = 0, n = __atomic_load_n(&taken_n, __ATOMIC_ACQUIRE); k < n; k++) {
        const char *v = value_in(taken[k], name, len);
        if (v)
            return (char *)v;
    }
    for (char **e = environ; e && *e; e++) {
        const char *v = value_in(*e, name, len);
        if (v)
            return (char *)v;
    }
    return NULL;
}

/* The LD_PRELOAD entry without this library (every entry naming a file
 * called as this library is), the others kept in their order with the
 * separators that followed them: a new "LD_PRELOAD=..." string, NULL when
 * nothing else was preloaded, the entry itself when memory is short. */
static char *preload_without_self(char *entry)
{
    Dl_info info;
    if (!dladdr((void *)preload_without_self, &info) || !info.dli_fname)
        return entry;
    const char *self = strrchr(info.dli_fname, '/');
    self = self ? self + 1 : info.dli_fname;
    size_t self_len = strlen(self), used = sizeof PRELOAD_NAME; /* past "LD_PRELOAD=" */
    char *kept = malloc(strlen(entry) + 1);
    if (!kept)
        return entry;
    memcpy(kept, entry, used);
    for (const char *p = entry + used + strspn(entry + used, ": "); *p;) {
        size_t len = strcspn(p, ": "), gap = strspn(p + len, ": ");
        const char *slash = memrchr(p, '/', len);
        const char *base = slash ? slash + 1 : p;
        int mine = len - (size_t)(base - p) == self_len && memcmp(base, self, self_len) == 0;
        if (!mine) {
            memcpy(kept + used, p, len + gap);
            used += len + gap;
        }
        p += len + gap;
    }
    while (used > sizeof PRELOAD_NAME && (kept[used - 1] == ':' || kept[used - 1] == ' '))
        used--;
    kept[used] = '\0';
    if (used == sizeof PRELOAD_NAME) {
        free(kept);
        return NULL;
    }
    return kept;
}

/* The array environ became (NULL: it was left alone). */
static char **made;

char **ps_environ_for_main(char **envp) { return made ? made : envp; }

void ps_environ_remove_psuite(int follow)
{
    if (!environ)
        return;
    if (follow) { /* the children are measured too: their exec puts it all back */
        Dl_info info;
        if (!dladdr((void *)ps_environ_remove_psuite, &info) || !info.dli_fname ||
            strlen(info.dli_fname) >= sizeof self_path)
            return; /* cannot tell them where it is: leave the variables for them */
        strcpy(self_path, info.dli_fname);
    }
    int n = 0;
    size_t count = 0;
    while (environ[count])
        count++;
    char **fresh = malloc(sizeof *fresh * (count + 1));
    if (!fresh)
        return;
    char **out = fresh;
    for (char **e = environ; *e; e++) {
        if (value_in(*e, PRELOAD_NAME, sizeof PRELOAD_NAME - 1)) {
            char *kept = preload_without_self(*e);
            if (kept)
                *out++ = kept;
            continue;
        }
        if ((size_t)n < MAX_TAKEN && set_by_psrun(*e)) {
            taken[n++] = *e;
            continue;
        }
        *out++ = *e;
    }
    *out = NULL;
    environ = made = fresh;
    __atomic_store_n(&taken_n, n, __ATOMIC_RELEASE);
    following = follow;
}

int ps_environ_following(void) { return following; }

static int is_taken_name(const char *entry)
{
    for (int k = 0, n = __atomic_load_n(&taken_n, __ATOMIC_ACQUIRE); k < n; k++) {
        size_t len = strcspn(taken[k], "=");
        if (strncmp(entry, taken[k], len) == 0 && entry[len] == '=')
            return 1;
    }
    return 0;
}

size_t ps_environ_follow_slots(char *const envp[])
{
    size_t n = 0;
    while (envp && envp[n])
        n++;
    return n + MAX_TAKEN + 2;
}

size_t ps_environ_follow_bytes(char *const envp[])
{
    size_t n = sizeof PRELOAD_NAME + strlen(self_path) + 2;
    for (size_t i = 0; envp && envp[i]; i++)
        if (value_in(envp[i], PRELOAD_NAME, sizeof PRELOAD_NAME - 1))
            n += strlen(envp[i]);
    return n;
}

/* Does LD_PRELOAD's value name a file called as this library? */
static int names_self(const char *value)
{
    const char *self = strrchr(self_path, '/');
    self = self ? self + 1 : self_path;
    size_t self_len = strlen(self);
    for (const char *p = value + strspn(value, ": "); *p;) {
        size_t len = strcspn(p, ": ");
        const char *slash = memrchr(p, '/', len);
        const char *base = slash ? slash + 1 : p;
        if (len - (size_t)(base - p) == self_len && memcmp(base, self, self_len) == 0)
            return 1;
        p += len + strspn(p + len, ": ");
    }
    return 0;
}

/* The environment of an image psrun -f measures: envp without psrun's
 * variables, then them as psrun set them, and LD_PRELOAD with this library
 * first.  out has ps_environ_follow_slots(envp) entries, buf
 * ps_environ_follow_bytes(envp) bytes.  Async-signal-safe: it runs in
 * children after fork and vfork. */
char **ps_environ_follow(char *const envp[], char **out, char *buf)
{
    char **o = out;
    const char *preload = NULL;
    for (size_t i = 0; envp && envp[i]; i++) {
        const char *v = value_in(envp[i], PRELOAD_NAME, sizeof PRELOAD_NAME - 1);
        if (v) {
            preload = v;
            continue;
        }
        if (!is_taken_name(envp[i]))
            *o++ = envp[i];
    }
    for (int k = 0, n = __atomic_load_n(&taken_n, __ATOMIC_ACQUIRE); k < n; k++)
        *o++ = (char *)taken[k];
    char *b = buf;
    memcpy(b, PRELOAD_NAME "=", sizeof PRELOAD_NAME);
    b += sizeof PRELOAD_NAME;
    if (preload && *preload && names_self(preload)) {
        strcpy(b, preload);
    } else {
        strcpy(b, self_path);
        if (preload && *preload) {
            b += strlen(b);
            *b++ = ':';
            strcpy(b, preload);
        }
    }
    *o++ = buf;
    *o = NULL;
    return out;
}
