/*
 * Shared helpers of the libFuzzer targets (tests/fuzz/, docs/fuzzing.md).
 * Each target feeds one input to one parser through its real entry point
 * (most readers take a path, so the input is written to a file in a
 * private temporary folder first) and then checks the bad-input contract
 * (docs/design.md §12) on top of what ASan and UBSan check: an error is
 * one line of printable text naming the input, and a success satisfies
 * the parser's documented invariants.  A violation calls fz_fail, which
 * aborts: libFuzzer then reports a crash and saves the input.
 */
#ifndef CRSIM_TESTS_FUZZ_COMMON_H
#define CRSIM_TESTS_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry points (the targets define them). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The private temporary folder of this process (created on first use
 * under $TMPDIR or /tmp, removed at exit).  Owned by the helpers. */
const char *fz_dir(void);

/* Write the `size` bytes at `data` to the file `name` in fz_dir() and
 * return its path (a static buffer, valid until the next call).  Aborts
 * if the file cannot be written. */
const char *fz_write(const char *name, const void *data, size_t size);

/* Print "fuzz contract violated: WHAT" with the last crsim message and
 * abort. */
void fz_fail(const char *what) __attribute__((noreturn));

/* Check the last error message (sim_errmsg) after a parser returned
 * `rc` != SIM_OK: not empty, one line of bytes >= 0x20 other than 0x7f,
 * starting with `prefix` (the path or source name) when it is not NULL,
 * and holding "expected" when `need_expected` (the form of bad input
 * messages; I/O errors do not have it).  `rc` must be a known status. */
void fz_check_error(int rc, const char *prefix, int need_expected);

#endif
