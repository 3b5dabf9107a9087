/* The config round trip of the config targets (see fuzz_roundtrip.h). */
#include "fuzz_roundtrip.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "fuzz_common.h"

void fz_roundtrip(const exp_config *cfg)
{
    char *a = exp_config_dump(cfg);
    fz_write("dump.yaml", a, strlen(a));
    int here = open(".", O_RDONLY | O_DIRECTORY);
    if (here < 0 || chdir(fz_dir()) != 0)
        fz_fail("cannot enter the temporary folder");
    exp_config again;
    int rc = exp_config_load("dump.yaml", NULL, 0, &again);
    if (fchdir(here) != 0)
        fz_fail("cannot return to the working folder");
    close(here);
    if (rc) {
        fprintf(stderr, "dump:\n%s\n", a);
        fz_fail("the canonical dump of a loaded config does not load");
    }
    char *b = exp_config_dump(&again);
    if (strcmp(a, b) != 0) {
        fprintf(stderr, "first dump:\n%s\nsecond dump:\n%s\n", a, b);
        fz_fail("the canonical dump does not round-trip");
    }
    free(a);
    free(b);
    exp_config_fini(&again);
}
