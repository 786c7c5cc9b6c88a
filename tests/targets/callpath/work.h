/* The one hot function of the call-path targets: a dependent chain of
 * integer operations whose cost per iteration does not depend on the caller,
 * so the share of CPU time of each call path is its share of iterations. */
#ifndef CALLPATH_WORK_H
#define CALLPATH_WORK_H
unsigned long work(unsigned long iterations, unsigned long seed);
#endif
