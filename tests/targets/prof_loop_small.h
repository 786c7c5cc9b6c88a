/* prof_loop_small.h - a few milliseconds of work, so counts are not zero. */
#define SMALL_WORK()                                                                                                   \
    do {                                                                                                               \
        volatile double x_ = 0;                                                                                        \
        for (long i_ = 0; i_ < 2000000L; i_++)                                                                         \
            x_ += i_ * 0.5;                                                                                            \
    } while (0)
