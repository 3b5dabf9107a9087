/*
 * Input files, plain or compressed (see infile.h).  The file is opened
 * without blocking (so a FIFO is refused, not waited on), checked with
 * fstat on the open descriptor (no gap between the check and the use),
 * and its first six bytes are read with pread.  A plain file becomes a
 * stdio stream with fdopen; a compressed one a stdio stream with
 * fopencookie whose read function pulls decompressed bytes out of zlib or
 * liblzma, so every reader keeps using getline/getc on a FILE *.
 */
#define _GNU_SOURCE /* fopencookie (glibc, musl) */
#include "workloads/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "sim/core/error.h"
#include "sim/core/fileio.h"

/* Input buffer of the decompressors, and the stdio buffer of their streams,
 * bytes.  64 KiB: large enough that the per-call overhead vanishes. */
#define INFILE_BUF 65536

static const char expected[] = "expected plain text, gzip (.gz) or xz (.xz); recompress it "
                               "with `xz` or `gzip`";

const char *wl_infile_format_name(wl_infile_format f)
{
    switch (f) {
    case WL_INFILE_GZIP: return "gzip";
    case WL_INFILE_XZ: return "xz";
    case WL_INFILE_PLAIN: break;
    }
    return "plain";
}

/* "a directory" etc. for a mode that is not a regular file. */

static int ends_with(const char *s, const char *suffix)
{
    size_t l = strlen(s), k = strlen(suffix);
    return l >= k && strcmp(s + l - k, suffix) == 0;
}

/* ---- gzip through zlib ---- */

/* gzip members decoded with inflate (zlib's gzread ignores bytes after
 * the last member; gzip -t calls them an error, and so do we: issue 38
 * C14).  Members may follow each other (`cat a.gz b.gz`, RFC 1952 2.2);
 * anything else after a member is an error. */
typedef struct gz_cookie {
    int fd;
    z_stream s;
    int in_eof;    /* the file's end was read */
    int between;   /* a member ended: the next bytes must start another */
    int done;      /* the last member ended at the file's end */
    int err;       /* errno of a failure, reported on the next read */
    uint8_t in[INFILE_BUF];
} gz_cookie;

/* Refill the input if empty; 0, or -1 with g->err set. */
static int gz_fill(gz_cookie *g)
{
    while (g->s.avail_in == 0 && !g->in_eof) {
        ssize_t got = read(g->fd, g->in, sizeof g->in);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            g->err = errno;
            return -1;
        }
        if (got == 0)
            g->in_eof = 1;
        g->s.next_in = g->in;
        g->s.avail_in = (uInt)got;
    }
    return 0;
}

static ssize_t gz_cookie_read(void *c, char *buf, size_t size)
{
    gz_cookie *g = c;
    if (g->err) {
        errno = g->err;
        return -1;
    }
    if (g->done || size == 0)
        return 0;
    g->s.next_out = (Bytef *)buf;
    g->s.avail_out = size > (1u << 30) ? 1u << 30 : (uInt)size;
    const uInt want = g->s.avail_out;
    while (g->s.avail_out > 0) {
        if (gz_fill(g))
            break;
        if (g->between) {
            if (g->s.avail_in == 0) { /* the file ends after a member */
                g->done = 1;
                break;
            }
            if (g->s.avail_in < 2 && !g->in_eof) { /* the magic may straddle reads */
                memmove(g->in, g->s.next_in, g->s.avail_in);
                ssize_t got = read(g->fd, g->in + g->s.avail_in, sizeof g->in - g->s.avail_in);
                if (got < 0 && errno == EINTR)
                    continue;
                if (got < 0) {
                    g->err = errno;
                    break;
                }
                if (got == 0)
                    g->in_eof = 1;
                g->s.next_in = g->in;
                g->s.avail_in += (uInt)got;
                continue;
            }
            if (g->s.avail_in < 2 || g->s.next_in[0] != 0x1f || g->s.next_in[1] != 0x8b) {
                g->err = EBADMSG; /* trailing bytes that are not a gzip member */
                break;
            }
            inflateReset(&g->s);
            g->between = 0;
        }
        if (g->s.avail_in == 0 && g->in_eof) {
            g->err = EBADMSG; /* cut short inside a member */
            break;
        }
        int r = inflate(&g->s, Z_NO_FLUSH);
        if (r == Z_STREAM_END) {
            g->between = 1;
            continue;
        }
        if (r != Z_OK && r != Z_BUF_ERROR) {
            g->err = r == Z_MEM_ERROR ? ENOMEM : EBADMSG;
            break;
        }
    }
    size_t produced = want - g->s.avail_out;
    if (produced == 0 && g->err) {
        errno = g->err;
        return -1;
    }
    return (ssize_t)produced; /* an error after some bytes shows on the next call */
}

static int gz_cookie_close(void *c)
{
    gz_cookie *g = c;
    inflateEnd(&g->s);
    int rc = close(g->fd);
    free(g);
    return rc == 0 ? 0 : EOF;
}

/* ---- xz through liblzma ---- */

typedef struct xz_cookie {
    int fd;
    lzma_stream s;
    int in_eof;  /* the file's end was read */
    int done;    /* the decoder reached the end of the last stream */
    int err;     /* errno of a failure, reported on the next read */
    uint8_t in[INFILE_BUF];
} xz_cookie;

static ssize_t xz_cookie_read(void *c, char *buf, size_t size)
{
    xz_cookie *x = c;
    if (x->err) {
        errno = x->err;
        return -1;
    }
    if (x->done || size == 0)
        return 0;
    x->s.next_out = (uint8_t *)buf;
    x->s.avail_out = size;
    while (x->s.avail_out > 0) {
        if (x->s.avail_in == 0 && !x->in_eof) {
            ssize_t got = read(x->fd, x->in, sizeof x->in);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                x->err = errno;
                break;
            }
            if (got == 0)
                x->in_eof = 1;
            x->s.next_in = x->in;
            x->s.avail_in = (size_t)got;
        }
        lzma_ret r = lzma_code(&x->s, x->in_eof ? LZMA_FINISH : LZMA_RUN);
        if (r == LZMA_STREAM_END) {
            x->done = 1;
            break;
        }
        if (r != LZMA_OK) {
            /* LZMA_BUF_ERROR: the input ended inside a stream (truncated);
             * LZMA_DATA_ERROR / FORMAT_ERROR: corrupt. */
            x->err = r == LZMA_MEM_ERROR ? ENOMEM : EBADMSG;
            break;
        }
    }
    size_t produced = size - x->s.avail_out;
    if (produced == 0 && x->err) {
        errno = x->err;
        return -1;
    }
    return (ssize_t)produced; /* an error after some bytes shows on the next call */
}

static int xz_cookie_close(void *c)
{
    xz_cookie *x = c;
    lzma_end(&x->s);
    int rc = close(x->fd);
    free(x);
    return rc == 0 ? 0 : EOF;
}

/* ---- opening ---- */

int wl_infile_open(const char *path, const char *what, FILE **out, wl_infile_format *format)
{
    SIM_ALWAYS(path != NULL && what != NULL && out != NULL);
    *out = NULL;
    /* The one regular-file check (sim_file_open: never blocks on a FIFO,
     * refuses directories, devices, sockets); the decoder reads its fd. */
    FILE *raw = NULL;
    int rc = sim_file_open(path, what, "a regular file (plain, .gz or .xz)", &raw);
    if (rc)
        return rc;
    int fd = dup(fileno(raw));
    fclose(raw);
    if (fd < 0)
        return SIM_ERROR(SIM_EIO, "%s: cannot open %s: %s", path, what, strerror(errno));

    unsigned char m[6] = {0};
    ssize_t got;
    while ((got = pread(fd, m, sizeof m, 0)) < 0 && errno == EINTR)
        ;
    if (got < 0) {
        int e = errno;
        close(fd);
        return SIM_ERROR(SIM_EIO, "%s: cannot read %s: %s", path, what, strerror(e));
    }
    static const unsigned char xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0x00};
    wl_infile_format f = WL_INFILE_PLAIN;
    if (got >= 2 && m[0] == 0x1f && m[1] == 0x8b)
        f = WL_INFILE_GZIP;
    else if (got == 6 && memcmp(m, xz_magic, 6) == 0)
        f = WL_INFILE_XZ;

    const char *other = NULL;
    if (got >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd)
        other = "zstd";
    else if (got >= 3 && m[0] == 'B' && m[1] == 'Z' && m[2] == 'h')
        other = "bzip2";
    else if (got >= 4 && m[0] == 'P' && m[1] == 'K' && m[2] == 3 && m[3] == 4)
        other = "zip";
    if (other) {
        close(fd);
        return SIM_ERROR(SIM_EINVAL, "%s: %s is compressed with %s, which crsim does not "
                         "read; %s", path, what, other, expected);
    }
    if ((ends_with(path, ".gz") && f != WL_INFILE_GZIP) ||
        (ends_with(path, ".xz") && f != WL_INFILE_XZ)) {
        const char *want = ends_with(path, ".gz") ? "gzip" : "xz";
        close(fd);
        return SIM_ERROR(SIM_EINVAL, "%s: named .%s but it does not start with the %s magic "
                         "bytes (it reads as %s); expected a complete %s-compressed %s", path,
                         want[0] == 'g' ? "gz" : "xz", want, wl_infile_format_name(f), want,
                         what);
    }

    FILE *s = NULL;
    if (f == WL_INFILE_PLAIN) {
        s = fdopen(fd, "r");
        if (!s) {
            int e = errno;
            close(fd);
            return SIM_ERROR(SIM_EIO, "%s: cannot open %s: %s", path, what, strerror(e));
        }
    } else if (f == WL_INFILE_GZIP) {
        gz_cookie *g = malloc(sizeof *g);
        if (g) {
            *g = (gz_cookie){.fd = fd};
            /* windowBits 15 + 16: a gzip wrapper (zlib manual, inflateInit2) */
            if (inflateInit2(&g->s, 15 + 16) != Z_OK) {
                free(g);
                g = NULL;
            }
        }
        if (!g) {
            close(fd);
            return SIM_ERROR(SIM_ENOMEM, "%s: cannot start the gzip decoder for %s: out of "
                             "memory", path, what);
        }
        s = fopencookie(g, "r", (cookie_io_functions_t){.read = gz_cookie_read,
                                                         .close = gz_cookie_close});
        if (!s) {
            gz_cookie_close(g);
            return SIM_ERROR(SIM_ENOMEM, "%s: cannot open %s: out of memory", path, what);
        }
    } else {
        xz_cookie *x = malloc(sizeof *x);
        if (!x) {
            close(fd);
            return SIM_ERROR(SIM_ENOMEM, "%s: cannot open %s: out of memory", path, what);
        }
        *x = (xz_cookie){.fd = fd, .s = LZMA_STREAM_INIT};
        /* No memory limit (UINT64_MAX): the files are the user's own
         * inputs; LZMA_CONCATENATED reads `xz` files made by `cat a.xz b.xz`. */
        lzma_ret r = lzma_stream_decoder(&x->s, UINT64_MAX, LZMA_CONCATENATED);
        if (r != LZMA_OK) {
            close(fd);
            free(x);
            return SIM_ERROR(SIM_ENOMEM, "%s: cannot start the xz decoder for %s (liblzma "
                             "error %d)", path, what, (int)r);
        }
        s = fopencookie(x, "r", (cookie_io_functions_t){.read = xz_cookie_read,
                                                         .close = xz_cookie_close});
        if (!s) {
            xz_cookie_close(x);
            return SIM_ERROR(SIM_ENOMEM, "%s: cannot open %s: out of memory", path, what);
        }
    }
    if (f != WL_INFILE_PLAIN)
        setvbuf(s, NULL, _IOFBF, INFILE_BUF);
    *out = s;
    if (format)
        *format = f;
    return SIM_OK;
}
