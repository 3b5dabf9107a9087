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

#endif
