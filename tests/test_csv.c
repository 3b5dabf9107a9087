/*
 * Known-answer tests of workloads/csv.c, the CSV row reader of the
 * key-rate, arrival-time and ServeGen readers: CRLF, empty fields and a
 * trailing comma, blank and comment lines, a missing final newline, no
 * quoting, the line-length bound and NUL bytes with their line numbers,
 * the open error, and a memory source read like a file.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "workloads/csv.h"
#include "check.h"

/* Read the next row of `r` and check it is line `line` with the `n` fields
 * joined by '|' in `want`. */
static void expect_row(wl_csv *r, long line, const char *want)
{
    size_t nf;
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_OK);
    CHECK(nf >= 1);
    char got[256] = "";
    for (size_t i = 0; i < nf; i++) {
        if (i)
            strcat(got, "|");
        strcat(got, wl_csv_field(r, i));
    }
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "line %ld: got '%s', expected '%s'\n", wl_csv_line(r), got, want);
        exit(1);
    }
    CHECK_INT_EQ(wl_csv_line(r), line);
    CHECK(wl_csv_field(r, nf) == NULL);
}

static void expect_end(wl_csv *r)
{
    size_t nf = 99;
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_OK);
    CHECK_INT_EQ(nf, 0);
    CHECK(wl_csv_field(r, 0) == NULL);
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_OK); /* the end stays the end */
    CHECK_INT_EQ(nf, 0);
}

static wl_csv *mem(const char *text, int flags)
{
    return wl_csv_from_mem(text, strlen(text), "mem.csv", flags);
}

static void test_rows(void)
{
    /* CRLF, spaces around fields, empty fields, a trailing comma, blank
     * lines (empty, spaces, a lone CR) that still count, no final newline. */
    wl_csv *r = mem("key,rate\r\n a , 2 \r\n\r\n   \n,\n x,,y,\n\"q,1\"\nlast,3", 0);
    CHECK_INT_EQ(wl_csv_line(r), 0);
    CHECK(strcmp(wl_csv_name(r), "mem.csv") == 0);
    expect_row(r, 1, "key|rate");
    expect_row(r, 2, "a|2");
    expect_row(r, 5, "|");
    expect_row(r, 6, "x||y|");
    expect_row(r, 7, "\"q|1\""); /* no quoting: the comma still splits */
    expect_row(r, 8, "last|3");
    expect_end(r);
    CHECK_INT_EQ(wl_csv_line(r), 8);
    wl_csv_close(r);

    /* Comments only with WL_CSV_COMMENTS; a '#' after a field is data. */
    r = mem("# c\n  # d\na,#1\n", WL_CSV_COMMENTS);
    expect_row(r, 3, "a|#1");
    expect_end(r);
    wl_csv_close(r);
    r = mem("# c\na,1\n", 0);
    expect_row(r, 1, "# c");
    expect_row(r, 2, "a|1");
    wl_csv_close(r);

    /* Empty input, only blank lines, a lone CR before LF, tabs. */
    r = mem("", 0);
    expect_end(r);
    wl_csv_close(r);
    r = mem("\n\n \t\n", 0);
    expect_end(r);
    CHECK_INT_EQ(wl_csv_line(r), 3);
    wl_csv_close(r);
    r = mem("\ta\t,\tb\r", 0);
    expect_row(r, 1, "a|b");
    expect_end(r);
    wl_csv_close(r);
}

static void test_limits(void)
{
    /* Exactly WL_CSV_LINE_MAX bytes (plus CRLF) pass; one more fails with
     * the line's number. */
    size_t n = WL_CSV_LINE_MAX;
    char *buf = malloc(2 * n + 64);
    CHECK(buf != NULL);
    size_t k = 0;
    k += (size_t)sprintf(buf, "a,1\n");
    memset(buf + k, 'x', n);
    k += n;
    buf[k++] = '\r';
    buf[k++] = '\n';
    memset(buf + k, 'y', n + 1);
    k += n + 1;
    buf[k++] = '\n';
    wl_csv *r = wl_csv_from_mem(buf, k, "long.csv", 0);
    expect_row(r, 1, "a|1");
    size_t nf;
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_OK);
    CHECK_INT_EQ(nf, 1);
    CHECK_INT_EQ(strlen(wl_csv_field(r, 0)), n);
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_EINVAL);
    CHECK_INT_EQ(nf, 0);
    CHECK_STR_CONTAINS(sim_errmsg(), "long.csv:3: line longer than 65536 bytes");
    CHECK_STR_CONTAINS(sim_errmsg(), "expected CSV lines of at most 65536 bytes");
    CHECK_INT_EQ(wl_csv_line(r), 3);
    expect_end(r); /* after an error, the end */
    wl_csv_close(r);

    /* A line far longer than the bound and without any line end. */
    memset(buf, 'z', 2 * n);
    r = wl_csv_from_mem(buf, 2 * n, "flat.csv", 0);
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "flat.csv:1: line longer than");
    wl_csv_close(r);
    free(buf);

    /* A NUL byte: named with its line. */
    static const char nul[] = "a,1\n\nb,\0002\n";
    r = wl_csv_from_mem(nul, sizeof nul - 1, "nul.csv", 0);
    expect_row(r, 1, "a|1");
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "nul.csv:3: NUL byte in line");
    wl_csv_close(r);
}

static void test_files(void)
{
    /* The stream source reads like the memory source. */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    fputs("T,x\r\n1,2\n\n3,4", f);
    rewind(f);
    wl_csv *r = wl_csv_from_file(f, "stream", 0);
    expect_row(r, 1, "T|x");
    expect_row(r, 2, "1|2");
    expect_row(r, 4, "3|4");
    expect_end(r);
    wl_csv_close(r); /* does not close f */
    CHECK(fclose(f) == 0);

    /* Open errors name the path and the file's kind. */
    r = (wl_csv *)&r;
    CHECK_INT_EQ(wl_csv_open("/nonexistent/x.csv", "key-rate file", 0, &r), SIM_EIO);
    CHECK(r == NULL);
    CHECK_STR_CONTAINS(sim_errmsg(), "/nonexistent/x.csv: cannot open key-rate file: ");

    /* Issue 17 item 10: anything but a regular file is refused at open,
     * before any read: a directory (before: a read error), /dev/zero
     * (before: 64 KiB of NULs read, then "NUL byte"; as a trace, GBs) and
     * a FIFO (before: the open blocked until a writer came). */
    CHECK_INT_EQ(wl_csv_open("/", "key-rate file", 0, &r), SIM_EIO);
    CHECK(r == NULL);
    CHECK_STR_CONTAINS(sim_errmsg(), "/: key-rate file is a directory, not a regular file; "
                                     "expected a regular file (plain, .gz or .xz)");
    CHECK_INT_EQ(wl_csv_open("/dev/zero", "inter-arrival file", 0, &r), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "/dev/zero: inter-arrival file is a character device");
    char dir[] = "/tmp/crsim_csv_XXXXXX", fifo[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(fifo, sizeof fifo, "%s/fifo.csv", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_INT_EQ(wl_csv_open(fifo, "key-rate file", 0, &r), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "fifo.csv: key-rate file is a FIFO (named pipe)");
    unlink(fifo);
    rmdir(dir);
    wl_csv_close(NULL);
}

/* Issue 17 item 15: a UTF-8 byte order mark is dropped (before: it was
 * glued to the first field, so "TIMESTAMP" was not found), a UTF-16 one
 * and binary bytes are named (before: the row reached the caller, giving
 * e.g. "one field, no comma, fields"). */
static void test_encodings(void)
{
    wl_csv *r = mem("\xef\xbb\xbf" "TIMESTAMP,x\n\xef\xbb\xbf" "1,2\n", 0);
    expect_row(r, 1, "TIMESTAMP|x");
    expect_row(r, 2, "\xef\xbb\xbf" "1|2"); /* only at the start of the input */
    expect_end(r);
    wl_csv_close(r);
    r = mem("\xef\xbb\xbf", 0); /* a BOM alone is an empty file */
    expect_end(r);
    wl_csv_close(r);
    size_t nf;
    static const char u16[] = "\xff\xfek\000e\000y\000\n\000";
    r = wl_csv_from_mem(u16, sizeof u16 - 1, "u16.csv", 0);
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "u16.csv:1: UTF-16 byte order mark; expected a UTF-8 (or "
                                     "ASCII) text CSV file");
    wl_csv_close(r);
    r = mem("\xfe\xff", 0);
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "mem.csv:1: UTF-16");
    wl_csv_close(r);
    r = mem("a,1\n\x7f" "ELF\x02\x01\n", 0);
    expect_row(r, 1, "a|1");
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "mem.csv:2: control character 0x7f in line (a binary "
                                     "file?); expected a text CSV file");
    wl_csv_close(r);
    r = mem("a\x1b[31m,1\n", 0);
    CHECK_INT_EQ(wl_csv_next(r, &nf), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "mem.csv:1: control character 0x1b");
    wl_csv_close(r);
    /* White space controls stay allowed (and are trimmed). */
    r = mem("\va\f,\t1\r\n", 0);
    expect_row(r, 1, "a|1");
    wl_csv_close(r);
}

int main(void)
{
    test_rows();
    test_limits();
    test_files();
    test_encodings();
    printf("csv: ok\n");
    return 0;
}
