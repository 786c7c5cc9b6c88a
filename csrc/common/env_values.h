/* env_values.h - the values of the PSUITE_* variables that both the psrun
 * launcher (which refuses a bad one before the program runs) and the
 * injected library (which ignores it, with a note, when run without psrun)
 * read: one definition of what is valid, for both. */
#ifndef PSUITE_ENV_VALUES_H
#define PSUITE_ENV_VALUES_H

#include <string.h>

#define PS_CALLPATH_NODES_MIN 2UL
#define PS_CALLPATH_NODES_MAX (1UL << 28)

/* PSUITE_CALLPATH_NODES: ASCII digits only, PS_CALLPATH_NODES_MIN to
 * PS_CALLPATH_NODES_MAX (leading zeros allowed); 1 and *out, else 0. */
static inline int ps_callpath_nodes_value(const char *s, unsigned long *out)
{
    unsigned long v = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10 + (unsigned long)(*s - '0');
        if (v > PS_CALLPATH_NODES_MAX)
            return 0;
    }
    if (v < PS_CALLPATH_NODES_MIN)
        return 0;
    *out = v;
    return 1;
}

#endif
