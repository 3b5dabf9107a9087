/*
 * The error funnel: formats messages into a per-thread buffer, and the
 * aborting allocators.  See error.h for why the buffer is thread-local.
 * Control characters in a message (from a key, value or file name the
 * user wrote) are escaped here, once for every message, so that every
 * error stays one line of text (issue 17, item 13).
 */
#include "sim/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char errbuf[1024];
static _Thread_local char errsrc[256];

/* Copy `s` to `out` (`size` >= 1 bytes, NUL-terminated), writing every
 * byte below 0x20 and 0x7f (DEL) as a C escape: \n, \r, \t, or \xHH.
 * Every other byte (printable ASCII, UTF-8 sequences, backslashes) is
 * copied, so a message without control characters is unchanged and
 * escaping twice gives the same text.  An escape that does not fit is
 * dropped whole, never cut. */
static void escape_controls(const char *s, char *out, size_t size)
{
    size_t o = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[5];
        size_t n;
        if (c >= 0x20 && c != 0x7f) {
            esc[0] = (char)c;
            n = 1;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            esc[0] = '\\';
            esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
            n = 2;
        } else {
            static const char hex[] = "0123456789abcdef";
            esc[0] = '\\';
            esc[1] = 'x';
            esc[2] = hex[c >> 4];
            esc[3] = hex[c & 15];
            n = 4;
        }
        if (o + n >= size)
            break;
        memcpy(out + o, esc, n);
        o += n;
    }
    out[o] = '\0';
}

int sim_error(int code, const char *src_file, int src_line, const char *fmt, ...)
{
    char raw[sizeof errbuf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    escape_controls(raw, errbuf, sizeof errbuf);
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
