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

#ifdef __cplusplus
}
#endif
#endif /* PSDWARF_H */
