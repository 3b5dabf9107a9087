/*
 * Chained block hashing shared by every workload.
 */
#include "workloads/request.h"

#include <stdlib.h>
#include <xxhash.h>

uint64_t wl_block_hash(uint64_t parent, uint64_t content)
{
    const uint64_t in[2] = {parent, content};
    uint64_t h = XXH3_64bits(in, sizeof in);
    return h ? h : 1;
}

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
