/*
 * Tests of the one input-opening function (workloads/infile.c): the same
 * bytes come out of a plain, a gzip and an xz file (single and
 * concatenated members/streams, written here with zlib and liblzma); the
 * shipped xz traces decompress to the upstream files (byte count, line
 * count and XXH64 of the content, pinned from the upstream copies named
 * in data/README.md); a truncated or corrupt compressed file is a read
 * error (EBADMSG), never a silent short read; a non-regular file (a
 * directory, a FIFO: refused without blocking), a missing file, a .xz/.gz
 * name over other bytes and a zstd file are refused at open with a message
 * naming the file; and the readers built on it (wl_csv_open,
 * wl_mooncake_load) read compressed files to the same result as plain ones.
 * Usage: test_infile MOONCAKE_JSONL_XZ AZURE_CSV_XZ
 */
#include <errno.h>
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zlib.h>

#include "sim/core/error.h"
#include "workloads/csv.h"
#include "workloads/infile.h"
#include "workloads/mooncake.h"
#include "check.h"

static char tmpdir[] = "/tmp/crsim_infile_XXXXXX";

static char *tpath(const char *name)
{
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static void write_raw(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(p, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

/* Append one gzip member holding `n` bytes of `p` to `path`. */
static void write_gz(const char *path, const char *mode, const void *p, size_t n)
{
    gzFile g = gzopen(path, mode);
    CHECK(g != NULL);
    CHECK(gzwrite(g, p, (unsigned)n) == (int)n);
    CHECK(gzclose(g) == Z_OK);
}

/* xz-compress `n` bytes of `p` into a malloc'd buffer; *len its size. */
static uint8_t *xz_bytes(const void *p, size_t n, size_t *len)
{
    size_t cap = lzma_stream_buffer_bound(n);
    uint8_t *out = malloc(cap);
    CHECK(out != NULL);
    *len = 0;
    CHECK(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, p, n, out, len, cap) == LZMA_OK);
    return out;
}

/* Everything the stream gives, into a malloc'd buffer; *err = ferror. */
static char *slurp(FILE *f, size_t *n, int *err, int *eno)
{
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    CHECK(b != NULL);
    size_t got;
    errno = 0;
    while ((got = fread(b + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            cap *= 2;
            b = realloc(b, cap);
            CHECK(b != NULL);
        }
    }
    *err = ferror(f);
    *eno = errno;
    *n = len;
    return b;
}

/* A few hundred KiB of text lines that compress but are not trivial. */
static char *make_text(size_t *n)
{
    size_t cap = 400000, len = 0;
    char *t = malloc(cap);
    CHECK(t != NULL);
    uint64_t x = 88172645463325252ULL;
    while (len + 64 < cap) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        len += (size_t)snprintf(t + len, cap - len, "%llu,%u,row\n",
                                (unsigned long long)(x % 1000000), (unsigned)(x >> 40) % 97);
    }
    *n = len;
    return t;
}

static void expect_same(const char *path, const char *want, size_t n, wl_infile_format fmt)
{
    FILE *f = NULL;
    wl_infile_format got_fmt = (wl_infile_format)99;
    CHECK_INT_EQ(wl_infile_open(path, "test file", &f, &got_fmt), SIM_OK);
    CHECK_INT_EQ(got_fmt, fmt);
    size_t len;
    int err, eno;
    char *b = slurp(f, &len, &err, &eno);
    CHECK_INT_EQ(err, 0);
    CHECK_INT_EQ(len, n);
    CHECK(memcmp(b, want, n) == 0);
    CHECK(fclose(f) == 0);
    free(b);
    printf("  %-28s %-5s %zu bytes read back identical\n", strrchr(path, '/') + 1,
           wl_infile_format_name(fmt), n);
}

static void expect_read_error(const char *path, const char *what)
{
    FILE *f = NULL;
    CHECK_INT_EQ(wl_infile_open(path, "test file", &f, NULL), SIM_OK);
    size_t len;
    int err, eno;
    char *b = slurp(f, &len, &err, &eno);
    CHECK(err != 0);
    CHECK_INT_EQ(eno, EBADMSG);
    printf("  %-28s read error after %zu bytes: %s\n", what, len, strerror(eno));
    free(b);
    fclose(f);
}

static void expect_open_error(const char *path, int rc, const char *needle)
{
    FILE *f = (FILE *)&f;
    CHECK_INT_EQ(wl_infile_open(path, "test file", &f, NULL), rc);
    CHECK(f == NULL);
    CHECK_STR_CONTAINS(sim_errmsg(), path);
    CHECK_STR_CONTAINS(sim_errmsg(), needle);
    printf("  refused: %s\n", sim_errmsg());
}

static void test_formats(void)
{
    size_t n;
    char *text = make_text(&n);
    write_raw(tpath("t.csv"), text, n);
    write_gz(tpath("t.csv.gz"), "wb", text, n);
    size_t xl;
    uint8_t *xz = xz_bytes(text, n, &xl);
    write_raw(tpath("t.csv.xz"), xz, xl);
    write_raw(tpath("t-xz-unnamed"), xz, xl); /* magic decides, not the name */
    expect_same(tpath("t.csv"), text, n, WL_INFILE_PLAIN);
    expect_same(tpath("t.csv.gz"), text, n, WL_INFILE_GZIP);
    expect_same(tpath("t.csv.xz"), text, n, WL_INFILE_XZ);
    expect_same(tpath("t-xz-unnamed"), text, n, WL_INFILE_XZ);

    /* Concatenations (`cat a.gz b.gz`, `cat a.xz b.xz`) read as one. */
    size_t h = n / 3;
    write_gz(tpath("cat.gz"), "wb", text, h);
    write_gz(tpath("cat.gz"), "ab", text + h, n - h);
    expect_same(tpath("cat.gz"), text, n, WL_INFILE_GZIP);
    size_t l1, l2;
    uint8_t *x1 = xz_bytes(text, h, &l1), *x2 = xz_bytes(text + h, n - h, &l2);
    uint8_t *cat = malloc(l1 + l2);
    CHECK(cat != NULL);
    memcpy(cat, x1, l1);
    memcpy(cat + l1, x2, l2);
    write_raw(tpath("cat.xz"), cat, l1 + l2);
    expect_same(tpath("cat.xz"), text, n, WL_INFILE_XZ);
    write_raw(tpath("empty"), "", 0);
    expect_same(tpath("empty"), "", 0, WL_INFILE_PLAIN);

    /* Cut short or corrupted: a read error, not a short clean read. */
    write_raw(tpath("cut.xz"), xz, xl / 2);
    expect_read_error(tpath("cut.xz"), "xz cut in half");
    write_raw(tpath("cut1.xz"), xz, xl - 1); /* only the stream footer's last byte */
    expect_read_error(tpath("cut1.xz"), "xz without its last byte");
    xz[xl / 2] ^= 0x55;
    write_raw(tpath("bad.xz"), xz, xl);
    expect_read_error(tpath("bad.xz"), "xz with a flipped byte");
    FILE *g = fopen(tpath("t.csv.gz"), "rb");
    CHECK(g != NULL);
    size_t gl;
    int e1, e2;
    char *gz = slurp(g, &gl, &e1, &e2);
    fclose(g);
    write_raw(tpath("cut.gz"), gz, gl / 2);
    expect_read_error(tpath("cut.gz"), "gzip cut in half");
    write_raw(tpath("cut8.gz"), gz, gl - 4); /* the size trailer cut */
    expect_read_error(tpath("cut8.gz"), "gzip without its ISIZE");

    /* Refused at open. */
    expect_open_error(tpath("t-plain.xz"), SIM_EIO, "No such file or directory");
    write_raw(tpath("t-plain.xz"), text, 100);
    expect_open_error(tpath("t-plain.xz"), SIM_EINVAL,
                      "named .xz but it does not start with the xz magic bytes (it reads as "
                      "plain)");
    expect_open_error(tpath("cat.xz.gz"), SIM_EIO, "cannot open test file:");
    write_raw(tpath("swap.gz"), xz, 64);
    expect_open_error(tpath("swap.gz"), SIM_EINVAL, "named .gz but it does not start with "
                      "the gzip magic bytes (it reads as xz)");
    static const unsigned char zstd[8] = {0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0};
    write_raw(tpath("t.zst"), zstd, sizeof zstd);
    expect_open_error(tpath("t.zst"), SIM_EINVAL, "compressed with zstd, which crsim does not "
                      "read; expected plain text, gzip (.gz) or xz (.xz)");
    write_raw(tpath("t.bz2"), "BZh91AY&SY", 10);
    expect_open_error(tpath("t.bz2"), SIM_EINVAL, "compressed with bzip2");
    write_raw(tpath("e.xz"), "", 0);
    expect_open_error(tpath("e.xz"), SIM_EINVAL, "named .xz");
    expect_open_error(tmpdir, SIM_EIO, "is a directory, not a regular file; expected a "
                      "regular file (plain, .gz or .xz)");
    CHECK(mkfifo(tpath("fifo"), 0600) == 0); /* no writer: opening must not block */
    expect_open_error(tpath("fifo"), SIM_EIO, "is a FIFO (named pipe), not a regular file");
    expect_open_error("/dev/null", SIM_EIO, "is a character device, not a regular file");

    /* The CSV reader over a gzip file: same rows as over the plain one. */
    wl_csv *a, *b;
    CHECK_INT_EQ(wl_csv_open(tpath("t.csv"), "test CSV", 0, &a), SIM_OK);
    CHECK_INT_EQ(wl_csv_open(tpath("cat.gz"), "test CSV", 0, &b), SIM_OK);
    size_t na, nb, rows = 0;
    for (;;) {
        CHECK_INT_EQ(wl_csv_next(a, &na), SIM_OK);
        CHECK_INT_EQ(wl_csv_next(b, &nb), SIM_OK);
        CHECK_INT_EQ(na, nb);
        if (na == 0)
            break;
        CHECK_INT_EQ(na, 3);
        for (size_t i = 0; i < na; i++)
            CHECK(strcmp(wl_csv_field(a, i), wl_csv_field(b, i)) == 0);
        rows++;
    }
    CHECK_INT_EQ(wl_csv_line(b), wl_csv_line(a));
    wl_csv_close(a);
    wl_csv_close(b);
    printf("  wl_csv_open: %zu rows of cat.gz equal the plain file's\n", rows);
    CHECK_INT_EQ(wl_csv_open(tmpdir, "key-rate file", 0, &a), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), ": key-rate file is a directory");
    /* A corrupt .xz CSV: the reader's read error names the file. */
    CHECK_INT_EQ(wl_csv_open(tpath("bad.xz"), "test CSV", 0, &a), SIM_OK);
    int rc;
    while ((rc = wl_csv_next(a, &na)) == SIM_OK && na > 0)
        ;
    CHECK_INT_EQ(rc, SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "bad.xz: read error: Bad message");
    printf("  corrupt CSV: %s\n", sim_errmsg());
    wl_csv_close(a);
    free(gz);
    free(cat);
    free(x1);
    free(x2);
    free(xz);
    free(text);
}

/* The shipped traces decompress to the upstream files, and the Mooncake
 * reader gives the same trace from the xz copy as from a plain copy. */
static void test_shipped(const char *mooncake_xz, const char *azure_xz)
{
    static const struct {
        size_t bytes, lines;
        uint64_t xxh64;
    } want[2] = {
        {3029533, 12031, 0x7b41f9d71e9a9900ULL}, /* conversation_trace.jsonl */
        {719188, 19366, 0x2891d31ac1db350aULL},  /* AzureLLMInferenceTrace_conv.csv */
    };
    const char *paths[2] = {mooncake_xz, azure_xz};
    char *plain = NULL;
    size_t plain_n = 0;
    for (int k = 0; k < 2; k++) {
        FILE *f;
        wl_infile_format fmt;
        CHECK_INT_EQ(wl_infile_open(paths[k], "shipped trace", &f, &fmt), SIM_OK);
        CHECK_INT_EQ(fmt, WL_INFILE_XZ);
        size_t n, lines = 0;
        int err, eno;
        char *b = slurp(f, &n, &err, &eno);
        fclose(f);
        CHECK_INT_EQ(err, 0);
        for (size_t i = 0; i < n; i++)
            lines += b[i] == '\n';
        uint64_t h = XXH64(b, n, 0);
        printf("  %s: %zu bytes, %zu lines, XXH64 %016llx\n", paths[k], n, lines,
               (unsigned long long)h);
        CHECK_INT_EQ(n, want[k].bytes);
        CHECK_INT_EQ(lines, want[k].lines);
        CHECK_U64_EQ(h, want[k].xxh64);
        if (k == 0) {
            plain = b;
            plain_n = n;
        } else {
            free(b);
        }
    }
    write_raw(tpath("trace.jsonl"), plain, plain_n);
    free(plain);
    wl_trace *a, *b;
    CHECK_INT_EQ(wl_mooncake_load(tpath("trace.jsonl"), 512, &a), SIM_OK);
    CHECK_INT_EQ(wl_mooncake_load(mooncake_xz, 512, &b), SIM_OK);
    CHECK_INT_EQ(a->n, b->n);
    CHECK_INT_EQ(a->n_ids_total, b->n_ids_total);
    CHECK(memcmp(a->reqs, b->reqs, a->n * sizeof *a->reqs) == 0);
    CHECK(memcmp(a->ids, b->ids, a->n_ids_total * sizeof *a->ids) == 0);
    printf("  wl_mooncake_load: xz and plain copies give the same %zu requests, %zu ids\n",
           a->n, a->n_ids_total);
    wl_trace_destroy(a);
    wl_trace_destroy(b);
    /* A Mooncake trace cut inside the xz data: the reader names file and line. */
    FILE *f = fopen(mooncake_xz, "rb");
    CHECK(f != NULL);
    size_t n;
    int err, eno;
    char *x = slurp(f, &n, &err, &eno);
    fclose(f);
    write_raw(tpath("cut.jsonl.xz"), x, n / 2);
    free(x);
    wl_trace *t = NULL;
    int rc = wl_mooncake_load(tpath("cut.jsonl.xz"), 512, &t);
    printf("  cut Mooncake xz -> %s: %s\n", sim_strstatus(rc), sim_errmsg());
    CHECK(rc != SIM_OK && t == NULL);
    CHECK_STR_CONTAINS(sim_errmsg(), "cut.jsonl.xz:");
    CHECK_INT_EQ(rc, SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "cannot read: Bad message");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s MOONCAKE_JSONL_XZ AZURE_CSV_XZ\n", argv[0]);
        return 99;
    }
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 99;
    }
    test_formats();
    test_shipped(argv[1], argv[2]);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", tmpdir);
    printf("infile: ok\n");
    return 0;
}
