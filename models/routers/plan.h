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

/* What the planner sizes and balances (router.cacheroute.plan_weight). */
enum plan_weight {
    PLAN_WEIGHT_RATE = 0, /* requests/s: the paper's rule */
    PLAN_WEIGHT_WORK      /* requests/s x expected work per request (tokens) */
};

/* How keys are admitted (router.cacheroute.admission). */
enum plan_admission {
    PLAN_ADMIT_SLOTS = 0, /* descending weight while Σ k_b <= C = R·W (paper) */
    PLAN_ADMIT_BYTES      /* descending weight per warm token while
                             Σ k_b · F_b <= R · warm_tokens */
};

typedef struct plan_params {
    uint32_t n_dest;      /* R >= 1 */
    double q_cap;         /* per-destination capacity, requests/s (> 0) */
    double slots;         /* warm-slot budget W per destination (> 0) */
    enum plan_placement placement;
    int replicate;        /* 0: k_b = 1 for every key (affinity only) */
    uint32_t vnodes;      /* ring positions per destination (PLAN_HASH) */
    enum plan_weight weight;       /* PLAN_WEIGHT_RATE unless work-aware */
    enum plan_admission admission; /* PLAN_ADMIT_SLOTS unless byte-aware */
    double pool_tokens;   /* PLAN_ADMIT_BYTES: a destination's KV pool,
                             tokens, caps the warm-token budget (0 = unknown) */
    const double *cap;    /* mixed fleets, beyond the paper: n_dest
                             per-destination capacities q_d, requests/s
                             (finite, > 0; copied into the plan), or NULL =
                             q_cap for every destination (the paper's rule,
                             bit for bit).  See "Heterogeneous capacity". */
} plan_params;

/*
 * Heterogeneous capacity (router.cacheroute.q_cap_by_group; beyond the
 * paper, which assumes identical destinations; docs/mixed-fleets.md).  With
 * per-destination capacities q_d (p->cap):
 *   sizing     k_b = max(1, ceil(λ_b / q̄)), q̄ = Σ q_d / R the mean
 *              capacity, so Σ_b λ_b / q̄ capacity units are placed, as
 *              many as R destinations of the fleet's mean capacity hold;
 *   admission  unchanged (C = R·W slots; W stays one number);
 *   cold tail  destination d starts at cold · q_d / Σ q (the fallback's
 *              share in proportion to capacity);
 *   placement  LPT for uniform (related) machines, the rule of Gonzalez,
 *              Ibarra and Sahni ("Bounds for LPT schedules on uniform
 *              processors", SIAM J. Comput. 6(1), 1977): each admitted key,
 *              in descending weight, takes the k_b distinct destinations
 *              with the smallest (load_d + λ_b/k_b) / q_d (its parts would
 *              finish first there; ties: lower index), adding λ_b / k_b to
 *              each.  With equal q_d this is the uniform LPT's choice.
 *   imbalance  plan_imbalance is max_d (load_d / q_d) / (Σ load / Σ q).
 * PLAN_HASH placement ignores the capacities (the ablations place by
 * hash).  plan_rebalance keeps a held table (its skip test uses the
 * capacity-relative imbalance) but does not rebalance by capacity: when
 * the held table is not kept it builds a fresh plan (plan_build_ex).
 */

/*
 * Work-aware units.  With PLAN_WEIGHT_WORK a key's weight is
 * w_b = λ_b · u_b, u_b its expected work per request in tokens (uncached
 * prefill + decode, given per key by the caller; a key without an
 * estimate gets the rate-weighted mean of the keys that have one, and with
 * none at all every u_b = 1, which is rate weighting).  q_cap is then
 * expressed in the same units as q_cap_w = q_cap · ū, ū = Σ w_b / Σ λ_b the
 * offered mix's mean work per request: Σ_b w_b / q_cap_w = Σ_b λ_b / q_cap,
 * so the number of capacity units to place is unchanged and only moves
 * between keys.  With PLAN_WEIGHT_RATE, w_b = λ_b and q_cap_w = q_cap.
 *
 * Byte-aware admission.  A key's warm footprint F_b (tokens, per caller; a
 * key without one gets the mean of those that have one, or 1) costs
 * k_b · F_b of warm memory.  The budget per destination is W · F̄, F̄ the
 * mean footprint of the offered keys (the memory W slots of an average key
 * occupy: crsim calibrate derives W = 0.5 · pool / F the same way,
 * docs/qcap.md), capped at pool_tokens when known.  Keys go in descending
 * w_b / F_b (value per warm token; ties: ascending key), skipping a key that
 * does not fit, as slot admission does.
 */
typedef struct plan {
    uint32_t n_dest;
    size_t n_keys;        /* keys offered */
    size_t n_admitted;
    uint64_t *key;        /* admitted keys, descending weight */
    double *rate;         /* their rates, requests/s */
    double *w;            /* their weights (= rate for PLAN_WEIGHT_RATE) */
    uint32_t *k;          /* their k_b */
    uint32_t *off;        /* n_admitted + 1 offsets into dest */
    uint32_t *dest;       /* destinations of admitted key i: dest[off[i] .. off[i+1]) */
    double *load;         /* expected weight per destination incl. cold tail
                             (requests/s, or tokens/s when work-aware) */
    double *cap;          /* n_dest capacities q_d (plan_params.cap, owned
                             copy), or NULL for uniform capacity */
    uint64_t sum_k;       /* Σ k_b over admitted keys (<= capacity for slot admission) */
    uint64_t capacity;    /* C = floor(R · W) */
    double admitted_rate; /* Σ λ_b over admitted keys, requests/s */
    double cold_rate;     /* Σ λ_b over the rest, requests/s */
    double admitted_w;    /* Σ w_b over admitted keys (= admitted_rate for rate weight) */
    double cold_w;        /* Σ w_b over the rest */
    double q_cap_w;       /* q_cap in weight units (see above) */
    double warm_budget;   /* byte admission: R · budget per destination, tokens (0 otherwise) */
    double warm_used;     /* byte admission: Σ k_b · F_b of the admitted keys, tokens */
    sim_u64map idx;       /* key -> admitted index (empty before the first build) */
} plan;

/*
 * Build the plan for `n` keys (`keys` is not modified; keys must be
 * distinct).  Fills *out (free with plan_fini, also after an error).
 * Returns SIM_OK, SIM_EINVAL (R = 0, q_cap or W not positive, a negative or
 * non-finite rate, a capacity q_d not finite and positive) or SIM_ENOMEM.
 * q_cap is not read when p->cap is set.
 */
int plan_build(const plan_key *keys, size_t n, const plan_params *p, plan *out);

/*
 * plan_build with per-key work and footprints: work[i] is key i's expected
 * work per request in tokens (PLAN_WEIGHT_WORK; <= 0 = no estimate),
 * tokens[i] its warm footprint in tokens (PLAN_ADMIT_BYTES; <= 0 = no
 * estimate); either may be NULL (no estimates).  With PLAN_WEIGHT_RATE and
 * PLAN_ADMIT_SLOTS both are ignored and the result is plan_build's, bit for
 * bit.  Errors as plan_build (also a non-finite work or footprint).
 */
int plan_build_ex(const plan_key *keys, const double *work, const double *tokens, size_t n,
                  const plan_params *p, plan *out);

/* What plan_rebalance did. */
typedef struct plan_churn_stats {
    double held_imbalance; /* max/mean load of `prev`'s table under the new weights */
    int skipped;           /* 1: held_imbalance <= 1+ε, `prev`'s table kept */
    uint64_t moves;        /* rebalancing moves made (<= budget) */
    uint64_t resized;      /* kept keys whose k_b changed (replicas added/removed) */
    uint64_t placed;       /* newly admitted keys placed by LPT */
    int budget_hit;        /* 1: stopped because the move budget ran out */
} plan_churn_stats;

/*
 * Churn-aware re-plan (router.cacheroute.plan_policy = churn_aware; beyond
 * the paper).  Minimum-migration rebalancing in the spirit of Aggarwal,
 * Motwani and Zhu ("The load rebalancing problem", SPAA 2003 / J.
 * Algorithms 2006: relocate at most k jobs to minimise the makespan),
 * Sanders, Sivadasan and Skutella ("Online scheduling with bounded
 * migration", ICALP 2004: a migration budget per change) and Slicer (Adya et
 * al., OSDI 2016: move keys from hot to cold tasks only while the imbalance
 * exceeds a threshold, within a churn budget).  No approximation bound is
 * claimed for this greedy.
 *
 *   0. Predict `prev`'s table under the new weights (kept keys keep their
 *      destinations and k_b; every other key is cold tail).  If its
 *      max/mean <= 1 + epsilon, keep it (skipped = 1): *out is `prev`'s
 *      table with the new rates and loads.
 *   1. Otherwise size and admit as plan_build_ex does (same k_b, same
 *      admitted set).
 *   2. Start from `prev`: kept keys with unchanged k_b keep their
 *      destinations; a key whose k_b shrank keeps its k_b least-loaded old
 *      members; one whose k_b grew keeps its old members and adds the
 *      least-loaded distinct others; keys no longer admitted leave the
 *      table; newly admitted keys are placed by LPT.  Keys are handled in
 *      descending weight within each of these groups, in this order.
 *   3. While the most loaded destination h (ties: lower index) exceeds
 *      (1 + epsilon) × mean and fewer than `budget` moves were made: among
 *      the keys with a replica on h, take the one with the heaviest
 *      per-replica weight w_b/k_b that fits on the least-loaded destination
 *      l outside its set with load(l) + w_b/k_b < load(h), and move that
 *      replica from h to l.  Stop when no key fits (each move lowers
 *      Σ load², so this terminates).
 *
 * PLAN_HASH placement is not churn-aware: with it this is plan_build_ex.
 * Stats go to *st (may be NULL).  Errors as plan_build_ex, also epsilon
 * < 0 or not finite.  `prev` may be an empty (zeroed or built from no keys)
 * plan: then this is plan_build_ex.
 */
int plan_rebalance(const plan *prev, const plan_key *keys, const double *work,
                   const double *tokens, size_t n, const plan_params *p, double epsilon,
                   uint64_t budget, plan *out, plan_churn_stats *st);

/* Free the arrays of a plan.  Safe on a zeroed plan and twice. */
void plan_fini(plan *pl);

/* Admitted index of `key`, or -1 if it is not admitted.  O(1). */
int64_t plan_lookup(const plan *pl, uint64_t key);

/* max/mean of the expected per-destination load (1 = perfectly even);
 * with capacities, max/mean of load relative to capacity (see
 * "Heterogeneous capacity"). */
double plan_imbalance(const plan *pl);

#endif
