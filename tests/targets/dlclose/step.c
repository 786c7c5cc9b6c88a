/* step.c - the plugin loop.c loads: a little work per load. */
long plugin_step(long i)
{
    volatile long x = 0;
    for (long k = 0; k < 2000; k++)
        x += k ^ i;
    return x;
}
