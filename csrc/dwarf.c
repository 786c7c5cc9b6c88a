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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

typedef struct {
    const uint8_t *p;
    size_t len;
} sect_t;

typedef struct {
    uint64_t addr;
    uint32_t file; /* index into files; UINT32_MAX: end of sequence */
    uint32_t line;
    uint32_t seq, order;
} row_t;

typedef struct {
    uint64_t lo, hi;
    uint32_t depth;
    const char *name;   /* NULL: resolve ref */
    uint64_t ref;       /* .debug_info offset of a DIE naming it */
    int linkage;        /* name is a linkage (mangled) name */
} func_t;

typedef struct {
    uint64_t lo, hi;
    int32_t func; /* index into funcs, -1: none */
} seg_t;

typedef struct {
    uint64_t addr, size;
    const char *name;
    const char *file;  /* from the STT_FILE symbols, as binutils assigns it; NULL: unknown */
    uint32_t shndx;
} sym_t;

typedef struct {
    uint64_t lo, hi;
    uint32_t index;
} section_t;

typedef struct {
    uint64_t off, end;          /* unit extent in .debug_info */
    uint64_t abbrev;
    int version, addr_size, offset_size;
    uint64_t str_offsets_base, addr_base, rnglists_base, low_pc;
} unit_t;

struct ps_dwarf {
    void *map;
    size_t map_len;
    sect_t info, abbrev, line, str, line_str, str_offsets, addr, ranges, rnglists, symtab, strtab, dynsym, dynstr;
    row_t *rows;
    size_t nrows, caprows;
    char **files;
    size_t nfiles, capfiles;
    func_t *funcs;
    size_t nfuncs, capfuncs;
    seg_t *segs;
    size_t nsegs;
    sym_t *syms;
    size_t nsyms;
    section_t *sections;
    size_t nsections;
    unit_t *units;
    size_t nunits, capunits;
    void *inflated[16];         /* decompressed sections, freed on close */
    int ninflated;
};

#define GROW(ptr, n, cap)                                                                                              \
    do {                                                                                                               \
        if ((n) == (cap)) {                                                                                            \
            size_t c_ = (cap) ? 2 * (cap) : 1024;                                                                      \
            void *p_ = realloc((ptr), c_ * sizeof *(ptr));                                                             \
            if (!p_)                                                                                                   \
                return -1;                                                                                             \
            (ptr) = p_;                                                                                                \
            (cap) = c_;                                                                                                \
        }                                                                                                              \
    } while (0)

/* ---- reading ---------------------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
} rd_t;

static uint64_t rd_u(rd_t *r, int n)
{
    uint64_t v = 0;
    if (r->p + n > r->end) {
        r->p = r->end;
        return 0;
    }
    for (int i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    return v;
}

static uint64_t rd_uleb(rd_t *r)
{
    uint64_t v = 0;
    int shift = 0;
    while (r->p < r->end) {
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    return v;
}

static int64_t rd_sleb(rd_t *r)
{
    int64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    while (r->p < r->end) {
        b = *r->p++;
        if (shift < 64)
            v |= (int64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

static const char *rd_str(rd_t *r)
{
    const char *s = (const char *)r->p;
    const uint8_t *z = memchr(r->p, 0, (size_t)(r->end - r->p));
    r->p = z ? z + 1 : r->end;
    return z ? s : "";
}

static const char *sect_str(const sect_t *s, uint64_t off)
{
    if (off >= s->len)
        return NULL;
    if (!memchr(s->p + off, 0, s->len - off))
        return NULL;
    return (const char *)s->p + off;
}

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
static const sym_t *symbol_at(const struct ps_dwarf *d, uint64_t addr)
{
    uint32_t shndx = UINT32_MAX;
    for (size_t i = 0; i < d->nsections; i++)
        if (d->sections[i].lo <= addr && addr < d->sections[i].hi) {
            shndx = d->sections[i].index;
            break;
        }
    size_t lo = 0, hi = d->nsyms;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->syms[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo > 0) {
        const sym_t *s = &d->syms[--lo];
        if (s->shndx == shndx)
            return s;
    }
    return NULL;
}

/* ---- abbreviations and attribute values ------------------------------------ */

typedef struct {
    uint64_t name, form;
    int64_t implicit;
} attrspec_t;

typedef struct {
    uint64_t code, tag;
    int children;
    attrspec_t *attrs;
    int nattrs;
} abbrev_t;

typedef struct {
    uint64_t offset;
    abbrev_t *v;
    size_t n;
    attrspec_t *specs;
} abbrevs_t;

static void abbrevs_free(abbrevs_t *a)
{
    free(a->v);
    free(a->specs);
    memset(a, 0, sizeof *a);
}

static int abbrevs_load(struct ps_dwarf *d, uint64_t off, abbrevs_t *a)
{
    abbrevs_free(a);
    a->offset = off;
    if (off >= d->abbrev.len)
        return -1;
    rd_t r = {d->abbrev.p + off, d->abbrev.p + d->abbrev.len};
    size_t cap = 0, ncap = 0, nspecs = 0;
    /* two passes would be cleaner; one pass with indexes into specs is enough */
    size_t *first = NULL;
    for (;;) {
        uint64_t code = rd_uleb(&r);
        if (!code || r.p >= r.end)
            break;
        GROW(a->v, a->n, cap);
        size_t *f2 = realloc(first, sizeof *first * cap);
        if (!f2)
            return -1;
        first = f2;
        abbrev_t *ab = &a->v[a->n];
        ab->code = code;
        ab->tag = rd_uleb(&r);
        ab->children = rd_u(&r, 1);
        ab->nattrs = 0;
        first[a->n] = nspecs;
        for (;;) {
            uint64_t name = rd_uleb(&r), form = rd_uleb(&r);
            int64_t implicit = form == 0x21 ? rd_sleb(&r) : 0;
            if ((!name && !form) || r.p >= r.end)
                break;
            GROW(a->specs, nspecs, ncap);
            a->specs[nspecs++] = (attrspec_t){name, form, implicit};
            ab->nattrs++;
        }
        a->n++;
    }
    for (size_t i = 0; i < a->n; i++)
        a->v[i].attrs = a->specs + first[i];
    free(first);
    return 0;
}

static const abbrev_t *abbrev_find(const abbrevs_t *a, uint64_t code)
{
    if (code >= 1 && code <= a->n && a->v[code - 1].code == code)
        return &a->v[code - 1]; /* the usual dense numbering */
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].code == code)
            return &a->v[i];
    return NULL;
}

typedef struct {
    uint64_t u;          /* constants, offsets, addresses, references (unit-relative made absolute) */
    const char *s;       /* strings */
    int is_string, is_addrx, is_strx, is_const;
} value_t;

/* Read one attribute value; forms we do not use are skipped correctly. */
static int read_form(rd_t *r, uint64_t form, int64_t implicit, const unit_t *u, value_t *v)
{
    memset(v, 0, sizeof *v);
    int os = u->offset_size;
    switch (form) {
    case 0x01: v->u = rd_u(r, u->addr_size); break;                      /* addr */
    case 0x03: r->p += rd_u(r, 2); break;                                /* block2 */
    case 0x04: r->p += rd_u(r, 4); break;                                /* block4 */
    case 0x05: v->u = rd_u(r, 2); v->is_const = 1; break;                /* data2 */
    case 0x06: v->u = rd_u(r, 4); v->is_const = 1; break;                /* data4 */
    case 0x07: v->u = rd_u(r, 8); v->is_const = 1; break;                /* data8 */
    case 0x08: v->s = rd_str(r); v->is_string = 1; break;                /* string */
    case 0x09: case 0x18: r->p += rd_uleb(r); break;                     /* block, exprloc */
    case 0x0a: r->p += rd_u(r, 1); break;                                /* block1 */
    case 0x0b: v->u = rd_u(r, 1); v->is_const = 1; break;                /* data1 */
    case 0x0c: v->u = rd_u(r, 1); break;                                 /* flag */
    case 0x0d: v->u = (uint64_t)rd_sleb(r); v->is_const = 1; break;      /* sdata */
    case 0x0e: case 0x1f: case 0x1d: case 0x1f21:                        /* strp, line_strp, strp_sup */
        v->u = rd_u(r, os); v->is_string = 2 + (form == 0x1f); break;
    case 0x0f: v->u = rd_uleb(r); v->is_const = 1; break;                /* udata */
    case 0x10: v->u = rd_u(r, u->version <= 2 ? u->addr_size : os); break; /* ref_addr: absolute */
    case 0x11: v->u = u->off + rd_u(r, 1); break;                        /* ref1..ref8, ref_udata */
    case 0x12: v->u = u->off + rd_u(r, 2); break;
    case 0x13: v->u = u->off + rd_u(r, 4); break;
    case 0x14: v->u = u->off + rd_u(r, 8); break;
    case 0x15: v->u = u->off + rd_uleb(r); break;
    case 0x16: return read_form(r, rd_uleb(r), implicit, u, v);          /* indirect */
    case 0x17: v->u = rd_u(r, os); break;                                /* sec_offset */
    case 0x19: v->u = 1; break;                                          /* flag_present */
    case 0x1a: case 0x1f02: v->u = rd_uleb(r); v->is_strx = 1; break;    /* strx */
    case 0x1b: case 0x1f01: v->u = rd_uleb(r); v->is_addrx = 1; break;   /* addrx */
    case 0x1c: v->u = rd_u(r, 4); break;                                 /* ref_sup4 */
    case 0x1e: r->p += 16; break;                                        /* data16 */
    case 0x20: case 0x24: v->u = rd_u(r, 8); break;                      /* ref_sig8, ref_sup8 */
    case 0x21: v->u = (uint64_t)implicit; v->is_const = 1; break;        /* implicit_const */
    case 0x22: case 0x23: v->u = rd_uleb(r); break;                      /* loclistx, rnglistx */
    case 0x25: v->u = rd_u(r, 1); v->is_strx = 1; break;                 /* strx1..4 */
    case 0x26: v->u = rd_u(r, 2); v->is_strx = 1; break;
    case 0x27: v->u = rd_u(r, 3); v->is_strx = 1; break;
    case 0x28: v->u = rd_u(r, 4); v->is_strx = 1; break;
    case 0x29: v->u = rd_u(r, 1); v->is_addrx = 1; break;                /* addrx1..4 */
    case 0x2a: v->u = rd_u(r, 2); v->is_addrx = 1; break;
    case 0x2b: v->u = rd_u(r, 3); v->is_addrx = 1; break;
    case 0x2c: v->u = rd_u(r, 4); v->is_addrx = 1; break;
    case 0x1f20: v->u = rd_u(r, os); break;                              /* GNU_ref_alt */
    default: return -1;                                                  /* unknown form: stop this unit */
    }
    return r->p <= r->end ? 0 : -1;
}

static const char *value_string(struct ps_dwarf *d, const unit_t *u, const value_t *v)
{
    if (v->is_string == 1)
        return v->s;
    if (v->is_string == 2)
        return sect_str(&d->str, v->u);
    if (v->is_string == 3)
        return sect_str(&d->line_str, v->u);
    if (v->is_strx) {
        uint64_t at = u->str_offsets_base + v->u * (uint64_t)u->offset_size;
        if (at + u->offset_size > d->str_offsets.len)
            return NULL;
        rd_t r = {d->str_offsets.p + at, d->str_offsets.p + d->str_offsets.len};
        return sect_str(&d->str, rd_u(&r, u->offset_size));
    }
    return NULL;
}

static uint64_t value_addr(struct ps_dwarf *d, const unit_t *u, const value_t *v)
{
    if (!v->is_addrx)
        return v->u;
    uint64_t at = u->addr_base + v->u * (uint64_t)u->addr_size;
    if (at + u->addr_size > d->addr.len)
        return 0;
    rd_t r = {d->addr.p + at, d->addr.p + d->addr.len};
    return rd_u(&r, u->addr_size);
}

/* ---- line programs --------------------------------------------------------- */

static int add_file(struct ps_dwarf *d, const char *comp_dir, const char *dir, const char *name, uint32_t *id)
{
    GROW(d->files, d->nfiles, d->capfiles);
    size_t len = strlen(comp_dir) + strlen(dir) + strlen(name) + 3;
    char *path = malloc(len);
    if (!path)
        return -1;
    if (name[0] == '/')
        snprintf(path, len, "%s", name);
    else if (dir[0] == '/')
        snprintf(path, len, "%s/%s", dir, name);
    else if (dir[0] && comp_dir[0])
        snprintf(path, len, "%s/%s/%s", comp_dir, dir, name);
    else if (dir[0] || comp_dir[0])
        snprintf(path, len, "%s/%s", dir[0] ? dir : comp_dir, name);
    else
        snprintf(path, len, "%s", name);
    d->files[d->nfiles] = path;
    *id = (uint32_t)d->nfiles++;
    return 0;
}

/* v5 directory/file entry tables: (content type, form) pairs, then entries. */
static int v5_entries(struct ps_dwarf *d, rd_t *r, const unit_t *lu, const char **paths, uint64_t *dirs, size_t max,
                      size_t *count)
{
    int nfmt = (int)rd_u(r, 1);
    uint64_t fmt[32][2];
    for (int i = 0; i < nfmt && i < 32; i++) {
        fmt[i][0] = rd_uleb(r);
        fmt[i][1] = rd_uleb(r);
    }
    uint64_t n = rd_uleb(r);
    for (uint64_t k = 0; k < n && r->p < r->end; k++) {
        const char *path = "";
        uint64_t dir = 0;
        for (int i = 0; i < nfmt && i < 32; i++) {
            value_t v;
            if (read_form(r, fmt[i][1], 0, lu, &v))
                return -1;
            if (fmt[i][0] == 1) { /* DW_LNCT_path */
                const char *s = value_string(d, lu, &v);
                path = s ? s : "";
            } else if (fmt[i][0] == 2) /* DW_LNCT_directory_index */
                dir = v.u;
        }
        if (k < max) {
            paths[k] = path;
            if (dirs)
                dirs[k] = dir;
        }
    }
    *count = n < max ? n : max;
    return 0;
}

#define MAX_FILES 65536

static int line_program(struct ps_dwarf *d, uint64_t off, const char *comp_dir, const unit_t *cu, uint32_t *seq)
{
    if (off >= d->line.len)
        return 0;
    rd_t r = {d->line.p + off, d->line.p + d->line.len};
    uint64_t unit_len = rd_u(&r, 4);
    int os = 4;
    if (unit_len == 0xffffffff) {
        unit_len = rd_u(&r, 8);
        os = 8;
    }
    const uint8_t *end = r.p + unit_len;
    if (end > r.end)
        return 0;
    r.end = end;
    int version = (int)rd_u(&r, 2);
    unit_t lu = *cu;
    lu.offset_size = os;
    if (version >= 5) {
        lu.addr_size = (int)rd_u(&r, 1);
        rd_u(&r, 1); /* segment selector size */
    }
    uint64_t header_len = rd_u(&r, os);
    const uint8_t *program = r.p + header_len;
    int min_inst = (int)rd_u(&r, 1);
    int max_ops = version >= 4 ? (int)rd_u(&r, 1) : 1;
    (void)max_ops;
    int default_stmt = (int)rd_u(&r, 1);
    (void)default_stmt;
    int line_base = (int8_t)rd_u(&r, 1);
    int line_range = (int)rd_u(&r, 1);
    int opcode_base = (int)rd_u(&r, 1);
    uint8_t std_len[256] = {0};
    for (int i = 1; i < opcode_base; i++)
        std_len[i] = (uint8_t)rd_u(&r, 1);
    if (!line_range)
        return 0;

    static const char *dirs[MAX_FILES], *names[MAX_FILES];
    static uint64_t dir_of[MAX_FILES];
    size_t ndirs = 0, nnames = 0;
    if (version >= 5) {
        if (v5_entries(d, &r, &lu, dirs, NULL, MAX_FILES, &ndirs) ||
            v5_entries(d, &r, &lu, names, dir_of, MAX_FILES, &nnames))
            return 0;
    } else {
        while (r.p < r.end && *r.p && ndirs < MAX_FILES)
            dirs[ndirs++] = rd_str(&r);
        r.p++;
        while (r.p < r.end && *r.p && nnames < MAX_FILES) {
            names[nnames] = rd_str(&r);
            dir_of[nnames++] = rd_uleb(&r);
            rd_uleb(&r);
            rd_uleb(&r);
        }
    }
    /* file ids in our table for this program's file numbers */
    static uint32_t ids[MAX_FILES];
    for (size_t i = 0; i < nnames; i++) {
        const char *dir = "";
        uint64_t di = dir_of[i];
        if (version >= 5)
            dir = di < ndirs ? dirs[di] : "";
        else
            dir = di == 0 ? comp_dir : (di <= ndirs ? dirs[di - 1] : "");
        if (add_file(d, comp_dir, dir, names[i], &ids[i]))
            return -1;
    }
    int file_base = version >= 5 ? 0 : 1;

    r.p = program;
    uint64_t addr = 0;
    int64_t line = 1;
    uint64_t file = 1;
    uint32_t order = 0;
#define EMIT(endseq)                                                                                                   \
    do {                                                                                                               \
        GROW(d->rows, d->nrows, d->caprows);                                                                           \
        uint64_t fi_ = file - (uint64_t)file_base;                                                                     \
        d->rows[d->nrows++] = (row_t){addr, (endseq) ? UINT32_MAX : (fi_ < nnames ? ids[fi_] : UINT32_MAX - 1),        \
                                      (uint32_t)line, *seq, order++};                                                  \
    } while (0)
    while (r.p < r.end) {
        int op = (int)rd_u(&r, 1);
        if (op >= opcode_base) {
            int adj = op - opcode_base;
            addr += (uint64_t)(adj / line_range) * (uint64_t)min_inst;
            line += line_base + adj % line_range;
            EMIT(0);
            continue;
        }
        switch (op) {
        case 0: {
            uint64_t len = rd_uleb(&r);
            const uint8_t *next = r.p + len;
            int ext = (int)rd_u(&r, 1);
            if (ext == 1) { /* end_sequence */
                EMIT(1);
                (*seq)++;
                addr = 0;
                line = 1;
                file = 1;
            } else if (ext == 2)
                addr = rd_u(&r, (int)(len - 1));
            r.p = next;
            break;
        }
        case 1: EMIT(0); break;
        case 2: addr += rd_uleb(&r) * (uint64_t)min_inst; break;
        case 3: line += rd_sleb(&r); break;
        case 4: file = rd_uleb(&r); break;
        case 5: rd_uleb(&r); break;
        case 8: addr += (uint64_t)((255 - opcode_base) / line_range) * (uint64_t)min_inst; break;
        case 9: addr += rd_u(&r, 2); break;
        case 12: rd_uleb(&r); break;
        default:
            for (int i = 0; i < std_len[op]; i++)
                rd_uleb(&r);
        }
    }
#undef EMIT
    return 0;
}

/* ---- units and functions ------------------------------------------------------ */

static int add_func(struct ps_dwarf *d, uint64_t lo, uint64_t hi, uint32_t depth, const char *name, int linkage,
                    uint64_t ref)
{
    if (hi <= lo)
        return 0;
    GROW(d->funcs, d->nfuncs, d->capfuncs);
    d->funcs[d->nfuncs++] = (func_t){lo, hi, depth, name, ref, linkage};
    return 0;
}

static int ranges_of(struct ps_dwarf *d, const unit_t *u, uint64_t off, int is_index, uint32_t depth,
                     const char *name, int linkage, uint64_t ref)
{
    if (u->version >= 5) {
        if (is_index) {
            uint64_t at = u->rnglists_base + off * (uint64_t)u->offset_size;
            if (at + u->offset_size > d->rnglists.len)
                return 0;
            rd_t t = {d->rnglists.p + at, d->rnglists.p + d->rnglists.len};
            off = u->rnglists_base + rd_u(&t, u->offset_size);
        }
        if (off >= d->rnglists.len)
            return 0;
        rd_t r = {d->rnglists.p + off, d->rnglists.p + d->rnglists.len};
        uint64_t base = u->low_pc;
        while (r.p < r.end) {
            int kind = (int)rd_u(&r, 1);
            uint64_t a, b;
            value_t v = {0};
            switch (kind) {
            case 0: return 0;
            case 1: v.is_addrx = 1; v.u = rd_uleb(&r); base = value_addr(d, u, &v); break;
            case 2: v.is_addrx = 1; v.u = rd_uleb(&r); a = value_addr(d, u, &v);
                v.u = rd_uleb(&r); b = value_addr(d, u, &v);
                if (add_func(d, a, b, depth, name, linkage, ref)) return -1;
                break;
            case 3: v.is_addrx = 1; v.u = rd_uleb(&r); a = value_addr(d, u, &v); b = a + rd_uleb(&r);
                if (add_func(d, a, b, depth, name, linkage, ref)) return -1;
                break;
            case 4: a = base + rd_uleb(&r); b = base + rd_uleb(&r);
                if (add_func(d, a, b, depth, name, linkage, ref)) return -1;
                break;
            case 5: base = rd_u(&r, u->addr_size); break;
            case 6: a = rd_u(&r, u->addr_size); b = rd_u(&r, u->addr_size);
                if (add_func(d, a, b, depth, name, linkage, ref)) return -1;
                break;
            case 7: a = rd_u(&r, u->addr_size); b = a + rd_uleb(&r);
                if (add_func(d, a, b, depth, name, linkage, ref)) return -1;
                break;
            default: return 0;
            }
        }
        return 0;
    }
    if (off >= d->ranges.len)
        return 0;
    rd_t r = {d->ranges.p + off, d->ranges.p + d->ranges.len};
    uint64_t base = u->low_pc, all = u->addr_size == 8 ? UINT64_MAX : 0xffffffffu;
    while (r.p < r.end) {
        uint64_t a = rd_u(&r, u->addr_size), b = rd_u(&r, u->addr_size);
        if (!a && !b)
            break;
        if (a == all)
            base = b;
        else if (add_func(d, base + a, base + b, depth, name, linkage, ref))
            return -1;
    }
    return 0;
}

enum { AT_name = 0x03, AT_stmt_list = 0x10, AT_low_pc = 0x11, AT_high_pc = 0x12, AT_comp_dir = 0x1b,
       AT_abstract_origin = 0x31, AT_specification = 0x47, AT_ranges = 0x55, AT_linkage_name = 0x6e,
       AT_MIPS_linkage_name = 0x2007, AT_str_offsets_base = 0x72, AT_addr_base = 0x73, AT_rnglists_base = 0x74,
       AT_GNU_addr_base = 0x2133, AT_GNU_ranges_base = 0x2132 };
enum { TAG_subprogram = 0x2e, TAG_inlined_subroutine = 0x1d };

typedef struct {
    uint64_t low, high, ranges, ref, stmt;
    int has_low, has_high, high_is_offset, has_ranges, ranges_is_index, has_stmt;
    const char *name, *linkage, *comp_dir;
} dieattrs_t;

static int read_die(struct ps_dwarf *d, rd_t *r, const abbrev_t *ab, unit_t *u, dieattrs_t *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < ab->nattrs; i++) {
        const attrspec_t *s = &ab->attrs[i];
        value_t v;
        if (read_form(r, s->form, s->implicit, u, &v))
            return -1;
        switch (s->name) {
        case AT_name: a->name = value_string(d, u, &v); break;
        case AT_linkage_name: case AT_MIPS_linkage_name: a->linkage = value_string(d, u, &v); break;
        case AT_comp_dir: a->comp_dir = value_string(d, u, &v); break;
        case AT_low_pc: a->low = value_addr(d, u, &v); a->has_low = 1; break;
        case AT_high_pc: a->high = value_addr(d, u, &v); a->has_high = 1; a->high_is_offset = v.is_const; break;
        case AT_ranges: a->ranges = v.u; a->has_ranges = 1; a->ranges_is_index = s->form == 0x23; break;
        case AT_abstract_origin: case AT_specification: if (!a->ref) a->ref = v.u; break;
        case AT_stmt_list: a->stmt = v.u; a->has_stmt = 1; break;
        case AT_str_offsets_base: u->str_offsets_base = v.u; break;
        case AT_addr_base: case AT_GNU_addr_base: u->addr_base = v.u; break;
        case AT_rnglists_base: u->rnglists_base = v.u; break;
        default: break;
        }
    }
    return 0;
}

static int unit_header(struct ps_dwarf *d, uint64_t off, unit_t *u, rd_t *r, int *unit_type)
{
    memset(u, 0, sizeof *u);
    r->p = d->info.p + off;
    r->end = d->info.p + d->info.len;
    uint64_t len = rd_u(r, 4);
    u->offset_size = 4;
    if (len == 0xffffffff) {
        len = rd_u(r, 8);
        u->offset_size = 8;
    }
    u->off = off;
    u->end = (uint64_t)(r->p - d->info.p) + len;
    if (u->end > d->info.len || len < 2)
        return -1;
    r->end = d->info.p + u->end;
    u->version = (int)rd_u(r, 2);
    *unit_type = 1;
    if (u->version >= 5) {
        *unit_type = (int)rd_u(r, 1);
        u->addr_size = (int)rd_u(r, 1);
        u->abbrev = rd_u(r, u->offset_size);
        if (*unit_type == 4 || *unit_type == 5)
            rd_u(r, 8); /* dwo id */
        else if (*unit_type == 2 || *unit_type == 6) {
            rd_u(r, 8);
            rd_u(r, u->offset_size);
        }
    } else {
        u->abbrev = rd_u(r, u->offset_size);
        u->addr_size = (int)rd_u(r, 1);
    }
    return u->addr_size == 4 || u->addr_size == 8 ? 0 : -1;
}

static int walk_units(struct ps_dwarf *d)
{
    abbrevs_t ab = {0};
    ab.offset = UINT64_MAX;
    uint32_t seq = 0;
    for (uint64_t off = 0; off < d->info.len;) {
        unit_t u;
        rd_t r;
        int type;
        if (unit_header(d, off, &u, &r, &type))
            break;
        off = u.end;
        if (u.abbrev != ab.offset && abbrevs_load(d, u.abbrev, &ab))
            continue;
        GROW(d->units, d->nunits, d->capunits);
        uint32_t depth = 0;
        int first = 1;
        while (r.p < r.end) {
            uint64_t code = rd_uleb(&r);
            if (!code) {
                if (depth == 0)
                    break;
                depth--;
                continue;
            }
            const abbrev_t *a = abbrev_find(&ab, code);
            dieattrs_t at;
            if (!a || read_die(d, &r, a, &u, &at))
                break;
            if (first) { /* the unit DIE: bases, line program, and its pc range as the base address */
                first = 0;
                u.low_pc = at.has_low ? at.low : 0;
                if (type == 1 || type == 3) {
                    if (at.has_stmt && line_program(d, at.stmt, at.comp_dir ? at.comp_dir : "", &u, &seq)) {
                        abbrevs_free(&ab);
                        return -1;
                    }
                }
            } else if (a->tag == TAG_subprogram || a->tag == TAG_inlined_subroutine) {
                const char *name = at.linkage ? at.linkage : at.name;
                int linkage = at.linkage != NULL;
                uint64_t ref = name ? 0 : at.ref;
                int rc = 0;
                if (at.has_low && at.has_high)
                    rc = add_func(d, at.low, at.high_is_offset ? at.low + at.high : at.high, depth, name, linkage,
                                  ref);
                else if (at.has_ranges)
                    rc = ranges_of(d, &u, at.ranges, at.ranges_is_index, depth, name, linkage, ref);
                if (rc) {
                    abbrevs_free(&ab);
                    return -1;
                }
            }
            if (a->children)
                depth++;
        }
        d->units[d->nunits++] = u;
    }
    abbrevs_free(&ab);
    return 0;
}

/* The name a DIE refers to through abstract_origin / specification. */
static const char *ref_name(struct ps_dwarf *d, uint64_t ref, int *linkage, int hops)
{
    size_t lo = 0, hi = d->nunits;
    while (lo < hi) { /* the unit holding the offset */
        size_t mid = (lo + hi) / 2;
        if (d->units[mid].end <= ref)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= d->nunits || ref < d->units[lo].off || hops > 4)
        return NULL;
    unit_t u = d->units[lo];
    abbrevs_t ab = {0};
    if (abbrevs_load(d, u.abbrev, &ab))
        return NULL;
    rd_t r = {d->info.p + ref, d->info.p + u.end};
    const abbrev_t *a = abbrev_find(&ab, rd_uleb(&r));
    dieattrs_t at;
    const char *name = NULL;
    if (a && !read_die(d, &r, a, &u, &at)) {
        *linkage = at.linkage != NULL;
        name = at.linkage ? at.linkage : at.name;
        if (!name && at.ref)
            name = ref_name(d, at.ref, linkage, hops + 1);
    }
    abbrevs_free(&ab);
    return name;
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

static int by_row(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    int xe = x->file == UINT32_MAX, ye = y->file == UINT32_MAX;
    if (xe != ye)
        return xe ? -1 : 1; /* an end of sequence gives way to a row starting there */
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int flatten(struct ps_dwarf *d)
{
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
            d->segs[d->nsegs++] = (seg_t){(from), (to), (f)};                                                          \
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
    qsort(d->rows, d->nrows, sizeof *d->rows, by_row);
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
    free(d->rows);
    free(d->funcs);
    free(d->segs);
    free(d->syms);
    free(d->sections);
    free(d->units);
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
        return PS_HWPC_EIO;
    struct stat st;
    if (fstat(fd, &st) || st.st_size == 0) {
        close(fd);
        return PS_HWPC_EIO;
    }
    struct ps_dwarf *d = calloc(1, sizeof *d);
    if (!d) {
        close(fd);
        return PS_HWPC_EIO;
    }
    d->map_len = (size_t)st.st_size;
    d->map = mmap(NULL, d->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (d->map == MAP_FAILED) {
        d->map = NULL;
        ps_dwarf_close(d);
        return PS_HWPC_EIO;
    }
    int rc = elf_sections(d);
    if (rc) {
        ps_dwarf_close(d);
        return rc == -2 ? PS_HWPC_EBACKEND : PS_HWPC_EINVAL;
    }
    if (elf_symbols(d) || (d->info.len && walk_units(d)) || flatten(d)) {
        ps_dwarf_close(d);
        return PS_HWPC_EIO;
    }
    *out = d;
    return PS_HWPC_OK;
}

PS_API int ps_dwarf_has_dwarf(const ps_dwarf_t *d) { return d && d->info.len && d->line.len; }

/* Many addresses at once, as ids (one call from Python instead of one per
 * address): file id (-1 unknown, see ps_dwarf_file), line, function id
 * (-1 unknown; see ps_dwarf_function). */
PS_API void ps_dwarf_lookup_many(ps_dwarf_t *d, const unsigned long long *addrs, int n, int *files, int *lines,
                                 int *functions)
{
    for (int i = 0; i < n; i++) {
        uint64_t addr = addrs[i];
        files[i] = -1;
        lines[i] = 0;
        functions[i] = -1;
        size_t lo = 0, hi = d->nrows;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (d->rows[mid].addr <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo && d->rows[lo - 1].file < d->nfiles) {
            files[i] = (int)d->rows[lo - 1].file;
            lines[i] = (int)d->rows[lo - 1].line;
        }
        lo = 0;
        hi = d->nsegs;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (d->segs[mid].hi <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < d->nsegs && d->segs[lo].lo <= addr && addr < d->segs[lo].hi) {
            func_t *f = &d->funcs[d->segs[lo].func];
            if (!f->name && f->ref) {
                f->name = ref_name(d, f->ref, &f->linkage, 0);
                f->ref = 0;
            }
            if (f->name) {
                functions[i] = d->segs[lo].func;
                continue;
            }
        }
        const sym_t *sym = symbol_at(d, addr);
        if (sym) {
            functions[i] = (int)(d->nfuncs + (size_t)(sym - d->syms));
            if (files[i] < 0 && sym->file)
                files[i] = -2 - (int)(sym - d->syms); /* a symbol's file: see ps_dwarf_file */
        }
    }
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
    if ((size_t)id < d->nfuncs) {
        *linkage = d->funcs[id].linkage;
        return d->funcs[id].name;
    }
    size_t s = (size_t)id - d->nfuncs;
    return s < d->nsyms ? d->syms[s].name : NULL;
}
