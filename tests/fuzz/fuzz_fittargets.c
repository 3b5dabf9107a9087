/*
 * libFuzzer target: the fit targets YAML (sim/exp/fit.c, docs/fit.md)
 * through exp_fit_check on a file holding the input, against the base
 * config tests/configs/fit_synth.yaml: the targets' schema, the per-policy
 * series (loads, values, tolerances, SLOs), the free parameters
 * (KEY=[lo, hi], log[...], in[...]) and the structural alternatives, each
 * checked against the config as `crsim fit` does before its first run.
 * Checks: an error is one line of text starting with the targets file's
 * path; nothing is run or written.
 */
#include <stdio.h>

#include "sim/core/error.h"
#include "sim/exp/fit.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fz_write("targets.yaml", data, size));
    char db[1100];
    snprintf(db, sizeof db, "%s/fit.db", fz_dir());
    const exp_fit_opts o = {.config_path = CRSIM_FUZZ_FIT_CONFIG, .targets_path = path,
                            .jobs = 1, .db = db, .quiet = true};
    const int rc = exp_fit_check(&o);
    if (rc)
        fz_check_error(rc, path, 0);
    FILE *f = fopen(db, "r");
    if (f) {
        fclose(f);
        fz_fail("a database was created by checking the targets");
    }
    return 0;
}
