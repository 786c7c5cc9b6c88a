// cxx_work.cpp - C++ names to demangle: a member function of a class
// template in a namespace, and an overloaded free function.
#include <cstdlib>

#include "prof_loop.h"

namespace work {
template <class T> struct Worker {
    __attribute__((noinline)) void run(T units) { PROF_LOOP(units); }
};
__attribute__((noinline)) void spin(long units) { PROF_LOOP(units); }
__attribute__((noinline)) void spin(double units) { PROF_LOOP(static_cast<long>(units)); }
} // namespace work

int main(int argc, char **argv)
{
    long units = argc > 1 ? std::atol(argv[1]) : 100;
    work::Worker<long>().run(units * 2);
    work::spin(units);
    work::spin(static_cast<double>(units));
    return 0;
}
