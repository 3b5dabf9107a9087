/*
 * Internal to the routers in models/route*.c and the planner (as SQLite
 * pairs btree.h with btreeInt.h): the consistent-hash ring, power of two
 * choices and the ring key hash that several policies share.  Not part of
 * the router API (models/route.h); the harness never includes it.
 */
#ifndef CRSIM_MODELS_ROUTE_INT_H
#define CRSIM_MODELS_ROUTE_INT_H

#include <stdint.h>

#include "models/route.h"
#include "sim/core/rng.h"

/* ---- consistent-hash ring shared by sticky (and later chwbl, dualmap) ---- */

typedef struct route__ring {
    uint64_t *point;  /* sorted ring positions */
    uint32_t *dest;   /* owner of each position */
    uint32_t n;       /* positions = n_dest × vnodes */
} route__ring;

/* Build a ring with `vnodes` positions per destination; position j of
 * destination d is XXH3-64 of the text "d<d>#<j>" with seed `salt` (two
 * rings with different salts are independent).  Returns SIM_OK or
 * SIM_ENOMEM. */
int route__ring_init(route__ring *ring, uint32_t n_dest, uint32_t vnodes, uint64_t salt);

/* Free the ring's arrays.  Safe on a zeroed ring. */
void route__ring_fini(route__ring *ring);

/* Index of the first position at or clockwise after `h` (wrapping). */
uint32_t route__ring_find(const route__ring *ring, uint64_t h);

/* Power of two choices: two distinct destinations drawn uniformly from
 * `rng`, the one with fewer requests in flight wins, ties to the first
 * drawn (as sgl-router power_of_two).  Shared by flat_lb and the fallback of the
 * planned routers.  Cannot fail. */
uint32_t route__p2c(sim_pcg32 *rng, const route_view *v);

/* Ring position of a routing key (a second hash of the key, so that the
 * ring does not depend on how keys were derived). */
uint64_t route__key_hash(uint64_t key, uint64_t salt);

#endif
