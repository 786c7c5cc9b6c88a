/* buildid.c - the GNU build-id (NT_GNU_BUILD_ID) of the running executable,
 * read from its PT_NOTE segments where the loader mapped them: no file is
 * read, so the cost does not depend on the executable's size (an md5 of the
 * whole file took over a second for 300 MB).  Only memory reads through
 * getauxval(AT_PHDR): async-signal-safe, no loader lock.  The shared
 * modules' ids are read the same way from their dl_phdr_info when they enter
 * modules.c's map (normal context). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

#include "internal.h"

/* Whether [vaddr, vaddr + size) lies in the file-backed part of a PT_LOAD
 * segment: a note outside one is not mapped, and is not read. */
static int mapped(const ElfW(Phdr) *ph, size_t phnum, ElfW(Addr) vaddr, size_t size)
{
    for (size_t i = 0; i < phnum; i++)
        if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr && vaddr - ph[i].p_vaddr <= ph[i].p_filesz &&
            size <= ph[i].p_filesz - (vaddr - ph[i].p_vaddr))
            return 1;
    return 0;
}

size_t ps_buildid_of(const void *phdr, size_t phnum, unsigned long long bias, unsigned char *id, size_t cap)
{
    const ElfW(Phdr) *ph = phdr;
    for (size_t i = 0; ph && i < phnum; i++) {
        if (ph[i].p_type != PT_NOTE || !mapped(ph, phnum, ph[i].p_vaddr, ph[i].p_filesz))
            continue;
        size_t align = ph[i].p_align == 8 ? 8 : 4;
        const unsigned char *p = (const unsigned char *)(uintptr_t)(bias + ph[i].p_vaddr);
        const unsigned char *end = p + ph[i].p_filesz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            size_t name_sz = (n->n_namesz + align - 1) & ~(align - 1);
            size_t desc_sz = (n->n_descsz + align - 1) & ~(align - 1);
            const unsigned char *name = p + sizeof *n, *desc = name + name_sz;
            if (name_sz > (size_t)(end - name) || desc_sz > (size_t)(end - desc))
                break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 && n->n_descsz &&
                n->n_descsz <= cap) {
                memcpy(id, desc, n->n_descsz);
                return n->n_descsz;
            }
            p = desc + desc_sz;
        }
    }
    return 0;
}

int ps_buildid_hex(const unsigned char *id, size_t n, char *hex, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    if (!n || 2 * n >= len)
        return -1;
    for (size_t k = 0; k < n; k++) {
        hex[2 * k] = digits[id[k] >> 4];
        hex[2 * k + 1] = digits[id[k] & 15];
    }
    hex[2 * n] = '\0';
    return 0;
}

int ps_buildid(char *hex, size_t len)
{
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    size_t phnum = (size_t)getauxval(AT_PHNUM);
    if (!ph || !phnum || len < 3)
        return -1;
    /* the load bias from the program header table's own entry (PIE and
     * non-PIE executables alike); without one, a non-PIE executable */
    ElfW(Addr) bias = 0;
    for (size_t i = 0; i < phnum; i++)
        if (ph[i].p_type == PT_PHDR)
            bias = (ElfW(Addr))ph - ph[i].p_vaddr;
    unsigned char id[PS_BUILDID_MAX];
    return ps_buildid_hex(id, ps_buildid_of(ph, phnum, bias, id, sizeof id), hex, len);
}
