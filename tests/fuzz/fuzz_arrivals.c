/*
 * libFuzzer target: the arrival-time CSV reader (workloads/arrivals.c)
 * through wl_iat_load_csv on a file holding the input, column "TIMESTAMP",
 * once as times (numbers or civil date-times) and once as gaps.  Checks:
 * errors are one line starting with the path and saying what was expected
 * (I/O errors aside), *out zeroed; a loaded series has at least 2 gaps,
 * each finite and >= 0.  UBSan catches the date arithmetic's overflows.
 */
#include <math.h>
#include <stdio.h>

#include "sim/core/error.h"
#include "workloads/arrivals.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fz_write("iat.csv", data, size));
    for (int as_gaps = 0; as_gaps < 2; as_gaps++) {
        wl_iat_series s;
        int rc = wl_iat_load_csv(path, "TIMESTAMP", as_gaps, &s);
        if (rc) {
            fz_check_error(rc, path, rc == SIM_EINVAL);
            if (s.n || s.gap_s)
                fz_fail("series not zeroed on error");
            continue;
        }
        if (s.n < 2)
            fz_fail("fewer than 2 gaps loaded");
        for (size_t i = 0; i < s.n; i++)
            if (!(s.gap_s[i] >= 0) || !isfinite(s.gap_s[i]))
                fz_fail("gap not finite and >= 0");
        wl_iat_series_fini(&s);
    }
    return 0;
}
