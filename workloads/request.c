/*
 * Chained block hashing shared by every workload.
 */
#include "workloads/request.h"

#include <stdbool.h>
#include <stdlib.h>

#include "workloads/blockhash.h"

uint64_t wl_block_hash(uint64_t parent, uint64_t content) { return wl__block_hash(parent, content); }

/* Size classes of quarter octaves: 2^o, 1.25, 1.5 and 1.75 times 2^o
 * blocks for o = 5 .. 31 (those below 2^32), so that a buffer has at most
 * 25 % more room than asked (a power of two: up to 100 %; round 12,
 * docs/performance.md: at R = 1000 the buffers held by requests in flight
 * were most of flat_lb's memory). */
enum { HP_MIN_LOG = 5, HP_STEPS = 4, HP_CLASSES = HP_STEPS * (32 - HP_MIN_LOG) };

struct wl__hpool {
    uint64_t out;   /* buffers handed out and not yet back */
    bool closed;
    wl__hbuf *idle[HP_CLASSES];
};

wl__hpool *wl__hpool_create(void) { return calloc(1, sizeof(wl__hpool)); }

/* The smallest class capacity >= n (n >= 1), perhaps above UINT32_MAX. */
static uint64_t hp_cap(uint32_t n)
{
    if (n <= (1u << HP_MIN_LOG))
        return 1u << HP_MIN_LOG;
    const unsigned o = 31u - (unsigned)__builtin_clz(n - 1); /* 2^o < n <= 2^(o+1) */
    const uint64_t step = (uint64_t)1 << (o - 2);             /* a quarter of 2^o */
    return (((uint64_t)n + step - 1) / step) * step;          /* 5..8 steps */
}

/* The class of a capacity hp_cap gave. */
static unsigned hp_class(uint32_t cap)
{
    const unsigned o = 31u - (unsigned)__builtin_clz(cap);
    return HP_STEPS * (o - HP_MIN_LOG) + (unsigned)(cap >> (o - 2)) - HP_STEPS;
}

wl__hbuf *wl__hpool_get(wl__hpool *p, uint32_t n)
{
    const uint64_t cap = hp_cap(n ? n : 1);
    if (cap > UINT32_MAX)
        return NULL;
    wl__hbuf *b = p ? p->idle[hp_class((uint32_t)cap)] : NULL;
    if (b) {
        p->idle[hp_class((uint32_t)cap)] = b->next;
    } else {
        b = malloc(sizeof *b + cap * sizeof b->h[0]);
        if (!b)
            return NULL;
        b->cap = (uint32_t)cap;
        b->pool = p;
    }
    b->refs = 1;
    b->next = NULL;
    if (p)
        p->out++;
    return b;
}

void wl__hbuf_release(wl__hbuf *b)
{
    if (!b || --b->refs > 0)
        return;
    wl__hpool *p = b->pool;
    if (!p) {
        free(b);
        return;
    }
    p->out--;
    if (p->closed) {
        free(b);
        if (p->out == 0)
            free(p);
        return;
    }
    const unsigned k = hp_class(b->cap);
    b->next = p->idle[k];
    p->idle[k] = b;
}

void wl__hpool_close(wl__hpool *p)
{
    if (!p)
        return;
    for (unsigned k = 0; k < HP_CLASSES; k++)
        for (wl__hbuf *b = p->idle[k], *nx; b; b = nx) {
            nx = b->next;
            free(b);
        }
    if (p->out == 0) {
        free(p);
        return;
    }
    p->closed = true;
    for (unsigned k = 0; k < HP_CLASSES; k++)
        p->idle[k] = NULL;
}

void wl_request_fini(wl_request *r)
{
    if (!r)
        return;
    if (r->blocks_mode == WL_BLOCKS_OWNED)
        free(r->blocks);
    else if (r->blocks_mode == WL_BLOCKS_COUNTED && r->blocks)
        wl__hbuf_release(wl__hbuf_of(r->blocks));
    r->blocks = NULL;
    r->blocks_mode = WL_BLOCKS_OWNED;
    r->n_blocks = 0;
}
