/*
 * The CSV row reader (see csv.h).  Bytes come one at a time from the
 * stream (getc_unlocked: the reader is the stream's only user) or the
 * memory buffer into a line buffer that grows by doubling up to
 * WL_CSV_LINE_MAX, so a file without line ends cannot make it allocate
 * without bound.  The line is split in place: every comma becomes a NUL and
 * each field is trimmed, so the fields are pointers into the line buffer.
 */
#include "sim/core/number.h"
#include "workloads/csv.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "workloads/infile.h"
#include "workloads/internal.h"

struct wl_csv {
    const char *name;  /* source name for messages (not owned) */
    FILE *f;           /* stream source, or NULL for a memory source */
    int own;           /* 1: f was opened by wl_csv_open and is closed here */
    const char *mem;   /* memory source and its length, read position */
    size_t mem_len, mem_pos;
    int flags;
    int done;          /* end of input or an error: every later read is the end */
    long lineno;       /* number of the line last read (1-based) */
    char *line;        /* current line, NUL-terminated, split in place */
    size_t cap;        /* bytes allocated at line */
    const char **field;/* n fields of the current row, into `line` */
    size_t n, fcap;
};

char *wl__trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t l = strlen(s);
    while (l > 0 && isspace((unsigned char)s[l - 1]))
        s[--l] = '\0';
    return s;
}

int wl__parse_decimal(const char *s, double *v)
{
    /* the project's one decimal reader (sim/core/number.h): no hex, inf, nan */
    *v = NAN;
    return sim_num_real(s, -INFINITY, INFINITY, v);
}

static wl_csv *reader_new(const char *name, int flags)
{
    wl_csv *r = sim_xcalloc(1, sizeof *r);
    r->name = name;
    r->flags = flags;
    r->cap = 256;
    r->line = sim_xmalloc(r->cap);
    r->fcap = 8;
    r->field = sim_xmalloc(r->fcap * sizeof *r->field);
    return r;
}

int wl_csv_open(const char *path, const char *what, int flags, wl_csv **out)
{
    *out = NULL;
    FILE *f;
    int rc = wl_infile_open(path, what, &f, NULL); /* plain, .gz or .xz; regular files only */
    if (rc)
        return rc;
    wl_csv *r = reader_new(path, flags);
    r->f = f;
    r->own = 1;
    *out = r;
    return SIM_OK;
}

wl_csv *wl_csv_from_file(FILE *f, const char *name, int flags)
{
    wl_csv *r = reader_new(name, flags);
    r->f = f;
    return r;
}

wl_csv *wl_csv_from_mem(const char *buf, size_t len, const char *name, int flags)
{
    wl_csv *r = reader_new(name, flags);
    r->mem = buf;
    r->mem_len = len;
    return r;
}

void wl_csv_close(wl_csv *r)
{
    if (!r)
        return;
    if (r->own)
        fclose(r->f);
    free(r->line);
    free(r->field);
    free(r);
}

/* The next byte of the source, or EOF at its end or on a read error (then
 * ferror is set on the stream). */
static int next_byte(wl_csv *r)
{
    if (r->f)
        return getc_unlocked(r->f);
    return r->mem_pos < r->mem_len ? (unsigned char)r->mem[r->mem_pos++] : EOF;
}

/* True if the n bytes at s start with a UTF-16 byte order mark. */
static int utf16_bom(const char *s, size_t n)
{
    return n >= 2 && (((unsigned char)s[0] == 0xff && (unsigned char)s[1] == 0xfe) ||
                      ((unsigned char)s[0] == 0xfe && (unsigned char)s[1] == 0xff));
}

/* Is byte c a control character that no text CSV holds?  White space
 * (tab, CR, VT, FF) is allowed: trimming handles it. */
static int bad_control(int c)
{
    return (c < 0x20 && !isspace(c)) || c == 0x7f;
}

/* The message for a line of binary data: a UTF-16 file (which has NUL
 * bytes in every ASCII character) is named as such. */
static int binary_error(const wl_csv *r, size_t n, int c)
{
    if (r->lineno == 1 && utf16_bom(r->line, n))
        return SIM_ERROR(SIM_EINVAL, "%s:1: UTF-16 byte order mark; expected a UTF-8 (or "
                         "ASCII) text CSV file", r->name);
    if (c == '\0')
        return SIM_ERROR(SIM_EINVAL, "%s:%ld: NUL byte in line; expected a text CSV file",
                         r->name, r->lineno);
    return SIM_ERROR(SIM_EINVAL, "%s:%ld: control character 0x%02x in line (a binary "
                     "file?); expected a text CSV file", r->name, r->lineno, c);
}

/* Read one line into r->line without its line end; *got = 0 at the end of
 * the input.  A UTF-8 byte order mark at the start of the input is
 * dropped. */
static int read_line(wl_csv *r, int *got)
{
    size_t n = 0;
    int c = next_byte(r);
    *got = 0;
    if (c == EOF) {
        if (r->f && ferror(r->f))
            return SIM_ERROR(SIM_EIO, "%s: read error: %s", r->name, strerror(errno));
        return SIM_OK;
    }
    r->lineno++;
    /* Room for WL_CSV_LINE_MAX bytes, the CR of a CRLF and the NUL. */
    for (; c != EOF && c != '\n'; c = next_byte(r)) {
        if (bad_control(c))
            return binary_error(r, n, c);
        if (n == (size_t)WL_CSV_LINE_MAX + 1)
            return SIM_ERROR(SIM_EINVAL, "%s:%ld: line longer than %d bytes; expected CSV "
                             "lines of at most %d bytes", r->name, r->lineno, WL_CSV_LINE_MAX,
                             WL_CSV_LINE_MAX);
        if (n + 1 >= r->cap) {
            r->cap *= 2;
            r->line = sim_xrealloc(r->line, r->cap);
        }
        r->line[n++] = (char)c;
    }
    if (c == EOF && r->f && ferror(r->f))
        return SIM_ERROR(SIM_EIO, "%s: read error: %s", r->name, strerror(errno));
    if (r->lineno == 1 && utf16_bom(r->line, n))
        return binary_error(r, n, 0);
    if (r->lineno == 1 && n >= 3 && memcmp(r->line, "\xef\xbb\xbf", 3) == 0) {
        memmove(r->line, r->line + 3, n - 3);
        n -= 3;
    }
    if (n > 0 && r->line[n - 1] == '\r')
        n--;
    if (n > WL_CSV_LINE_MAX)
        return SIM_ERROR(SIM_EINVAL, "%s:%ld: line longer than %d bytes; expected CSV lines of "
                         "at most %d bytes", r->name, r->lineno, WL_CSV_LINE_MAX,
                         WL_CSV_LINE_MAX);
    r->line[n] = '\0';
    *got = 1;
    return SIM_OK;
}

/* Split r->line at every comma into trimmed fields. */
static void split(wl_csv *r)
{
    r->n = 0;
    for (char *p = r->line;;) {
        char *c = strchr(p, ',');
        if (c)
            *c = '\0';
        if (r->n == r->fcap) {
            r->fcap *= 2;
            r->field = sim_xrealloc(r->field, r->fcap * sizeof *r->field);
        }
        r->field[r->n++] = wl__trim(p);
        if (!c)
            break;
        p = c + 1;
    }
}

int wl_csv_next(wl_csv *r, size_t *n_fields)
{
    *n_fields = 0;
    r->n = 0;
    while (!r->done) {
        int got, rc = read_line(r, &got);
        if (rc || !got) {
            r->done = 1;
            return rc;
        }
        const char *s = r->line;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '\0' || (*s == '#' && (r->flags & WL_CSV_COMMENTS)))
            continue;
        split(r);
        *n_fields = r->n;
        return SIM_OK;
    }
    return SIM_OK;
}

const char *wl_csv_field(const wl_csv *r, size_t i)
{
    return i < r->n ? r->field[i] : NULL;
}

long wl_csv_line(const wl_csv *r)
{
    return r->lineno;
}

const char *wl_csv_name(const wl_csv *r)
{
    return r->name;
}
