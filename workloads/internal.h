/*
 * Helpers shared between files of the workloads module; not part of its
 * API (double-underscore names, STYLE.md §1).
 */
#ifndef CRSIM_WORKLOADS_INTERNAL_H
#define CRSIM_WORKLOADS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

struct wl_trace;

/* Strip leading and trailing white space (isspace) of `s` in place;
 * returns the first non-space character.  Cannot fail.  (csv.c) */
char *wl__trim(char *s);

/* Parse the whole of `s` as a decimal number with strtod into *v: returns
 * 1 if strtod consumes all of a non-empty `s` and the text is not
 * hexadecimal ("0x10", "0x1p4": strtod accepts them, but nobody writes a
 * rate or a time in hex, and a typo should not become 16), else 0.  "inf"
 * and "nan" parse (callers reject them with their own message about the
 * value).  Cannot fail.  (csv.c) */
int wl__parse_decimal(const char *s, double *v);

/* Index of `name` in the NULL-terminated `names` (an X-macro names list),
 * or -1 if it is not there or `name` is NULL.  Cannot fail.  (wl_config.c) */
int wl__name_index(const char *const names[], const char *name);

/* As wl__name_index, into *index; an unknown name is SIM_EINVAL "unknown
 * WHAT 'NAME'; expected one of: A, B, C" (*index unchanged).  (wl_config.c) */
int wl__name_parse(const char *const names[], const char *what, const char *name, int *index);

/* Calendar arithmetic of the date-time readers (arrivals.c; also
 * trace_csv.c).  wl__days_from_civil: days since 1970-01-01 of a
 * proleptic Gregorian date (H. Hinnant, "chrono-Compatible Low-Level Date
 * Algorithms", days_from_civil); wl__days_in_month: days of month m
 * (1..12) of year y; wl__digits: read exactly n decimal digits at *p into
 * *v, advancing *p; 1 on success, 0 at a non-digit.  Cannot fail. */
int64_t wl__days_from_civil(int64_t y, int64_t m, int64_t d);
int64_t wl__days_in_month(int64_t y, int64_t m);
int wl__digits(const char **p, int n, int64_t *v);
/* Engine blocks of request i (< t->n) of trace t at block size bs (a
 * divisor of t->block_tokens): floor(input_tokens / bs), at most the
 * blocks its ids cover; and their chained hashes (workloads/replay.h)
 * into h (room for that many), returning the count.  Cannot fail.
 * (replay.c; also ingest.c) */
uint32_t wl__trace_req_blocks(const struct wl_trace *t, size_t i, uint32_t bs);
uint32_t wl__trace_req_hashes(const struct wl_trace *t, size_t i, uint32_t bs, uint64_t *h);
/* As wl__trace_req_hashes with h[0..from) already holding the first
 * `from` hashes (from <= the count): only the rest are computed. */
uint32_t wl__trace_req_hashes_from(const struct wl_trace *t, size_t i, uint32_t bs, uint64_t *h,
                                   uint32_t from);
#endif
