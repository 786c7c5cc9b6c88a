/* dwarf.c - the hot loops of source mapping: DWARF line programs and the
 * subprogram / inlined-subroutine tree, decoded straight from the mapped
 * ELF file (DWARF 2 to 5), plus the ELF symbol table.  psprocess keeps
 * pyelftools for structure (finding separate debug files, compressed
 * sections); decoding millions of line rows in Python is too slow.
 *
 * Lookups follow addr2line -f -i: the line is the last row at or before
 * the address in its sequence; the function is the innermost DWARF
 * function (inlined subroutine or subprogram) covering the address, else
 * the ELF symbol; unknown is NULL. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf.h"

/* ---- ELF ---------------------------------------------------------------- */

/* Compressed debug sections (SHF_COMPRESSED, zlib or zstd): inflated with
 * the system's libz / libzstd, loaded when first needed, so the library
 * has no build-time dependency on them. */
static int inflate_section(struct ps_dwarf *d, const uint8_t *p, size_t len, sect_t *out)
{
    if (len < sizeof(Elf64_Chdr) || d->ninflated >= 16)
        return -1;
    const Elf64_Chdr *ch = (const Elf64_Chdr *)p;
    size_t size = ch->ch_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return -1;
    const uint8_t *src = p + sizeof *ch;
    size_t srclen = len - sizeof *ch;
    int ok = 0;
    if (ch->ch_type == ELFCOMPRESS_ZLIB) {
        static int (*uncompress)(uint8_t *, unsigned long *, const uint8_t *, unsigned long);
        if (!uncompress) {
            void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
            uncompress = z ? (int (*)(uint8_t *, unsigned long *, const uint8_t *, unsigned long))dlsym(z, "uncompress")
                           : NULL;
        }
        unsigned long got = size;
        ok = uncompress && uncompress(buf, &got, src, srclen) == 0 && got == size;
    } else if (ch->ch_type == 2) { /* ELFCOMPRESS_ZSTD */
        static size_t (*decompress)(void *, size_t, const void *, size_t);
        if (!decompress) {
            void *z = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
            decompress = z ? (size_t(*)(void *, size_t, const void *, size_t))dlsym(z, "ZSTD_decompress") : NULL;
        }
        ok = decompress && decompress(buf, size, src, srclen) == size;
    }
    if (!ok) {
        free(buf);
        return -1;
    }
    d->inflated[d->ninflated++] = buf;
    out->p = buf;
    out->len = size;
    return 0;
}

static int elf_sections(struct ps_dwarf *d)
{
    const Elf64_Ehdr *eh = d->map;
    if (d->map_len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > d->map_len)
        return -1;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)((const uint8_t *)d->map + eh->e_shoff);
    if (eh->e_shstrndx >= eh->e_shnum)
        return -1;
    const Elf64_Shdr *names = &sh[eh->e_shstrndx];
    static const struct {
        const char *name;
        size_t off;
    } want[] = {
        {".debug_info", offsetof(struct ps_dwarf, info)},     {".debug_abbrev", offsetof(struct ps_dwarf, abbrev)},
        {".debug_line", offsetof(struct ps_dwarf, line)},     {".debug_str", offsetof(struct ps_dwarf, str)},
        {".debug_line_str", offsetof(struct ps_dwarf, line_str)},
        {".debug_str_offsets", offsetof(struct ps_dwarf, str_offsets)},
        {".debug_addr", offsetof(struct ps_dwarf, addr)},     {".debug_ranges", offsetof(struct ps_dwarf, ranges)},
        {".debug_rnglists", offsetof(struct ps_dwarf, rnglists)}, {".symtab", offsetof(struct ps_dwarf, symtab)},
        {".strtab", offsetof(struct ps_dwarf, strtab)},       {".dynsym", offsetof(struct ps_dwarf, dynsym)},
        {".dynstr", offsetof(struct ps_dwarf, dynstr)},
    };
    d->sections = malloc(sizeof *d->sections * (eh->e_shnum ? eh->e_shnum : 1));
    if (!d->sections)
        return -1;
    for (int i = 0; i < eh->e_shnum; i++) {
        if ((sh[i].sh_flags & SHF_ALLOC) && sh[i].sh_size)
            d->sections[d->nsections++] = (section_t){sh[i].sh_addr, sh[i].sh_addr + sh[i].sh_size, (uint32_t)i};
        if (names->sh_offset + sh[i].sh_name >= d->map_len)
            continue;
        const char *n = (const char *)d->map + names->sh_offset + sh[i].sh_name;
        for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
            if (strcmp(n, want[k].name) != 0 || sh[i].sh_type == SHT_NOBITS)
                continue;
            if (sh[i].sh_offset + sh[i].sh_size > d->map_len)
                continue;
            sect_t *s = (sect_t *)((char *)d + want[k].off);
            const uint8_t *p = (const uint8_t *)d->map + sh[i].sh_offset;
            if (sh[i].sh_flags & SHF_COMPRESSED) {
                if (inflate_section(d, p, sh[i].sh_size, s))
                    return -2; /* no libz/libzstd: the caller decodes with pyelftools */
                continue;
            }
            s->p = p;
            s->len = sh[i].sh_size;
        }
    }
    sect_t *strings[] = {&d->str, &d->line_str, &d->strtab, &d->dynstr};
    for (size_t k = 0; k < sizeof strings / sizeof *strings; k++)
        strings[k]->terminated = strings[k]->len && strings[k]->p[strings[k]->len - 1] == 0;
    return 0;
}

static int by_sym(const void *a, const void *b)
{
    const sym_t *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size; /* at one address, the larger last (it wins) */
}

/* Candidate function symbols as binutils' elf_find_function takes them:
 * anything but file, section, object and TLS symbols, defined in a
 * section; a symbol's file is the STT_FILE before it, for a local symbol
 * or while no FILE symbol has followed other symbols. */
static int elf_symbols(struct ps_dwarf *d)
{
    const sect_t *tab = d->symtab.len ? &d->symtab : &d->dynsym;
    const sect_t *names = d->symtab.len ? &d->strtab : &d->dynstr;
    size_t n = tab->len / sizeof(Elf64_Sym);
    d->syms = malloc(sizeof *d->syms * (n ? n : 1));
    if (!d->syms)
        return -1;
    enum { NOTHING, SYMBOL, FILE_AFTER_SYMBOL } state = NOTHING;
    const char *file = NULL;
    for (size_t i = 1; i < n; i++) {
        const Elf64_Sym *s = (const Elf64_Sym *)tab->p + i;
        int type = ELF64_ST_TYPE(s->st_info);
        if (type == STT_FILE) {
            file = sect_str(names, s->st_name);
            if (state == SYMBOL)
                state = FILE_AFTER_SYMBOL;
            continue;
        }
        if (state == NOTHING)
            state = SYMBOL;
        if (type == STT_SECTION || type == STT_OBJECT || type == STT_TLS || s->st_shndx == SHN_UNDEF ||
            s->st_shndx >= SHN_LORESERVE)
            continue;
        const char *name = sect_str(names, s->st_name);
        if (!name || !*name)
            continue;
        int local = ELF64_ST_BIND(s->st_info) == STB_LOCAL;
        const char *f = file && *file && (local || state != FILE_AFTER_SYMBOL) ? file : NULL;
        d->syms[d->nsyms++] = (sym_t){s->st_value, s->st_size ? s->st_size : 1, name, f, s->st_shndx};
    }
    qsort(d->syms, d->nsyms, sizeof *d->syms, by_sym);
    return 0;
}

/* The symbol naming addr: the nearest at or before it in the same section. */
const sym_t *symbol_at(const struct ps_dwarf *d, uint64_t addr)
{
    uint32_t shndx = UINT32_MAX;
    for (size_t i = 0; i < d->nsections; i++)
        if (d->sections[i].lo <= addr && addr < d->sections[i].hi) {
            shndx = d->sections[i].index;
            break;
        }
    size_t lo = COUNT_LE(d->syms, d->nsyms, addr, addr);
    while (lo > 0) {
        const sym_t *s = &d->syms[--lo];
        if (s->shndx == shndx)
            return s;
    }
    return NULL;
}

/* ---- flattening: innermost function per address ----------------------------------- */

static int by_func(const void *a, const void *b)
{
    const func_t *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi)
        return x->hi > y->hi ? -1 : 1; /* outer first */
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

static int flatten(struct ps_dwarf *d)
{
    if (d->nfuncs)
        qsort(d->funcs, d->nfuncs, sizeof *d->funcs, by_func);
    d->segs = malloc(sizeof *d->segs * (2 * d->nfuncs + 1));
    int32_t *stack = malloc(sizeof *stack * (d->nfuncs + 1));
    if (!d->segs || !stack) {
        free(stack);
        return -1;
    }
    size_t top = 0;
    uint64_t cur = 0;
#define SEG(from, to, f)                                                                                               \
    do {                                                                                                               \
        if ((to) > (from) && d->nsegs < 2 * d->nfuncs + 1)                                                             \
            d->segs[d->nsegs++] = (seg_t){(from), (to), d->funcs[f].scope};                                                          \
    } while (0)
    for (size_t i = 0; i < d->nfuncs; i++) {
        const func_t *f = &d->funcs[i];
        while (top && d->funcs[stack[top - 1]].hi <= f->lo) {
            uint64_t end = d->funcs[stack[top - 1]].hi;
            SEG(cur, end, stack[top - 1]);
            cur = end > cur ? end : cur;
            top--;
        }
        if (top)
            SEG(cur, f->lo, stack[top - 1]);
        cur = f->lo;
        stack[top++] = (int32_t)i;
    }
    while (top) {
        uint64_t end = d->funcs[stack[top - 1]].hi;
        SEG(cur, end, stack[top - 1]);
        cur = end > cur ? end : cur;
        top--;
    }
#undef SEG
    free(stack);
    return 0; /* rows: sorted by walk_units */
}

/* ---- memory ---------------------------------------------------------------------- */

void *big_alloc(size_t bytes)
{
    if (!bytes)
        bytes = 1;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= (2u << 20))
        madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

void big_free(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes ? bytes : 1);
}

int rows_grow(struct ps_dwarf *d)
{
    size_t cap = d->caprows ? 2 * d->caprows : 1024;
    row_t *p = big_alloc(sizeof *p * cap);
    if (!p)
        return -1;
    if (d->nrows)
        memcpy(p, d->rows, sizeof *p * d->nrows);
    big_free(d->rows, sizeof *d->rows * d->caprows);
    d->rows = p;
    d->caprows = cap;
    return 0;
}

/* ---- public ----------------------------------------------------------------------- */

PS_API void ps_dwarf_close(ps_dwarf_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nfiles; i++)
        free(d->files[i]);
    free(d->files);
    big_free(d->rows, sizeof *d->rows * d->caprows);
    free(d->seqs);
    free(d->funcs);
    free(d->scopes);
    free(d->segs);
    free(d->syms);
    free(d->sections);
    free(d->units);
    free(d->unit_files);
    for (int i = 0; i < d->ninflated; i++)
        free(d->inflated[i]);
    if (d->map)
        munmap(d->map, d->map_len);
    free(d);
}

PS_API int ps_dwarf_open(const char *path, ps_dwarf_t **out)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return PS_DWARF_EIO;
    struct stat st;
    if (fstat(fd, &st) || st.st_size == 0) {
        close(fd);
        return PS_DWARF_EIO;
    }
    struct ps_dwarf *d = calloc(1, sizeof *d);
    if (!d) {
        close(fd);
        return PS_DWARF_EIO;
    }
    d->map_len = (size_t)st.st_size;
    d->map = mmap(NULL, d->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (d->map == MAP_FAILED) {
        d->map = NULL;
        ps_dwarf_close(d);
        return PS_DWARF_EIO;
    }
    int rc = elf_sections(d);
    if (rc) {
        ps_dwarf_close(d);
        return rc == -2 ? PS_DWARF_ECOMPRESSED : PS_DWARF_EINVAL;
    }
    /* a row takes at least a byte of line program: reserved once (pages
     * are only committed when used) instead of grown by copying */
    d->caprows = d->line.len + 1024;
    d->rows = big_alloc(sizeof *d->rows * d->caprows);
    if (!d->rows)
        d->caprows = 0;
    if (elf_symbols(d) || (d->info.len ? walk_units(d) : (sort_rows(d), 0)) || flatten(d)) {
        ps_dwarf_close(d);
        return PS_DWARF_EIO;
    }
    *out = d;
    return PS_DWARF_OK;
}

PS_API int ps_dwarf_has_dwarf(const ps_dwarf_t *d) { return d && d->info.len && d->line.len; }

/* Many addresses at once, as ids (one call from Python instead of one per
 * address): file id (-1 unknown, see ps_dwarf_file), line, function id
 * (-1 unknown; see ps_dwarf_function). */
/* The line-table row for addr: its file id (-1 unknown) and line. */
static void row_at(const struct ps_dwarf *d, uint64_t addr, int *file, int *line)
{
    *file = -1;
    *line = 0;
    size_t lo = COUNT_LE(d->rows, d->nrows, addr, addr); /* the last row at or before addr */
    if (lo && d->rows[lo - 1].file < d->nfiles) {
        *file = (int)d->rows[lo - 1].file;
        *line = (int)d->rows[lo - 1].line;
    }
}

/* The innermost named DWARF function at addr (a scope id), else -1. */
static int scope_at(struct ps_dwarf *d, uint64_t addr)
{
    size_t lo = COUNT_LE(d->segs, d->nsegs, hi, addr); /* the first segment ending after addr */
    if (lo < d->nsegs && d->segs[lo].lo <= addr && addr < d->segs[lo].hi && d->segs[lo].func >= 0 &&
        scope_name(d, &d->scopes[d->segs[lo].func]))
        return d->segs[lo].func;
    return -1;
}

/* The ELF symbol's function id at addr (-1 none), and its file id when the
 * line table gave none. */
static int symbol_function(const struct ps_dwarf *d, uint64_t addr, int *file)
{
    const sym_t *sym = symbol_at(d, addr);
    if (!sym)
        return -1;
    if (*file < 0 && sym->file)
        *file = -2 - (int)(sym - d->syms); /* a symbol's file: see ps_dwarf_file */
    return (int)(d->nscopes + (size_t)(sym - d->syms));
}

/* Many addresses at once, as ids (one call from Python instead of one per
 * address): file id (-1 unknown, see ps_dwarf_file), line, function id
 * (-1 unknown; see ps_dwarf_function). */
PS_API void ps_dwarf_lookup_many(ps_dwarf_t *d, const unsigned long long *addrs, int n, int *files, int *lines,
                                 int *functions)
{
    for (int i = 0; i < n; i++) {
        row_at(d, addrs[i], &files[i], &lines[i]);
        functions[i] = scope_at(d, addrs[i]);
        if (functions[i] < 0)
            functions[i] = symbol_function(d, addrs[i], &files[i]);
    }
}

/* Frames at many addresses, as addr2line -f -i gives them: innermost
 * first, the inlined calls and then the function containing the address.
 * Address i has counts[i] frames; they follow those of the addresses
 * before it in functions/files/lines/inlined (ids as ps_dwarf_lookup_many
 * gives them; an outer frame's file and line are the call site of the
 * inlined frame inside it).  At most cap frames are written; returns how
 * many there are in all (call again with a larger cap when more). */
PS_API int ps_dwarf_frames_many(ps_dwarf_t *d, const unsigned long long *addrs, int n, int *counts, int *functions,
                                int *files, int *lines, unsigned char *inlined, int cap)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        int file, line, start = total;
        row_at(d, addrs[i], &file, &line);
        int s = scope_at(d, addrs[i]);
        if (s < 0) {
            int f = symbol_function(d, addrs[i], &file);
            if (total < cap) {
                functions[total] = f;
                files[total] = file;
                lines[total] = file >= 0 ? line : 0;
                inlined[total] = 0;
            }
            total++;
        }
        /* the caller chain: bounded, so a malformed cycle cannot loop */
        for (int hops = 0; s >= 0 && hops < 4096; hops++) {
            const scope_t *sc = &d->scopes[s];
            if (total < cap) {
                functions[total] = scope_name(d, &d->scopes[s]) ? s : -1;
                files[total] = file;
                lines[total] = file >= 0 ? line : 0; /* no line without a DWARF file */
                inlined[total] = sc->inlined;
            }
            total++;
            if (!sc->inlined)
                break;
            file = sc->call_file;
            line = (int)sc->call_line;
            s = sc->parent;
        }
        counts[i] = total - start;
    }
    return total;
}

PS_API const char *ps_dwarf_file(const ps_dwarf_t *d, int id)
{
    if (id <= -2 && (size_t)(-2 - id) < d->nsyms)
        return d->syms[-2 - id].file;
    return id >= 0 && (size_t)id < d->nfiles ? d->files[id] : NULL;
}

PS_API const char *ps_dwarf_function(const ps_dwarf_t *d, int id, int *linkage)
{
    *linkage = 1;
    if (id < 0)
        return NULL;
    if ((size_t)id < d->nscopes) {
        *linkage = d->scopes[id].linkage;
        return d->scopes[id].name;
    }
    size_t s = (size_t)id - d->nscopes;
    return s < d->nsyms ? d->syms[s].name : NULL;
}

/* C++ runtime's demangler, found at run time (no link-time dependency on
 * libstdc++); NULL when absent, and names stay mangled. */
static char *(*cxa_demangle)(const char *, char *, size_t *, int *);
static int demangler_looked_up;

static char *demangled(const char *name)
{
    if (strncmp(name, "_Z", 2) != 0)
        return NULL;
    if (!demangler_looked_up) {
        demangler_looked_up = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        cxa_demangle = h ? (char *(*)(const char *, char *, size_t *, int *))dlsym(h, "__cxa_demangle") : NULL;
    }
    int status = -1;
    char *out = cxa_demangle ? cxa_demangle(name, NULL, NULL, &status) : NULL;
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* Many names at once: for each id (a function id, demangled, when kind is
 * 0; a file id when 1), its name and a NUL, "??" when unknown, into buf.
 * Writes at most cap bytes; returns how many there are in all. */
PS_API long ps_dwarf_names(ps_dwarf_t *d, int kind, const int *ids, int n, char *buf, long cap)
{
    long total = 0;
    int linkage = 0;
    for (int i = 0; i < n; i++) {
        const char *name = kind ? ps_dwarf_file(d, ids[i]) : ps_dwarf_function(d, ids[i], &linkage);
        char *plain = name && !kind && linkage ? demangled(name) : NULL;
        const char *text = plain ? plain : name ? name : "??";
        long len = (long)strlen(text) + 1;
        if (total + len <= cap)
            memcpy(buf + total, text, (size_t)len);
        total += len;
        free(plain);
    }
    return total;
}

