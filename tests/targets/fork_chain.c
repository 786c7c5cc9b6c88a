/* fork_chain.c - a parent that forks a child that forks a grandchild;
 * each does its own amount of work (parent 1, child 2, grandchild 3
 * units), the grandchild then execs "/bin/sh -c 'exit 0'".  The parent
 * exits with the child's status. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void work(int units)
{
    volatile double x = 0;
    for (long i = 0; i < units * 20000000L; i++)
        x += i * 0.5;
}

int main(void)
{
    pid_t child = fork();
    if (child == 0) {
        pid_t grandchild = fork();
        if (grandchild == 0) {
            work(3);
            execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
            _exit(127);
        }
        work(2);
        int st;
        waitpid(grandchild, &st, 0);
        exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
    }
    work(1);
    int st;
    waitpid(child, &st, 0);
    printf("chain done\n");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
