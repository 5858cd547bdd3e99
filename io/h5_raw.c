/* h5_raw.c — an HDF5 chunk decoded from the file's bytes (see h5_raw.h).
 *
 * The filters are HDF5's own (H5Zdeflate.c, H5Zshuffle.c,
 * H5Zfletcher32.c, H5checksum.c), undone in the reverse of the pipeline's
 * order: a chunk stored through shuffle + deflate is inflated, then
 * unshuffled. Sizes: the stored chunk is at most what its filters can make
 * of the decoded size (deflate: zlib's compressBound), and each stage's
 * output is known in advance (inflate into exactly that many bytes), so no
 * stage allocates more than the chunk's decoded size plus its checksums. */
#define _POSIX_C_SOURCE 200809L
#include "h5_raw.h"

#include <errno.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

uint32_t mdnl_fletcher32(const void *data, size_t n)
{
    const uint8_t *p = data;
    size_t len = n / 2;
    uint32_t sum1 = 0, sum2 = 0;
    /* 360 16-bit words at most between reductions: the sums cannot overflow */
    while (len) {
        size_t t = len > 360 ? 360 : len;
        len -= t;
        do {
            sum1 += (uint32_t)(((uint16_t)p[0]) << 8) | ((uint16_t)p[1]);
            p += 2;
            sum2 += sum1;
        } while (--t);
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if (n % 2) {
        sum1 += (uint32_t)(((uint16_t)*p) << 8);
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    return (sum2 << 16) | sum1;
}

int mdnl_raw_pread(int fd, uint64_t off, size_t n, void *dst, char *why, size_t why_size)
{
    unsigned char *d = dst;
    while (n > 0) {
        ssize_t got = pread(fd, d, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(why, why_size, "cannot read %zu bytes at byte %" PRIu64 ": %s", n, off, strerror(errno));
            return MDNL_RAW_IO;
        }
        if (got == 0) {
            snprintf(why, why_size, "expected %zu more bytes at byte %" PRIu64 ", found the end of the file", n, off);
            return MDNL_RAW_BAD;
        }
        d += got;
        off += (uint64_t)got;
        n -= (size_t)got;
    }
    return MDNL_RAW_OK;
}

/* H5Zshuffle.c reversed: byte j of element i comes from j * nelem + i;
 * bytes past the last whole element stay where they are. */
static void unshuffle(unsigned char *dst, const unsigned char *src, size_t n, size_t elsize)
{
    size_t nelem = elsize ? n / elsize : 0;
    if (elsize <= 1 || nelem <= 1) {
        memcpy(dst, src, n);
        return;
    }
    if (elsize == 8) { /* positions: the common case, unrolled by the compiler */
        for (size_t i = 0; i < nelem; ++i)
            for (size_t j = 0; j < 8; ++j)
                dst[i * 8 + j] = src[j * nelem + i];
    } else {
        for (size_t j = 0; j < elsize; ++j) {
            const unsigned char *s = src + j * nelem;
            for (size_t i = 0; i < nelem; ++i)
                dst[i * elsize + j] = s[i];
        }
    }
    memcpy(dst + nelem * elsize, src + nelem * elsize, n - nelem * elsize);
}

/* Inflates n bytes of src into exactly `want` bytes of dst (HDF5 reads up
 * to the end of the zlib stream and ignores what follows). libdeflate
 * decodes a whole chunk at once, 2-3x faster than zlib's inflate; when it
 * fails, zlib decodes the chunk again for its exact message. */
static int inflate_exact(const unsigned char *src, size_t n, unsigned char *dst, size_t want, char *why,
                         size_t why_size)
{
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (d) {
        size_t used = 0, got = 0;
        const enum libdeflate_result r = libdeflate_zlib_decompress_ex(d, src, n, dst, want, &used, &got);
        libdeflate_free_decompressor(d);
        if (r == LIBDEFLATE_SUCCESS && got == want)
            return MDNL_RAW_OK;
    }
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit(&z) != Z_OK) {
        snprintf(why, why_size, "cannot start zlib");
        return MDNL_RAW_NOMEM;
    }
    z.next_in = (unsigned char *)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)want;
    int rc = inflate(&z, Z_FINISH);
    int ret = MDNL_RAW_OK;
    if (rc == Z_STREAM_END) {
        if (z.total_out != want) {
            snprintf(why, why_size, "expected a deflate stream of %zu bytes, found one of %lu bytes", want,
                     (unsigned long)z.total_out);
            ret = MDNL_RAW_BAD;
        }
    } else if (rc == Z_MEM_ERROR) {
        snprintf(why, why_size, "zlib out of memory");
        ret = MDNL_RAW_NOMEM;
    } else if (z.avail_out == 0) {
        snprintf(why, why_size, "expected a deflate stream of %zu bytes, found a longer one", want);
        ret = MDNL_RAW_BAD;
    } else {
        snprintf(why, why_size, "corrupt deflate data (zlib: %s)",
                 z.msg ? z.msg : rc == Z_BUF_ERROR ? "stream cut short" : "error");
        ret = MDNL_RAW_BAD;
    }
    inflateEnd(&z);
    return ret;
}

int mdnl_raw_decode(int fd, int64_t file_size, const mdnl_raw_chunk *c, const mdnl_raw_filters *f, size_t bytes,
                    unsigned char *into, mdnl_pool_buf *a, mdnl_pool_buf *b, const unsigned char **out, char *why,
                    size_t why_size)
{
    /* What the pipeline makes of `bytes`, stage by stage: the input size of
     * filter i is in_size[i]; the stored size is in_size[n]. */
    size_t in_size[MDNL_RAW_MAX_FILTERS + 1];
    bool deflated = false;
    in_size[0] = bytes;
    for (int i = 0; i < f->n; ++i) {
        bool on = !(c->mask & (1u << i));
        in_size[i + 1] = in_size[i] + (on && f->id[i] == MDNL_RAW_FLETCHER32 ? 4 : 0);
        if (on && f->id[i] == MDNL_RAW_DEFLATE) {
            deflated = true;
            in_size[i + 1] = (size_t)compressBound((uLong)in_size[i]); /* a bound from here on */
        }
    }
    const size_t most = in_size[f->n];
    if (c->addr > (uint64_t)file_size || c->size > (uint64_t)file_size - c->addr) {
        snprintf(why, why_size, "expected a chunk inside the file of %" PRId64 " bytes, found %" PRIu64
                 " bytes at byte %" PRIu64, file_size, c->size, c->addr);
        return MDNL_RAW_BAD;
    }
    if (deflated ? c->size > most || c->size == 0 : c->size != most) {
        snprintf(why, why_size, "expected a chunk of %s%zu bytes stored, found %" PRIu64 " at byte %" PRIu64,
                 deflated ? "at most " : "", most, c->size, c->addr);
        return MDNL_RAW_BAD;
    }
    if (into && !deflated && (size_t)c->size == bytes) { /* no filter applies: straight into place */
        *out = into;
        return mdnl_raw_pread(fd, c->addr, bytes, into, why, why_size);
    }
    if (!mdnl_pool_buf_reserve(a, (size_t)c->size)) {
        snprintf(why, why_size, "out of host memory");
        return MDNL_RAW_NOMEM;
    }
    int rc = mdnl_raw_pread(fd, c->addr, (size_t)c->size, a->data, why, why_size);
    if (rc != MDNL_RAW_OK)
        return rc;
    mdnl_pool_buf *cur = a, *other = b;
    size_t len = (size_t)c->size;
    for (int i = f->n - 1; i >= 0; --i) {
        if (c->mask & (1u << i))
            continue;
        switch (f->id[i]) {
        case MDNL_RAW_FLETCHER32: {
            if (len < 4) {
                snprintf(why, why_size, "expected a Fletcher-32 checksum, found %zu bytes at byte %" PRIu64, len,
                         c->addr);
                return MDNL_RAW_BAD;
            }
            const unsigned char *s = cur->data + len - 4;
            uint32_t stored = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
            uint32_t sum = mdnl_fletcher32(cur->data, len - 4);
            /* HDF5 before 1.6.3 stored the sum with its bytes swapped in pairs */
            uint32_t swapped = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
            if (stored != sum && stored != swapped) {
                snprintf(why, why_size, "data error detected by the Fletcher-32 checksum of the chunk at byte %" PRIu64,
                         c->addr);
                return MDNL_RAW_BAD;
            }
            len -= 4;
            break;
        }
        case MDNL_RAW_DEFLATE: {
            size_t want = in_size[i]; /* exact: no deflate before this one */
            if (!mdnl_pool_buf_reserve(other, want)) {
                snprintf(why, why_size, "out of host memory");
                return MDNL_RAW_NOMEM;
            }
            char z[160];
            rc = inflate_exact(cur->data, len, other->data, want, z, sizeof z);
            if (rc != MDNL_RAW_OK) {
                snprintf(why, why_size, "%s in the chunk at byte %" PRIu64, z, c->addr);
                return rc;
            }
            len = want;
            mdnl_pool_buf *t = cur;
            cur = other;
            other = t;
            break;
        }
        case MDNL_RAW_SHUFFLE: {
            if (!mdnl_pool_buf_reserve(other, len)) {
                snprintf(why, why_size, "out of host memory");
                return MDNL_RAW_NOMEM;
            }
            unshuffle(other->data, cur->data, len, f->elsize[i]);
            mdnl_pool_buf *t = cur;
            cur = other;
            other = t;
            break;
        }
        default:
            snprintf(why, why_size, "unknown filter %d", f->id[i]);
            return MDNL_RAW_BAD;
        }
    }
    if (len != bytes) {
        snprintf(why, why_size, "expected the chunk at byte %" PRIu64 " to decode to %zu bytes, found %zu", c->addr,
                 bytes, len);
        return MDNL_RAW_BAD;
    }
    *out = cur->data;
    return MDNL_RAW_OK;
}
