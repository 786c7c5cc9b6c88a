/* dwarf.h - shared by the source-mapping decoder's objects (dwarf.c: ELF,
 * flattening and the public calls; dwarf_read.c: forms and abbreviations;
 * dwarf_lines.c: line programs; dwarf_info.c: units, functions, ranges).
 * Not installed. */
#ifndef PS_DWARF_H
#define PS_DWARF_H

#include <stddef.h>
#include <stdint.h>

#include "psdwarf.h"

/* Built with -fvisibility=hidden: only the psdwarf.h calls are exported. */
#define PS_API __attribute__((visibility("default")))

typedef struct {
    const uint8_t *p;
    size_t len;
    int terminated; /* ends with a NUL: every offset in it starts a C string */
} sect_t;

typedef struct {
    uint64_t addr;
    uint32_t file; /* index into files; UINT32_MAX: end of sequence */
    uint32_t line;
} row_t;

/* One subprogram or inlined-subroutine DIE (a function id). */
typedef struct {
    const char *name;   /* NULL: resolve ref */
    uint64_t ref;       /* .debug_info offset of a DIE naming it */
    int32_t parent;     /* inlined: the enclosing function's scope (its caller); -1: none */
    int32_t call_file;  /* inlined: the call site's file id (its unit's file number until the walk ends); -1: unknown */
    uint32_t unit;      /* index into units */
    uint32_t call_line;
    uint8_t linkage;    /* name is a linkage (mangled) name */
    uint8_t inlined;
    uint8_t mangled;    /* its unit's language mangles names (C++, say) */
    uint8_t has_low;
    uint64_t low;       /* its first range's start */
} scope_t;

/* One address range of a scope. */
typedef struct {
    uint64_t lo, hi;
    uint32_t depth;
    int32_t scope;      /* index into scopes */
} func_t;

typedef struct {
    uint64_t lo, hi;
    int32_t func; /* index into scopes, -1: none */
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
    int mangled;                     /* the language mangles names (binutils' mangle_style) */
    uint64_t children;               /* .debug_info offset of the unit DIE's children */
    uint64_t stmt;                   /* its line program, when has_stmt */
    int has_stmt;
    const char *comp_dir;
} unit_t;

/* A unit's line-program files: ids first..first+count-1 for the file
 * numbers base.. (1 before DWARF 5, 0 since) */
typedef struct {
    uint32_t first, count;
    int base;
} unit_files_t;

struct ps_dwarf {
    void *map;
    size_t map_len;
    sect_t info, abbrev, line, str, line_str, str_offsets, addr, ranges, rnglists, symtab, strtab, dynsym, dynstr;
    row_t *rows;
    size_t nrows, caprows;
    size_t *seqs;               /* where each sequence's rows start, in the order read */
    size_t nseqs, capseqs;
    size_t open_seq;            /* where the sequence being read starts */
    char **files;
    size_t nfiles, capfiles;
    func_t *funcs;
    size_t nfuncs, capfuncs;
    scope_t *scopes;
    size_t nscopes, capscopes;
    seg_t *segs;
    size_t nsegs;
    sym_t *syms;
    size_t nsyms;
    section_t *sections;
    size_t nsections;
    unit_t *units;
    size_t nunits, capunits;
    unit_files_t *unit_files;
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

/* Number of leading elements of a sorted array whose `key` is <= value. */
#define COUNT_LE(array, count, key, value)                                                                             \
    __extension__({                                                                                                    \
        size_t lo_ = 0, hi_ = (count);                                                                                 \
        while (lo_ < hi_) {                                                                                            \
            size_t mid_ = (lo_ + hi_) / 2;                                                                             \
            if ((array)[mid_].key <= (value))                                                                          \
                lo_ = mid_ + 1;                                                                                        \
            else                                                                                                       \
                hi_ = mid_;                                                                                            \
        }                                                                                                              \
        lo_;                                                                                                           \
    })

typedef struct {
    const uint8_t *p, *end;
} rd_t;

typedef struct {
    uint64_t name, form;
    int64_t implicit;
} attrspec_t;

typedef struct {
    uint64_t code, tag;
    int children;
    attrspec_t *attrs;
    int nattrs;
    int fixed;   /* bytes of its attributes when every form has a fixed size, else -1 */
    int sibling; /* it has DW_AT_sibling */
} abbrev_t;

typedef struct {
    uint64_t offset;
    abbrev_t *v;
    size_t n;
    attrspec_t *specs;
    int addr_size, offset_size, version; /* what the fixed sizes were computed for */
} abbrevs_t;

typedef struct {
    uint64_t u;          /* constants, offsets, addresses, references (unit-relative made absolute) */
    const char *s;       /* strings */
    int is_string, is_addrx, is_strx, is_const;
} value_t;

/* dwarf.c: large zeroed arrays (the line rows), mapped in huge pages where
 * the kernel allows: faulting in millions of rows page by page was a
 * quarter of the decode time */
void *big_alloc(size_t bytes);
void big_free(void *p, size_t bytes);
int rows_grow(struct ps_dwarf *d);

/* dwarf.c: the ELF symbol naming addr (nearest at or before it in its section) */
const sym_t *symbol_at(const struct ps_dwarf *d, uint64_t addr);

/* dwarf_read.c */
uint64_t rd_u(rd_t *r, int n);
uint64_t rd_uleb(rd_t *r);
int64_t rd_sleb(rd_t *r);
const char *rd_str(rd_t *r);
const char *sect_str(const sect_t *s, uint64_t off);
void abbrevs_free(abbrevs_t *a);
int abbrevs_load(struct ps_dwarf *d, uint64_t off, abbrevs_t *a);
const abbrev_t *abbrev_find(const abbrevs_t *a, uint64_t code);
/* each abbreviation's fixed size for this unit's address and offset sizes */
void abbrevs_sizes(abbrevs_t *a, const unit_t *u);
int read_form(rd_t *r, uint64_t form, int64_t implicit, const unit_t *u, value_t *v);
int skip_form(rd_t *r, uint64_t form, const unit_t *u);
const char *value_string(struct ps_dwarf *d, const unit_t *u, const value_t *v);
uint64_t value_addr(struct ps_dwarf *d, const unit_t *u, const value_t *v);

/* dwarf_lines.c: one line program's rows into d->rows (its sequences into
 * d->seqs) and its files into d->files (ids in *files); scratch holds
 * LINE_SCRATCH bytes */
#define LINE_SCRATCH (65536 * (2 * sizeof(const char *) + sizeof(uint64_t) + sizeof(uint32_t)))
int line_program(struct ps_dwarf *d, uint64_t off, const char *comp_dir, const unit_t *cu, unit_files_t *files,
                 void *scratch);
/* sort d->rows by (address, end of sequence first, sequence, place in it) */
void sort_rows(struct ps_dwarf *d);

/* dwarf_info.c: every unit's functions into d->funcs, line programs through line_program */
int walk_units(struct ps_dwarf *d);
const char *ref_name(struct ps_dwarf *d, uint64_t ref, int *linkage, int hops);
/* the scope's name, resolved through its ref once; NULL: none */
const char *scope_name(struct ps_dwarf *d, scope_t *s);

#endif
