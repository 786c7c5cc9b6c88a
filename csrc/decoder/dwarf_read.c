/* dwarf_read.c - reading DWARF: LEB128 and fixed-size values, strings,
 * abbreviation tables, and attribute values in every form of DWARF 2-5
 * (forms we do not use are skipped correctly). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf.h"

/* ---- reading ---------------------------------------------------------- */


uint64_t rd_u(rd_t *r, int n)
{
    uint64_t v = 0;
    if (n < 0 || n > 8 || n > r->end - r->p) { /* a malformed size reads nothing and ends the reader */
        r->p = r->end;
        return 0;
    }
    for (int i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    return v;
}

uint64_t rd_uleb(rd_t *r)
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

int64_t rd_sleb(rd_t *r)
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

const char *rd_str(rd_t *r)
{
    const char *s = (const char *)r->p;
    const uint8_t *z = memchr(r->p, 0, (size_t)(r->end - r->p));
    r->p = z ? z + 1 : r->end;
    return z ? s : "";
}

const char *sect_str(const sect_t *s, uint64_t off)
{
    if (off >= s->len)
        return NULL;
    if (!s->terminated && !memchr(s->p + off, 0, s->len - off))
        return NULL;
    return (const char *)s->p + off;
}

/* ---- abbreviations and attribute values ------------------------------------ */

void abbrevs_free(abbrevs_t *a)
{
    free(a->v);
    free(a->specs);
    memset(a, 0, sizeof *a);
}

int abbrevs_load(struct ps_dwarf *d, uint64_t off, abbrevs_t *a)
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

/* The size of a form's value when it is fixed for the unit, else -1. */
static int form_size(uint64_t form, const unit_t *u)
{
    switch (form) {
    case 0x01: return u->addr_size;
    case 0x0b: case 0x11: case 0x0c: case 0x25: case 0x29: return 1;
    case 0x05: case 0x12: case 0x26: case 0x2a: return 2;
    case 0x27: case 0x2b: return 3;
    case 0x06: case 0x13: case 0x28: case 0x2c: case 0x1c: return 4;
    case 0x07: case 0x14: case 0x20: case 0x24: return 8;
    case 0x1e: return 16;
    case 0x0e: case 0x1f: case 0x1d: case 0x1f21: case 0x17: case 0x1f20: return u->offset_size;
    case 0x10: return u->version <= 2 ? u->addr_size : u->offset_size;
    case 0x19: case 0x21: return 0;
    default: return -1;
    }
}

void abbrevs_sizes(abbrevs_t *a, const unit_t *u)
{
    if (a->addr_size == u->addr_size && a->offset_size == u->offset_size && a->version == u->version)
        return;
    a->addr_size = u->addr_size;
    a->offset_size = u->offset_size;
    a->version = u->version;
    for (size_t i = 0; i < a->n; i++) {
        abbrev_t *ab = &a->v[i];
        ab->fixed = 0;
        ab->sibling = 0;
        for (int k = 0; k < ab->nattrs; k++) {
            int size = form_size(ab->attrs[k].form, u);
            if (ab->attrs[k].name == 0x01) /* DW_AT_sibling */
                ab->sibling = 1;
            if (size < 0 || ab->fixed < 0)
                ab->fixed = -1;
            else
                ab->fixed += size;
        }
    }
}

const abbrev_t *abbrev_find(const abbrevs_t *a, uint64_t code)
{
    if (code >= 1 && code <= a->n && a->v[code - 1].code == code)
        return &a->v[code - 1]; /* the usual dense numbering */
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].code == code)
            return &a->v[i];
    return NULL;
}

/* Past n bytes; a length beyond the end (malformed) ends the reader. */
static void rd_skip(rd_t *r, uint64_t n)
{
    r->p = n <= (uint64_t)(r->end - r->p) ? r->p + n : r->end;
}

/* Past one attribute value without decoding it (the walk's fast path for
 * DIEs that are not functions); -1: an unknown form. */
int skip_form(rd_t *r, uint64_t form, const unit_t *u)
{
    switch (form) {
    case 0x08: rd_str(r); return 0;                                         /* string */
    case 0x09: case 0x18: rd_skip(r, rd_uleb(r)); return 0;                 /* block, exprloc */
    case 0x0a: rd_skip(r, rd_u(r, 1)); return 0;                            /* block1 */
    case 0x03: rd_skip(r, rd_u(r, 2)); return 0;                            /* block2 */
    case 0x04: rd_skip(r, rd_u(r, 4)); return 0;                            /* block4 */
    case 0x0d: case 0x0f: case 0x15: case 0x1a: case 0x1b: case 0x22: case 0x23: case 0x1f01: case 0x1f02:
        rd_uleb(r);                                                         /* LEB128 values */
        return 0;
    case 0x16: {                                                            /* indirect, once */
        uint64_t inner = rd_uleb(r);
        return inner == 0x16 ? -1 : skip_form(r, inner, u);
    }
    default: {
        int size = form_size(form, u);
        if (size < 0)
            return -1;
        rd_skip(r, (uint64_t)size);
        return 0;
    }
    }
}

/* Read one attribute value; forms we do not use are skipped correctly. */
int read_form(rd_t *r, uint64_t form, int64_t implicit, const unit_t *u, value_t *v)
{
    memset(v, 0, sizeof *v);
    int os = u->offset_size;
    switch (form) {
    case 0x01: v->u = rd_u(r, u->addr_size); break;                      /* addr */
    case 0x03: rd_skip(r, rd_u(r, 2)); break;                                /* block2 */
    case 0x04: rd_skip(r, rd_u(r, 4)); break;                                /* block4 */
    case 0x05: v->u = rd_u(r, 2); v->is_const = 1; break;                /* data2 */
    case 0x06: v->u = rd_u(r, 4); v->is_const = 1; break;                /* data4 */
    case 0x07: v->u = rd_u(r, 8); v->is_const = 1; break;                /* data8 */
    case 0x08: v->s = rd_str(r); v->is_string = 1; break;                /* string */
    case 0x09: case 0x18: rd_skip(r, rd_uleb(r)); break;                     /* block, exprloc */
    case 0x0a: rd_skip(r, rd_u(r, 1)); break;                                /* block1 */
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
    case 0x16: {                                                         /* indirect, once */
        uint64_t inner = rd_uleb(r);
        return inner == 0x16 ? -1 : read_form(r, inner, implicit, u, v);
    }
    case 0x17: v->u = rd_u(r, os); break;                                /* sec_offset */
    case 0x19: v->u = 1; break;                                          /* flag_present */
    case 0x1a: case 0x1f02: v->u = rd_uleb(r); v->is_strx = 1; break;    /* strx */
    case 0x1b: case 0x1f01: v->u = rd_uleb(r); v->is_addrx = 1; break;   /* addrx */
    case 0x1c: v->u = rd_u(r, 4); break;                                 /* ref_sup4 */
    case 0x1e: rd_skip(r, 16); break;                                        /* data16 */
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

const char *value_string(struct ps_dwarf *d, const unit_t *u, const value_t *v)
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

uint64_t value_addr(struct ps_dwarf *d, const unit_t *u, const value_t *v)
{
    if (!v->is_addrx)
        return v->u;
    uint64_t at = u->addr_base + v->u * (uint64_t)u->addr_size;
    if (at + u->addr_size > d->addr.len)
        return 0;
    rd_t r = {d->addr.p + at, d->addr.p + d->addr.len};
    return rd_u(&r, u->addr_size);
}

