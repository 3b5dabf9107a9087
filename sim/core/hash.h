/*
 * The 64-bit integer mixers of the tree: the splitmix64 finaliser (Steele,
 * Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA
 * 2014, with Stafford's "Mix13" constants), used wherever a key that may be
 * a small integer or a structured hash needs well-spread bits: the slot of
 * sim_u64map, the router index keys, the regime diagnostic.  One copy, so
 * that every table spreads keys the same way.  Inline: it sits on the
 * routers' hot paths.
 */
#ifndef CRSIM_SIM_HASH_H
#define CRSIM_SIM_HASH_H

#include <stdint.h>

/* The splitmix64 finaliser of x: a bijection of 64-bit integers whose
 * every output bit depends on every input bit.  Cannot fail. */
static inline uint64_t sim_hash_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* A key for the pair (h, v): h combined with v + 1 times the 64-bit golden
 * ratio, then mixed, so that (h, v) and (h, v') land far apart (v + 1
 * keeps v = 0 from leaving h unchanged).  Used for (block hash,
 * destination) pairs.  Cannot fail. */
static inline uint64_t sim_hash_pair(uint64_t h, uint32_t v)
{
    return sim_hash_mix64(h ^ (0x9e3779b97f4a7c15ULL * ((uint64_t)v + 1)));
}

/* Length of the common prefix of two stretches a[0..n) and b[0..n) of
 * chained block-hash lists (workloads/request.h: a block's hash covers
 * its parent's) that start at the same depth: equal hashes at one
 * position mean equal prefixes up to it, so the last position is tested
 * first (a request usually passes a run whole or ends inside it) and only
 * a mismatch is scanned for its first difference.  Exact but for a 64-bit
 * collision of two different chains.  Used by the engine's prefix cache
 * (models/pcache.c, pcache_assume_chained) and sglang_cache_aware's
 * router tree; sim/core/pfxidx.c bisects instead (its runs are in
 * memory the router just touched).  Cannot fail. */
static inline uint32_t sim_chain_common(const uint64_t *a, const uint64_t *b, uint32_t n)
{
    if (n == 0 || a[n - 1] == b[n - 1])
        return n;
    uint32_t k = 0;
    while (a[k] == b[k]) /* stops before n - 1: a[n - 1] != b[n - 1] */
        k++;
    return k;
}

#endif
