/* forkstorm N: two threads sample deep, varied stacks (unwinder cache misses,
 * its locks taken) while the main thread forks N children that spin briefly
 * and exit; exits 0 when every child did. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;

__attribute__((noinline)) static double spin(int depth, long n)
{
    if (depth > 0)
        return spin(depth - 1, n + depth) + 1.0;
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)i * 0.5;
    return s;
}

static void *churn(void *arg)
{
    unsigned seed = (unsigned)(long)arg;
    double s = 0;
    while (!stop)
        s += spin((int)(rand_r(&seed) % 40), 20000);
    return (void *)(long)(s < 0);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, churn, (void *)(i + 1));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            spin(10, 2000000);
            _exit(0);
        }
        int status;
        bad |= pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status);
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return bad;
}
