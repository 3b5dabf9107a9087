/*
 * libFuzzer target: the CSV row reader (workloads/csv.c) over the input in
 * memory, without and with comment lines.  Checks: every row has >= 1
 * field and fields are trimmed, comma-free and NUL-free; line numbers
 * increase; an error is one line starting with the source name and is
 * followed by the end of input.
 */
#include <ctype.h>
#include <string.h>

#include "sim/core/error.h"
#include "workloads/csv.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int flags = 0; flags <= WL_CSV_COMMENTS; flags += WL_CSV_COMMENTS) {
        wl_csv *r = wl_csv_from_mem((const char *)data, size, "fuzz.csv", flags);
        long prev = 0;
        size_t nf, bytes = 0;
        int rc;
        while ((rc = wl_csv_next(r, &nf)) == SIM_OK && nf > 0) {
            long line = wl_csv_line(r);
            if (line <= prev)
                fz_fail("line numbers do not increase");
            prev = line;
            for (size_t i = 0; i < nf; i++) {
                const char *f = wl_csv_field(r, i);
                size_t l = f ? strlen(f) : 0;
                if (!f || strchr(f, ',') || l > WL_CSV_LINE_MAX)
                    fz_fail("field missing, with a comma or too long");
                if (l && (isspace((unsigned char)f[0]) || isspace((unsigned char)f[l - 1])))
                    fz_fail("field not trimmed");
                bytes += l;
            }
            if (wl_csv_field(r, nf) != NULL)
                fz_fail("field past the row");
            if (flags && wl_csv_field(r, 0)[0] == '#')
                fz_fail("comment row returned");
            if (bytes > size)
                fz_fail("more field bytes than input bytes");
        }
        if (rc) {
            fz_check_error(rc, "fuzz.csv:", 1);
            if (wl_csv_next(r, &nf) != SIM_OK || nf != 0)
                fz_fail("input continues after an error");
        }
        wl_csv_close(r);
    }
    return 0;
}
