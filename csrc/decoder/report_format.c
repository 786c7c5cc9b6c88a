/* report_format.c - the long, regular parts of psprocess's profile reports,
 * written in C byte for byte as the Python writers write them: the ranked
 * summaries of the text report (psuite/formats/writers/text_profile.py)
 * and the location and sample lists of the JSON one (json_format.py).
 * Python spends a few hundred nanoseconds per row on these, and a profile
 * has tens of thousands of rows; the writers keep their Python code for
 * whatever these calls do not take (and tests compare the two).
 *
 * Strings come in as one blob of NUL-separated UTF-8 strings per column;
 * byte order of UTF-8 is code-point order, so names sort as Python sorts
 * str.  Numbers are formatted as Python formats them: "{:,}" for samples,
 * "%.2f" for percentages (correctly rounded, ties to even, computed
 * exactly below rather than through printf, which costs ten times more). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf.h"

typedef struct {
    const char *p;
    size_t len;
} str_t;

/* The n strings of a blob of `size` bytes (separated by NULs, no NUL after
 * the last); -1 when it does not hold exactly n. */
static int split(const char *blob, long size, int n, str_t *out)
{
    const char *p = blob, *end = blob + size;
    for (int i = 0; i < n; i++) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        if (i == n - 1) {
            if (nul)
                return -1;
            nul = end;
        } else if (!nul) {
            return -1;
        }
        out[i].p = p;
        out[i].len = (size_t)(nul - p);
        p = nul + 1;
    }
    return n == 0 && size != 0 ? -1 : 0;
}

/* v with thousands separators, as Python's format(v, ","); returns the length. */
static int grouped(long long v, char *dst)
{
    char digits[24];
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    int len = 0;
    if (v < 0)
        dst[len++] = '-';
    for (int i = nd - 1; i >= 0; i--) {
        dst[len++] = digits[i];
        if (i && i % 3 == 0)
            dst[len++] = ',';
    }
    return len;
}

static int decimal(long long v, char *dst)
{
    char digits[24];
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int nd = 0, len = 0;
    do {
        digits[nd++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        dst[len++] = '-';
    while (nd)
        dst[len++] = digits[--nd];
    return len;
}

/* x as "%.2f": the exact value of the double times 100, rounded to the
 * nearest integer with ties to even (what Python's and glibc's correctly
 * rounded conversions give); -1 for what is not a non-negative number
 * below 10^15 (never a percentage of non-negative counts). */
static int fixed2(double x, char *dst)
{
    if (!(x >= 0.0 && x < 1e15))
        return -1;
    uint64_t q = 0;
    if (x > 0.0) {
        int e;
        double m = frexp(x, &e);                  /* x = m * 2^e, m in [0.5, 1) */
        uint64_t mant = (uint64_t)ldexp(m, 53);   /* exact: x = mant * 2^(e - 53) */
        int s = 53 - e;                           /* > 3: x < 2^50 */
        unsigned __int128 t = (unsigned __int128)mant * 100; /* < 2^60 */
        if (s < 64) {
            uint64_t rem = (uint64_t)(t & (((unsigned __int128)1 << s) - 1)), half = (uint64_t)1 << (s - 1);
            q = (uint64_t)(t >> s);
            if (rem > half || (rem == half && (q & 1)))
                q++;
        } /* else t < 2^60 < half: rounds to 0 */
    }
    int len = decimal((long long)(q / 100), dst);
    dst[len++] = '.';
    dst[len++] = (char)('0' + q % 100 / 10);
    dst[len++] = (char)('0' + q % 10);
    return len;
}

/* src (len bytes) right-aligned in `width` columns (never cut). */
static char *right(char *w, const char *src, int len, int width)
{
    for (int i = len; i < width; i++)
        *w++ = ' ';
    memcpy(w, src, (size_t)len);
    return w + len;
}

typedef struct {
    uint64_t key; /* the name's first 8 bytes, big-endian, zero-padded: most comparisons end there */
    const char *name;
    size_t len;
    long long sum;
} entry_t;

static uint64_t prefix(const char *p, size_t len)
{
    unsigned char b[8] = {0};
    memcpy(b, p, len < 8 ? len : 8);
    uint64_t k = 0;
    for (int i = 0; i < 8; i++)
        k = k << 8 | b[i];
    return k;
}

/* A word at a time (names run to tens of bytes). */
static uint64_t hash(const char *p, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        len -= 8;
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, p, len);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    }
    return h ^ (h >> 29);
}

static int by_name(const entry_t *a, const entry_t *b)
{
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->name, b->name, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The largest sum first; among equal sums, by name. */
static int by_rank(const void *pa, const void *pb)
{
    const entry_t *a = pa, *b = pb;
    if (a->sum != b->sum)
        return a->sum > b->sum ? -1 : 1;
    return by_name(a, b);
}

PS_API long ps_report_summary(int n, const char *a, long a_size, const char *b, long b_size,
                              const long long *lines, const long long *counts, int shape, long long total,
                              double threshold, char *out, long cap, long *hidden)
{
    if (n < 0 || total <= 0 || shape < 0 || shape > 2 || (shape && !b) || (shape == 2 && !lines))
        return -1;
    long result = -1;
    str_t *sa = malloc(sizeof *sa * (size_t)(n ? n : 1));
    str_t *sb = shape ? malloc(sizeof *sb * (size_t)(n ? n : 1)) : NULL;
    entry_t *entries = malloc(sizeof *entries * (size_t)(n ? n : 1));
    size_t slots = 16;
    while (slots < 2 * (size_t)n)
        slots *= 2;
    int *table = malloc(sizeof *table * slots);
    char *arena = NULL;
    if (!sa || (shape && !sb) || !entries || !table) {
        result = -2;
        goto done;
    }
    if (split(a, a_size, n, sa) || (shape && split(b, b_size, n, sb)))
        goto done;
    if (shape) { /* the names composed: "a  (b)" or "a:b:line" */
        arena = malloc((size_t)a_size + (size_t)b_size + 32 * (size_t)n + 1);
        if (!arena) {
            result = -2;
            goto done;
        }
    }
    memset(table, 0xff, sizeof *table * slots);
    int distinct = 0;
    char *w = arena;
    for (int i = 0; i < n; i++) {
        if (counts[i] < 0)
            goto done; /* left to Python */
        const char *name = sa[i].p;
        size_t len = sa[i].len;
        if (shape) {
            char *start = w;
            memcpy(w, sa[i].p, sa[i].len);
            w += sa[i].len;
            if (shape == 1) {
                memcpy(w, "  (", 3);
                w += 3;
                memcpy(w, sb[i].p, sb[i].len);
                w += sb[i].len;
                *w++ = ')';
            } else {
                *w++ = ':';
                memcpy(w, sb[i].p, sb[i].len);
                w += sb[i].len;
                *w++ = ':';
                w += decimal(lines[i], w);
            }
            name = start;
            len = (size_t)(w - start);
        }
        size_t at = hash(name, len) & (slots - 1);
        for (;;) {
            int k = table[at];
            if (k < 0) {
                table[at] = distinct;
                entries[distinct++] = (entry_t){prefix(name, len), name, len, counts[i]};
                break;
            }
            if (entries[k].len == len && memcmp(entries[k].name, name, len) == 0) {
                if (shape)
                    w = (char *)name; /* a name seen before: its copy is not kept */
                if (__builtin_add_overflow(entries[k].sum, counts[i], &entries[k].sum))
                    goto done; /* beyond 64 bits: left to Python */
                break;
            }
            at = (at + 1) & (slots - 1);
        }
    }
    qsort(entries, (size_t)distinct, sizeof *entries, by_rank);
    double scale = 100.0 / (double)total;
    long long cumulative = 0;
    long need = 0, below = 0;
    char row[160];
    for (int i = 0; i < distinct; i++) {
        const entry_t *e = &entries[i];
        cumulative += e->sum;
        double self = (double)e->sum * scale;
        if (self < threshold) {
            below++;
            continue;
        }
        char num[32], pct[32], cum[32];
        int self_len = fixed2(self, pct), cum_len = fixed2((double)cumulative * scale, cum);
        if (self_len < 0 || cum_len < 0)
            goto done; /* left to Python */
        char *r = row;
        r = right(r, num, grouped(e->sum, num), 10);
        *r++ = ' ';
        r = right(r, pct, self_len, 7);
        *r++ = '%';
        *r++ = ' ';
        r = right(r, cum, cum_len, 7);
        memcpy(r, "%  ", 3);
        r += 3;
        long head = (long)(r - row), size = head + (long)e->len + 1;
        if (need + size <= cap) {
            memcpy(out + need, row, (size_t)head);
            memcpy(out + need + head, e->name, e->len);
            out[need + size - 1] = '\n';
        }
        need += size;
    }
    *hidden = below;
    result = need;
done:
    free(sa);
    free(sb);
    free(entries);
    free(table);
    free(arena);
    return result;
}

/* Writes one piece at out + *at when it fits within cap; always advances *at. */
static void put(char *out, long cap, long *at, const char *p, size_t len)
{
    if (*at + (long)len <= cap)
        memcpy(out + *at, p, len);
    *at += (long)len;
}

/* s as a JSON string, as Python's json.dumps writes it (ensure_ascii):
 * quotes, backslashes and the controls \b \f \n \r \t escaped by name,
 * every other byte outside ' '..'~' as \u00XX and every non-ASCII
 * character as \uXXXX (two, a surrogate pair, beyond U+FFFF), in lower
 * case.  s is valid UTF-8 (Python encoded it).  Writes at most 6 bytes
 * per input byte and the 2 quotes; returns the length. */
static size_t json_string(const char *s, size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    char *w = out;
    *w++ = '"';
    while (p < end) {
        const unsigned char *run = p;
        while (p < end && *p >= ' ' && *p <= '~' && *p != '"' && *p != '\\')
            p++;
        memcpy(w, run, (size_t)(p - run));
        w += p - run;
        if (p == end)
            break;
        unsigned c = *p;
        if (c < 0x80) {
            p++;
            *w++ = '\\';
            switch (c) {
            case '"': *w++ = '"'; continue;
            case '\\': *w++ = '\\'; continue;
            case '\b': *w++ = 'b'; continue;
            case '\f': *w++ = 'f'; continue;
            case '\n': *w++ = 'n'; continue;
            case '\r': *w++ = 'r'; continue;
            case '\t': *w++ = 't'; continue;
            default: break;
            }
            w--;
        } else if (c < 0xe0) {
            c = (c & 0x1f) << 6 | (p[1] & 0x3f);
            p += 2;
        } else if (c < 0xf0) {
            c = (c & 0x0f) << 12 | (p[1] & 0x3f) << 6 | (p[2] & 0x3f);
            p += 3;
        } else {
            c = (c & 0x07) << 18 | (p[1] & 0x3f) << 12 | (p[2] & 0x3f) << 6 | (p[3] & 0x3f);
            p += 4;
        }
        unsigned units[2] = {c, 0};
        int nu = 1;
        if (c > 0xffff) {
            c -= 0x10000;
            units[0] = 0xd800 | (c >> 10);
            units[1] = 0xdc00 | (c & 0x3ff);
            nu = 2;
        }
        for (int i = 0; i < nu; i++) {
            *w++ = '\\';
            *w++ = 'u';
            *w++ = hex[units[i] >> 12 & 0xf];
            *w++ = hex[units[i] >> 8 & 0xf];
            *w++ = hex[units[i] >> 4 & 0xf];
            *w++ = hex[units[i] & 0xf];
        }
    }
    *w++ = '"';
    return (size_t)(w - out);
}

/* One column's string for row i, JSON-encoded into scratch; the same
 * string as the row before (a module's name, repeated) is not encoded again. */
typedef struct {
    const str_t *s;
    const char *last;
    size_t last_len, encoded_len;
    char *encoded;
} column_t;

static void put_string(char *out, long cap, long *at, column_t *col, int i)
{
    const str_t *s = &col->s[i];
    if (!(col->last && s->len == col->last_len && memcmp(s->p, col->last, s->len) == 0)) {
        col->encoded_len = json_string(s->p, s->len, col->encoded);
        col->last = s->p;
        col->last_len = s->len;
    }
    put(out, cap, at, col->encoded, col->encoded_len);
}

PS_API long ps_report_json_locations(int n, const char *modules, long m_size, const char *files, long f_size,
                                     const char *functions, long g_size, const long long *lines,
                                     const long long *samples, char *out, long cap)
{
    if (n < 0)
        return -1;
    size_t longest = 0;
    str_t *s = malloc(sizeof *s * 3 * (size_t)(n ? n : 1));
    if (!s)
        return -2;
    str_t *sm = s, *sf = s + n, *sg = s + 2 * (size_t)n;
    long at = -1;
    char *scratch = NULL;
    if (split(modules, m_size, n, sm) || split(files, f_size, n, sf) || split(functions, g_size, n, sg))
        goto done;
    for (size_t i = 0; i < 3 * (size_t)n; i++)
        if (s[i].len > longest)
            longest = s[i].len;
    scratch = malloc(3 * (6 * longest + 2));
    if (!scratch) {
        at = -2;
        goto done;
    }
    column_t cols[3] = {{sm, NULL, 0, 0, scratch}, {sf, NULL, 0, 0, scratch + 6 * longest + 2},
                        {sg, NULL, 0, 0, scratch + 2 * (6 * longest + 2)}};
    at = 0;
    char num[32];
    put(out, cap, &at, "[", 1);
    for (int i = 0; i < n; i++) {
        put(out, cap, &at, i ? ", {\"module\": " : "{\"module\": ", i ? 13 : 11);
        put_string(out, cap, &at, &cols[0], i);
        put(out, cap, &at, ", \"file\": ", 10);
        put_string(out, cap, &at, &cols[1], i);
        put(out, cap, &at, ", \"function\": ", 14);
        put_string(out, cap, &at, &cols[2], i);
        put(out, cap, &at, ", \"line\": ", 10);
        put(out, cap, &at, num, (size_t)decimal(lines[i], num));
        put(out, cap, &at, ", \"samples\": ", 13);
        put(out, cap, &at, num, (size_t)decimal(samples[i], num));
        put(out, cap, &at, "}", 1);
    }
    put(out, cap, &at, "]", 1);
done:
    free(s);
    free(scratch);
    return at;
}

PS_API long ps_report_json_samples(int n, const unsigned long long *pcs, const long long *counts, char *out,
                                   long cap)
{
    if (n < 0)
        return -1;
    long at = 0;
    char row[64];
    for (int i = 0; i < n; i++) {
        char *r = row;
        if (i) {
            *r++ = ',';
            *r++ = ' ';
        }
        *r++ = '"';
        char digits[24];
        unsigned long long u = pcs[i];
        int nd = 0;
        do {
            digits[nd++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        while (nd)
            *r++ = digits[--nd];
        memcpy(r, "\": ", 3);
        r += 3;
        r += decimal(counts[i], r);
        put(out, cap, &at, row, (size_t)(r - row));
    }
    return at;
}

/* The value of a hexadecimal digit, 16 for anything else. */
static unsigned hex_digit(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch |= 0x20; /* lower case */
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10u : 16u;
}

/* The <sample> elements of a raw profile, read (psuite/formats/readers/
 * document.py): n hexadecimal PCs (1 to 16 digits, either case) and n
 * decimal counts (1 to 18 digits), each a blob of NUL-separated ASCII
 * strings, into pcs[] and counts[].  Returns 1 when the PCs are strictly
 * increasing (then no two are the same), 0 when not, -1 for anything else
 * (left to Python's checks and messages). */
PS_API int ps_report_samples(int n, const char *pc_blob, long pc_size, const char *count_blob, long count_size,
                             unsigned long long *pcs, long long *counts)
{
    const char *p = pc_blob, *pend = pc_blob + pc_size, *c = count_blob, *cend = count_blob + count_size;
    int ascending = 1;
    for (int i = 0; i < n; i++) {
        unsigned long long pc = 0;
        int digits = 0;
        for (; p < pend && *p; p++, digits++) {
            unsigned char ch = (unsigned char)*p;
            unsigned v = hex_digit(ch);
            if (v > 15 || digits == 16)
                return -1;
            pc = pc << 4 | v;
        }
        long long count = 0;
        int cdigits = 0;
        for (; c < cend && *c; c++, cdigits++) {
            unsigned v = (unsigned)((unsigned char)*c - '0');
            if (v > 9 || cdigits == 18)
                return -1;
            count = count * 10 + v;
        }
        if (!digits || !cdigits || (i < n - 1 && (p >= pend || c >= cend)) || (i == n - 1 && (p != pend || c != cend)))
            return -1;
        p++; /* past the NUL */
        c++;
        pcs[i] = pc;
        counts[i] = count;
        if (i && pcs[i - 1] >= pc)
            ascending = 0;
    }
    return ascending;
}
