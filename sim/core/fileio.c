/*
 * sim_file_open (see fileio.h): open(2) with O_NONBLOCK, fstat(2) on the
 * descriptor (not stat on the path, so the file checked is the file read),
 * then fdopen.
 */
#include "sim/core/fileio.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "sim/core/number.h"

/* "a FIFO", ... for a file type that is not a regular file. */
static const char *kind_name(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO (named pipe)";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

int sim_file_open(const char *path, const char *what, const char *expect, FILE **out)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return SIM_ERROR(SIM_EIO, "%s: cannot open %s: %s; expected %s", path, what,
                         strerror(errno), expect);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return SIM_ERROR(SIM_EIO, "%s: cannot open %s: %s; expected %s", path, what,
                         strerror(e), expect);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        const char *k = kind_name(st.st_mode);
        return SIM_ERROR(SIM_EIO, "%s: %s is %s%s; expected %s", path, what, k,
                         strncmp(k, "not ", 4) == 0 ? "" : ", not a regular file", expect);
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return SIM_ERROR(SIM_EIO, "%s: cannot open %s: %s; expected %s", path, what,
                         strerror(e), expect);
    }
    *out = f;
    sim_file_note(path);
    return SIM_OK;
}

/* The input-file hook (fileio.h): written by the main thread during
 * set-up only, before worker threads start. */
static sim_file_hook_fn hook_fn;
static void *hook_ctx;

void sim_file_set_hook(sim_file_hook_fn fn, void *ctx)
{
    hook_fn = fn;
    hook_ctx = ctx;
}

void sim_file_note(const char *path)
{
    if (hook_fn)
        hook_fn(hook_ctx, path);
}

int sim_file_hash(const char *path, uint64_t *hash, uint64_t *size)
{
    *hash = 0;
    *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return SIM_ERROR(SIM_EIO, "%s: cannot open to hash: %s", path, strerror(errno));
    XXH3_state_t *st = XXH3_createState();
    enum { BUF = 1 << 16 };
    char *buf = malloc(BUF);
    int rc = SIM_OK;
    if (!st || !buf) {
        rc = SIM_ERROR(SIM_ENOMEM, "%s: out of memory hashing the file", path);
        goto out;
    }
    XXH3_64bits_reset(st);
    for (;;) {
        ssize_t got = read(fd, buf, BUF);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = SIM_ERROR(SIM_EIO, "%s: cannot read to hash: %s", path, strerror(errno));
            goto out;
        }
        if (got == 0)
            break;
        XXH3_64bits_update(st, buf, (size_t)got);
        *size += (uint64_t)got;
    }
    *hash = XXH3_64bits_digest(st);
out:
    XXH3_freeState(st);
    free(buf);
    close(fd);
    return rc;
}

double sim_mem_available(void)
{
    const char *e = getenv("CRSIM_MEM_AVAILABLE_GB");
    double v;
    if (e && *e && sim_num_real(e, 1e-9, 1e9, &v)) /* decimal GB; else ignored */
        return v * 1e9;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return NAN;
    char line[256];
    double kb = NAN;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024.0;
}
