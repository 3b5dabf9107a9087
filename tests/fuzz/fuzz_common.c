/* Helpers of the fuzz targets (see fuzz_common.h). */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/core/error.h"

static char dir[512];
static char path[1024];

static void cleanup(void)
{
    if (!dir[0])
        return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", dir);
}

const char *fz_dir(void)
{
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/crsim-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(cleanup);
    }
    return dir;
}

const char *fz_write(const char *name, const void *data, size_t size)
{
    snprintf(path, sizeof path, "%s/%s", fz_dir(), name);
    /* A new file each time: truncating one that holds data makes ext4
     * flush it (auto_da_alloc), about 3 ms per input. */
    unlink(path);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        perror("fuzz: writing the input");
        abort();
    }
    return path;
}

void fz_fail(const char *what)
{
    fprintf(stderr, "fuzz contract violated: %s\nlast message: '%s'\n", what, sim_errmsg());
    abort();
}

void fz_check_error(int rc, const char *prefix, int need_expected)
{
    const char *m = sim_errmsg();
    if (rc <= SIM_OK || rc > SIM_EINTR)
        fz_fail("unknown status code");
    if (!*m)
        fz_fail("error without a message");
    for (const char *p = m; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            fz_fail("control character in the message (not one line of text)");
    if (prefix && strncmp(m, prefix, strlen(prefix)) != 0)
        fz_fail("message does not start with the input's name");
    if (need_expected && !strstr(m, "expected"))
        fz_fail("message does not say what was expected");
}
