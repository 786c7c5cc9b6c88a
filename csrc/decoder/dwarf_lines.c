/* dwarf_lines.c - line programs (DWARF 2-5): the header's directories and
 * files, then the state machine, whose rows go to the decoder's table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf.h"

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

/* The rows since d->open_seq make a sequence. */
static int close_seq(struct ps_dwarf *d)
{
    if (d->open_seq >= d->nrows)
        return 0;
    GROW(d->seqs, d->nseqs, d->capseqs);
    d->seqs[d->nseqs++] = d->open_seq;
    d->open_seq = d->nrows;
    return 0;
}

int line_program(struct ps_dwarf *d, uint64_t off, const char *comp_dir, const unit_t *cu, unit_files_t *files,
                 void *scratch)
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
    if (unit_len > (uint64_t)(r.end - r.p))
        return 0;
    const uint8_t *end = r.p + unit_len;
    r.end = end;
    int version = (int)rd_u(&r, 2);
    unit_t lu = *cu;
    lu.offset_size = os;
    if (version >= 5) {
        lu.addr_size = (int)rd_u(&r, 1);
        rd_u(&r, 1); /* segment selector size */
    }
    uint64_t header_len = rd_u(&r, os);
    if (header_len > (uint64_t)(r.end - r.p))
        return 0;
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

    /* per call, not static: two decoders may run in two threads */
    const char **dirs = scratch, **names = dirs + MAX_FILES;
    uint64_t *dir_of = (uint64_t *)(names + MAX_FILES);
    uint32_t *ids = (uint32_t *)(dir_of + MAX_FILES);
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
    files->first = (uint32_t)d->nfiles; /* add_file numbers them consecutively */
    files->count = (uint32_t)nnames;
    files->base = version >= 5 ? 0 : 1;
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

    if (close_seq(d)) /* a sequence the previous program left open */
        return -1;
    r.p = program;
    uint64_t addr = 0;
    int64_t line = 1;
    uint64_t file = 1;
#define EMIT(endseq)                                                                                                   \
    do {                                                                                                               \
        if (d->nrows == d->caprows && rows_grow(d))                                                                    \
            return -1;                                                                                                 \
        uint64_t fi_ = file - (uint64_t)file_base;                                                                     \
        d->rows[d->nrows++] = (row_t){addr, (endseq) ? UINT32_MAX : (fi_ < nnames ? ids[fi_] : UINT32_MAX - 1),        \
                                      (uint32_t)line};                                                                 \
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
            const uint8_t *next = len <= (uint64_t)(r.end - r.p) ? r.p + len : r.end;
            int ext = (int)rd_u(&r, 1);
            if (ext == 1) { /* end_sequence */
                /* rows at the end address cover nothing (binutils drops them) */
                while (d->nrows > d->open_seq && d->rows[d->nrows - 1].addr == addr &&
                       d->rows[d->nrows - 1].file != UINT32_MAX)
                    d->nrows--;
                EMIT(1);
                if (close_seq(d))
                    return -1;
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


/* ---- sorting rows ------------------------------------------------------------- */

/* A row with its sort key: binutils' order is by address, an end of
 * sequence giving way to a row starting there, then the order read. */
typedef struct {
    row_t row;
    uint32_t seq, order;
} keyed_t;

static int by_keyed(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    if (x->row.addr != y->row.addr)
        return x->row.addr < y->row.addr ? -1 : 1;
    int xe = x->row.file == UINT32_MAX, ye = y->row.file == UINT32_MAX;
    if (xe != ye)
        return xe ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

typedef struct {
    size_t first, count;
    uint64_t start;
    uint32_t seq;
    int sorted; /* its rows' addresses never decrease */
} run_t;

static int by_run(const void *a, const void *b)
{
    const run_t *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static keyed_t keyed(const struct ps_dwarf *d, const run_t *r, size_t i)
{
    return (keyed_t){d->rows[r->first + i], r->seq, (uint32_t)i};
}

/* Runs g0..g1-1 (sorted by start) into out: copied when they are in order
 * already, else sorted together. */
static void place(const struct ps_dwarf *d, const run_t *runs, size_t g0, size_t g1, int sorted, row_t *out)
{
    size_t n = 0;
    for (size_t k = g0; k < g1; k++)
        n += runs[k].count;
    keyed_t *tmp = sorted ? NULL : malloc(sizeof *tmp * (n ? n : 1));
    size_t at = 0;
    for (size_t k = g0; k < g1; k++) {
        if (tmp)
            for (size_t i = 0; i < runs[k].count; i++)
                tmp[at + i] = keyed(d, &runs[k], i);
        else /* in order (or no memory to sort them: left as they are) */
            memcpy(out + at, d->rows + runs[k].first, sizeof *out * runs[k].count);
        at += runs[k].count;
    }
    if (tmp) {
        qsort(tmp, n, sizeof *tmp, by_keyed);
        for (size_t i = 0; i < n; i++)
            out[i] = tmp[i].row;
        free(tmp);
    }
}

/* A line program's sequences are sorted runs of rows (addresses only grow
 * within a sequence), so instead of sorting every row (half of the decode
 * time), the runs are ordered by start address and concatenated; only runs
 * that overlap an earlier one (discarded code at address 0, say) are
 * sorted together.  The result is the order by_keyed gives. */
void sort_rows(struct ps_dwarf *d)
{
    if (close_seq(d) || !d->nrows)
        return;
    size_t nruns = d->nseqs;
    run_t *runs = malloc(sizeof *runs * nruns);
    row_t *out = big_alloc(sizeof *out * d->nrows);
    if (!runs || !out) {
        free(runs);
        big_free(out, sizeof *out * d->nrows);
        return; /* unsorted: lookups may miss, nothing worse */
    }
    for (size_t k = 0; k < nruns; k++) {
        size_t first = d->seqs[k], end = k + 1 < nruns ? d->seqs[k + 1] : d->nrows;
        run_t *r = &runs[k];
        *r = (run_t){first, end - first, d->rows[first].addr, (uint32_t)k, 1};
        for (size_t i = first + 1; i < end; i++) {
            if (d->rows[i].addr < d->rows[i - 1].addr)
                r->sorted = 0;
            if (d->rows[i].addr < r->start)
                r->start = d->rows[i].addr;
        }
    }
    qsort(runs, nruns, sizeof *runs, by_run);
    size_t n = 0, g0 = 0, gout = 0; /* the current group: runs g0.., rows from out[gout] */
    int group_sorted = 1, has_max = 0;
    keyed_t max = {0}; /* the group's greatest row */
    for (size_t k = 0; k < nruns; k++) {
        keyed_t first = keyed(d, &runs[k], 0);
        if (has_max && (!runs[k].sorted || by_keyed(&max, &first) > 0)) {
            group_sorted = 0; /* overlaps the group: sorted together */
        } else {
            place(d, runs, g0, k, group_sorted, out + gout);
            g0 = k;
            gout = n;
            group_sorted = runs[k].sorted;
            has_max = 0;
        }
        n += runs[k].count;
        for (size_t i = runs[k].sorted ? runs[k].count - 1 : 0; i < runs[k].count; i++) {
            keyed_t row = keyed(d, &runs[k], i);
            if (!has_max || by_keyed(&max, &row) < 0) {
                max = row;
                has_max = 1;
            }
        }
    }
    place(d, runs, g0, nruns, group_sorted, out + gout);
    free(runs);
    free(d->seqs); /* no longer needed */
    d->seqs = NULL;
    d->nseqs = d->capseqs = 0;
    big_free(d->rows, sizeof *d->rows * d->caprows);
    d->rows = out;
    d->caprows = d->nrows;
}
