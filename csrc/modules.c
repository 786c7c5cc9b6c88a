/* modules.c - modules that come and go while sampling.  A profile's PCs
 * are resolved against the modules loaded when it is written, so a plugin
 * unloaded with dlclose would lose its samples to whatever is loaded at
 * its address later.  dlclose is interposed: the samples in the closing
 * module's executable segments are charged to it (its name and load
 * address recorded with them) before the real call - and once more after
 * it, for its destructors' samples, when it is really gone (dlclose only
 * unloads when the last reference goes). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_RANGES 8

typedef struct {
    ElfW(Addr) base;             /* the module's load address (l_addr) */
    const char *name;            /* to find it: its l_name */
    char file[PATH_MAX];
    unsigned long long lo[MAX_RANGES], hi[MAX_RANGES];
    int n, found;
} ranges_t;

static int find_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    ranges_t *r = data;
    if (info->dlpi_addr != r->base || !info->dlpi_name || strcmp(info->dlpi_name, r->name) != 0)
        return 0;
    r->found = 1;
    ps_strlcpy(r->file, info->dlpi_name, sizeof r->file);
    for (int i = 0; i < info->dlpi_phnum && r->n < MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        r->lo[r->n] = info->dlpi_addr + ph->p_vaddr;
        r->hi[r->n++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    return 1;
}

static void retire(const ranges_t *r)
{
    for (int i = 0; i < r->n; i++)
        ps_sampler_retire(r->lo[i], r->hi[i], r->file, r->base);
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
    if (m->r.found)
        retire(&m->r);
    int rc = real(handle);
    int saved = errno;
    if (m->r.found && rc == 0) {
        dl_iterate_phdr(find_ranges, &m->still);
        if (!m->still.found) /* unloaded: what its destructors were sampled in is its too */
            retire(&m->r);
    }
    free(m);
    errno = saved;
    return rc;
}
