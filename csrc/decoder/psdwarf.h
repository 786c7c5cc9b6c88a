/* psdwarf.h - the source-mapping decoder's API (libpsdwarf.so).
 *
 * psprocess loads this library through cffi; measured programs never do:
 * the decoder is kept out of libpshwpc.so, the runtime psrun injects.
 * Not installed as a public header. */
#ifndef PSDWARF_H
#define PSDWARF_H

#ifdef __cplusplus
extern "C" {
#endif

#define PS_DWARF_OK            0
#define PS_DWARF_EINVAL       -1
#define PS_DWARF_EIO          -6
#define PS_DWARF_ECOMPRESSED  -7

/* Source mapping for psprocess: DWARF line tables and functions, and the
 * ELF symbol table, of one ELF file (decoded once, then looked up). */
typedef struct ps_dwarf ps_dwarf_t;
/* PS_DWARF_OK, PS_DWARF_EIO (unreadable), PS_DWARF_EINVAL (not a 64-bit
 * little-endian ELF), PS_DWARF_ECOMPRESSED (compressed debug sections). */
int ps_dwarf_open(const char *path, ps_dwarf_t **out);
int ps_dwarf_has_dwarf(const ps_dwarf_t *d);
/* lookup_many: per address a file id (-1 unknown), line and function id
 * (-1 unknown), named by ps_dwarf_file and ps_dwarf_function (linkage: a
 * mangled name). */
void ps_dwarf_lookup_many(ps_dwarf_t *d, const unsigned long long *addrs, int n, int *files, int *lines,
                          int *functions);
/* frames_many: per address, the frames at it as addr2line -f -i lists
 * them, innermost first: the inlined calls (inlined[] = 1) and then the
 * function containing the address.  Address i has counts[i] frames, stored
 * after the frames of addresses 0..i-1 in functions/files/lines/inlined
 * (ids as lookup_many gives them; an outer frame's file and line are the
 * call site of the inlined frame inside it; line 0 without a DWARF file).
 * Writes at most cap frames;
 * returns the total, so a caller whose cap was too small calls again. */
int ps_dwarf_frames_many(ps_dwarf_t *d, const unsigned long long *addrs, int n, int *counts, int *functions,
                         int *files, int *lines, unsigned char *inlined, int cap);
/* names: many names in one call, for each id its name and a NUL ("??"
 * unknown) in buf: function ids (kind 0; C++ names demangled by the C++
 * runtime when it is there) or file ids (kind 1).  Writes at most cap
 * bytes; returns the total, so a caller whose cap was too small calls again. */
long ps_dwarf_names(ps_dwarf_t *d, int kind, const int *ids, int n, char *buf, long cap);
const char *ps_dwarf_file(const ps_dwarf_t *d, int id);
const char *ps_dwarf_function(const ps_dwarf_t *d, int id, int *linkage);
void ps_dwarf_close(ps_dwarf_t *d);
/* group (group.c): the distinct (files[i], functions[i], lines[i]) of a
 * lookup_many, in first-seen order, with their counts summed (a line is 0
 * where the file is unknown, as psprocess reports it): group g in
 * out_*[g]; returns the number of groups, -1 when a sum overflows, -2 when
 * memory ran out. */
int ps_dwarf_group(int n, const int *files, const int *functions, const int *lines, const long long *counts,
                   int *out_files, int *out_functions, int *out_lines, long long *out_sums);

/* Report formatting (report_format.c): the long lists of psprocess's
 * profile reports, byte for byte as its Python writers write them.
 * Strings come as blobs of n NUL-separated UTF-8 strings (no NUL after the
 * last; *_size bytes).  Each call writes at most cap bytes to out and
 * returns the total length, so a caller whose cap was too small calls
 * again; -1 for input it leaves to Python (a blob without n strings, a
 * negative count), -2 when memory ran out. */

/* summary: rows of equal names summed, the largest sum first (ties by
 * name, in byte order), one line per name whose self % is not below
 * threshold: "{sum:>10,} {self:>7.2f}% {cumulative:>7.2f}%  name\n",
 * percentages of total (the sum of counts, > 0).  The name of row i is
 * a[i] (shape 0), "a[i]  (b[i])" (1) or "a[i]:b[i]:lines[i]" (2).
 * *hidden: the names below the threshold. */
long ps_report_summary(int n, const char *a, long a_size, const char *b, long b_size, const long long *lines,
                       const long long *counts, int shape, long long total, double threshold, char *out, long cap,
                       long *hidden);
/* json_locations: [{"module": m, "file": f, "function": g, "line": l,
 * "samples": s}, ...], the strings encoded as json.dumps encodes them
 * (ensure_ascii: \uXXXX escapes, lower case). */
long ps_report_json_locations(int n, const char *modules, long m_size, const char *files, long f_size,
                              const char *functions, long g_size, const long long *lines,
                              const long long *samples, char *out, long cap);
/* samples: n <sample> PCs (hexadecimal, 1 to 16 digits) and counts
 * (decimal, 1 to 18 digits), blobs of NUL-separated ASCII strings, into
 * pcs[] and counts[]: 1 when the PCs are strictly increasing, 0 when not,
 * -1 for anything else (left to Python). */
int ps_report_samples(int n, const char *pc_blob, long pc_size, const char *count_blob, long count_size,
                      unsigned long long *pcs, long long *counts);
/* json_samples: "pc": count pairs joined by ", " (no braces). */
long ps_report_json_samples(int n, const unsigned long long *pcs, const long long *counts, char *out, long cap);

#ifdef __cplusplus
}
#endif
#endif /* PSDWARF_H */
