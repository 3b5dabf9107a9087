/*
 * The error funnel: formats messages into a per-thread buffer, and the
 * aborting allocators.  See error.h for why the buffer is thread-local.
 */
#include "sim/core/error.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The out-of-memory hook (sim_set_oom_hook); swapped to NULL when taken,
 * so it runs once even if several threads fail at the same time. */
static _Atomic(sim_oom_fn) oom_fn;
static void *_Atomic oom_ctx;
/* Memory set aside while a hook is installed and given back just before
 * it runs, so that the hook (an SQLite update) finds memory even when the
 * process has none left.  Never touched, so it costs address space, not
 * resident memory (above glibc's mmap threshold it is its own mapping). */
#define OOM_RESERVE_BYTES ((size_t)16 << 20)
static void *_Atomic oom_reserve;

void sim_set_oom_hook(sim_oom_fn fn, void *ctx)
{
    free(atomic_exchange(&oom_reserve, fn ? malloc(OOM_RESERVE_BYTES) : NULL));
    atomic_store(&oom_ctx, ctx);
    atomic_store(&oom_fn, fn);
}

static void out_of_memory(const char *src_file, int src_line)
{
    sim_oom_fn fn = atomic_exchange(&oom_fn, (sim_oom_fn)NULL);
    if (!fn)
        sim_panic(src_file, src_line, "out of memory");
    free(atomic_exchange(&oom_reserve, NULL));
    fputs("crsim: out of memory during a run; expected a smaller run (the estimate printed "
          "before the runs, docs/harness.md \"Size estimate\")\n", stderr);
    fflush(stderr);
    fn(atomic_load(&oom_ctx));
    _exit(1);
}

void *sim_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(__FILE__, __LINE__);
    return p;
}

void *sim_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(__FILE__, __LINE__);
    return p;
}

void *sim_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory(__FILE__, __LINE__);
    return q;
}

char *sim_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = sim_xmalloc(n);
    memcpy(d, s, n);
    return d;
}
