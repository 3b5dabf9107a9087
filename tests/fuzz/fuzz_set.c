/*
 * libFuzzer target: `--set KEY=VALUE` overrides (sim_cfgdoc_set in
 * sim/core/config.c, then the whole experiment schema as for fuzz_config)
 * on top of tests/configs/small.yaml.  The input is up to 16 assignments
 * separated by NUL bytes (so keys and values may hold newlines, as a shell
 * argument can).  Checks: an error is one line of text; a config that
 * loads round-trips through its canonical dump (fz_roundtrip).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/exp/exp.h"
#include "fuzz_common.h"
#include "fuzz_roundtrip.h"

#define MAX_SETS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *sets[MAX_SETS];
    size_t n = 0;
    for (char *p = buf; n < MAX_SETS && p <= buf + size; p += strlen(p) + 1)
        sets[n++] = p;
    exp_config cfg;
    int rc = exp_config_load(CRSIM_FUZZ_BASE_CONFIG, sets, n, &cfg);
    if (rc) {
        fz_check_error(rc, NULL, 0);
        exp_config_fini(&cfg);
    } else {
        fz_roundtrip(&cfg);
        exp_config_fini(&cfg);
    }
    free(buf);
    return 0;
}
