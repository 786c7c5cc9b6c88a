// C++ with inlining: a template and lambdas inlined into the hot loop of
// one noinline function, cp::hot_loop.  With DWARF inlined-subroutine
// entries the samples resolve to cp::mix<unsigned long> and the lambda as
// frames of their own inside cp::hot_loop.
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

namespace cp {

template <class T> __attribute__((always_inline)) inline T mix(T x)
{
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

template <class F> __attribute__((always_inline)) inline unsigned long repeat(unsigned long n, unsigned long x, F step)
{
    for (unsigned long i = 0; i < n; i++)
        x = step(x);
    return x;
}

__attribute__((noipa)) unsigned long hot_loop(const std::vector<unsigned long> &seeds, unsigned long n)
{
    return std::accumulate(seeds.begin(), seeds.end(), 0UL, [n](unsigned long acc, unsigned long seed) {
        return acc ^ repeat(n, seed | 1, [](unsigned long x) { return mix(x); });
    });
}

}  // namespace cp

int main(int argc, char **argv)
{
    unsigned long millions = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 300;
    std::vector<unsigned long> seeds(100);
    std::iota(seeds.begin(), seeds.end(), 1UL);
    unsigned long r = cp::hot_loop(seeds, millions * 10000);
    std::printf("inlined done %lu\n", r & 1);
    return 0;
}
