/* A dlopen'd library on the sampled path: lib_entry -> lib_work. */
#define NOINLINE __attribute__((noinline, noclone))
#define KEEP(x) __asm__ volatile("" : "+x"(x))

NOINLINE double lib_work(long n)
{
    double x = 0;
    for (long i = 0; i < n; i++) {
        x += (double)i * 0.25;
        KEEP(x);
    }
    return x;
}

NOINLINE double lib_entry(long n)
{
    double r = lib_work(n);
    KEEP(r);
    return r + 1;
}
