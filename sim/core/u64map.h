/*
 * A small open-addressing hash map from 64-bit keys to 32-bit values
 * (linear probing, the splitmix64 finaliser sim_hash_mix64 for the slot, backward-shift
 * deletion, growth at half load), shared by the routers that keep
 * router-side indexes (dualmap's prefix index and hot-key counts,
 * preble's prefix tree, the prefix cache's node map, cacheroute's plan
 * index and interval counts) and the offline tools (the regime
 * diagnostic, the calibration footprint, the stream description).  The
 * tree's only hash table: a table that needs more than a u32 per key maps
 * keys to dense indices into its own arrays.  Plain data: callers embed
 * it.
 */
#ifndef CRSIM_SIM_U64MAP_H
#define CRSIM_SIM_U64MAP_H

#include <stddef.h>
#include <stdint.h>

#include "sim/core/hash.h"
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

/* If `k` is absent, set k -> v (v != SIM_U64MAP_NONE) and return
 * SIM_U64MAP_NONE; if present, return its value and change nothing.  One
 * probe for the common "find, else add" (e.g. a key -> dense index map).
 * Grows like sim_u64map_put (aborts if out of memory while growing).
 * O(1) amortised. */
uint32_t sim_u64map_insert(sim_u64map *m, uint64_t k, uint32_t v);

/* Iterate: starting from *pos = 0, each call stores the next entry's key
 * and value in *k and *v, advances *pos and returns 1; it returns 0 when
 * no entry is left.  The order is the slot order (deterministic for a
 * given sequence of operations, but not insertion order).  The map must
 * not change during an iteration.  Cannot fail. */
int sim_u64map_next(const sim_u64map *m, size_t *pos, uint64_t *k, uint32_t *v);

/* Ask the CPU to fetch the home slot of `k` ahead of a lookup (a hint for
 * loops over many keys; large maps miss the cache on every probe).  No
 * effect on the map.  Inline so that loops issue it without a call.
 * Cannot fail. */
static inline void sim_u64map_prefetch(const sim_u64map *m, uint64_t k)
{
    SIM_PREFETCH(&m->slot[(size_t)sim_hash_mix64(k) & m->mask]);
}

#endif
