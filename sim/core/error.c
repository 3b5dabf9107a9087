/*
 * The error funnel: formats messages into a per-thread buffer, and the
 * aborting allocators.  See error.h for why the buffer is thread-local.
 */
#include "sim/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char errbuf[1024];
static _Thread_local char errsrc[256];

int sim_error(int code, const char *src_file, int src_line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    snprintf(errsrc, sizeof errsrc, "%s:%d", src_file, src_line);
    return code;
}

const char *sim_errmsg(void) { return errbuf; }

const char *sim_errsrc(void) { return errsrc; }

const char *sim_strstatus(int code)
{
    switch (code) {
    case SIM_OK: return "OK";
    case SIM_EINVAL: return "EINVAL";
    case SIM_ENOMEM: return "ENOMEM";
    case SIM_EIO: return "EIO";
    case SIM_EDB: return "EDB";
    case SIM_EINTR: return "EINTR";
    default: return "unknown status";
    }
}

void sim_panic(const char *src_file, int src_line, const char *what)
{
    fprintf(stderr, "crsim: invariant violated at %s:%d: %s\n", src_file, src_line, what);
    fflush(stderr);
    abort();
}

void *sim_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        sim_panic(__FILE__, __LINE__, "out of memory");
    return p;
}

void *sim_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        sim_panic(__FILE__, __LINE__, "out of memory");
    return p;
}

void *sim_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        sim_panic(__FILE__, __LINE__, "out of memory");
    return q;
}

char *sim_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = sim_xmalloc(n);
    memcpy(d, s, n);
    return d;
}
