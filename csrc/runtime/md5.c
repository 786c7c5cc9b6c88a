/* md5.c - MD5 (RFC 1321) of a file, for the md5sum of the measured
 * executable in a report.  Written here so the library needs no crypto
 * dependency inside the user's process. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

typedef struct {
    uint32_t h[4];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
} md5_t;

static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
static const unsigned char R[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

static void md5_block(md5_t *m, const unsigned char *p)
{
    uint32_t w[16];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
               (uint32_t)p[4 * i + 3] << 24;
    uint32_t a = m->h[0], b = m->h[1], c = m->h[2], d = m->h[3];
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        int g;
        if (i < 16) {
            f = (b & c) | (~b & d);
            g = i;
        } else if (i < 32) {
            f = (d & b) | (~d & c);
            g = (5 * i + 1) % 16;
        } else if (i < 48) {
            f = b ^ c ^ d;
            g = (3 * i + 5) % 16;
        } else {
            f = c ^ (b | ~d);
            g = (7 * i) % 16;
        }
        uint32_t t = d;
        d = c;
        c = b;
        uint32_t x = a + f + K[i] + w[g];
        b = b + (x << R[i] | x >> (32 - R[i]));
        a = t;
    }
    m->h[0] += a;
    m->h[1] += b;
    m->h[2] += c;
    m->h[3] += d;
}

static void md5_update(md5_t *m, const unsigned char *p, size_t n)
{
    m->bytes += n;
    while (n) {
        size_t c = 64 - m->fill < n ? 64 - m->fill : n;
        memcpy(m->block + m->fill, p, c);
        m->fill += c;
        p += c;
        n -= c;
        if (m->fill == 64) {
            md5_block(m, m->block);
            m->fill = 0;
        }
    }
}

int ps_md5_file(const char *path, char hex[33])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    md5_t m = {{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}, 0, {0}, 0};
    /* the read buffer is mapped, not on the caller's stack (a thread's may
     * be 64 KiB in all) */
    enum { BUF_SIZE = 65536 };
    unsigned char *buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        close(fd);
        return -1;
    }
    ssize_t r;
    while ((r = read(fd, buf, BUF_SIZE)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0)
            md5_update(&m, buf, (size_t)r);
    close(fd);
    munmap(buf, BUF_SIZE);
    if (r < 0)
        return -1;
    uint64_t bits = m.bytes * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = (m.fill < 56 ? 56 : 120) - m.fill;
    md5_update(&m, pad, padlen);
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (8 * i));
    md5_update(&m, len, 8);
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        unsigned byte = (m.h[i / 4] >> (8 * (i % 4))) & 0xff;
        hex[2 * i] = digits[byte >> 4];
        hex[2 * i + 1] = digits[byte & 15];
    }
    hex[32] = '\0';
    return 0;
}
