/* marks_its_run.c - creates the file named by its argument: a test can tell
 * whether psrun ran it.  Built 32-bit, static, as a shared object ... by
 * tests/psrun/test_program_checks.py to check what psrun refuses. */
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 1;
    FILE *f = fopen(argv[1], "w");
    if (!f)
        return 1;
    fputs("ran\n", f);
    return fclose(f) != 0;
}
