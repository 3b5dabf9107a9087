/*
 * Chained block hashing shared by every workload.
 */
#include "workloads/request.h"

#include <stdlib.h>

#include "workloads/blockhash.h"

uint64_t wl_block_hash(uint64_t parent, uint64_t content) { return wl__block_hash(parent, content); }

void wl_request_fini(wl_request *r)
{
    if (!r)
        return;
    if (!r->shared_blocks)
        free(r->blocks);
    r->blocks = NULL;
    r->shared_blocks = 0;
    r->n_blocks = 0;
}
