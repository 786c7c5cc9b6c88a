/* prof_loop.h - one unit of work: the same loop in every function of the
 * profiling targets, so that their shares of the samples are known. */
#define PROF_LOOP(units)                                                                                              \
    do {                                                                                                               \
        volatile double x_ = 0;                                                                                        \
        for (long i_ = 0; i_ < (units) * 20000L; i_++)                                                                 \
            x_ += i_ * 0.5;                                                                                            \
    } while (0)
