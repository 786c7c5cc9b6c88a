/* demo.c - a small program with known work for trying psrun:
 * a dense matrix multiply (floating point) and a pass over a large buffer
 * (page faults).  Build: cc -O2 -o demo examples/demo.c */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 320

int main(void)
{
    static double a[N][N], b[N][N], c[N][N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = i + j;
            b[i][j] = i - j;
        }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++)
            for (int j = 0; j < N; j++)
                c[i][j] += a[i][k] * b[k][j];
    size_t bytes = 64u << 20; /* 64 MB: 16384 pages of 4 KB touched once */
    char *buf = malloc(bytes);
    if (!buf)
        return 1;
    memset(buf, 1, bytes);
    printf("c[7][11] = %g, buf[12345] = %d\n", c[7][11], buf[12345]);
    free(buf);
    return 0;
}
