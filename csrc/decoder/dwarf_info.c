/* dwarf_info.c - walking .debug_info: unit headers, the unit DIE (bases,
 * line program), and every subprogram and inlined subroutine with its
 * address ranges (low/high pc, .debug_ranges, .debug_rnglists) and name,
 * followed through abstract_origin / specification when needed. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf.h"

/* ---- units and functions ------------------------------------------------------ */

static int add_func(struct ps_dwarf *d, uint64_t lo, uint64_t hi, uint32_t depth, int32_t scope)
{
    if (hi <= lo)
        return 0;
    GROW(d->funcs, d->nfuncs, d->capfuncs);
    d->funcs[d->nfuncs++] = (func_t){lo, hi, depth, scope};
    scope_t *s = &d->scopes[scope];
    if (!s->has_low) {
        s->has_low = 1;
        s->low = lo;
    }
    return 0;
}

static int ranges_of(struct ps_dwarf *d, const unit_t *u, uint64_t off, int is_index, uint32_t depth, int32_t scope)
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
                if (add_func(d, a, b, depth, scope)) return -1;
                break;
            case 3: v.is_addrx = 1; v.u = rd_uleb(&r); a = value_addr(d, u, &v); b = a + rd_uleb(&r);
                if (add_func(d, a, b, depth, scope)) return -1;
                break;
            case 4: a = base + rd_uleb(&r); b = base + rd_uleb(&r);
                if (add_func(d, a, b, depth, scope)) return -1;
                break;
            case 5: base = rd_u(&r, u->addr_size); break;
            case 6: a = rd_u(&r, u->addr_size); b = rd_u(&r, u->addr_size);
                if (add_func(d, a, b, depth, scope)) return -1;
                break;
            case 7: a = rd_u(&r, u->addr_size); b = a + rd_uleb(&r);
                if (add_func(d, a, b, depth, scope)) return -1;
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
        else if (add_func(d, base + a, base + b, depth, scope))
            return -1;
    }
    return 0;
}

enum { AT_name = 0x03, AT_stmt_list = 0x10, AT_low_pc = 0x11, AT_high_pc = 0x12, AT_comp_dir = 0x1b,
       AT_abstract_origin = 0x31, AT_specification = 0x47, AT_ranges = 0x55, AT_linkage_name = 0x6e,
       AT_MIPS_linkage_name = 0x2007, AT_str_offsets_base = 0x72, AT_addr_base = 0x73, AT_rnglists_base = 0x74,
       AT_GNU_addr_base = 0x2133, AT_GNU_ranges_base = 0x2132, AT_call_file = 0x58, AT_call_line = 0x59,
       AT_language = 0x13 };
enum { TAG_subprogram = 0x2e, TAG_inlined_subroutine = 0x1d };

typedef struct {
    uint64_t low, high, ranges, ref, stmt, call_file, call_line, language;
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
        case AT_call_file: a->call_file = v.u; break;
        case AT_call_line: a->call_line = v.u; break;
        case AT_language: a->language = v.u; break;
        case AT_str_offsets_base: u->str_offsets_base = v.u; break;
        case AT_addr_base: case AT_GNU_addr_base: u->addr_base = v.u; break;
        case AT_rnglists_base: u->rnglists_base = v.u; break;
        default: break;
        }
    }
    return 0;
}

/* Types whose children cannot hold code: skipped through DW_AT_sibling.
 * In languages with member functions (C++), structures and classes are
 * walked: binutils looks inside them too. */
static int no_code(uint64_t tag, int mangled)
{
    switch (tag) {
    case 0x01: case 0x04: case 0x15: /* array, enumeration, subroutine type */
        return 1;
    case 0x02: case 0x13: case 0x17: /* class, structure, union */
        return !mangled;
    default:
        return 0;
    }
}

/* Past a DIE's attributes, keeping DW_AT_sibling (absolute offset). */
static int skip_die(rd_t *r, const abbrev_t *ab, const unit_t *u, uint64_t *sibling)
{
    for (int i = 0; i < ab->nattrs; i++) {
        const attrspec_t *s = &ab->attrs[i];
        if (s->name != 0x01) {
            if (skip_form(r, s->form, u))
                return -1;
            continue;
        }
        value_t v;
        if (read_form(r, s->form, s->implicit, u, &v))
            return -1;
        *sibling = v.u;
    }
    return r->p <= r->end ? 0 : -1;
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
    if (len > (uint64_t)(r->end - r->p) || len < 2) /* also: a unit ends after it starts, so the walk ends */
        return -1;
    u->end = (uint64_t)(r->p - d->info.p) + len;
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

/* A function DIE met in the walk, per nesting level, made a scope only
 * when it has code or an inlined call with code is nested in it. */
typedef struct {
    int is_func;
    int32_t scope; /* -1: not yet a scope */
    int inlined;
    const char *name;
    int linkage;
    uint64_t ref;
    int32_t call_file; /* the unit's file number */
    uint32_t call_line;
    int mangled;
    uint32_t unit;
} level_t;

#define MAX_LEVELS 1024

/* Whether binutils demangles the language's names (its mangle_style):
 * then a function known only by a plain DWARF name takes the ELF symbol
 * that starts where it starts (see scope_name). */
static int mangles(uint64_t language)
{
    switch (language) {
    case 0x1: case 0x2: case 0x5: case 0x6: case 0x7: case 0x8: case 0x9: case 0xa: case 0xc: case 0xe: case 0xf:
    case 0x10: case 0x12: case 0x14: case 0x1d: case 0x22: case 0x23: case 0x8001:
        return 0; /* C, Fortran, Pascal, Objective C and the like */
    default:
        return 1;
    }
}

/* The scope of the innermost function enclosing level `below` (exclusive):
 * the caller of an inlined call there, as binutils takes it. */
static int32_t enclosing(struct ps_dwarf *d, level_t *lv, uint32_t below);

static int32_t make_scope(struct ps_dwarf *d, level_t *lv, uint32_t level)
{
    level_t *l = &lv[level];
    if (l->scope >= 0)
        return l->scope;
    int32_t parent = l->inlined ? enclosing(d, lv, level) : -1;
    if (parent == -2)
        return -2;
    if (d->nscopes == d->capscopes) {
        size_t c = d->capscopes ? 2 * d->capscopes : 1024;
        scope_t *p = realloc(d->scopes, c * sizeof *p);
        if (!p)
            return -2;
        d->scopes = p;
        d->capscopes = c;
    }
    d->scopes[d->nscopes] = (scope_t){.name = l->name, .ref = l->linkage ? 0 : l->ref, .parent = parent,
                                      .call_file = l->call_file, .unit = l->unit, .call_line = l->call_line,
                                      .linkage = (uint8_t)l->linkage, .inlined = (uint8_t)l->inlined,
                                      .mangled = (uint8_t)l->mangled};
    l->scope = (int32_t)d->nscopes++;
    return l->scope;
}

static int32_t enclosing(struct ps_dwarf *d, level_t *lv, uint32_t below)
{
    while (below-- > 0)
        if (lv[below].is_func)
            return make_scope(d, lv, below);
    return -1;
}

/* Every unit's header and unit DIE (bases, language, line program) into
 * d->units, for the two walks that follow. */
static int read_units(struct ps_dwarf *d)
{
    abbrevs_t ab = {0};
    ab.offset = UINT64_MAX;
    int rc = 0;
    for (uint64_t off = 0; off < d->info.len;) {
        unit_t u;
        rd_t r;
        int type;
        if (unit_header(d, off, &u, &r, &type))
            break;
        off = u.end;
        if (u.abbrev != ab.offset && abbrevs_load(d, u.abbrev, &ab))
            continue;
        if (d->nunits == d->capunits) {
            size_t c = d->capunits ? 2 * d->capunits : 1024;
            unit_t *p = realloc(d->units, c * sizeof *p);
            if (!p) {
                rc = -1;
                break;
            }
            d->units = p;
            d->capunits = c;
        }
        u.children = u.end; /* nothing to walk unless the unit DIE reads */
        const abbrev_t *a = abbrev_find(&ab, rd_uleb(&r));
        dieattrs_t at;
        if (a && !read_die(d, &r, a, &u, &at)) {
            u.low_pc = at.has_low ? at.low : 0; /* the base address of its ranges */
            u.mangled = mangles(at.language);
            u.has_stmt = (type == 1 || type == 3) && at.has_stmt;
            u.stmt = at.stmt;
            u.comp_dir = at.comp_dir ? at.comp_dir : "";
            u.children = a->children ? (uint64_t)(r.p - d->info.p) : u.end;
        }
        d->units[d->nunits++] = u;
    }
    abbrevs_free(&ab);
    return rc;
}

/* The line programs of every unit, then the rows sorted: run beside the
 * walk of the functions (they share nothing but read-only input). */
static void *line_programs(void *arg)
{
    struct ps_dwarf *d = arg;
    void *scratch = malloc(LINE_SCRATCH);
    intptr_t rc = scratch ? 0 : -1;
    for (size_t i = 0; i < d->nunits && !rc; i++)
        if (d->units[i].has_stmt &&
            line_program(d, d->units[i].stmt, d->units[i].comp_dir, &d->units[i], &d->unit_files[i], scratch))
            rc = -1;
    free(scratch);
    if (!rc)
        sort_rows(d);
    return (void *)rc;
}

/* One unit's subprograms and inlined subroutines into d->scopes and d->funcs. */
static int walk_functions(struct ps_dwarf *d, uint32_t index, abbrevs_t *ab, level_t *lv)
{
    unit_t u = d->units[index];
    if (u.children >= u.end)
        return 0;
    if (u.abbrev != ab->offset && abbrevs_load(d, u.abbrev, ab))
        return 0;
    abbrevs_sizes(ab, &u);
    rd_t r = {d->info.p + u.children, d->info.p + u.end};
    uint32_t depth = 1;
    lv[0].is_func = 0;
    while (r.p < r.end) {
        uint64_t code = rd_uleb(&r);
        if (!code) {
            if (--depth == 0)
                break;
            continue;
        }
        const abbrev_t *a = abbrev_find(ab, code);
        if (!a)
            break;
        level_t *l = depth < MAX_LEVELS ? &lv[depth] : NULL;
        if (l)
            l->is_func = 0;
        if (a->tag != TAG_subprogram && a->tag != TAG_inlined_subroutine) {
            /* not a function: skipped as fast as its forms allow, with
             * the whole subtree of a type that holds no code */
            uint64_t sibling = 0;
            if (a->fixed >= 0 && !(a->children && a->sibling && no_code(a->tag, u.mangled))) {
                if (a->fixed > r.end - r.p)
                    break;
                r.p += a->fixed;
            } else if (skip_die(&r, a, &u, &sibling))
                break;
            if (a->children && sibling && no_code(a->tag, u.mangled) && sibling > (uint64_t)(r.p - d->info.p) &&
                sibling <= u.end) {
                r.p = d->info.p + sibling;
                continue;
            }
            if (a->children)
                depth++;
            continue;
        }
        dieattrs_t at;
        if (read_die(d, &r, a, &u, &at))
            break;
        if (l) {
            const char *name = at.linkage ? at.linkage : at.name;
            *l = (level_t){1, -1, a->tag == TAG_inlined_subroutine, name, at.linkage != NULL, at.ref,
                           at.call_file <= INT32_MAX ? (int32_t)at.call_file : -1, (uint32_t)at.call_line,
                           u.mangled, index};
            if ((at.has_low && at.has_high) || at.has_ranges) {
                int32_t scope = make_scope(d, lv, depth);
                int rc = scope < 0 ? -1
                         : at.has_low && at.has_high
                             ? add_func(d, at.low, at.high_is_offset ? at.low + at.high : at.high, depth, scope)
                             : ranges_of(d, &u, at.ranges, at.ranges_is_index, depth, scope);
                if (rc)
                    return -1;
            }
        }
        if (a->children)
            depth++;
    }
    return 0;
}

int walk_units(struct ps_dwarf *d)
{
    if (read_units(d))
        return -1;
    d->unit_files = calloc(d->nunits ? d->nunits : 1, sizeof *d->unit_files);
    level_t *lv = malloc(sizeof *lv * MAX_LEVELS);
    if (!d->unit_files || !lv) {
        free(lv);
        return -1;
    }
    pthread_t lines;
    int threaded = pthread_create(&lines, NULL, line_programs, d) == 0;
    void *lines_rc = threaded ? NULL : line_programs(d);
    abbrevs_t ab = {0};
    ab.offset = UINT64_MAX;
    int rc = 0;
    for (size_t i = 0; i < d->nunits && !rc; i++)
        rc = walk_functions(d, (uint32_t)i, &ab, lv);
    abbrevs_free(&ab);
    free(lv);
    if (threaded)
        pthread_join(lines, &lines_rc);
    if (lines_rc)
        rc = -1;
    /* call files: from the unit's file numbers to file ids, now that the line programs are read */
    for (size_t i = 0; i < d->nscopes; i++) {
        scope_t *s = &d->scopes[i];
        const unit_files_t *f = &d->unit_files[s->unit];
        uint64_t k = (uint64_t)(int64_t)s->call_file - (uint64_t)f->base;
        s->call_file = s->call_file >= 0 && k < f->count ? (int32_t)(f->first + k) : -1;
    }
    return rc;
}

const char *scope_name(struct ps_dwarf *d, scope_t *s)
{
    if (s->ref) { /* a plain name gives way to a linkage name the origin has */
        int linkage = 0;
        const char *other = ref_name(d, s->ref, &linkage, 0);
        if (other && (linkage || !s->name)) {
            s->name = other;
            s->linkage = (uint8_t)linkage;
        }
        s->ref = 0;
    }
    if (!s->linkage && s->mangled && s->has_low) { /* as binutils: the symbol's (mangled) name */
        const sym_t *sym = symbol_at(d, s->low);
        if (sym && sym->addr == s->low) {
            s->name = sym->name;
            s->linkage = 1;
        }
        s->mangled = 0; /* decided once */
    }
    return s->name;
}

/* The name a DIE refers to through abstract_origin / specification. */
const char *ref_name(struct ps_dwarf *d, uint64_t ref, int *linkage, int hops)
{
    size_t lo = COUNT_LE(d->units, d->nunits, end, ref); /* the unit holding the offset */
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
        /* as binutils: a linkage name anywhere along the chain wins over a plain name */
        *linkage = at.linkage != NULL;
        name = at.linkage ? at.linkage : at.name;
        if (!at.linkage && at.ref) {
            int deeper = 0;
            const char *other = ref_name(d, at.ref, &deeper, hops + 1);
            if (other && (deeper || !name)) {
                name = other;
                *linkage = deeper;
            }
        }
    }
    abbrevs_free(&ab);
    return name;
}

