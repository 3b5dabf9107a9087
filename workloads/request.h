/*
 * One inference request as the workload produces it and the router and
 * engine consume it.  The block list identifies the prompt's content: entry
 * i is the chained hash of full KV block i (the hash of block i−1's hash and
 * block i's tokens), so prefix matching is exact.
 */
#ifndef CRSIM_WORKLOADS_REQUEST_H
#define CRSIM_WORKLOADS_REQUEST_H

#include <stddef.h>
#include <stdint.h>

typedef struct wl_request {
    uint64_t id;            /* position in the arrival stream, from 0 */
    double arrival_s;       /* arrival time, simulated seconds */
    uint64_t key;           /* routing key (e.g. hash of the leading block ids) */
    uint32_t prompt_tokens; /* input length, tokens (>= 1) */
    uint32_t output_tokens; /* output length, tokens (>= 1) */
    uint32_t n_blocks;      /* number of entries in `blocks` */
    uint64_t *blocks;       /* chained hashes of the sequence's full blocks
                               (engine block size): the prompt's, followed,
                               when the workload knows the output's content
                               (synthetic conversations), by the blocks
                               reaching into the output, so generated KV
                               enters the cache for the next turn; a trace
                               replay gives prompt blocks only.  Never 0.
                               Read-only to the consumer; released with
                               wl_request_fini() as blocks_mode says. */
    uint8_t blocks_mode;    /* who owns `blocks` (enum wl_blocks_mode) */
} wl_request;

/* Ownership of wl_request.blocks. */
enum wl_blocks_mode {
    WL_BLOCKS_OWNED = 0,   /* malloc'd for this request; fini frees it */
    WL_BLOCKS_SHARED = 1,  /* points into a read-only table shared by every
                              run of the process (a trace replay with
                              wl_ingest_hashes); never written nor freed;
                              fini only forgets it */
    WL_BLOCKS_COUNTED = 2, /* the start of a reference-counted wl__hbuf
                              (a synthetic conversation's hashes, shared by
                              its turns); fini drops one reference */
};

/* A reference-counted block-hash buffer (internal to the workloads): one
 * synthetic conversation's hashes, held by its slot in the generator and
 * by each of its requests (WL_BLOCKS_COUNTED, `blocks` == h).  A turn only
 * appends after the blocks of the turns before it, which still read their
 * own leading n_blocks unchanged, so the requests of one conversation share
 * one array instead of a copy each.  A buffer released for the last time
 * goes back to its pool (its generator's), or is freed when the pool is
 * closed.  Single-threaded, like a run. */
typedef struct wl__hpool wl__hpool;
typedef struct wl__hbuf {
    uint32_t refs;   /* holders: the slot (if it still uses it) + requests */
    uint32_t cap;    /* capacity of h, blocks: a size class of the pool,
                        2^o times 1, 1.25, 1.5 or 1.75 (o >= 5) */
    wl__hpool *pool; /* where it returns; NULL: freed */
    struct wl__hbuf *next; /* in the pool's free list */
    uint64_t h[];
} wl__hbuf;

static inline wl__hbuf *wl__hbuf_of(uint64_t *blocks)
{
    return (wl__hbuf *)(void *)((char *)blocks - offsetof(wl__hbuf, h));
}

/* Drop one reference to b, returning it to its pool (or freeing it) with
 * the last.  Accepts NULL. */
void wl__hbuf_release(wl__hbuf *b);

/* A pool of released buffers by capacity, so that a generator's new
 * conversations reuse the buffers of finished ones instead of a malloc and
 * free each.  It lives until it is closed and its last buffer released. */
wl__hpool *wl__hpool_create(void);

/* A buffer of at least `n` hashes (refs = 1), from the pool or new; NULL
 * if out of memory. */
wl__hbuf *wl__hpool_get(wl__hpool *p, uint32_t n);

/* The generator is done with p: free its idle buffers; the buffers still
 * held are freed as they are released, the pool with the last.  Accepts
 * NULL. */
void wl__hpool_close(wl__hpool *p);

/* Chained hash of a block: XXH3-64 of (parent hash, content id), with 0
 * remapped to 1 (0 means "no block" in the cache).  `parent` is 0 for the
 * first block of a sequence.  Cannot fail. */
uint64_t wl_block_hash(uint64_t parent, uint64_t content);

/* Release the block list of `r` (not `r` itself) as r->blocks_mode says:
 * free it, forget it (shared) or drop a reference (counted).  Accepts
 * NULL. */
void wl_request_fini(wl_request *r);

#endif

#ifndef CRSIM_WL_SOURCE_DEFINED
#define CRSIM_WL_SOURCE_DEFINED
/* A request stream in arrival order (non-decreasing arrival_s): next()
 * writes the next request to *out and returns 1, returns 0 at the end, or
 * returns a negated status code (-SIM_ENOMEM when the request's block list
 * cannot be allocated) with the message set (sim_errmsg) and *out
 * untouched; after an error the stream may only be closed.  The consumer
 * owns each produced request's block list. */
typedef struct wl_source {
    void *state;
    int (*next)(void *state, wl_request *out);
    /* Closed-loop clients only (workloads/client.h); NULL for an open-loop
     * stream, which the consumer then pulls one request ahead as above.
     * peek(state, now_s, &t): 1 with *t (s, >= now_s) the time of the
     * next send, which the consumer takes with next() at that time (ids in
     * send order, arrival_s == *t); 0 when nothing is due until a request
     * in flight completes; -1 when no request will ever be sent again.
     * done(state, r, now_s, ttft_s): request r (still valid) ended at
     * now_s: completed, rejected or failed for good (ttft_s < 0 when it
     * had no first token); the client may schedule sends from it.  A
     * consumer re-peeks after every done(). */
    int (*peek)(void *state, double now_s, double *t_s);
    void (*done)(void *state, const wl_request *r, double now_s, double ttft_s);
} wl_source;
#endif
