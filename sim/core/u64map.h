/*
 * A small open-addressing hash map from 64-bit keys to 32-bit values
 * (linear probing, a splitmix64 finaliser for the slot, backward-shift
 * deletion, growth at half load), shared by the routers that keep
 * router-side indexes (dualmap's prefix index and hot-key counts,
 * preble's prefix tree).  Plain data: callers embed it.
 */
#ifndef CRSIM_SIM_U64MAP_H
#define CRSIM_SIM_U64MAP_H

#include <stddef.h>
#include <stdint.h>

#include "sim/core/prefetch.h"

/* The value that marks "absent" (never store it). */
#define SIM_U64MAP_NONE UINT32_MAX

/* One slot: key and value side by side, so a probe touches one cache
 * line instead of two. */
typedef struct sim_u64map_slot {
    uint64_t key;
    uint32_t val; /* SIM_U64MAP_NONE marks an empty slot */
} sim_u64map_slot;

typedef struct sim_u64map {
    sim_u64map_slot *slot;
    size_t mask;   /* slots - 1 (a power of two) */
    size_t n;      /* entries */
} sim_u64map;

/* Initialise with `slots` slots (a power of two >= 2).  Returns SIM_OK or
 * SIM_ENOMEM (then *m holds nothing). */
int sim_u64map_init(sim_u64map *m, size_t slots);

/* Free the arrays.  Safe on a zeroed map and twice.  Cannot fail. */
void sim_u64map_fini(sim_u64map *m);

/* Remove every entry (keeps the capacity).  Cannot fail. */
void sim_u64map_clear(sim_u64map *m);

/* The value of `k`, or SIM_U64MAP_NONE.  O(1) expected. */
uint32_t sim_u64map_get(const sim_u64map *m, uint64_t k);

/* Set k -> v (v != SIM_U64MAP_NONE), growing at half load (aborts if out of
 * memory while growing).  O(1) amortised. */
void sim_u64map_put(sim_u64map *m, uint64_t k, uint32_t v);

/* Remove `k` if present.  O(1) expected. */
void sim_u64map_del(sim_u64map *m, uint64_t k);

/* The slot hash: a splitmix64 finaliser (keys may be small integers or
 * hashes).  Cannot fail. */
static inline uint64_t sim_u64map_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Ask the CPU to fetch the home slot of `k` ahead of a lookup (a hint for
 * loops over many keys; large maps miss the cache on every probe).  No
 * effect on the map.  Inline so that loops issue it without a call.
 * Cannot fail. */
static inline void sim_u64map_prefetch(const sim_u64map *m, uint64_t k)
{
    SIM_PREFETCH(&m->slot[(size_t)sim_u64map_mix(k) & m->mask]);
}

#endif
