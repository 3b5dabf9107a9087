/*
 * cacheroute: planned prefix-affinity routing (docs/design.md §8), and the two
 * ablation variants of the paper's component study as named policies.
 *
 * The router counts requests per routing key.  At every control interval
 * (router.cacheroute.interval_s) it estimates per-key rates λ_b
 * (router.cacheroute.rate_estimate: the last interval's count / its length
 * by default, or a window of intervals, an EWMA, or the workload's nominal
 * rates) and re-plans (router.cacheroute.plan_policy: `fresh` rebuilds the
 * table from scratch with the planner, models/routers/plan.c, by default; `hold`
 * keeps the first table; `churn_aware` adjusts the previous table within a
 * move budget, plan_rebalance); the table then stays fixed until the next
 * interval.  Dispatch: an admitted key goes to the member of T(b) with the
 * fewest in-flight requests (ties: first in T(b)); any other key — and
 * every key before the first plan exists — goes to power-of-two choices
 * over the whole cluster.  docs/policies.md documents every option.
 *
 *   cacheroute    k_b = max(1, ceil(λ_b/q_cap)), LPT placement
 *   cr_replicate  same k_b, replicas placed by hash (no LPT)
 *   cr_affinity   k_b = 1 (every admitted key pinned to one destination,
 *                 placed by hash; no replication, no balancing)
 *
 * Besides the interval counts the router keeps, per key, what it sees of
 * each routed request (prompt and output tokens, and an estimate of the
 * key's shared prefix from the chained block hashes): the work-aware
 * options and the warm-token telemetry read it.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "models/routers/plan.h"
#include "models/routers/route_int.h"
#include "sim/core/wall.h"

/*
 * What the router remembers of one key across intervals (dense array,
 * indexed through cacheroute.kidx, in first-seen order).  The shared
 * prefix estimate: chained block hashes make "request x shares its first
 * d blocks with request y" the test x.blocks[d-1] == y.blocks[d-1].  The
 * key's first request stores its hash at depths 1, 2, 3, 4, 6, 8, 12, 16,
 * ... (two per octave) and at its full prompt depth; each later request
 * lowers the estimate to the deepest stored depth it still matches.  So
 * the estimate is the longest prefix every request of the key seen so far
 * shares with the first one, rounded down by at most a factor 1.5 (a
 * factor 2 below depth 4), at 16 bytes per stored depth (about
 * 2 log2(prompt blocks) + 1 of them) instead of the first prompt's whole
 * block list.
 */
typedef struct cr_keystat {
    uint64_t key;
    uint64_t n_req;         /* requests routed */
    double sum_prompt;      /* Σ prompt tokens */
    double sum_output;      /* Σ output tokens */
    uint32_t ref_off;       /* first stored depth in cacheroute.ref_* */
    uint16_t n_ref;         /* stored depths (ascending) */
    int16_t sp;             /* index of the current estimate in them, -1 = 0 blocks */
    uint32_t cur;           /* requests in the current interval */
    double ewma;            /* EWMA of the per-interval rate (not bias-corrected), requests/s */
} cr_keystat;

/* One stored depth of a key's history: the request's hash at that depth
 * beside the depth, so that the check reads one line. */
typedef struct cr_ref {
    uint64_t hash;
    uint32_t depth; /* blocks */
} cr_ref;

/* One slot of the per-interval counts: key and count (0 = empty slot). */
typedef struct cr_count {
    uint64_t key;
    uint32_t n;
} cr_count;

typedef struct cacheroute {
    plan pl;
    int have_plan;
    plan_params pp;
    double *cap;            /* q_cap_by_group per destination (pp.cap), or NULL */
    sim_pcg32 rng;
    double interval_s;
    double last_tick_s;
    int policy;             /* ROUTE__CR_PLAN_* after the legacy `replan` */
    int fallback;           /* ROUTE__CR_FALLBACK_* */
    int estimate;           /* ROUTE__CR_RATE_* */
    double epsilon, budget_share;
    uint32_t block_size;    /* tokens per block (0: footprints from prompt sizes) */
    /* Per-key request counts of the current interval (open addressing,
     * XXH3 slots).  Deliberately not the shared sim_u64map: the plan is
     * built from the keys in this table's slot order, plan_build sums
     * their rates in that order, and the sum's last bits decide LPT ties,
     * so another table (or order) changes recorded cacheroute results.
     * A slot's key and count side by side: one cache line a request. */
    cr_count *cs;
    uint64_t cmask;
    size_t cn;
    /* Per-key history (cr_keystat) and the stored block hashes. */
    sim_u64map kidx;
    cr_keystat *ks;
    size_t n_ks, cap_ks;
    cr_ref *ref;
    size_t n_ref, cap_ref;
    uint32_t window;        /* `window`: intervals kept (N) */
    uint32_t *win;          /* n_ks x window counts, ring by interval */
    size_t cap_win;         /* keys the window array has room for */
    double *win_len;        /* lengths of the last `window` intervals, s */
    double alpha;           /* `ewma`: 1 - 2^(-1/half_life) */
    uint64_t n_ended;       /* intervals ended */
    plan_key *nominal;      /* `nominal`: the workload's rates, requests/s */
    size_t n_nominal;
    /* Telemetry: one record per re-plan. */
    uint32_t n_plans;
    route_interval *iv;
    size_t n_iv, cap_iv;
    /* Gateway replica (cr_attach): the primary whose counts and plan this
     * state uses; NULL for the primary (or a single router). */
    struct cacheroute *primary;
} cacheroute;

static int counts_init(cacheroute *s, uint64_t slots)
{
    s->cs = calloc(slots, sizeof *s->cs);
    s->cmask = slots - 1;
    s->cn = 0;
    return s->cs ? SIM_OK : SIM_ERROR(SIM_ENOMEM, "out of memory (cacheroute counts)");
}

/* Count one request of `key`; count 0 marks an empty slot. */
static void count_key(cacheroute *s, uint64_t key)
{
    if (2 * (s->cn + 1) > s->cmask + 1) { /* keep load <= 1/2 */
        cr_count *oc = s->cs;
        uint64_t old = s->cmask + 1;
        s->cs = sim_xcalloc(2 * old, sizeof *s->cs);
        s->cmask = 2 * old - 1;
        for (uint64_t i = 0; i < old; i++)
            if (oc[i].n) {
                uint64_t j = XXH3_64bits(&oc[i].key, 8) & s->cmask;
                while (s->cs[j].n)
                    j = (j + 1) & s->cmask;
                s->cs[j] = oc[i];
            }
        free(oc);
    }
    uint64_t i = XXH3_64bits(&key, 8) & s->cmask;
    while (s->cs[i].n && s->cs[i].key != key)
        i = (i + 1) & s->cmask;
    if (!s->cs[i].n) {
        s->cs[i].key = key;
        s->cn++;
    }
    s->cs[i].n++;
}

/* ---- per-key history ---- */

static void ref_push(cacheroute *s, uint32_t depth, uint64_t hash)
{
    if (s->n_ref == s->cap_ref) {
        s->cap_ref = s->cap_ref ? 2 * s->cap_ref : 1024;
        s->ref = sim_xrealloc(s->ref, s->cap_ref * sizeof *s->ref);
    }
    s->ref[s->n_ref++] = (cr_ref){.hash = hash, .depth = depth};
}

/* Full prompt blocks of `r` (blocks past the prompt are output blocks). */
static uint32_t prompt_blocks(const cacheroute *s, const wl_request *r)
{
    if (!s->block_size || !r->blocks)
        return 0;
    uint32_t pb = r->prompt_tokens / s->block_size;
    return pb < r->n_blocks ? pb : r->n_blocks;
}

/* Record request `r` in its key's history.  O(1) amortised plus the
 * stored depths it no longer matches. */
static void note_request(cacheroute *s, const wl_request *r)
{
    uint32_t i = sim_u64map_get(&s->kidx, r->key);
    const uint32_t pb = prompt_blocks(s, r);
    if (i == SIM_U64MAP_NONE) {
        if (s->n_ks == s->cap_ks) {
            s->cap_ks = s->cap_ks ? 2 * s->cap_ks : 1024;
            s->ks = sim_xrealloc(s->ks, s->cap_ks * sizeof *s->ks);
        }
        i = (uint32_t)s->n_ks++;
        sim_u64map_put(&s->kidx, r->key, i);
        cr_keystat *k = &s->ks[i];
        *k = (cr_keystat){.key = r->key, .ref_off = (uint32_t)s->n_ref, .sp = -1};
        /* Depths 1, 2, 3, 4, 6, 8, 12, ... below pb, then pb itself. */
        for (uint32_t p2 = 1; p2 <= pb; p2 *= 2) {
            ref_push(s, p2, r->blocks[p2 - 1]), k->n_ref++;
            const uint32_t mid = p2 + p2 / 2;
            if (p2 >= 2 && mid < 2 * p2 && mid <= pb)
                ref_push(s, mid, r->blocks[mid - 1]), k->n_ref++;
        }
        if (k->n_ref && s->ref[s->n_ref - 1].depth != pb)
            ref_push(s, pb, r->blocks[pb - 1]), k->n_ref++;
        k->sp = (int16_t)(k->n_ref - 1);
    } else {
        cr_keystat *k = &s->ks[i];
        while (k->sp >= 0) {
            const cr_ref *x = &s->ref[k->ref_off + (uint32_t)k->sp];
            if (x->depth <= pb && r->blocks[x->depth - 1] == x->hash)
                break;
            k->sp--;
        }
    }
    cr_keystat *k = &s->ks[i];
    k->n_req++;
    k->cur++;
    k->sum_prompt += r->prompt_tokens;
    k->sum_output += r->output_tokens;
}

/* Shared-prefix footprint of key `i`, tokens: the estimate above, or the
 * mean prompt when blocks are unknown (block_size 0). */
static double key_footprint(const cacheroute *s, uint32_t i)
{
    const cr_keystat *k = &s->ks[i];
    if (!s->block_size)
        return k->n_req ? k->sum_prompt / (double)k->n_req : 0;
    return k->sp < 0 ? 0 : (double)s->ref[k->ref_off + (uint32_t)k->sp].depth * s->block_size;
}

/* Expected work per request of key `i`, tokens: mean uncached prefill
 * (mean prompt - shared prefix, >= 0) + mean output (decode tokens). */
static double key_work(const cacheroute *s, uint32_t i)
{
    const cr_keystat *k = &s->ks[i];
    if (!k->n_req)
        return 0;
    const double n = (double)k->n_req, unc = k->sum_prompt / n - key_footprint(s, i);
    return (unc > 0 ? unc : 0) + k->sum_output / n;
}

/* router.cacheroute (route_int.h): read by cacheroute, cr_replicate,
 * cr_affinity and (its interval) preble. */
typedef route__cacheroute_params cr_params;

static const char *const rate_names[] = {"interval", "window", "ewma", "nominal", NULL};
static const char *const policy_names[] = {"fresh", "hold", "churn_aware", NULL};
static const char *const weight_names[] = {"rate", "work", NULL};
static const char *const admission_names[] = {"slots", "bytes", NULL};
static const char *const fallback_names[] = {"none", "fast", NULL};

static const sim_cfg_key cr_schema[] = {
    {.path = "q_cap", .type = SIM_CFG_DOUBLE, .offset = offsetof(cr_params, q_cap), .min = 0,
     .max = 1e9, .def = "0", .unit = "requests/s",
     .help = "per-destination capacity q_cap (measured; 0 = not set, an error for cacheroute)"},
    {.path = "slots", .type = SIM_CFG_DOUBLE, .offset = offsetof(cr_params, slots), .min = 0,
     .max = 1e9, .def = "0",
     .help = "warm-slot budget W per destination (derived; 0 = not set, an error for cacheroute)"},
    {.path = "interval_s", .type = SIM_CFG_DOUBLE, .offset = offsetof(cr_params, interval_s),
     .min = 0, .max = 1e9, .flags = SIM_CFG_EXCL_MIN, .def = "60", .unit = "s",
     .help = "control interval: rates measured over one interval plan the next"},
    {.path = "replan", .type = SIM_CFG_BOOL, .offset = offsetof(cr_params, replan),
     .def = "true",
     .help = "legacy: false = plan_policy hold (keep the first plan); true = plan_policy as set"},
    {.path = "warm_start", .type = SIM_CFG_BOOL, .offset = offsetof(cr_params, warm_start),
     .def = "false",
     .help = "build the first plan from the workload's nominal key rates (labelled in the output)"},
    {.path = "rate_estimate", .type = SIM_CFG_ENUM, .offset = offsetof(cr_params, rate_estimate),
     .choices = rate_names, .def = "interval",
     .help = "per-key rates: last interval's counts/length (paper), window of rate_window "
             "intervals, ewma (rate_half_life), nominal (workload's rates x load)"},
    {.path = "rate_window", .type = SIM_CFG_INT, .offset = offsetof(cr_params, rate_window),
     .min = 1, .max = 1000, .def = "3", .unit = "intervals",
     .help = "rate_estimate window: counts over the last N intervals / their length"},
    {.path = "rate_half_life", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(cr_params, rate_half_life), .min = 0, .max = 1000,
     .flags = SIM_CFG_EXCL_MIN, .def = "2", .unit = "intervals",
     .help = "rate_estimate ewma: half-life of an interval's weight (bias-corrected EWMA)"},
    {.path = "plan_policy", .type = SIM_CFG_ENUM, .offset = offsetof(cr_params, plan_policy),
     .choices = policy_names, .def = "fresh",
     .help = "re-plan: fresh LPT every interval (paper's drift study), hold the first plan, or "
             "churn_aware (bounded moves; beyond the paper)"},
    {.path = "churn_epsilon", .type = SIM_CFG_DOUBLE,
     .offset = offsetof(cr_params, churn_epsilon), .min = 0, .max = 10, .def = "0.1",
     .help = "churn_aware: re-plan only while planned max/mean load > 1 + epsilon"},
    {.path = "churn_budget", .type = SIM_CFG_DOUBLE, .offset = offsetof(cr_params, churn_budget),
     .min = 0, .max = 1, .def = "0.1",
     .help = "churn_aware: rebalancing moves per re-plan, share of the admitted keys (ceil)"},
    {.path = "plan_weight", .type = SIM_CFG_ENUM, .offset = offsetof(cr_params, plan_weight),
     .choices = weight_names, .def = "rate",
     .help = "size k_b and balance on request rate (paper) or expected work: rate x (uncached "
             "prefill + decode tokens), beyond the paper"},
    {.path = "admission", .type = SIM_CFG_ENUM, .offset = offsetof(cr_params, admission),
     .choices = admission_names, .def = "slots",
     .help = "admit top keys into C = R*W equal slots (paper) or by value per warm token into "
             "W x mean footprint tokens per destination (beyond the paper)"},
    {.path = "fallback", .type = SIM_CFG_ENUM, .offset = offsetof(cr_params, fallback),
     .choices = fallback_names, .def = "none",
     .help = "faults: none = the table keeps a destination the health checks mark down until "
             "the next plan (paper; requests there fail and are retried); fast = a key goes to "
             "its live members, or power of two choices if none (docs/faults.md)"},
    {.path = "q_cap_by_group", .type = SIM_CFG_DOUBLE_LIST,
     .offset = offsetof(cr_params, q_cap_by_group),
     .count_offset = offsetof(cr_params, n_q_cap_by_group), .min = 0, .max = 1e9,
     .flags = SIM_CFG_EXCL_MIN, .def = "[]", .unit = "requests/s",
     .help = "mixed fleets: q_cap of each cluster.groups entry, in order (replaces q_cap; "
             "sizing by their mean, LPT by load/capacity; beyond the paper, "
             "docs/mixed-fleets.md); [] = q_cap everywhere"},
    {0},
};

const route_section route__sec_cacheroute = {.prefix = "router.cacheroute", .schema = cr_schema,
                                             .params_size = sizeof(cr_params)};

/* The hash placement uses sticky's ring size (router.sticky.vnodes). */
static const route_section *const cr_sections[] = {&route__sec_sticky, &route__sec_cacheroute,
                                                   NULL};

/* The policy after the legacy key: replan false means hold. */
static int effective_policy(const cr_params *p)
{
    return p->replan ? p->plan_policy : ROUTE__CR_PLAN_HOLD;
}

static int cr_check(const void *const *params, const route_env *env, const route_locate *loc)
{
    const route__sticky_params *sp = params[0];
    const cr_params *p = params[1];
    char at[512];
    if (p->n_q_cap_by_group && p->n_q_cap_by_group != env->n_groups)
        return SIM_ERROR(SIM_EINVAL, "%s: key 'router.cacheroute.q_cap_by_group' has %zu "
                         "value%s but cluster.groups has %u group%s; expected one q_cap per "
                         "group, in cluster.groups order (docs/mixed-fleets.md)",
                         route_where(loc, "router.cacheroute.q_cap_by_group", at, sizeof at),
                         p->n_q_cap_by_group, p->n_q_cap_by_group == 1 ? "" : "s", env->n_groups,
                         env->n_groups == 1 ? "" : "s");
    if (p->n_q_cap_by_group && effective_policy(p) == ROUTE__CR_PLAN_CHURN)
        return SIM_ERROR(SIM_EINVAL, "%s: key 'router.cacheroute.q_cap_by_group' is set with "
                         "plan_policy churn_aware, which does not rebalance by capacity; "
                         "expected plan_policy fresh or hold with per-group q_cap",
                         route_where(loc, "router.cacheroute.q_cap_by_group", at, sizeof at));
    if (!(p->q_cap > 0) && !p->n_q_cap_by_group)
        return SIM_ERROR(SIM_EINVAL, "%s: key 'router.cacheroute.q_cap' is not set; expected the "
                         "measured per-destination capacity in requests/s (> 0): run `crsim "
                         "calibrate CONFIG` and copy its router.cacheroute.q_cap",
                         route_where(loc, "router.cacheroute.q_cap", at, sizeof at));
    if (!(p->slots > 0))
        return SIM_ERROR(SIM_EINVAL, "%s: key 'router.cacheroute.slots' is not set; expected the "
                         "warm-slot budget W per destination (> 0): run `crsim calibrate "
                         "CONFIG` and copy its router.cacheroute.slots",
                         route_where(loc, "router.cacheroute.slots", at, sizeof at));
    if (!(p->interval_s > 0))
        return SIM_ERROR(SIM_EINVAL, "%s: key 'router.cacheroute.interval_s' is %g; expected a "
                         "control interval > 0 (s)",
                         route_where(loc, "router.cacheroute.interval_s", at, sizeof at),
                         p->interval_s);
    if (!p->replan && p->plan_policy == ROUTE__CR_PLAN_CHURN)
        return SIM_ERROR(SIM_EINVAL, "%s: key 'router.cacheroute.replan' is false (the legacy "
                         "spelling of plan_policy: hold) but router.cacheroute.plan_policy is "
                         "churn_aware; expected replan: true with churn_aware, or plan_policy: "
                         "hold without replan",
                         route_where(loc, "router.cacheroute.replan", at, sizeof at));
    return route__check_ring(env->n_dest, sp->vnodes, "router.sticky.vnodes", loc);
}

static unsigned cr_needs(const void *const *params)
{
    const cr_params *p = params[1];
    return p->warm_start || p->rate_estimate == ROUTE__CR_RATE_NOMINAL ? ROUTE_NEEDS_KEY_SHARES
                                                                        : 0;
}

static double cr_interval_s(const void *const *params)
{
    const cr_params *p = params[1];
    return p->interval_s;
}

static void free_state(cacheroute *s)
{
    plan_fini(&s->pl);
    free(s->cap);
    free(s->cs);
    free(s->iv);
    sim_u64map_fini(&s->kidx);
    free(s->ks);
    free(s->ref);
    free(s->win);
    free(s->win_len);
    free(s->nominal);
    memset(s, 0, sizeof *s);
}

static int create_variant(void *state, const route_env *env, const void *const *params,
                          enum plan_placement placement, int replicate)
{
    cacheroute *s = state;
    const route__sticky_params *sp = params[0];
    const cr_params *p = params[1];
    int rc = cr_check(params, env, NULL);
    if (rc)
        return rc;
    const int nominal = p->rate_estimate == ROUTE__CR_RATE_NOMINAL;
    if (nominal && !(env->nominal && env->n_nominal))
        return SIM_ERROR(SIM_EINVAL, "router.cacheroute.rate_estimate is nominal but the gateway "
                         "has no nominal key rates for this workload (route_env.nominal)");
    s->pp = (plan_params){.n_dest = env->n_dest, .q_cap = p->q_cap, .slots = p->slots,
                          .placement = placement, .replicate = replicate,
                          .vnodes = (uint32_t)sp->vnodes,
                          .weight = (enum plan_weight)p->plan_weight,
                          .admission = (enum plan_admission)p->admission,
                          .pool_tokens = (double)env->pool_blocks * env->block_size};
    if (p->n_q_cap_by_group) {
        /* Per-group q_cap as per-destination capacities (beyond the
         * paper; plan.h "Heterogeneous capacity"). */
        if (!env->group_of)
            return SIM_ERROR(SIM_EINVAL, "router.cacheroute.q_cap_by_group is set but the "
                             "gateway knows no destination groups (route_env.group_of)");
        s->cap = sim_xmalloc(env->n_dest * sizeof *s->cap);
        for (uint32_t d = 0; d < env->n_dest; d++) {
            SIM_ALWAYS(env->group_of[d] < p->n_q_cap_by_group); /* checked: one per group */
            s->cap[d] = p->q_cap_by_group[env->group_of[d]];
        }
        s->pp.cap = s->cap;
    }
    s->interval_s = p->interval_s;
    s->fallback = p->fallback;
    s->policy = effective_policy(p);
    s->estimate = p->rate_estimate;
    s->epsilon = p->churn_epsilon;
    s->budget_share = p->churn_budget;
    s->block_size = env->block_size;
    s->window = (uint32_t)p->rate_window;
    s->alpha = 1 - exp2(-1 / p->rate_half_life);
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    if ((rc = counts_init(s, 1024)) != SIM_OK || (rc = sim_u64map_init(&s->kidx, 1024)) != SIM_OK) {
        free_state(s);
        return rc;
    }
    if (s->estimate == ROUTE__CR_RATE_WINDOW)
        s->win_len = sim_xcalloc(s->window, sizeof *s->win_len);
    if ((p->warm_start || nominal) && env->nominal && env->n_nominal) {
        /* Warm start: the first plan from the workload's nominal rates
         * (labelled in the run's config and output), so the table exists
         * from t = 0 instead of after one measured interval. */
        plan_key *keys = sim_xmalloc(env->n_nominal * sizeof *keys);
        for (size_t i = 0; i < env->n_nominal; i++)
            keys[i] = (plan_key){env->nominal[i].key, env->nominal[i].rate * env->nominal_rate};
        rc = plan_build(keys, env->n_nominal, &s->pp, &s->pl);
        if (rc == SIM_OK && nominal) {
            s->nominal = keys;
            s->n_nominal = env->n_nominal;
        } else {
            free(keys);
        }
        if (rc == SIM_OK) {
            s->have_plan = 1;
            s->n_plans = 1;
        } else {
            free_state(s);
        }
    }
    return rc;
}

static int cr_create(void *state, const route_env *env, const void *const *params)
{
    return create_variant(state, env, params, PLAN_LPT, 1);
}

static int cr_replicate_create(void *state, const route_env *env, const void *const *params)
{
    return create_variant(state, env, params, PLAN_HASH, 1);
}

static int cr_affinity_create(void *state, const route_env *env, const void *const *params)
{
    return create_variant(state, env, params, PLAN_HASH, 0);
}

/* router.cacheroute.fallback fast (faults): the least loaded of a key's
 * table members d[0..k) that the health view does not mark down, or power
 * of two choices over the live destinations when none is. */
static uint32_t fast_fallback(cacheroute *own, const uint32_t *d, uint32_t k,
                              const route_view *v)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t j = 0; j < k; j++)
        if (!v->down[d[j]] && (best == UINT32_MAX || v->outstanding[d[j]] < v->outstanding[best]))
            best = d[j];
    return best != UINT32_MAX ? best : route__p2c(&own->rng, v);
}

static uint32_t cr_route(void *state, const wl_request *r, const route_view *v)
{
    cacheroute *own = state; /* its RNG; the view is its own in-flight count */
    cacheroute *s = own->primary ? own->primary : own; /* global counts, plan */
    count_key(s, r->key);
    note_request(s, r);
    if (s->have_plan) {
        int64_t a = plan_lookup(&s->pl, r->key);
        if (a >= 0) {
            /* k_b from the offsets (off[a + 1] - off[a] == k[a], models/
             * plan.c): the line of off[a] instead of a second array's. */
            const uint32_t *d = s->pl.dest + s->pl.off[a];
            const uint32_t k = s->pl.off[a + 1] - s->pl.off[a];
            if (v->down && own->fallback == ROUTE__CR_FALLBACK_FAST)
                return fast_fallback(own, d, k, v);
            uint32_t best = d[0];
            for (uint32_t j = 1; j < k; j++)
                if (v->outstanding[d[j]] < v->outstanding[best])
                    best = d[j];
            return best;
        }
    }
    return route__p2c(&own->rng, v);
}

/* A gateway replica (route_type.attach): its per-key counts feed the
 * primary's table (the aggregated telemetry the plan is built from) and
 * it dispatches with the primary's plan, but by its own in-flight counts
 * and with its own fallback RNG.  Its own tables are freed; the harness
 * ticks and asks telemetry of the primary only. */
static void cr_attach(void *state, void *primary)
{
    cacheroute *s = state;
    plan_fini(&s->pl);
    free(s->cs);
    free(s->iv);
    s->cs = NULL;
    s->iv = NULL;
    s->have_plan = 0;
    s->primary = primary;
}

/* Destinations of admitted entry ia of plan a that are not in entry ib of
 * plan b (0 when the sets are equal; k_a when ib < 0). */
static uint32_t new_dests(const plan *a, int64_t ia, const plan *b, int64_t ib)
{
    uint32_t added = 0;
    for (uint32_t i = a->off[ia]; i < a->off[ia + 1]; i++) {
        int in = 0;
        if (ib >= 0)
            for (uint32_t j = b->off[ib]; j < b->off[ib + 1] && !in; j++)
                in = b->dest[j] == a->dest[i];
        added += !in;
    }
    return added;
}

/*
 * The per-key rate estimate at the end of an interval of `len` s, into
 * keys[] (with work[] and tok[] from the key history when `want_work` /
 * `want_tok`); returns the number of keys and their total rate in *total.
 *
 *   interval  λ_b = c_b / len, the interval's count (the paper's rule).
 *   window    λ_b = Σ c_b / Σ len over the last min(N, ended) intervals.
 *   ewma      e_b <- (1 - α) e_b + α c_b / len, α = 1 - 2^(-1/h), every key
 *             every interval (0 when unseen), reported bias-corrected as
 *             e_b / (1 - (1 - α)^n) after n intervals (so a constant rate
 *             is estimated exactly from the first interval on).
 *   nominal   the workload's rates at the offered load (constant): *keys_out
 *             is then s->nominal itself (not a copy; O(keys) memory per
 *             interval otherwise); free it with free_keys.
 */
static size_t estimate_rates(cacheroute *s, double len, plan_key **keys_out, double **work_out,
                             double **tok_out, double *total)
{
    const int want_work = s->pp.weight == PLAN_WEIGHT_WORK;
    const int want_tok = s->pp.admission == PLAN_ADMIT_BYTES;
    const int nominal = s->estimate == ROUTE__CR_RATE_NOMINAL;
    size_t cap = s->estimate == ROUTE__CR_RATE_INTERVAL ? s->cn : s->n_ks;
    plan_key *keys = nominal ? s->nominal : sim_xmalloc((cap ? cap : 1) * sizeof *keys);
    size_t n = 0;
    *total = 0;
    if (s->estimate == ROUTE__CR_RATE_INTERVAL) {
        for (uint64_t i = 0; i <= s->cmask; i++)
            if (s->cs[i].n) {
                keys[n++] = (plan_key){s->cs[i].key, s->cs[i].n / len};
                *total += s->cs[i].n / len;
            }
    } else if (nominal) {
        for (size_t i = 0; i < s->n_nominal; i++)
            *total += s->nominal[i].rate;
        n = s->n_nominal;
    } else if (s->estimate == ROUTE__CR_RATE_WINDOW) {
        const uint32_t N = s->window, slot = (uint32_t)(s->n_ended % N);
        if (s->cap_win < s->n_ks) { /* room for keys seen since the last interval */
            size_t nc = s->cap_win ? s->cap_win : 1024;
            while (nc < s->n_ks)
                nc *= 2;
            s->win = sim_xrealloc(s->win, nc * N * sizeof *s->win);
            memset(s->win + s->cap_win * N, 0, (nc - s->cap_win) * N * sizeof *s->win);
            s->cap_win = nc;
        }
        s->win_len[slot] = len;
        double span = 0;
        for (uint32_t j = 0; j < N && j <= s->n_ended; j++)
            span += s->win_len[j];
        for (size_t i = 0; i < s->n_ks; i++) {
            uint32_t *w = s->win + i * N;
            w[slot] = s->ks[i].cur;
            uint64_t c = 0;
            for (uint32_t j = 0; j < N; j++)
                c += w[j];
            if (c) {
                keys[n++] = (plan_key){s->ks[i].key, (double)c / span};
                *total += (double)c / span;
            }
        }
    } else {
        const double corr = 1 - pow(1 - s->alpha, (double)(s->n_ended + 1));
        for (size_t i = 0; i < s->n_ks; i++) {
            cr_keystat *k = &s->ks[i];
            k->ewma = (1 - s->alpha) * k->ewma + s->alpha * (k->cur / len);
            const double r = k->ewma / corr;
            if (r > 0) {
                keys[n++] = (plan_key){k->key, r};
                *total += r;
            }
        }
    }
    double *work = NULL, *tok = NULL;
    if (want_work || want_tok) {
        work = want_work ? sim_xmalloc((n ? n : 1) * sizeof *work) : NULL;
        tok = want_tok ? sim_xmalloc((n ? n : 1) * sizeof *tok) : NULL;
        for (size_t i = 0; i < n; i++) {
            const uint32_t j = sim_u64map_get(&s->kidx, keys[i].key);
            if (work)
                work[i] = j == SIM_U64MAP_NONE ? 0 : key_work(s, j);
            if (tok)
                tok[i] = j == SIM_U64MAP_NONE ? 0 : key_footprint(s, j);
        }
    }
    *keys_out = keys;
    *work_out = work;
    *tok_out = tok;
    return n;
}

/* Free the keys of estimate_rates unless they are s->nominal. */
static void free_keys(const cacheroute *s, plan_key *keys)
{
    if (keys != s->nominal)
        free(keys);
}

static void cr_interval(void *state, double now_s)
{
    cacheroute *s = state;
    double len = now_s - s->last_tick_s;
    s->last_tick_s = now_s;
    if (!(len > 0))
        return;
    plan_key *keys;
    double *work, *tok, total;
    const size_t n = estimate_rates(s, len, &keys, &work, &tok, &total);
    s->n_ended++;
    for (size_t i = 0; i < s->n_ks; i++)
        s->ks[i].cur = 0;
    memset(s->cs, 0, (s->cmask + 1) * sizeof *s->cs); /* count 0: empty */
    s->cn = 0;

    if (s->have_plan && s->policy == ROUTE__CR_PLAN_HOLD && s->pl.n_admitted == 0) {
        free_keys(s, keys), free(work), free(tok); /* an empty held table stays empty */
        return;
    }
    const double t0 = sim_wall_s();
    plan next;
    plan_churn_stats cs = {.held_imbalance = NAN};
    int rc;
    if (!s->have_plan || s->policy == ROUTE__CR_PLAN_FRESH) {
        rc = plan_build_ex(keys, work, tok, n, &s->pp, &next);
    } else {
        /* hold: the held table under the new rates, never changed (an
         * infinite tolerance always skips); churn_aware: bounded moves. */
        const int hold = s->policy == ROUTE__CR_PLAN_HOLD;
        const uint64_t budget =
            hold ? 0 : (uint64_t)ceil(s->budget_share * (double)s->pl.n_admitted);
        const double eps = hold ? DBL_MAX / 4 : s->epsilon;
        const plan_params hp = {.n_dest = s->pp.n_dest, .q_cap = s->pp.q_cap,
                                .slots = s->pp.slots, .placement = PLAN_LPT,
                                .replicate = s->pp.replicate, .weight = s->pp.weight,
                                .admission = s->pp.admission, .pool_tokens = s->pp.pool_tokens,
                                .cap = s->pp.cap};
        /* hold keeps the hash variants' tables too: the held prediction
         * does not depend on the placement rule. */
        rc = plan_rebalance(&s->pl, keys, work, tok, n, hold ? &hp : &s->pp, eps, budget, &next,
                            &cs);
    }
    const double build_wall_s = sim_wall_s() - t0;
    free_keys(s, keys);
    free(work);
    free(tok);
    SIM_ALWAYS(rc == SIM_OK); /* parameters were validated at create */
    route_interval rec = {
        .t_s = now_s, .keys = n, .admitted = next.n_admitted, .sum_k = next.sum_k,
        .admitted_share = total > 0 ? next.admitted_rate / total : 0,
        .plan_imbalance = plan_imbalance(&next),
        .build_wall_s = build_wall_s,
        .churn_dest = NAN, .churn_k = NAN,
        .keys_moved = 0, .warm_tokens_moved = 0,
        .held_imbalance = cs.held_imbalance, .moves = cs.moves, .skipped = (uint32_t)cs.skipped};
    if (s->have_plan) {
        size_t both = 0, moved = 0, rek = 0;
        double warm = 0;
        for (size_t a = 0; a < s->pl.n_admitted; a++) {
            int64_t b = plan_lookup(&next, s->pl.key[a]);
            if (b < 0)
                continue;
            both++;
            const uint32_t added = new_dests(&next, b, &s->pl, (int64_t)a);
            const int changed = added || next.k[b] != s->pl.k[a];
            moved += changed;
            rek += s->pl.k[a] != next.k[b];
            if (added) {
                const uint32_t j = sim_u64map_get(&s->kidx, s->pl.key[a]);
                warm += j == SIM_U64MAP_NONE ? 0 : added * key_footprint(s, j);
            }
        }
        rec.churn_dest = both ? (double)moved / (double)both : NAN;
        rec.churn_k = both ? (double)rek / (double)both : NAN;
        rec.keys_moved = moved;
        rec.warm_tokens_moved = warm;
    }
    if (s->n_iv == s->cap_iv) {
        s->cap_iv = s->cap_iv ? 2 * s->cap_iv : 16;
        s->iv = sim_xrealloc(s->iv, s->cap_iv * sizeof *s->iv);
    }
    s->iv[s->n_iv++] = rec;
    plan_fini(&s->pl);
    s->pl = next;
    s->have_plan = 1;
    s->n_plans++;
}

static void cr_telemetry(void *state, route_telemetry *out)
{
    cacheroute *s = state;
    out->n_iv = s->n_iv;
    out->iv = sim_xmalloc((s->n_iv ? s->n_iv : 1) * sizeof *out->iv);
    if (s->n_iv) /* s->iv is NULL before the first re-plan */
        memcpy(out->iv, s->iv, s->n_iv * sizeof *out->iv);
    const plan *pl = &s->pl;
    size_t n = s->have_plan ? pl->n_admitted : 0;
    out->n_keys = n;
    out->key = sim_xmalloc((n ? n : 1) * sizeof *out->key);
    out->rate = sim_xmalloc((n ? n : 1) * sizeof *out->rate);
    out->kb = sim_xmalloc((n ? n : 1) * sizeof *out->kb);
    out->off = sim_xmalloc((n + 1) * sizeof *out->off);
    out->dest = sim_xmalloc((n ? pl->sum_k : 1) * sizeof *out->dest);
    if (n) {
        memcpy(out->key, pl->key, n * sizeof *out->key);
        memcpy(out->rate, pl->rate, n * sizeof *out->rate);
        memcpy(out->kb, pl->k, n * sizeof *out->kb);
        memcpy(out->off, pl->off, (n + 1) * sizeof *out->off);
        memcpy(out->dest, pl->dest, pl->sum_k * sizeof *out->dest);
    } else {
        out->off[0] = 0;
    }
}

static void cr_destroy(void *state)
{
    free_state(state);
}

const route_type route_cacheroute = {
    .name = "cacheroute",
    .help = "planned affinity: top-rate admission, k_b = ceil(rate/q_cap) replicas, LPT placement",
    .state_size = sizeof(cacheroute),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .sections = cr_sections,
    .check = cr_check,
    .needs = cr_needs,
    .interval_s = cr_interval_s,
    .create = cr_create,
    .route = cr_route,
    .on_interval = cr_interval,
    .telemetry = cr_telemetry,
    .destroy = cr_destroy,
    .attach = cr_attach,
};

const route_type route_cr_replicate = {
    .name = "cr_replicate",
    .help = "ablation: cacheroute admission and replication, replicas placed by hash (no LPT)",
    .state_size = sizeof(cacheroute),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .sections = cr_sections,
    .check = cr_check,
    .needs = cr_needs,
    .interval_s = cr_interval_s,
    .create = cr_replicate_create,
    .route = cr_route,
    .on_interval = cr_interval,
    .telemetry = cr_telemetry,
    .destroy = cr_destroy,
    .attach = cr_attach,
};

const route_type route_cr_affinity = {
    .name = "cr_affinity",
    .help = "ablation: cacheroute admission, each key pinned to one hashed destination",
    .state_size = sizeof(cacheroute),
    .metrics_blind = true, /* reads no scraped metric (route_type) */
    .sections = cr_sections,
    .check = cr_check,
    .needs = cr_needs,
    .interval_s = cr_interval_s,
    .create = cr_affinity_create,
    .route = cr_route,
    .on_interval = cr_interval,
    .telemetry = cr_telemetry,
    .destroy = cr_destroy,
    .attach = cr_attach,
};
