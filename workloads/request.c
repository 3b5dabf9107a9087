/*
 * Chained block hashing shared by every workload.
 */
#include "workloads/request.h"

#include <stdlib.h>

#include "workloads/blockhash.h"

uint64_t wl_block_hash(uint64_t parent, uint64_t content) { return wl__block_hash(parent, content); }

void wl__hbuf_release(wl__hbuf *b)
{
    if (b && --b->refs == 0)
        free(b);
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
