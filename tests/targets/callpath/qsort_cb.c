/* A hot path through libc: sort_many() sorts with qsort and an expensive
 * comparison callback, so most samples are in cmp() called from libc's
 * qsort internals.  argv[1]: rounds (default 40). */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long key(unsigned long v)
{
    /* the cost of a comparison: a few dozen dependent steps */
    for (int i = 0; i < 48; i++) {
        v ^= v << 13;
        v ^= v >> 7;
        v ^= v << 17;
    }
    return v;
}

__attribute__((noipa)) int cmp(const void *pa, const void *pb)
{
    unsigned long ka = key(*(const unsigned long *)pa), kb = key(*(const unsigned long *)pb);
    return (ka > kb) - (ka < kb);
}

__attribute__((noipa)) void sort_many(unsigned long *v, size_t n, unsigned long round)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (i * 2654435761UL) ^ round;
    qsort(v, n, sizeof v[0], cmp);
    sink = v[0];
}

int main(int argc, char **argv)
{
    unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 40;
    size_t n = 20000;
    unsigned long *v = malloc(n * sizeof *v);
    if (!v)
        return 1;
    for (unsigned long r = 0; r < rounds; r++)
        sort_many(v, n, r);
    printf("qsort done %lu\n", sink & 1);
    free(v);
    return 0;
}
