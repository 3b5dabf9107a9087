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

/* The same question for stretches whose first entries are known equal
 * (a[0] == b[0], na and nb >= 1) and whose other entries may be cold
 * lines: the number of leading entries of a[0..na) and b[0..nb) that
 * agree, found by the last entry of the overlap, then by `hint` (agreeing
 * at hint - 1 and parting at hint settles it: a guess such as another
 * stretch's answer against the same b; 0 = none; any value gives the same
 * answer), then by a bisection of the rest (the agreeing entries are a
 * prefix: chained).  O(1) probes on a hit, O(log n) otherwise.  Used by
 * sim/core/pfxidx.c and the run indexes of models/routers/route_kvidx.c.  Cannot
 * fail. */
static inline uint32_t sim_chain_common_bisect(const uint64_t *a, uint32_t na, const uint64_t *b,
                                               uint32_t nb, uint32_t hint)
{
    const uint32_t m = na < nb ? na : nb;
    if (a[m - 1] == b[m - 1])
        return m;
    if (hint >= 1 && hint < m && a[hint - 1] == b[hint - 1] && a[hint] != b[hint])
        return hint;
    uint32_t lo = 1, hi = m - 1; /* a[lo-1] == b[lo-1]; a[hi] != b[hi] */
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid] == b[mid])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
