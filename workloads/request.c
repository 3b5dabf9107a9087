/*
 * Chained block hashing shared by every workload.
 */
#include "workloads/request.h"

#include <stdbool.h>
#include <stdlib.h>

#include "workloads/blockhash.h"

uint64_t wl_block_hash(uint64_t parent, uint64_t content) { return wl__block_hash(parent, content); }

/* Capacities 2^5 .. 2^31 blocks. */
enum { HP_MIN_LOG = 5, HP_CLASSES = 32 - HP_MIN_LOG };

struct wl__hpool {
    uint64_t out;   /* buffers handed out and not yet back */
    bool closed;
    wl__hbuf *idle[HP_CLASSES];
};

wl__hpool *wl__hpool_create(void) { return calloc(1, sizeof(wl__hpool)); }

static unsigned hp_class(uint32_t cap) { return (unsigned)__builtin_ctz(cap) - HP_MIN_LOG; }

wl__hbuf *wl__hpool_get(wl__hpool *p, uint32_t n)
{
    uint64_t cap = (uint64_t)1 << HP_MIN_LOG;
    while (cap < n)
        cap *= 2;
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
