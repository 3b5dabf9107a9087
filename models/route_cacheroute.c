/*
 * cacheroute: planned prefix-affinity routing (docs/design.md §8), and the two
 * ablation variants of the paper's component study as named policies.
 *
 * The router counts requests per routing key.  At every control interval
 * (router.cacheroute.interval_s) it turns the previous interval's counts
 * into rates λ_b = count / interval and rebuilds the table T(b) with the
 * planner (models/plan.c); the table then stays fixed until the next
 * interval.  Dispatch: an admitted key goes to the member of T(b) with the
 * fewest in-flight requests (ties: first in T(b)); any other key — and
 * every key before the first plan exists — goes to power-of-two choices
 * over the whole cluster.
 *
 *   cacheroute    k_b = max(1, ceil(λ_b/q_cap)), LPT placement
 *   cr_replicate  same k_b, replicas placed by hash (no LPT)
 *   cr_affinity   k_b = 1 (every admitted key pinned to one destination,
 *                 placed by hash; no replication, no balancing)
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "sim/core/error.h"
#include "models/plan.h"
#include "models/route_int.h"
#include "sim/core/wall.h"

typedef struct cacheroute {
    plan pl;
    int have_plan;
    plan_params pp;
    sim_pcg32 rng;
    double interval_s;
    double last_tick_s;
    int replan;
    /* Per-key request counts of the current interval (open addressing,
     * XXH3 slots).  Deliberately not the shared sim_u64map: the plan is
     * built from the keys in this table's slot order, plan_build sums
     * their rates in that order, and the sum's last bits decide LPT ties,
     * so another table (or order) changes recorded cacheroute results. */
    uint64_t *ck;
    uint32_t *cc;
    uint64_t cmask;
    size_t cn;
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
    s->ck = calloc(slots, sizeof *s->ck);
    s->cc = calloc(slots, sizeof *s->cc);
    s->cmask = slots - 1;
    s->cn = 0;
    return s->ck && s->cc ? SIM_OK : SIM_ERROR(SIM_ENOMEM, "out of memory (cacheroute counts)");
}

/* Count one request of `key`; count 0 marks an empty slot. */
static void count_key(cacheroute *s, uint64_t key)
{
    if (2 * (s->cn + 1) > s->cmask + 1) { /* keep load <= 1/2 */
        uint64_t *ok = s->ck;
        uint32_t *oc = s->cc;
        uint64_t old = s->cmask + 1;
        s->ck = sim_xcalloc(2 * old, sizeof *s->ck);
        s->cc = sim_xcalloc(2 * old, sizeof *s->cc);
        s->cmask = 2 * old - 1;
        for (uint64_t i = 0; i < old; i++)
            if (oc[i]) {
                uint64_t j = XXH3_64bits(&ok[i], 8) & s->cmask;
                while (s->cc[j])
                    j = (j + 1) & s->cmask;
                s->ck[j] = ok[i];
                s->cc[j] = oc[i];
            }
        free(ok);
        free(oc);
    }
    uint64_t i = XXH3_64bits(&key, 8) & s->cmask;
    while (s->cc[i] && s->ck[i] != key)
        i = (i + 1) & s->cmask;
    if (!s->cc[i]) {
        s->ck[i] = key;
        s->cn++;
    }
    s->cc[i]++;
}

/* router.cacheroute (route_int.h): read by cacheroute, cr_replicate,
 * cr_affinity and (its interval) preble. */
typedef route__cacheroute_params cr_params;

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
     .help = "rebuild the plan every interval; false keeps the first plan (stale-plan studies)"},
    {.path = "warm_start", .type = SIM_CFG_BOOL, .offset = offsetof(cr_params, warm_start),
     .def = "false",
     .help = "build the first plan from the workload's nominal key rates (labelled in the output)"},
    {0},
};

const route_section route__sec_cacheroute = {.prefix = "router.cacheroute", .schema = cr_schema,
                                             .params_size = sizeof(cr_params)};

/* The hash placement uses sticky's ring size (router.sticky.vnodes). */
static const route_section *const cr_sections[] = {&route__sec_sticky, &route__sec_cacheroute,
                                                   NULL};

static int cr_check(const void *const *params, const route_env *env, const route_locate *loc)
{
    const route__sticky_params *sp = params[0];
    const cr_params *p = params[1];
    char at[512];
    if (!(p->q_cap > 0))
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
    return route__check_ring(env->n_dest, sp->vnodes, "router.sticky.vnodes", loc);
}

static unsigned cr_needs(const void *const *params)
{
    const cr_params *p = params[1];
    return p->warm_start ? ROUTE_NEEDS_KEY_SHARES : 0;
}

static double cr_interval_s(const void *const *params)
{
    const cr_params *p = params[1];
    return p->interval_s;
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
    s->pp = (plan_params){.n_dest = env->n_dest, .q_cap = p->q_cap, .slots = p->slots,
                          .placement = placement, .replicate = replicate,
                          .vnodes = (uint32_t)sp->vnodes};
    s->interval_s = p->interval_s;
    s->replan = p->replan;
    sim_pcg32_seed(&s->rng, env->seed, SIM_STREAM_ROUTER);
    rc = counts_init(s, 1024);
    if (rc == SIM_OK && p->warm_start && env->nominal && env->n_nominal) {
        /* Warm start: the first plan from the workload's nominal rates
         * (labelled in the run's config and output), so the table exists
         * from t = 0 instead of after one measured interval. */
        plan_key *keys = sim_xmalloc(env->n_nominal * sizeof *keys);
        for (size_t i = 0; i < env->n_nominal; i++)
            keys[i] = (plan_key){env->nominal[i].key, env->nominal[i].rate * env->nominal_rate};
        rc = plan_build(keys, env->n_nominal, &s->pp, &s->pl);
        free(keys);
        if (rc == SIM_OK) {
            s->have_plan = 1;
            s->n_plans = 1;
        } else {
            plan_fini(&s->pl);
            free(s->ck);
            free(s->cc);
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

static uint32_t cr_route(void *state, const wl_request *r, const route_view *v)
{
    cacheroute *own = state; /* its RNG; the view is its own in-flight count */
    cacheroute *s = own->primary ? own->primary : own; /* global counts, plan */
    count_key(s, r->key);
    if (s->have_plan) {
        int64_t a = plan_lookup(&s->pl, r->key);
        if (a >= 0) {
            const uint32_t *d = s->pl.dest + s->pl.off[a];
            const uint32_t k = s->pl.k[a];
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
    free(s->ck);
    free(s->cc);
    free(s->iv);
    s->ck = NULL;
    s->cc = NULL;
    s->iv = NULL;
    s->have_plan = 0;
    s->primary = primary;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Do admitted entry ia of plan a and ib of plan b have the same
 * destination set (as sets, not sequences)? */
static int same_dests(const plan *a, int64_t ia, const plan *b, int64_t ib)
{
    uint32_t k = a->k[ia];
    if (k != b->k[ib])
        return 0;
    uint32_t *x = sim_xmalloc(2 * k * sizeof *x), *y = x + k;
    memcpy(x, a->dest + a->off[ia], k * sizeof *x);
    memcpy(y, b->dest + b->off[ib], k * sizeof *y);
    qsort(x, k, sizeof *x, cmp_u32);
    qsort(y, k, sizeof *y, cmp_u32);
    int same = memcmp(x, y, k * sizeof *x) == 0;
    free(x);
    return same;
}

static void cr_interval(void *state, double now_s)
{
    cacheroute *s = state;
    double len = now_s - s->last_tick_s;
    s->last_tick_s = now_s;
    if (!(len > 0))
        return;
    if (s->have_plan && !s->replan) { /* stale plan: keep it, forget counts */
        memset(s->cc, 0, (s->cmask + 1) * sizeof *s->cc);
        s->cn = 0;
        return;
    }
    plan_key *keys = sim_xmalloc((s->cn ? s->cn : 1) * sizeof *keys);
    size_t n = 0;
    double total = 0;
    for (uint64_t i = 0; i <= s->cmask; i++)
        if (s->cc[i]) {
            keys[n++] = (plan_key){s->ck[i], s->cc[i] / len};
            total += s->cc[i] / len;
        }
    const double t0 = sim_wall_s();
    plan fresh;
    int rc = plan_build(keys, n, &s->pp, &fresh);
    const double build_wall_s = sim_wall_s() - t0;
    free(keys);
    SIM_ALWAYS(rc == SIM_OK); /* parameters were validated at create */
    route_interval rec = {
        .t_s = now_s, .keys = n, .admitted = fresh.n_admitted, .sum_k = fresh.sum_k,
        .admitted_share = total > 0 ? fresh.admitted_rate / total : 0,
        .plan_imbalance = plan_imbalance(&fresh),
        .build_wall_s = build_wall_s,
        .churn_dest = NAN, .churn_k = NAN};
    if (s->have_plan) {
        size_t both = 0, moved = 0, rek = 0;
        for (size_t a = 0; a < s->pl.n_admitted; a++) {
            int64_t b = plan_lookup(&fresh, s->pl.key[a]);
            if (b < 0)
                continue;
            both++;
            moved += !same_dests(&s->pl, (int64_t)a, &fresh, b);
            rek += s->pl.k[a] != fresh.k[b];
        }
        rec.churn_dest = both ? (double)moved / (double)both : NAN;
        rec.churn_k = both ? (double)rek / (double)both : NAN;
    }
    if (s->n_iv == s->cap_iv) {
        s->cap_iv = s->cap_iv ? 2 * s->cap_iv : 16;
        s->iv = sim_xrealloc(s->iv, s->cap_iv * sizeof *s->iv);
    }
    s->iv[s->n_iv++] = rec;
    plan_fini(&s->pl);
    s->pl = fresh;
    s->have_plan = 1;
    s->n_plans++;
    memset(s->cc, 0, (s->cmask + 1) * sizeof *s->cc);
    s->cn = 0;
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
    cacheroute *s = state;
    plan_fini(&s->pl);
    free(s->ck);
    free(s->cc);
    free(s->iv);
}

const route_type route_cacheroute = {
    .name = "cacheroute",
    .help = "planned affinity: top-rate admission, k_b = ceil(rate/q_cap) replicas, LPT placement",
    .state_size = sizeof(cacheroute),
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
