/* program_view.c - what a program sees of its own process, for comparing a
 * run under psrun with the bare run:
 *   prefork      closefrom(3), open server.log (fd 3), fork 3 workers that
 *                write to fd 3; exit status: 0, or 2 if a worker failed
 *   threadend    a thread starts; main closefrom(3)s, opens two files (3, 4),
 *                the thread ends; prints whether fd 4 is still its file
 *   burn         closefrom(3), then 1 s of CPU time
 *   nofile       opens /dev/null until EMFILE, prints how many; exits with
 *                them all open
 *   altstack     the alternate signal stack at main
 *   fds          the descriptors below the soft limit: number and target
 *   asroom       VmSize at main (kB), then pages mapped until ENOMEM */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

static void burn(double seconds)
{
    double end = cpu_s() + seconds;
    while (cpu_s() < end)
        for (int i = 0; i < 100000; i++)
            sink += (unsigned long)i * i;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;

static void *waiter(void *arg)
{
    (void)arg;
    burn(0.05);
    pthread_mutex_lock(&mu);
    while (!go)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    if (!strcmp(how, "prefork")) {
        closefrom(3);
        int log = open("server.log", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
        if (log != 3)
            return 3;
        burn(0.05);
        for (int i = 0; i < 3; i++)
            if (fork() == 0) {
                burn(0.05);
                char line[32];
                int n = snprintf(line, sizeof line, "worker %d\n", i);
                _exit(write(3, line, (size_t)n) == n ? 0 : 2);
            }
        int rc = 0, status;
        while (wait(&status) > 0)
            if (!WIFEXITED(status) || WEXITSTATUS(status))
                rc = 2;
        return rc;
    }
    if (!strcmp(how, "threadend")) {
        pthread_t t;
        pthread_create(&t, NULL, waiter, NULL);
        burn(0.05);
        closefrom(3);
        int a = open("a.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644), b = open("b.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        struct stat before, after;
        fstat(b, &before);
        pthread_mutex_lock(&mu);
        go = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        pthread_join(t, NULL);
        int same = fstat(b, &after) == 0 && after.st_ino == before.st_ino && after.st_dev == before.st_dev;
        printf("fds %d %d; fd %d %s\n", a, b, b, same ? "still the program's file" : "lost");
        return 0;
    }
    if (!strcmp(how, "burn")) {
        closefrom(3);
        burn(1.0);
        return 0;
    }
    if (!strcmp(how, "nofile")) {
        int n = 0;
        while (open("/dev/null", O_RDONLY) >= 0)
            n++;
        printf("%d files opened (%s)\n", n, strerror(errno));
        return 0;
    }
    if (!strcmp(how, "caught")) { /* the signals the kernel sees caught (a handler installed) */
        char line[256];
        FILE *f = fopen("/proc/self/status", "r");
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "SigCgt:", 7))
                fputs(line, stdout);
        return 0;
    }
    if (!strcmp(how, "altstack")) {
        stack_t ss;
        sigaltstack(NULL, &ss);
        if (ss.ss_flags & SS_DISABLE)
            printf("SS_DISABLE\n");
        else
            printf("enabled, %zu bytes\n", ss.ss_size);
        return 0;
    }
    if (!strcmp(how, "fds")) {
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        while ((e = readdir(d))) {
            int fd = atoi(e->d_name);
            if (e->d_name[0] == '.' || fd == dirfd(d) || (rlim_t)fd >= rl.rlim_cur)
                continue;
            char path[64], target[256] = "";
            snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(path, target, sizeof target - 1);
            if (n > 0)
                target[n] = '\0';
            /* pipes and anonymous inodes differ from run to run by inode number */
            char *bracket = strchr(target, '[');
            if (bracket)
                *bracket = '\0';
            printf("%d %s\n", fd, target);
        }
        closedir(d);
        return 0;
    }
    if (!strcmp(how, "asroom")) {
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        long vm_kb = -1;
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "VmSize:", 7))
                vm_kb = atol(line + 7);
        if (f)
            fclose(f);
        unsigned long pages = 0;
        for (size_t chunk = 1UL << 30; chunk >= 4096; chunk /= 2)
            while (mmap(NULL, chunk, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED)
                pages += chunk / 4096;
        printf("%ld %lu\n", vm_kb, pages);
        return 0;
    }
    fprintf(stderr, "usage: program_view prefork|threadend|burn|nofile|altstack|fds|asroom\n");
    return 2;
}
