/* group.c - the sampled PCs of a module summed per source location in C:
 * a profile has tens of thousands of PCs, and summing them in a Python dict
 * costs a few hundred nanoseconds each (psuite/analysis/srcmap.py). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf.h"

PS_API int ps_dwarf_group(int n, const int *files, const int *functions, const int *lines, const long long *counts,
                          int *out_files, int *out_functions, int *out_lines, long long *out_sums)
{
    if (n < 0)
        return -1;
    size_t slots = 16;
    while (slots < 2 * (size_t)n)
        slots *= 2;
    int *table = malloc(sizeof *table * slots);
    if (!table)
        return -2;
    memset(table, 0xff, sizeof *table * slots);
    int groups = 0;
    for (int i = 0; i < n; i++) {
        int file = files[i], function = functions[i], line = file < 0 ? 0 : lines[i]; /* no line without a file */
        uint64_t h = ((uint64_t)(uint32_t)file * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(uint32_t)function << 21) ^
                     (uint64_t)(uint32_t)line;
        h *= 0xff51afd7ed558ccdULL;
        size_t at = (size_t)(h ^ (h >> 31)) & (slots - 1);
        for (;;) {
            int g = table[at];
            if (g < 0) {
                table[at] = groups;
                out_files[groups] = file;
                out_functions[groups] = function;
                out_lines[groups] = line;
                out_sums[groups++] = counts[i];
                break;
            }
            if (out_files[g] == file && out_functions[g] == function && out_lines[g] == line) {
                if (__builtin_add_overflow(out_sums[g], counts[i], &out_sums[g])) {
                    free(table);
                    return -1;
                }
                break;
            }
            at = (at + 1) & (slots - 1);
        }
    }
    free(table);
    return groups;
}
