/*
 * sim_file_open (see fileio.h): open(2) with O_NONBLOCK, fstat(2) on the
 * descriptor (not stat on the path, so the file checked is the file read),
 * then fdopen.
 */
#include "sim/core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/core/error.h"

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
    return SIM_OK;
}
