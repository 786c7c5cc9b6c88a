/* papi_coexist.c - psrun's PAPI counting out of the way of a program that
 * counts with PAPI itself.
 *
 * PAPI runs one event set per thread and component: while psuite's set
 * counts on the main thread, the program's own PAPI_start there fails with
 * PAPI_EISRUN.  The preloaded library comes first in the program's symbol
 * lookup, so the program's PAPI_start is this one.  It calls the program's
 * libpapi (the next PAPI_start; psuite's own handle on libpapi if the
 * program's is not in the global scope) and, when that failed only because
 * psuite's set runs on this thread, stops psuite's set (its counts kept),
 * starts the program's again and says so on stderr and in the report.  The
 * program gets what it would have got without psrun.  psuite's counting is
 * not resumed: its report covers the program up to that PAPI_start.
 *
 * A program that looks PAPI_start up in its own handle on libpapi
 * (dlsym(handle, ...)) does not come here; under the API (a program that
 * calls ps_hwpc_* itself, no psrun) the result is passed on unchanged. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>

#include "internal.h"

#define PAPI_OK 0
#define PAPI_EISRUN (-10)
#define PAPI_ENOINIT (-16)

typedef int (*start_fn)(int);

static start_fn next_start(void)
{
    static start_fn next;
    start_fn f = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    *(void **)&f = dlsym(RTLD_NEXT, "PAPI_start");
    if (!f)
        *(void **)&f = ps_papi_start_function();
    if (f)
        __atomic_store_n(&next, f, __ATOMIC_RELEASE);
    return f;
}

PS_API int PAPI_start(int EventSet)
{
    start_fn start = next_start();
    if (!start)
        return PAPI_ENOINIT;
    int rc = start(EventSet);
    if (rc != PAPI_EISRUN || !ps_env_flag("PSUITE_PRELOAD") || !ps_papi_blocks_start(start, EventSet))
        return rc;
    if (ps_hwpc_suspend() != PS_HWPC_OK)
        return rc;
    int again = start(EventSet);
    if (again != PAPI_OK) {
        /* not (only) psuite's set in the way: as without psrun */
        ps_hwpc_start();
        return again;
    }
    static const char what[] = "counting stopped at the program's own PAPI_start: counts cover the program "
                               "up to it (PAPI counts one event set per thread)";
    ps_hwpc_yield();
    ps_hwpc_annotate(what);
    if (!ps_env_flag("PSUITE_QUIET")) /* also in a child psrun -f follows, whose reports only are noted */
        ps_message("the program started its own PAPI counters on the thread psrun counts: psrun's PAPI counting stopped "
            "there, so its report covers the program up to that PAPI_start (--backend perf_event counts the "
            "whole run)");
    return again;
}
