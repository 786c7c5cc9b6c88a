/* xmlbuf.c - a text buffer with XML escaping: growable (malloc, for the
 * profile writer) or fixed (preallocated memory, b->fixed: never grows,
 * fails when full).  Everything but ps_buf_printf, ps_buf_element and
 * ps_buf_free is async-signal-safe on a fixed buffer: no allocation, no
 * stdio, no locale. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int buf_reserve(ps_buf_t *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    if (b->fixed) {
        b->failed = 1;
        return -1;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void ps_buf_printf(ps_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ps_buf_mem(ps_buf_t *b, const char *p, size_t n)
{
    if (!n || buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* Length of the XML 1.0 character (in UTF-8) at p, > 0; or minus the
 * number of bytes one U+FFFD replaces: -1 for a byte that starts no UTF-8
 * character (invalid, overlong, an encoded surrogate ED A0..BF: each byte
 * is replaced) or a C0 control other than tab and newline, -3 for U+FFFE
 * and U+FFFF (well-formed UTF-8 but not XML characters). */
static int xml_char(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return c >= 0x20 || c == '\t' || c == '\n' ? 1 : -1;
    unsigned lo = 0x80, hi = 0xBF;
    int n;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F; /* U+D800..U+DFFF are not characters */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return -1;
    if (p[1] < lo || p[1] > hi)
        return -1;
    for (int k = 2; k < n; k++)
        if (p[k] < 0x80 || p[k] > 0xBF)
            return -1;
    if (c == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF))
        return -3; /* U+FFFE, U+FFFF */
    return n;
}

size_t ps_xml_unfit(const char *text)
{
    size_t bad = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        int n = xml_char(p);
        bad += n < 0;
        p += n < 0 ? -n : n;
    }
    return bad;
}

size_t ps_utf8_cut(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    /* back over at most 3 continuation bytes to the last lead byte */
    size_t i = len, back = 0;
    while (i > 0 && back < 3 && (p[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0 || p[i - 1] < 0xC0)
        return len; /* ends on ASCII or on stray continuation bytes: nothing to split */
    unsigned c = p[i - 1];
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    return back + 1 >= need ? len : i - 1;
}

void ps_buf_escaped(ps_buf_t *b, const char *text)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    const unsigned char *p = (const unsigned char *)text, *run = p;
    while (*p) {
        const char *ent = NULL;
        int n = xml_char(p);
        switch (*p) {
        case '<': ent = "&lt;"; break;
        case '>': ent = "&gt;"; break;
        case '&': ent = "&amp;"; break;
        case '"': ent = "&quot;"; break;
        default:
            if (n > 0) {
                p += n;
                continue;
            }
            ent = replacement;
            n = -n;
        }
        ps_buf_mem(b, (const char *)run, (size_t)(p - run));
        ps_buf_mem(b, ent, strlen(ent));
        p += n;
        run = p;
    }
    ps_buf_mem(b, (const char *)run, (size_t)(p - run));
}

void ps_buf_element(ps_buf_t *b, int indent, const char *tag, const char *text)
{
    ps_buf_printf(b, "%*s<%s>", indent, "", tag);
    ps_buf_escaped(b, text);
    ps_buf_printf(b, "</%s>\n", tag);
}

void ps_buf_fixed(ps_buf_t *b, char *mem, size_t size)
{
    b->data = mem;
    b->len = 0;
    b->cap = size;
    b->failed = size == 0;
    b->fixed = 1;
    if (size)
        mem[0] = '\0';
}

void ps_buf_str(ps_buf_t *b, const char *s) { ps_buf_mem(b, s, strlen(s)); }

void ps_buf_ull(ps_buf_t *b, unsigned long long v)
{
    char d[24];
    size_t i = sizeof d;
    do
        d[--i] = (char)('0' + v % 10);
    while (v /= 10);
    ps_buf_mem(b, d + i, sizeof d - i);
}

void ps_buf_ll(ps_buf_t *b, long long v)
{
    if (v < 0) {
        ps_buf_mem(b, "-", 1);
        ps_buf_ull(b, 0ULL - (unsigned long long)v);
    } else
        ps_buf_ull(b, (unsigned long long)v);
}

void ps_buf_zpad(ps_buf_t *b, unsigned long long v, int width)
{
    char d[24];
    size_t i = sizeof d;
    do
        d[--i] = (char)('0' + v % 10);
    while ((v /= 10) || (int)(sizeof d - i) < width);
    ps_buf_mem(b, d + i, sizeof d - i);
}

void ps_buf_fixedpoint(ps_buf_t *b, long long v, int decimals)
{
    unsigned long long scale = 1, u;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    if (v < 0) {
        ps_buf_mem(b, "-", 1);
        u = 0ULL - (unsigned long long)v;
    } else
        u = (unsigned long long)v;
    ps_buf_ull(b, u / scale);
    if (decimals > 0) {
        ps_buf_mem(b, ".", 1);
        ps_buf_zpad(b, u % scale, decimals);
    }
}

void ps_buf_indent(ps_buf_t *b, int n)
{
    static const char blanks[] = "                                ";
    while (n > 0) {
        int k = n < (int)sizeof blanks - 1 ? n : (int)sizeof blanks - 1;
        ps_buf_mem(b, blanks, (size_t)k);
        n -= k;
    }
}

/* ps_buf_element without printf: async-signal-safe on a fixed buffer. */
void ps_buf_elem(ps_buf_t *b, int indent, const char *tag, const char *text)
{
    ps_buf_indent(b, indent);
    ps_buf_mem(b, "<", 1);
    ps_buf_str(b, tag);
    ps_buf_mem(b, ">", 1);
    ps_buf_escaped(b, text);
    ps_buf_mem(b, "</", 2);
    ps_buf_str(b, tag);
    ps_buf_mem(b, ">\n", 2);
}

void ps_buf_free(ps_buf_t *b)
{
    if (b->fixed) {
        b->len = 0;
        return;
    }
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* v in lowercase hexadecimal, no prefix (printf's %llx). */
void ps_buf_hex(ps_buf_t *b, unsigned long long v)
{
    static const char digits[] = "0123456789abcdef";
    char d[16];
    size_t i = sizeof d;
    do
        d[--i] = digits[v & 15];
    while (v >>= 4);
    ps_buf_mem(b, d + i, sizeof d - i);
}

/* v with `decimals` decimals (0 to 9), as printf's %.Nf in the C locale for
 * the values a report holds (|v| < 2^63 / 10^decimals; NaN and beyond
 * written as 0): rounded to nearest, ties to even.  The product is taken in
 * long double, exact up to 4 decimals (53 + 10 bits fit x87's 64; IEEE quad
 * elsewhere), so a double just below or above a tie rounds as printf does.
 * Async-signal-safe. */
void ps_buf_double(ps_buf_t *b, double v, int decimals)
{
    unsigned long long s = 1;
    for (int i = 0; i < decimals; i++)
        s *= 10;
    int neg = v < 0;
    long double a = (long double)(neg ? -v : v) * (long double)s;
    if (!(a < 9.2e18L)) /* NaN, infinities, what a long long cannot hold */
        a = 0;
    unsigned long long r = (unsigned long long)a;
    long double frac = a - (long double)r;
    if (frac > 0.5L || (frac == 0.5L && (r & 1)))
        r++;
    if (neg && r)
        ps_buf_mem(b, "-", 1);
    ps_buf_ull(b, r / s);
    if (decimals > 0) {
        ps_buf_mem(b, ".", 1);
        ps_buf_zpad(b, r % s, decimals);
    }
}
