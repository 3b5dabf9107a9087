/*
 * libFuzzer target: the key-rate CSV reader (workloads/keyrates.c,
 * `key,rate` rows) through wl_keyrates_load_csv_names on a file holding
 * the input.  Checks: errors are one line starting with the path and
 * saying what was expected (I/O errors aside); a loaded vector is sorted
 * by decreasing rate (ties by id), its ids are the row numbers 0..n-1 in
 * some order, every rate is finite and > 0 with a finite sum, the names
 * are non-empty, distinct and comma-free, and the vector's statistics
 * (wl_keyrates_describe) are finite.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "workloads/keyrates.h"
#include "fuzz_common.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fz_write("rates.csv", data, size));
    wl_keyrates kr;
    char **names;
    int rc = wl_keyrates_load_csv_names(path, &kr, &names);
    if (rc) {
        fz_check_error(rc, path, rc == SIM_EINVAL);
        if (kr.n || kr.rate || names)
            fz_fail("output not zeroed on error");
        return 0;
    }
    if (kr.n < 1)
        fz_fail("empty vector loaded");
    char *seen = calloc(kr.n, 1);
    for (size_t i = 0; i < kr.n; i++) {
        if (!(kr.rate[i] > 0) || !isfinite(kr.rate[i]))
            fz_fail("rate not finite and > 0");
        if (i && (kr.rate[i] > kr.rate[i - 1] ||
                  (kr.rate[i] == kr.rate[i - 1] && kr.id[i] < kr.id[i - 1])))
            fz_fail("not sorted by decreasing rate, ties by id");
        if (kr.id[i] >= kr.n || seen[kr.id[i]]++)
            fz_fail("ids are not a permutation of the rows");
    }
    free(seen);
    char **sorted = malloc(kr.n * sizeof *sorted);
    for (size_t i = 0; i < kr.n; i++) {
        if (!names[i][0] || strchr(names[i], ','))
            fz_fail("empty key or a key with a comma");
        sorted[i] = names[i];
    }
    qsort(sorted, kr.n, sizeof *sorted, cmp_str);
    for (size_t i = 1; i < kr.n; i++)
        if (strcmp(sorted[i], sorted[i - 1]) == 0)
            fz_fail("duplicate key loaded");
    free(sorted);
    if (!isfinite(wl_keyrates_total(&kr)))
        fz_fail("total not finite");
    wl_keystats st;
    if (wl_keyrates_describe(&kr, &st) != SIM_OK)
        fz_fail("a loaded vector cannot be described");
    if (!isfinite(st.gini) || !(st.gini >= 0 && st.gini < 1) || !isfinite(st.total) ||
        !(st.max_share > 0 && st.max_share <= 1) || !(st.top1 <= st.top10 + 1e-12))
        fz_fail("statistics of a loaded vector out of range");
    wl_names_free(names, kr.n);
    wl_keyrates_fini(&kr);
    return 0;
}
