/* config.c - which events to count: a list given by the caller (psrun's
 * software fallback), else PSUITE_EVENTS (set by psrun -e), else
 * the PerfSuite event list named by PS_HWPC_CONFIG, else the default list
 * shipped beside this library (configs/default.xml in the package).
 *
 * Configuration files are parsed by expat, the one parser every reader of a
 * configuration uses (this library inside the program, psrun and the Python
 * API through ps_hwpc_config_parse).  libexpat is loaded with dlmopen into a
 * namespace of its own, so that it never meets a copy the measured program
 * has; entity declarations are refused (no entity expansion at all beyond
 * XML's predefined and character references).
 *
 * The namespace is loaded for each parse and closed after it: a second libc
 * in the program's address space for its whole life would cost it about
 * 3 MB of address space.  Expat allocates with this namespace's malloc
 * (XML_ParserCreate_MM), never the second libc's, whose arena would stay
 * mapped after the dlclose. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <expat.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define CONFIG_MAX_BYTES (16u << 20)

/* ---------------------------------------------------------------- expat */

static struct {
    void *handle;
    __typeof__(XML_ParserCreate_MM) *create;
    __typeof__(XML_SetElementHandler) *set_element_handler;
    __typeof__(XML_SetCharacterDataHandler) *set_character_data_handler;
    __typeof__(XML_SetEntityDeclHandler) *set_entity_decl_handler;
    __typeof__(XML_SetSkippedEntityHandler) *set_skipped_entity_handler;
    __typeof__(XML_GetCurrentByteIndex) *byte_index;
    __typeof__(XML_GetCurrentByteCount) *byte_count;
    __typeof__(XML_SetUserData) *set_user_data;
    __typeof__(XML_Parse) *parse;
    __typeof__(XML_StopParser) *stop;
    __typeof__(XML_GetErrorCode) *error_code;
    __typeof__(XML_ErrorString) *error_string;
    __typeof__(XML_GetCurrentLineNumber) *line;
    __typeof__(XML_GetCurrentColumnNumber) *column;
    __typeof__(XML_ParserFree) *free;
    char why[200];
    int ok;
} xp;

static pthread_mutex_t expat_lock = PTHREAD_MUTEX_INITIALIZER;

static void expat_unload(void)
{
    if (xp.handle)
        dlclose(xp.handle);
    xp.handle = NULL;
    xp.ok = 0;
}

/* Called with expat_lock held. */
static void expat_load(void)
{
    void *h = dlmopen(LM_ID_NEWLM, "libexpat.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(xp.why, sizeof xp.why, "cannot load libexpat.so.1 to read the configuration (%s); install the "
                 "libexpat1 package", e ? e : "not found");
        return;
    }
    xp.handle = h;
#define SYM(field, name)                                                                                          \
    if (!(*(void **)&xp.field = dlsym(h, name))) {                                                                 \
        snprintf(xp.why, sizeof xp.why, "libexpat.so.1 has no %s; install libexpat1 2.0 or later", name);          \
        expat_unload();                                                                                            \
        return;                                                                                                    \
    }
    SYM(create, "XML_ParserCreate_MM")
    SYM(set_element_handler, "XML_SetElementHandler")
    SYM(set_character_data_handler, "XML_SetCharacterDataHandler")
    SYM(set_entity_decl_handler, "XML_SetEntityDeclHandler")
    SYM(set_skipped_entity_handler, "XML_SetSkippedEntityHandler")
    SYM(byte_index, "XML_GetCurrentByteIndex")
    SYM(byte_count, "XML_GetCurrentByteCount")
    SYM(set_user_data, "XML_SetUserData")
    SYM(parse, "XML_Parse")
    SYM(stop, "XML_StopParser")
    SYM(error_code, "XML_GetErrorCode")
    SYM(error_string, "XML_ErrorString")
    SYM(line, "XML_GetCurrentLineNumber")
    SYM(column, "XML_GetCurrentColumnNumber")
    SYM(free, "XML_ParserFree")
#undef SYM
    xp.ok = 1;
}

/* ------------------------------------------------------------ the parse */

typedef struct {
    XML_Parser parser;
    const char *path;
    const unsigned char *data; /* the whole document, as given */
    size_t len;
    int unit, low;              /* 2 for UTF-16 (low: offset of an ASCII byte in a code unit), else 1 */
    ps_hwpc_config_t *out;
    int depth;
    int children;               /* element children of the root */
    int not_wf;                 /* err is a well-formedness complaint */
    /* The <ps_hwpc_event> being read: its name is its name attribute or its
     * text (the PerfSuite paper's form), known only at its end tag. */
    int in_event;
    char attr_name[sizeof ((ps_hwpc_config_t *)0)->names[0]]; /* stripped; "" when absent or blank */
    char type[8];               /* preset, native or "" (given by the name) */
    char text[sizeof ((ps_hwpc_config_t *)0)->names[0]];
    size_t text_len, text_kept; /* text_kept: up to the last non-blank */
    int text_long;              /* more text than a name holds */
    char err[PATH_MAX + 512];
} parse_ctx_t;

static int default_config(char *path, size_t len);

/* The way out of a configuration that is not XML: the shipped example of
 * an event list, or psprocess writing a sampling configuration. */
static void how_to_fix(char *err, size_t err_len)
{
    char example[PATH_MAX];
    size_t used = strlen(err);
    if (default_config(example, sizeof example) != 0)
        ps_strlcpy(example, "configs/default.xml", sizeof example);
    snprintf(err + used, err_len - used, ": correct it, or start from the event list %s (<ps_hwpc_eventlist>), or "
             "write a <ps_hwpc_profile> with psprocess --calibrate --write-config FILE", example);
}

static ps_hwpc_config_t parsed; /* large: not on the stack of the program's start-up */
/* <ps_hwpc_profile callpath="yes|no|N"> of the file parsed into `parsed`
 * ("": not given); not in ps_hwpc_config_t, whose layout is public. */
static char parsed_callpath[16];

/* yes: the default depth; no: 0; N (1..PS_CALLPATH_MAX); -1 when none of these */
static int callpath_depth(const char *v)
{
    if (strcmp(v, "yes") == 0)
        return PS_CALLPATH_DEFAULT;
    if (strcmp(v, "no") == 0)
        return 0;
    char *end;
    long n = strtol(v, &end, 10);
    return *v >= '0' && *v <= '9' && !*end && n >= 1 && n <= PS_CALLPATH_MAX ? (int)n : -1;
}

static void fail(parse_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(parse_ctx_t *c, const char *fmt, ...)
{
    if (c->err[0])
        return;
    int n = snprintf(c->err, sizeof c->err, "%s: ", c->path);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof c->err)
        vsnprintf(c->err + n, sizeof c->err - (size_t)n, fmt, ap);
    va_end(ap);
    xp.stop(c->parser, XML_FALSE);
}

static const char *attr(const XML_Char **atts, const char *name)
{
    for (int i = 0; atts[i]; i += 2)
        if (strcmp(atts[i], name) == 0)
            return atts[i + 1];
    return NULL;
}

/* `s` without leading and trailing blanks, into out (0: fits). */
static int stripped(const char *s, char *out, size_t len)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= len)
        return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

/* A namespace name must be a URI reference (Namespaces in XML 1.0). */
static int bad_uri(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p <= ' ' || *p == 0x7f || strchr("<>\"{}|\\^`", *p))
            return 1;
    return 0;
}

/* Up to 60 bytes of `s` on one line, for a message. */
static const char *quoted(const char *s, char *buf, size_t len)
{
    size_t n = 0;
    for (; *s && n + 4 < len && n < 60; s++)
        buf[n++] = (unsigned char)*s < ' ' ? ' ' : *s;
    if (*s && n + 4 < len) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

static int one_of(const char *v, const char *const *set)
{
    for (; *set; set++)
        if (strcmp(v, *set) == 0)
            return 1;
    return 0;
}

static void undefined_entity(parse_ctx_t *c, const char *name)
{
    char q[80];
    fail(c, "entity &%s; is not defined (a configuration's external DTD is never read); write the text in place "
         "of the reference", quoted(name, q, sizeof q));
}

/* References in attribute values to entities that were never declared
 * (possible only with an external DTD, which is not read): expat drops them
 * silently, so the raw start tag is searched for them.  Only the five
 * predefined entities and character references are allowed. */
static int undeclared_in_tag(parse_ctx_t *c)
{
    long start = (long)xp.byte_index(c->parser);
    long count = (long)xp.byte_count(c->parser);
    if (start < 0 || count <= 0 || (size_t)start + (size_t)count > c->len)
        return 0;
    const unsigned char *p = c->data + start, *end = p + count;
    char name[72];
    for (; p + c->unit <= end; p += c->unit) {
        int ch = c->unit == 1 ? *p : p[1 - c->low] ? -1 : p[c->low];
        if (ch != '&')
            continue;
        size_t n = 0;
        const unsigned char *q = p + c->unit;
        for (; q + c->unit <= end && n + 1 < sizeof name; q += c->unit) {
            int k = c->unit == 1 ? *q : q[1 - c->low] ? '?' : q[c->low];
            if (k == ';')
                break;
            name[n++] = (char)k;
        }
        name[n] = '\0';
        static const char *const predefined[] = {"lt", "gt", "amp", "quot", "apos", NULL};
        if (name[0] != '#' && !one_of(name, predefined)) {
            undefined_entity(c, name);
            return 1;
        }
    }
    return 0;
}

static void XMLCALL on_skipped(void *data, const XML_Char *name, int is_param)
{
    parse_ctx_t *c = data;
    if (!is_param)
        undefined_entity(c, name);
}

static void XMLCALL on_start(void *data, const XML_Char *name, const XML_Char **atts)
{
    parse_ctx_t *c = data;
    ps_hwpc_config_t *o = c->out;
    char q[80];
    int depth = ++c->depth;
    if (c->err[0] || undeclared_in_tag(c))
        return;
    for (int i = 0; atts[i]; i += 2)
        if ((strcmp(atts[i], "xmlns") == 0 || strncmp(atts[i], "xmlns:", 6) == 0) && bad_uri(atts[i + 1])) {
            /* as libxml2 says it, so that every reader of a file agrees */
            snprintf(c->err, sizeof c->err, "%s: '%s' is not a valid URI", atts[i], quoted(atts[i + 1], q, sizeof q));
            c->not_wf = 1;
            xp.stop(c->parser, XML_FALSE);
            return;
        }
    if (depth == 1) {
        static const char *const domains[] = {"user", "kernel", "all", NULL};
        const char *dom = attr(atts, "domain");
        const char *cls = attr(atts, "class");
        if (strcmp(name, "ps_hwpc_profile") == 0) {
            static const char *const classes[] = {"itimer", "PAPI", "perfmon", NULL};
            o->kind = PS_CONFIG_PROFILE;
            if (!cls || !one_of(cls, classes)) {
                fail(c, "<ps_hwpc_profile> class must be itimer, PAPI or perfmon, not '%s'",
                     cls ? quoted(cls, q, sizeof q) : "(none given)");
                return;
            }
            const char *cp = attr(atts, "callpath");
            if (cp && callpath_depth(cp) < 0) {
                fail(c, "<ps_hwpc_profile> callpath must be yes, no or a depth from 1 to %d, not '%s'",
                     PS_CALLPATH_MAX, quoted(cp, q, sizeof q));
                return;
            }
            if (o == &parsed)
                ps_strlcpy(parsed_callpath, cp ? cp : "", sizeof parsed_callpath);
        } else if (strcmp(name, "ps_hwpc_eventlist") == 0) {
            static const char *const classes[] = {"PAPI", "perfmon", "null", NULL};
            o->kind = PS_CONFIG_EVENTLIST;
            if (!cls)
                cls = "PAPI";
            if (!one_of(cls, classes)) {
                fail(c, "class must be PAPI, perfmon or null, not '%s'", quoted(cls, q, sizeof q));
                return;
            }
        } else {
            fail(c, "root element is <%s>; a counting configuration is <ps_hwpc_eventlist class=\"PAPI\"> with "
                 "<ps_hwpc_event name=\"...\"/> children", quoted(name, q, sizeof q));
            return;
        }
        if (!dom)
            dom = "user";
        if (!one_of(dom, domains)) {
            fail(c, "domain must be user, kernel or all, not '%s'", quoted(dom, q, sizeof q));
            return;
        }
        ps_strlcpy(o->cls, cls, sizeof o->cls);
        ps_strlcpy(o->domain, dom, sizeof o->domain);
        return;
    }
    if (depth != 2) {
        if (depth == 3 && c->in_event) /* the DTD's (#PCDATA): an event holds only its name */
            fail(c, "<ps_hwpc_event> holds only its event name as text, not an element <%s>",
                 quoted(name, q, sizeof q));
        return;
    }
    c->children++;
    int is_event = strcmp(name, "ps_hwpc_event") == 0;
    if (o->kind == PS_CONFIG_PROFILE && (c->children > 1 || !is_event)) {
        fail(c, "<ps_hwpc_profile> holds exactly one <ps_hwpc_event name=\"...\" threshold=\"...\"/>");
        return;
    }
    if (!is_event) {
        fail(c, "unexpected element <%s> in <ps_hwpc_eventlist>", quoted(name, q, sizeof q));
        return;
    }
    const char *ev = attr(atts, "name");
    if (ev && stripped(ev, c->attr_name, sizeof c->attr_name)) {
        fail(c, "event name '%s' is longer than %zu bytes", quoted(ev, q, sizeof q), sizeof c->attr_name - 1);
        return;
    }
    if (!ev)
        c->attr_name[0] = '\0';
    const char *type = attr(atts, "type");
    if (type && strcmp(type, "preset") != 0 && strcmp(type, "native") != 0) {
        fail(c, "event %s: type must be preset or native", c->attr_name[0] ? c->attr_name : "(named by its text)");
        return;
    }
    ps_strlcpy(c->type, type ? type : "", sizeof c->type);
    const char *th = o->kind == PS_CONFIG_PROFILE ? attr(atts, "threshold") : NULL;
    if (th) {
        if (strlen(th) >= sizeof o->threshold) {
            fail(c, "threshold must be a positive integer, not '%s'", quoted(th, q, sizeof q));
            return;
        }
        o->has_threshold = 1;
        ps_strlcpy(o->threshold, th, sizeof o->threshold);
    }
    c->in_event = 1;
    c->text_len = c->text_kept = 0;
    c->text_long = 0;
}

/* An event's text, blanks around it left out (XML's blanks: the name
 * itself is checked by the backend). */
static void XMLCALL on_text(void *data, const XML_Char *s, int len)
{
    parse_ctx_t *c = data;
    if (!c->in_event || c->depth != 2 || c->err[0])
        return;
    for (int i = 0; i < len; i++) {
        int blank = s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r';
        if (blank && !c->text_len)
            continue;
        if (c->text_len + 1 >= sizeof c->text) {
            c->text_long |= !blank;
            continue;
        }
        c->text[c->text_len++] = s[i];
        if (!blank)
            c->text_kept = c->text_len;
    }
}

/* The end of a <ps_hwpc_event>: its name from the attribute or the text. */
static void end_event(parse_ctx_t *c)
{
    ps_hwpc_config_t *o = c->out;
    char q[80], q2[80];
    c->in_event = 0;
    c->text[c->text_kept] = '\0';
    if (c->text_long) {
        fail(c, "event name '%s' is longer than %zu bytes", quoted(c->text, q, sizeof q), sizeof c->text - 1);
        return;
    }
    if (c->attr_name[0] && c->text[0] && strcmp(c->attr_name, c->text) != 0) {
        fail(c, "<ps_hwpc_event name=\"%s\"> also holds the text '%s'; name the event once, by the name attribute "
             "or by the element's text", quoted(c->attr_name, q, sizeof q), quoted(c->text, q2, sizeof q2));
        return;
    }
    const char *nm = c->attr_name[0] ? c->attr_name : c->text;
    if (!nm[0]) {
        fail(c, "a <ps_hwpc_event> names no event; write <ps_hwpc_event name=\"NAME\"/> or "
             "<ps_hwpc_event>NAME</ps_hwpc_event>");
        return;
    }
    if (o->kind == PS_CONFIG_PROFILE) {
        ps_strlcpy(o->names[0], nm, sizeof o->names[0]);
        o->nevents = 1;
        return;
    }
    if (o->nevents < PS_HWPC_MAX_EVENTS) {
        ps_strlcpy(o->names[o->nevents], nm, sizeof o->names[0]);
        ps_strlcpy(o->types[o->nevents], c->type[0] ? c->type : strncmp(nm, "PAPI_", 5) == 0 ? "preset" : "native",
                   sizeof o->types[0]);
    }
    o->nevents++;
}

static void XMLCALL on_end(void *data, const XML_Char *name)
{
    parse_ctx_t *c = data;
    if (c->depth == 2 && c->in_event && !c->err[0])
        end_event(c);
    c->depth--;
}

static void XMLCALL on_entity_decl(void *data, const XML_Char *name, int is_param, const XML_Char *value,
                                   int value_len, const XML_Char *base, const XML_Char *system_id,
                                   const XML_Char *public_id, const XML_Char *notation)
{
    parse_ctx_t *c = data;
    char q[80];
    fail(c, "the DTD declares entity %s%s: entity declarations are not allowed in a configuration "
         "(write the text in place of the reference)", is_param ? "%" : "", quoted(name, q, sizeof q));
}

/* msg on one line whatever the path it quotes: line breaks and control
 * characters shown as escapes, as psuite's Python front ends show them. */
static void one_line(char *msg, size_t len)
{
    char out[PATH_MAX + 1024];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p && n + 5 < sizeof out; p++) {
        if (*p == '\n' || *p == '\r') {
            out[n++] = '\\';
            out[n++] = *p == '\n' ? 'n' : 'r';
        } else if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            n += (size_t)snprintf(out + n, sizeof out - n, "\\x%02x", *p);
        else
            out[n++] = (char)*p;
    }
    out[n] = '\0';
    ps_strlcpy(msg, out, len);
}

/* The parse proper: expat loaded, the arguments checked. */
static int parse_loaded(const char *path, const char *data, size_t len, ps_hwpc_config_t *out, char *err,
                        size_t err_len)
{
    parse_ctx_t *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, err_len, "out of memory reading configuration %s", path);
        return PS_HWPC_ECONFIG;
    }
    c->path = path;
    c->data = (const unsigned char *)data;
    c->len = len;
    c->unit = 1;
    const unsigned char *u = c->data;
    if (len >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == '<' && u[1] == 0))) {
        c->unit = 2; /* UTF-16LE: the ASCII byte first */
        c->low = 0;
    } else if (len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) || (u[0] == 0 && u[1] == '<'))) {
        c->unit = 2;
        c->low = 1;
    }
    c->out = out;
    static const XML_Memory_Handling_Suite this_namespace = {malloc, realloc, free};
    c->parser = xp.create(NULL, &this_namespace, NULL);
    if (!c->parser) {
        free(c);
        snprintf(err, err_len, "out of memory reading configuration %s", path);
        return PS_HWPC_ECONFIG;
    }
    xp.set_user_data(c->parser, c);
    xp.set_element_handler(c->parser, on_start, on_end);
    xp.set_character_data_handler(c->parser, on_text);
    xp.set_entity_decl_handler(c->parser, on_entity_decl);
    xp.set_skipped_entity_handler(c->parser, on_skipped);
    int rc = PS_HWPC_OK;
    /* XML_Parse takes an int length: feed big files in pieces */
    size_t done = 0;
    int status = XML_STATUS_OK;
    do {
        size_t piece = len - done > (1u << 30) ? (1u << 30) : len - done;
        status = xp.parse(c->parser, data + done, (int)piece, done + piece == len);
        done += piece;
    } while (status == XML_STATUS_OK && done < len);
    if (status != XML_STATUS_OK) {
        if (c->err[0] && !c->not_wf) {
            snprintf(err, err_len, "%s", c->err);
        } else {
            char msg[300];
            if (c->err[0])
                ps_strlcpy(msg, c->err, sizeof msg);
            else
                snprintf(msg, sizeof msg, "%s", xp.error_string(xp.error_code(c->parser)));
            size_t blank = 0;
            while (blank < len && (data[blank] == ' ' || data[blank] == '\t' || data[blank] == '\r' ||
                                   data[blank] == '\n'))
                blank++;
            if (blank == len)
                snprintf(err, err_len, "configuration %s is empty", path);
            else
                snprintf(err, err_len, "configuration %s is not well-formed XML (%s, line %lu, column %lu)", path,
                         msg, (unsigned long)xp.line(c->parser), (unsigned long)xp.column(c->parser) + 1);
            how_to_fix(err, err_len);
        }
        rc = PS_HWPC_ECONFIG;
    } else if (out->kind == PS_CONFIG_PROFILE && out->nevents != 1) {
        snprintf(err, err_len, "%s: <ps_hwpc_profile> holds exactly one <ps_hwpc_event name=\"...\" "
                 "threshold=\"...\"/>", path);
        rc = PS_HWPC_ECONFIG;
    } else if (out->kind == PS_CONFIG_EVENTLIST && !out->nevents) {
        snprintf(err, err_len, "%s: no <ps_hwpc_event> listed", path);
        rc = PS_HWPC_ECONFIG;
    } else if (out->kind == PS_CONFIG_EVENTLIST && out->nevents > PS_HWPC_MAX_EVENTS) {
        snprintf(err, err_len, "%s: %d events; at most %d can be requested", path, out->nevents,
                 PS_HWPC_MAX_EVENTS);
        rc = PS_HWPC_ECONFIG;
    }
    xp.free(c->parser);
    free(c);
    if (rc != PS_HWPC_OK) {
        out->kind = 0;
        one_line(err, err_len);
    }
    return rc;
}

PS_API int ps_hwpc_config_parse(const char *path, const char *data, size_t len, ps_hwpc_config_t *out, char *err,
                                size_t err_len)
{
    if (!path || !data || !out || !err || !err_len)
        return PS_HWPC_EINVAL;
    memset(out, 0, sizeof *out);
    err[0] = '\0';
    if (len > CONFIG_MAX_BYTES) {
        snprintf(err, err_len, "configuration %s is larger than 16 MiB, the limit for one input; give a "
                 "smaller file", path);
        return PS_HWPC_ECONFIG;
    }
    pthread_mutex_lock(&expat_lock);
    expat_load();
    int rc = PS_HWPC_ECONFIG;
    if (xp.ok)
        rc = parse_loaded(path, data, len, out, err, err_len);
    else
        snprintf(err, err_len, "%s", xp.why);
    expat_unload();
    pthread_mutex_unlock(&expat_lock);
    return rc;
}

/* Why a configuration cannot be read, worded as psuite's Python front ends
 * word it (cli_common), so that every reader says the same. */
static int unreadable(const char *path, int err, char *why, size_t why_len)
{
    if (err == ENOENT || err == ENOTDIR)
        snprintf(why, why_len, "configuration %s: no such file", path);
    else if (err == EACCES || err == EPERM)
        snprintf(why, why_len, "cannot read configuration %s: permission denied; check its permissions", path);
    else {
        char text[128];
        ps_strlcpy(text, strerror(err), sizeof text);
        for (char *c = text; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        snprintf(why, why_len, "cannot read configuration %s: %s; check the file and its device", path, text);
    }
    return PS_HWPC_ECONFIG;
}

static int not_a_file(const char *path, mode_t mode, char *why, size_t why_len)
{
    if (S_ISDIR(mode)) {
        snprintf(why, why_len, "configuration %s is a directory; give a file", path);
        return PS_HWPC_ECONFIG;
    }
    const char *kind = S_ISFIFO(mode) ? "a named pipe" : S_ISCHR(mode) ? "a character device" :
                       S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a file";
    snprintf(why, why_len, "configuration %s is not a regular file (%s); give a regular file", path, kind);
    return PS_HWPC_ECONFIG;
}

/* The whole file (a regular file of at most CONFIG_MAX_BYTES), parsed. */
static int parse_file(const char *path, ps_hwpc_config_t *out, char *why, size_t why_len)
{
    struct stat st;
    if (stat(path, &st))
        return unreadable(path, errno, why, why_len);
    if (!S_ISREG(st.st_mode)) /* never opened: a device or a pipe is not touched */
        return not_a_file(path, st.st_mode, why, why_len);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return unreadable(path, errno, why, why_len);
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return not_a_file(path, st.st_mode, why, why_len);
    }
    if ((unsigned long long)st.st_size > CONFIG_MAX_BYTES) {
        close(fd);
        snprintf(why, why_len, "configuration %s is larger than 16 MiB, the limit for one input; give a "
                 "smaller file", path);
        return PS_HWPC_ECONFIG;
    }
    size_t cap = (size_t)st.st_size + 1, got = 0;
    char *text = malloc(cap);
    while (text) {
        if (got == cap) { /* grew since fstat */
            char *more = cap > CONFIG_MAX_BYTES ? NULL : realloc(text, cap * 2);
            if (!more) {
                free(text);
                text = NULL;
                break;
            }
            text = more;
            cap *= 2;
        }
        ssize_t r = read(fd, text + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            free(text);
            close(fd);
            return unreadable(path, err, why, why_len);
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!text) {
        snprintf(why, why_len, "configuration %s: out of memory or larger than 16 MiB", path);
        return PS_HWPC_ECONFIG;
    }
    int rc = ps_hwpc_config_parse(path, text, got, out, why, why_len);
    free(text);
    return rc;
}

/* ------------------------------------------------------------ the users */

static int add_event(ps_evset_t *set, const char *name, size_t len, char *why, size_t why_len)
{
    while (len && isspace((unsigned char)*name)) {
        name++;
        len--;
    }
    while (len && isspace((unsigned char)name[len - 1]))
        len--;
    if (!len)
        return 0;
    if (set->nrequested >= PS_HWPC_MAX_EVENTS) {
        snprintf(why, why_len, "more than %d events requested", PS_HWPC_MAX_EVENTS);
        return -1;
    }
    ps_event_t *e = &set->ev[set->nrequested++];
    memset(e, 0, sizeof *e);
    if (len >= sizeof e->name)
        len = sizeof e->name - 1;
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    e->preset = strncmp(e->name, "PAPI_", 5) == 0;
    e->status = PS_EVENT_COUNTED; /* until a backend says otherwise */
    e->fd = -1;
    return 0;
}

static int parse_domain(const char *text, int *domain)
{
    if (!text || !*text || strcmp(text, "user") == 0)
        *domain = PS_DOM_USER;
    else if (strcmp(text, "kernel") == 0)
        *domain = PS_DOM_KERNEL;
    else if (strcmp(text, "all") == 0)
        *domain = PS_DOM_ALL;
    else
        return -1;
    return 0;
}

static pthread_mutex_t parsed_lock = PTHREAD_MUTEX_INITIALIZER;
static char parsed_path[PATH_MAX];
static struct stat parsed_stat;

/* In a forked child: the lock anew (a parent's thread may have held it). */
void ps_config_after_fork(void) { pthread_mutex_init(&parsed_lock, NULL); }

/* The file parsed into `parsed` (under parsed_lock), read once: start-up
 * asks whether it is a profiling configuration, then reads its events. */
static int parse_once(const char *path, char *why, size_t why_len)
{
    struct stat st;
    if (parsed_path[0] && strcmp(parsed_path, path) == 0 && stat(path, &st) == 0 &&
        st.st_dev == parsed_stat.st_dev && st.st_ino == parsed_stat.st_ino && st.st_size == parsed_stat.st_size &&
        st.st_mtim.tv_sec == parsed_stat.st_mtim.tv_sec && st.st_mtim.tv_nsec == parsed_stat.st_mtim.tv_nsec)
        return PS_HWPC_OK;
    parsed_path[0] = '\0';
    int rc = parse_file(path, &parsed, why, why_len);
    if (rc == PS_HWPC_OK && strlen(path) < sizeof parsed_path && stat(path, &parsed_stat) == 0)
        ps_strlcpy(parsed_path, path, sizeof parsed_path);
    return rc;
}

static int load_file(ps_evset_t *set, const char *path, char *why, size_t why_len)
{
    pthread_mutex_lock(&parsed_lock);
    int rc = parse_once(path, why, why_len);
    if (rc != PS_HWPC_OK)
        one_line(why, why_len);
    if (rc == PS_HWPC_OK && parsed.kind != PS_CONFIG_EVENTLIST) {
        snprintf(why, why_len, "%s: root element must be <ps_hwpc_eventlist> (this is a profiling configuration)",
                 path);
        rc = PS_HWPC_ECONFIG;
    }
    if (rc == PS_HWPC_OK)
        parse_domain(parsed.domain, &set->domain);
    for (int i = 0; rc == PS_HWPC_OK && i < parsed.nevents; i++)
        if (add_event(set, parsed.names[i], strlen(parsed.names[i]), why, why_len))
            rc = PS_HWPC_ECONFIG;
    pthread_mutex_unlock(&parsed_lock);
    return rc;
}
/* configs/default.xml beside this library, where the package build puts it. */
static int default_config(char *path, size_t len)
{
    Dl_info info;
    if (!dladdr((void *)default_config, &info) || !info.dli_fname)
        return -1;
    char real[PATH_MAX];
    if (!realpath(info.dli_fname, real))
        return -1;
    char *slash = strrchr(real, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    snprintf(path, len, "%s/configs/default.xml", real);
    return 0;
}

/* The user domain's software events the kernel counts only in kernel mode
 * are counted in every domain (perfev.c, papi.c): the annotation says so,
 * where a reader of "domain=user" would expect otherwise (and, where this
 * user may not count in kernel mode, why they are dropped). */
static void note_kernel_only(ps_evset_t *set)
{
    char names[512] = "";
    size_t used = 0;
    if (set->domain != PS_DOM_USER)
        return;
    for (int i = 0; i < set->nrequested && used < sizeof names; i++)
        if (ps_event_kernel_only(set->ev[i].name))
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", set->ev[i].name);
    if (!used)
        return;
    char note[sizeof names + 160];
    snprintf(note, sizeof note, "%s: in every domain, not the user domain alone, since the kernel counts a task's "
             "context switches and migrations only in kernel mode", names);
    ps_append_part(set->annotation, sizeof set->annotation, note);
}

static int load_events(ps_evset_t *set, const char *events, char *why, size_t why_len);

int ps_config_load(ps_evset_t *set, const char *events, char *why, size_t why_len)
{
    int rc = load_events(set, events, why, why_len);
    if (rc == PS_HWPC_OK)
        note_kernel_only(set);
    return rc;
}

static int load_events(ps_evset_t *set, const char *events, char *why, size_t why_len)
{
    set->nrequested = 0;
    set->domain = PS_DOM_USER;
    const char *dom = getenv("PSUITE_DOMAIN");
    if (dom && *dom && parse_domain(dom, &set->domain)) {
        snprintf(why, why_len, "PSUITE_DOMAIN must be user, kernel or all");
        return PS_HWPC_ECONFIG;
    }
    const char *list = events ? events : getenv("PSUITE_EVENTS");
    if (list && *list) {
        for (const char *p = list; *p;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (add_event(set, p, len, why, why_len))
                return PS_HWPC_ECONFIG;
            p += len + (comma != NULL);
        }
        if (!set->nrequested) {
            snprintf(why, why_len, "PSUITE_EVENTS lists no events");
            return PS_HWPC_ECONFIG;
        }
        return PS_HWPC_OK;
    }
    const char *file = getenv("PS_HWPC_CONFIG");
    char path[PATH_MAX];
    if (!file || !*file) {
        if (default_config(path, sizeof path)) {
            snprintf(why, why_len, "no PS_HWPC_CONFIG and no default configuration found");
            return PS_HWPC_ECONFIG;
        }
        file = path;
    }
    int rc = load_file(set, file, why, why_len);
    if (rc == PS_HWPC_OK && dom && *dom)
        parse_domain(dom, &set->domain); /* the environment wins over the file */
    return rc;
}

/* Profiling: PSUITE_PROFILE=NAME with PSUITE_PERIOD=N (psrun --profile), or
 * a <ps_hwpc_profile class="itimer|PAPI|perfmon"> file in PS_HWPC_CONFIG
 * holding one <ps_hwpc_event name=... threshold=...>. */
static int parse_profile_event(ps_profcfg_t *cfg, const char *name, const char *threshold, const char *where,
                               char *why, size_t why_len)
{
    static const char *const timers[] = {"ITIMER_PROF", "ITIMER_VIRTUAL", "ITIMER_REAL"};
    ps_strlcpy(cfg->event, name, sizeof cfg->event);
    cfg->kind = PS_PROF_EVENT;
    for (int k = 0; k < 3; k++)
        if (strcmp(name, timers[k]) == 0) {
            cfg->kind = PS_PROF_ITIMER;
            cfg->timer = k;
        }
    char *end = NULL;
    cfg->threshold = threshold && *threshold ? strtoll(threshold, &end, 10) : 0;
    if (!threshold || !*threshold)
        cfg->threshold = cfg->kind == PS_PROF_ITIMER ? 10000 : 0;
    else if (*end || cfg->threshold <= 0) {
        snprintf(why, why_len, "%s: threshold must be a positive integer, not '%s'", where, threshold);
        return PS_HWPC_ECONFIG;
    }
    if (cfg->kind == PS_PROF_EVENT && !cfg->threshold) {
        /* a name that is no event is said as such, not as a missing threshold */
        unsigned type;
        unsigned long long config;
        char lwhy[192];
        if (ps_perf_lookup(name, &type, &config, lwhy, sizeof lwhy) != PS_EVENT_COUNTED) {
            snprintf(why, why_len, "cannot sample on %s: %s", name, lwhy);
            return PS_HWPC_ENOEVENT;
        }
        if (strcmp(where, "PSUITE_PERIOD") == 0 && ps_env_flag("PSUITE_PRELOAD")) /* psrun --profile */
            snprintf(why, why_len, "--period: sampling on %s needs an overflow threshold (a count of events)", name);
        else
            snprintf(why, why_len, "%s: event %s needs an overflow threshold (a count of events)", where, name);
        return PS_HWPC_ECONFIG;
    }
    return PS_HWPC_OK;
}

int ps_config_profile(ps_profcfg_t *cfg, char *why, size_t why_len)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->domain = PS_DOM_USER;
    const char *dom = getenv("PSUITE_DOMAIN");
    if (dom && *dom && parse_domain(dom, &cfg->domain)) {
        snprintf(why, why_len, "PSUITE_DOMAIN must be user, kernel or all");
        return PS_HWPC_ECONFIG;
    }
    /* psrun --callpath[=N]; else the file's callpath attribute */
    const char *cp = getenv("PSUITE_CALLPATH");
    if (cp && *cp && (cfg->callpath = callpath_depth(cp)) < 0) {
        snprintf(why, why_len, "PSUITE_CALLPATH must be yes, no or a depth from 1 to %d", PS_CALLPATH_MAX);
        return PS_HWPC_ECONFIG;
    }
    const char *name = getenv("PSUITE_PROFILE");
    if (name && *name) {
        ps_strlcpy(cfg->cls, strncmp(name, "ITIMER_", 7) == 0 ? "itimer" : "perfmon", sizeof cfg->cls);
        int rc = parse_profile_event(cfg, name, getenv("PSUITE_PERIOD"), "PSUITE_PERIOD", why, why_len);
        return rc == PS_HWPC_OK ? 1 : rc;
    }
    const char *file = getenv("PS_HWPC_CONFIG");
    if (!file || !*file || getenv("PSUITE_EVENTS"))
        return 0;
    pthread_mutex_lock(&parsed_lock);
    int rc = parse_once(file, why, why_len);
    if (rc != PS_HWPC_OK)
        one_line(why, why_len);
    if (rc != PS_HWPC_OK || parsed.kind != PS_CONFIG_PROFILE) {
        pthread_mutex_unlock(&parsed_lock);
        return rc == PS_HWPC_OK ? 0 : rc; /* a counting configuration, or broken: said once, here */
    }
    ps_strlcpy(cfg->cls, parsed.cls, sizeof cfg->cls);
    parse_domain(parsed.domain, &cfg->domain);
    if (dom && *dom)
        parse_domain(dom, &cfg->domain); /* the environment wins over the file */
    char event[sizeof parsed.names[0]], threshold[sizeof parsed.threshold];
    ps_strlcpy(event, parsed.names[0], sizeof event);
    ps_strlcpy(threshold, parsed.has_threshold ? parsed.threshold : "", sizeof threshold);
    if (!(cp && *cp) && parsed_callpath[0])
        cfg->callpath = callpath_depth(parsed_callpath);
    pthread_mutex_unlock(&parsed_lock);
    if (strcmp(cfg->cls, "itimer") == 0 && strncmp(event, "ITIMER_", 7) != 0) {
        snprintf(why, why_len, "%s: class itimer takes ITIMER_PROF, ITIMER_VIRTUAL, ITIMER_REAL, not %s", file,
                 event);
        return PS_HWPC_ECONFIG;
    }
    rc = parse_profile_event(cfg, event, threshold, file, why, why_len);
    if (rc == PS_HWPC_OK && strcmp(cfg->cls, "itimer") == 0 && cfg->kind != PS_PROF_ITIMER) {
        snprintf(why, why_len, "%s: class itimer takes ITIMER_PROF, ITIMER_VIRTUAL, ITIMER_REAL, not %s", file,
                 cfg->event);
        return PS_HWPC_ECONFIG;
    }
    return rc == PS_HWPC_OK ? 1 : rc;
}
