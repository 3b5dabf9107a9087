/*
 * libFuzzer target: the ServeGen per-client reader (workloads/servegen.c)
 * through wl_servegen_load on a folder of up to 4 client files, the input
 * split at each line "===" (chunk-0-trace.csv, chunk-1-trace.csv, ...),
 * then wl_servegen_keyrates for the means and for window 0.  Checks:
 * errors are one line (starting with the folder or file for the loader)
 * saying what was expected (I/O errors aside); a loaded model has one
 * client per file, equal window counts, finite rates >= 0 and finite
 * means; the key-rate vectors hold the non-idle clients with finite
 * positive rates.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "workloads/servegen.h"
#include "fuzz_common.h"

#define MAX_FILES 4

static const char sep[] = "\n===\n";
static size_t n_written; /* files left by the previous input */

/* First occurrence of sep in [p, end), or NULL. */
static const char *find_sep(const char *p, const char *end)
{
    for (; end - p >= (long)(sizeof sep - 1); p++)
        if (memcmp(p, sep, sizeof sep - 1) == 0)
            return p;
    return NULL;
}

static void check_vector(const wl_servegen *sg, size_t window)
{
    wl_keyrates kr;
    size_t idle = 0;
    int rc = wl_servegen_keyrates(sg, window, &kr, &idle);
    if (rc) {
        fz_check_error(rc, NULL, 1);
        return;
    }
    if (kr.n + idle != sg->n_clients || kr.n == 0)
        fz_fail("keys + idle clients != clients");
    for (size_t i = 0; i < kr.n; i++)
        if (!(kr.rate[i] > 0) || !isfinite(kr.rate[i]) || kr.id[i] >= sg->n_clients)
            fz_fail("key-rate vector entry");
    wl_keyrates_fini(&kr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[1024], name[64];
    snprintf(dir, sizeof dir, "%s/model", fz_dir());
    if (access(dir, F_OK) != 0 && mkdir(dir, 0700) != 0)
        fz_fail("cannot create the model folder");
    size_t n = 0;
    const char *p = (const char *)data, *end = p + size;
    while (n < MAX_FILES) {
        const char *q = n + 1 < MAX_FILES ? find_sep(p, end) : NULL;
        size_t len = q ? (size_t)(q - p) + 1 : (size_t)(end - p); /* keep the '\n' */
        snprintf(name, sizeof name, "model/chunk-%zu-trace.csv", n);
        fz_write(name, p, len);
        n++;
        if (!q)
            break;
        p = q + sizeof sep - 1;
    }
    for (size_t i = n; i < n_written; i++) {
        char path[1100];
        snprintf(path, sizeof path, "%s/chunk-%zu-trace.csv", dir, i);
        unlink(path);
    }
    n_written = n;
    wl_servegen sg;
    int rc = wl_servegen_load(dir, 1, &sg);
    if (rc) {
        fz_check_error(rc, dir, rc == SIM_EINVAL);
        if (sg.names || sg.n_clients)
            fz_fail("model not zeroed on error");
        return 0;
    }
    if (sg.n_clients != n || sg.n_windows < 1 || !(sg.window_s >= 0) || !isfinite(sg.window_s))
        fz_fail("loaded model header");
    for (size_t i = 0; i < sg.n_clients; i++) {
        if (!(sg.mean_rate[i] >= 0) || !isfinite(sg.mean_rate[i]))
            fz_fail("mean rate not finite and >= 0");
        for (size_t w = 0; w < sg.n_windows; w++) {
            double r = sg.rate[i * sg.n_windows + w], cv = sg.cv[i * sg.n_windows + w];
            if (!(r >= 0) || !isfinite(r) || !(cv >= 0) || !isfinite(cv))
                fz_fail("window rate or CV not finite and >= 0");
        }
    }
    check_vector(&sg, (size_t)-1);
    check_vector(&sg, 0);
    wl_servegen_fini(&sg);
    return 0;
}
