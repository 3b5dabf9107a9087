/*
 * The error funnel: formats messages into a per-thread buffer, and the
 * aborting allocators.  See error.h for why the buffer is thread-local.
 * Control characters in a message (from a key, value or file name the
 * user wrote) are escaped here, once for every message, so that every
 * error stays one line of text (issue 17, item 13).
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

/* Escaped text of the last message: what errbuf can hold of it.  A longer
 * message keeps its first ERR_HEAD and last ERR_TAIL escaped bytes (the
 * location it starts with and the expected form it ends with) around a
 * marker " [... N bytes cut ...] ". */
#define ERR_HEAD 660
#define ERR_TAIL 320

/* Write byte c to out as itself or as a C escape (\n, \r, \t, \xHH for
 * the other bytes below 0x20 and 0x7f); returns the bytes written (<= 4).
 * With out NULL only counts. */
static size_t put_escaped(unsigned char c, char *out, int bad)
{
    static const char hex[] = "0123456789abcdef";
    char e[4];
    size_t n;
    if (c >= 0x20 && c != 0x7f && !bad) {
        e[0] = (char)c;
        n = 1;
    } else if (c == '\n' || c == '\r' || c == '\t') {
        e[0] = '\\';
        e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        n = 2;
    } else {
        e[0] = '\\';
        e[1] = 'x';
        e[2] = hex[c >> 4];
        e[3] = hex[c & 15];
        n = 4;
    }
    if (out)
        memcpy(out, e, n);
    return n;
}

/* Mark in bad[0..n) each byte >= 0x80 that is not part of a well-formed
 * UTF-8 sequence (RFC 3629: lead C2-F4, the right number of 10xxxxxx
 * bytes): such a byte (a raw 0xff from a CSV field, say) is printed as
 * \xHH, as the config binder quotes values (issue 38 C15). */
static void mark_bad_utf8(const unsigned char *u, size_t n, unsigned char *bad)
{
    for (size_t i = 0; i < n;) {
        const unsigned char c = u[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                                  : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        for (size_t k = 1; k < len; k++)
            if (i + k >= n || (u[i + k] & 0xc0) != 0x80)
                len = 0;
        if (len == 0) {
            bad[i++] = 1;
            continue;
        }
        i += len;
    }
}

/* True if byte c continues a UTF-8 sequence (10xxxxxx): no cut there. */
static int utf8_cont(unsigned char c) { return (c & 0xc0) == 0x80; }

/* Store the `n` raw bytes at `s` escaped in errbuf (see ERR_HEAD).  Every
 * other byte (printable ASCII, UTF-8, backslashes) is copied, so a message
 * without control characters is unchanged and escaping twice gives the
 * same text. */
static void store_escaped(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char small[2048], *bad = n <= sizeof small ? small : calloc(n, 1);
    if (bad == small)
        memset(small, 0, n);
    if (bad)
        mark_bad_utf8(u, n, bad);
#define BAD(i) (bad ? bad[i] : 0)
    size_t total = 0, o = 0;
    for (size_t i = 0; i < n; i++)
        total += put_escaped(u[i], NULL, BAD(i));
    if (total < sizeof errbuf) {
        for (size_t i = 0; i < n; i++)
            o += put_escaped(u[i], errbuf + o, BAD(i));
        errbuf[o] = '\0';
        if (bad != small)
            free(bad);
        return;
    }
    size_t head = 0, tail = n, w = 0; /* raw bytes [0, head) and [tail, n) are kept */
    while (head < n && w + put_escaped(u[head], NULL, BAD(head)) <= ERR_HEAD)
        w += put_escaped(u[head], NULL, BAD(head)), head++;
    while (head > 0 && utf8_cont(u[head]))
        head--;
    for (w = 0; tail > head && w + put_escaped(u[tail - 1], NULL, BAD(tail - 1)) <= ERR_TAIL;)
        tail--, w += put_escaped(u[tail], NULL, BAD(tail));
    while (tail < n && utf8_cont(u[tail]))
        tail++;
    for (size_t i = 0; i < head; i++)
        o += put_escaped(u[i], errbuf + o, BAD(i));
    o += (size_t)snprintf(errbuf + o, sizeof errbuf - o, " [... %zu bytes cut ...] ",
                          tail - head);
    for (size_t i = tail; i < n; i++)
        o += put_escaped(u[i], errbuf + o, BAD(i));
    errbuf[o] = '\0';
    if (bad != small)
        free(bad);
#undef BAD
}

int sim_error(int code, const char *src_file, int src_line, const char *fmt, ...)
{
    /* Formatted in full first (on the heap if it is long), so that a long
     * quoted value cannot push the expected form out of the message; the
     * arguments may point into errbuf (a message wrapping the last one). */
    char raw[2048];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int len = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    if (len < 0) {
        store_escaped("(the message could not be formatted)", 36);
    } else if ((size_t)len < sizeof raw) {
        store_escaped(raw, (size_t)len);
    } else {
        char *big = malloc((size_t)len + 1);
        if (big && vsnprintf(big, (size_t)len + 1, fmt, ap2) == len)
            store_escaped(big, (size_t)len);
        else
            store_escaped(raw, sizeof raw - 1);
        free(big);
    }
    va_end(ap2);
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
