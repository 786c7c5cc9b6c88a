/* config.c - which events to count: a list given by the caller (psrun's
 * software fallback), else PSUITE_EVENTS (set by psrun -e), else
 * the PerfSuite event list named by PS_HWPC_CONFIG, else the default list
 * shipped beside this library (configs/default.xml in the package). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

/* Value of attribute `attr` in the start tag at `tag` (up to '>'), decoded
 * from the five predefined entities. */
static int tag_attr(const char *tag, const char *attr, char *out, size_t len)
{
    const char *end = strchr(tag, '>');
    size_t alen = strlen(attr);
    for (const char *p = tag; p && p < end; p++) {
        if (strncmp(p, attr, alen) != 0 || !isspace((unsigned char)p[-1]))
            continue;
        const char *q = p + alen;
        while (isspace((unsigned char)*q))
            q++;
        if (*q++ != '=')
            continue;
        while (isspace((unsigned char)*q))
            q++;
        char quote = *q++;
        if (quote != '"' && quote != '\'')
            return -1;
        size_t n = 0;
        for (; *q && *q != quote && n + 1 < len; q++) {
            static const struct { const char *ent; char c; } ents[] = {
                {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
            char c = *q;
            for (size_t k = 0; c == '&' && k < 5; k++)
                if (strncmp(q, ents[k].ent, strlen(ents[k].ent)) == 0) {
                    c = ents[k].c;
                    q += strlen(ents[k].ent) - 1;
                    break;
                }
            out[n++] = c;
        }
        out[n] = '\0';
        return *q == quote ? 1 : -1;
    }
    return 0;
}

/* Next start tag after `p`, skipping declarations, comments and PIs. */
static const char *next_tag(const char *p)
{
    while ((p = strchr(p, '<'))) {
        if (strncmp(p, "<!--", 4) == 0) {
            p = strstr(p, "-->");
            if (!p)
                return NULL;
        } else if (p[1] != '?' && p[1] != '!' && p[1] != '/')
            return p;
        p++;
    }
    return NULL;
}

static int load_file(ps_evset_t *set, const char *path, char *why, size_t why_len)
{
    static char text[1 << 20];
    int n = ps_read_file(path, text, sizeof text);
    if (n < 0) {
        snprintf(why, why_len, "cannot read configuration %s", path);
        return PS_HWPC_ECONFIG;
    }
    const char *root = next_tag(text);
    if (!root) {
        snprintf(why, why_len, "%s: no XML element found", path);
        return PS_HWPC_ECONFIG;
    }
    if (strncmp(root, "<ps_hwpc_eventlist", 18) != 0) {
        snprintf(why, why_len, "%s: root element must be <ps_hwpc_eventlist>%s", path,
                 strncmp(root, "<ps_hwpc_profile", 16) == 0 ? " (this is a profiling configuration)" : "");
        return PS_HWPC_ECONFIG;
    }
    char value[128];
    if (tag_attr(root, "domain", value, sizeof value) > 0 && parse_domain(value, &set->domain)) {
        snprintf(why, why_len, "%s: domain must be user, kernel or all", path);
        return PS_HWPC_ECONFIG;
    }
    for (const char *t = next_tag(root + 1); t; t = next_tag(t + 1)) {
        if (strncmp(t, "<ps_hwpc_event", 14) != 0 || isalnum((unsigned char)t[14]) || t[14] == '_')
            continue;
        if (tag_attr(t, "name", value, sizeof value) <= 0) {
            snprintf(why, why_len, "%s: <ps_hwpc_event> without a name", path);
            return PS_HWPC_ECONFIG;
        }
        if (add_event(set, value, strlen(value), why, why_len))
            return PS_HWPC_ECONFIG;
    }
    if (!set->nrequested) {
        snprintf(why, why_len, "%s: no events listed", path);
        return PS_HWPC_ECONFIG;
    }
    return PS_HWPC_OK;
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

int ps_config_load(ps_evset_t *set, const char *events, char *why, size_t why_len)
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
        snprintf(why, why_len, "%s: threshold must be a positive integer, not \"%s\"", where, threshold);
        return PS_HWPC_ECONFIG;
    }
    if (cfg->kind == PS_PROF_EVENT && !cfg->threshold) {
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
    const char *name = getenv("PSUITE_PROFILE");
    if (name && *name) {
        ps_strlcpy(cfg->cls, strncmp(name, "ITIMER_", 7) == 0 ? "itimer" : "perfmon", sizeof cfg->cls);
        int rc = parse_profile_event(cfg, name, getenv("PSUITE_PERIOD"), "PSUITE_PERIOD", why, why_len);
        return rc == PS_HWPC_OK ? 1 : rc;
    }
    const char *file = getenv("PS_HWPC_CONFIG");
    if (!file || !*file || getenv("PSUITE_EVENTS"))
        return 0;
    static char text[1 << 16];
    if (ps_read_file(file, text, sizeof text) < 0)
        return 0; /* the counting path reports it */
    const char *root = next_tag(text);
    if (!root || strncmp(root, "<ps_hwpc_profile", 16) != 0)
        return 0;
    char value[128], threshold[64];
    if (tag_attr(root, "class", value, sizeof value) <= 0 ||
        (strcmp(value, "itimer") && strcmp(value, "PAPI") && strcmp(value, "perfmon"))) {
        snprintf(why, why_len, "%s: <ps_hwpc_profile> class must be itimer, PAPI or perfmon", file);
        return PS_HWPC_ECONFIG;
    }
    ps_strlcpy(cfg->cls, value, sizeof cfg->cls);
    if (tag_attr(root, "domain", value, sizeof value) > 0 && parse_domain(value, &cfg->domain)) {
        snprintf(why, why_len, "%s: domain must be user, kernel or all", file);
        return PS_HWPC_ECONFIG;
    }
    if (dom && *dom)
        parse_domain(dom, &cfg->domain); /* the environment wins over the file */
    const char *ev = next_tag(root + 1);
    while (ev && (strncmp(ev, "<ps_hwpc_event", 14) != 0 || isalnum((unsigned char)ev[14]) || ev[14] == '_'))
        ev = next_tag(ev + 1);
    if (!ev || tag_attr(ev, "name", value, sizeof value) <= 0) {
        snprintf(why, why_len, "%s: <ps_hwpc_profile> needs one <ps_hwpc_event name=... threshold=...>", file);
        return PS_HWPC_ECONFIG;
    }
    if (tag_attr(ev, "threshold", threshold, sizeof threshold) <= 0)
        threshold[0] = '\0';
    int rc = parse_profile_event(cfg, value, threshold, file, why, why_len);
    if (rc == PS_HWPC_OK && strcmp(cfg->cls, "itimer") == 0 && cfg->kind != PS_PROF_ITIMER) {
        snprintf(why, why_len, "%s: class itimer takes ITIMER_PROF, ITIMER_VIRTUAL or ITIMER_REAL, not %s", file,
                 cfg->event);
        return PS_HWPC_ECONFIG;
    }
    return rc == PS_HWPC_OK ? 1 : rc;
}
