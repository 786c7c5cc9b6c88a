/* work(): built into the executable, or into libcpwork.so and reached
 * through the PLT (tests/psrun/test_callpath_shares.py builds both).
 * noipa: no clone per call site (work.constprop), no inlining, so every path
 * ends in this one function. */
#include "work.h"

__attribute__((noipa)) unsigned long work(unsigned long iterations, unsigned long seed)
{
    unsigned long x = seed | 1;
    for (unsigned long i = 0; i < iterations; i++) {
        /* xorshift: each step needs the previous one, nothing to vectorise */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}
