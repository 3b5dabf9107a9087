/*
 * libFuzzer target: the YAML config loader (sim/core/config.c) and the
 * whole experiment schema (harness keys, every router section, the
 * workload section: sim/exp/exp.c, workloads/wl_config.c, models/routers/route*.c)
 * through exp_config_load on a file holding the input, the routers'
 * checks included.  Checks: an error is one line of text starting with
 * the file's path; a config that loads dumps to canonical text that loads
 * again to the same text (fz_roundtrip).
 */
#include <stdio.h>

#include "sim/core/error.h"
#include "sim/exp/exp.h"
#include "fuzz_common.h"
#include "fuzz_roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fz_write("config.yaml", data, size));
    exp_config cfg;
    int rc = exp_config_load(path, NULL, 0, &cfg);
    if (rc) {
        fz_check_error(rc, path, 0);
        exp_config_fini(&cfg); /* documented as safe after an error */
        return 0;
    }
    fz_roundtrip(&cfg);
    exp_config_fini(&cfg);
    return 0;
}
