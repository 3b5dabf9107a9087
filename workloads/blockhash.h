/*
 * The block-hash chain of the workloads module, inline (not part of its
 * API: wl_block_hash in workloads/request.h is the public form).
 *
 * xxHash's own header-only mode (XXH_INLINE_ALL, xxhash.h "Inlining"): the
 * same XXH3-64 functions as libxxhash, compiled into the caller, so the
 * short fixed-size inputs hashed per KV block (16 and 24 bytes) take
 * XXH3's short-input paths without a call through the PLT.  XXH3's
 * output is stable since xxHash 0.8.0 (xxhash.h), so the values are
 * those of the library: every stream is unchanged.  Include this header
 * instead of <xxhash.h>, in .c files only.
 */
#ifndef CRSIM_WORKLOADS_BLOCKHASH_H
#define CRSIM_WORKLOADS_BLOCKHASH_H

#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* wl_block_hash (workloads/request.h): XXH3-64 of {parent, content}, 0
 * mapped to 1 (a hash is never 0). */
static inline uint64_t wl__block_hash(uint64_t parent, uint64_t content)
{
    const uint64_t in[2] = {parent, content};
    const uint64_t h = XXH3_64bits(in, sizeof in);
    return h ? h : 1;
}

#endif
