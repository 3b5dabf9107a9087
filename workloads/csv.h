/*
 * One CSV row reader for the workload inputs: the key-rate file
 * (`key,rate`, keyrates.c), the arrival-time file (e.g. the Azure trace's
 * `TIMESTAMP,...`, arrivals.c) and the ServeGen per-client traces
 * (servegen.c).  It reads one line at a time from a file or a memory
 * buffer, splits it into fields and keeps the source name and line number
 * so that every caller's message can say "PATH:LINE: ...".  What a row
 * means (header, columns, numbers) stays with the caller.
 *
 * The dialect is the one the three readers always accepted, no wider:
 *   - A line ends at LF; a CR right before it (CRLF) is dropped, and so is
 *     a final line without a line end.
 *   - Fields are separated by every comma.  There is no quoting or
 *     escaping: a double quote is an ordinary character, so a field cannot
 *     hold a comma.  "a,b," is three fields, the last empty.
 *   - Each field is trimmed of white space (isspace) at both ends.
 *   - Lines that are empty or white space only are skipped (their numbers
 *     still count); with WL_CSV_COMMENTS so are lines whose first
 *     non-blank character is '#'.
 *   - A UTF-8 byte order mark (EF BB BF) at the very start of the input
 *     is dropped (spreadsheet exports write one; before, it became part
 *     of the first field, so a header "TIMESTAMP" was not found).
 * Limits that give a clear error instead of the old silent behaviour: a
 * line longer than WL_CSV_LINE_MAX bytes (before: read whatever its
 * length), a NUL byte or another control character (below 0x20 but not
 * white space, or 0x7f) inside a line, i.e. a binary file (before: the
 * line was cut at a NUL, other bytes reached the caller's parse), and a
 * UTF-16 byte order mark at the start (named as such).  Files are opened
 * with sim_file_open (sim/core/fileio.h): a FIFO, device or directory is
 * refused before any read.
 */
#ifndef CRSIM_WORKLOADS_CSV_H
#define CRSIM_WORKLOADS_CSV_H

#include <stddef.h>
#include <stdio.h>

/* Longest line accepted, bytes, not counting the line end (LF or CRLF). */
#define WL_CSV_LINE_MAX 65536

/* Flags of wl_csv_open* (bitwise or). */
enum wl_csv_flags {
    WL_CSV_COMMENTS = 1 /* skip lines whose first non-blank character is '#' */
};

typedef struct wl_csv wl_csv;

/*
 * Open file `path` for reading rows, through wl_infile_open
 * (workloads/infile.h): a regular file, plain or gzip/xz-compressed (read
 * decompressed).  `what` names the file's kind in the open error
 * ("key-rate file" gives "PATH: cannot open key-rate file: <strerror>").
 * `path` is used as the source name in messages and must outlive the
 * reader.  `flags` is 0 or WL_CSV_COMMENTS.  On success *out is a reader
 * the caller closes with wl_csv_close (which closes the file).  Returns
 * SIM_OK, or wl_infile_open's SIM_EIO (missing, unreadable, not a regular
 * file: sim_file_open's messages), SIM_EINVAL (a compression crsim does not read, a .gz/.xz name
 * over other bytes) or SIM_ENOMEM (*out NULL).  Aborts on exhaustion of
 * memory otherwise (the reader's buffers are bounded by WL_CSV_LINE_MAX).
 */
int wl_csv_open(const char *path, const char *what, int flags, wl_csv **out);

/*
 * A reader over an open stream `f` (read from its current position, not
 * closed by wl_csv_close) or over the `len` bytes at `buf` (not copied: the
 * buffer must outlive the reader; it need not be NUL-terminated).  `name`
 * names the source in messages and must outlive the reader.  Cannot fail
 * (aborts on exhaustion of memory).
 */
wl_csv *wl_csv_from_file(FILE *f, const char *name, int flags);
wl_csv *wl_csv_from_mem(const char *buf, size_t len, const char *name, int flags);

/* Close the reader (and the file of wl_csv_open).  Accepts NULL. */
void wl_csv_close(wl_csv *r);

/*
 * Read the next row that is not skipped (see the file comment) and split
 * it.  Sets *n_fields to its number of fields (>= 1), or to 0 at the end
 * of the input.  The fields, read with wl_csv_field, stay valid until the
 * next call or wl_csv_close.  Returns SIM_OK; SIM_EINVAL "NAME:LINE: line
 * longer than 65536 bytes; expected CSV lines of at most 65536 bytes",
 * "NAME:LINE: NUL byte in line; expected a text CSV file", "NAME:LINE:
 * control character 0x01 in line (a binary file?); expected a text CSV
 * file" or "NAME:1: UTF-16 byte order mark; expected a UTF-8 (or ASCII)
 * text CSV file"; SIM_EIO "NAME:
 * read error: <strerror>".  After an error *n_fields is 0 and further
 * calls return the end of input.
 */
int wl_csv_next(wl_csv *r, size_t *n_fields);

/* Field `i` (0-based) of the current row, trimmed, or NULL if the row has
 * no field `i` (or there is no current row).  Owned by the reader.  Cannot
 * fail. */
const char *wl_csv_field(const wl_csv *r, size_t i);

/* Number (1-based) of the line of the current row, or of the line being
 * read when wl_csv_next failed; 0 before the first read.  Cannot fail. */
long wl_csv_line(const wl_csv *r);

/* The source name given at open.  Cannot fail. */
const char *wl_csv_name(const wl_csv *r);

#endif
