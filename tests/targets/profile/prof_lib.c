/* prof_lib.c - the shared-library part of prof_split (libprof_lib.so). */
#include "prof_loop.h"

__attribute__((noinline)) void lib_work(long units) { PROF_LOOP(units); }
