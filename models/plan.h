/*
 * The CacheRoute planner (docs/design.md §8): from per-key request rates, the
 * number of destinations R, the per-destination capacity q_cap and the
 * warm-slot budget W, build the table T(b) of destinations for every
 * admitted key.
 *
 *   1. Sizing:     k_b = max(1, ceil(λ_b / q_cap)).
 *   2. Admission:  keys in descending λ_b (ties: ascending key); admit
 *                  while Σ k_b stays <= C = R·W; a key that does not fit
 *                  is skipped and later, smaller keys may still fit.
 *   3. Placement:  every destination starts at the cold-tail share
 *                  (non-admitted rate / R); for admitted keys in
 *                  descending λ_b, give key b the k_b least-loaded distinct
 *                  destinations (a min-heap over R; ties: lower index),
 *                  adding λ_b / k_b to each (LPT).  The ablation variants
 *                  place replicas by hash instead (PLAN_HASH), or pin every
 *                  key to one destination (k_b = 1, no replication).
 *
 * Cost: O(|B| log |B| + Σ k_b log R).  Graham's 4/3 − 1/(3m) LPT bound is
 * NOT claimed: a key is split into k_b equal parts that must land on
 * distinct destinations, which the classic bound does not cover (see
 * tests/test_plan.c for an instance).
 */
#ifndef CRSIM_MODELS_PLAN_H
#define CRSIM_MODELS_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "sim/core/u64map.h"

/* One key and its measured rate (requests/s, >= 0). */
typedef struct plan_key {
    uint64_t key;
    double rate;
} plan_key;

enum plan_placement {
    PLAN_LPT = 0, /* least-loaded distinct destinations (CacheRoute) */
    PLAN_HASH     /* k_b distinct destinations clockwise on a hash ring */
};

typedef struct plan_params {
    uint32_t n_dest;      /* R >= 1 */
    double q_cap;         /* per-destination capacity, requests/s (> 0) */
    double slots;         /* warm-slot budget W per destination (> 0) */
    enum plan_placement placement;
    int replicate;        /* 0: k_b = 1 for every key (affinity only) */
    uint32_t vnodes;      /* ring positions per destination (PLAN_HASH) */
} plan_params;

typedef struct plan {
    uint32_t n_dest;
    size_t n_keys;        /* keys offered */
    size_t n_admitted;
    uint64_t *key;        /* admitted keys, descending rate */
    double *rate;         /* their rates, requests/s */
    uint32_t *k;          /* their k_b */
    uint32_t *off;        /* n_admitted + 1 offsets into dest */
    uint32_t *dest;       /* destinations of admitted key i: dest[off[i] .. off[i+1]) */
    double *load;         /* expected rate per destination incl. cold tail, requests/s */
    uint64_t sum_k;       /* Σ k_b over admitted keys (<= capacity) */
    uint64_t capacity;    /* C = floor(R · W) */
    double admitted_rate; /* Σ λ_b over admitted keys */
    double cold_rate;     /* Σ λ_b over the rest */
    sim_u64map idx;       /* key -> admitted index (empty before the first build) */
} plan;

/*
 * Build the plan for `n` keys (`keys` is not modified; keys must be
 * distinct).  Fills *out (free with plan_fini, also after an error).
 * Returns SIM_OK, SIM_EINVAL (R = 0, q_cap or W not positive, a negative or
 * non-finite rate) or SIM_ENOMEM.
 */
int plan_build(const plan_key *keys, size_t n, const plan_params *p, plan *out);

/* Free the arrays of a plan.  Safe on a zeroed plan and twice. */
void plan_fini(plan *pl);

/* Admitted index of `key`, or -1 if it is not admitted.  O(1). */
int64_t plan_lookup(const plan *pl, uint64_t key);

/* max/mean of the expected per-destination load (1 = perfectly even). */
double plan_imbalance(const plan *pl);

#endif
