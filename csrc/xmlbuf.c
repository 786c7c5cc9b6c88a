/* xmlbuf.c - a growable text buffer with XML escaping. */
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

void ps_buf_escaped(ps_buf_t *b, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        switch (*p) {
        case '<': ps_buf_printf(b, "&lt;"); break;
        case '>': ps_buf_printf(b, "&gt;"); break;
        case '&': ps_buf_printf(b, "&amp;"); break;
        case '"': ps_buf_printf(b, "&quot;"); break;
        default:
            /* Control characters are not allowed in XML 1.0. */
            if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
                ps_buf_printf(b, "?");
            else
                ps_buf_printf(b, "%c", *p);
        }
    }
}

void ps_buf_element(ps_buf_t *b, int indent, const char *tag, const char *text)
{
    ps_buf_printf(b, "%*s<%s>", indent, "", tag);
    ps_buf_escaped(b, text);
    ps_buf_printf(b, "</%s>\n", tag);
}

void ps_buf_free(ps_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
