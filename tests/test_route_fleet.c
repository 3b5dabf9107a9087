/*
 * Routers in a mixed fleet (docs/mixed-fleets.md, "What routers know"):
 * cluster_run hands every router each destination's own KV pool, cost
 * model and max_num_batched_tokens (route_env.dest_*), and dualmap sizes
 * its per-destination estimates from them.  Known answers: on 20 x H100 +
 * 10 x H200 (the H200 group with max_num_batched_tokens 16384), dualmap's
 * t_p of destination d is the step time of one prefill chunk of its
 * group's batch budget divided by that budget, its backlog B = SLO / t_p,
 * and its prefix-index bound is its group's pool (28,335 and 73,309
 * blocks); without groups every destination has the uniform values, the
 * ones the single-cluster code computed.  Preble likewise: its t_p of d
 * is one chunk of d's batch budget on d's cost model per token, its
 * prefill time of a prompt of two budgets is two such chunks (its
 * window's missed prefill work), each its group's closed form.
 *
 * usage: test_route_fleet SPEC_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/cluster.h"
#include "models/cost.h"
#include "models/routers/route.h"
#include "models/routers/route_int.h"
#include "sim/core/error.h"
#include "sim/exp/exp.h"
#include "sim/exp/setup.h"
#include "check.h"

static char tmpdir[] = "/tmp/test_route_fleet.XXXXXX";

#define BASE                                                                                 \
    "experiment:\n  name: fleet\n  policies: [dualmap]\n  rates: [10]\n  slos: [2, 3, 4]\n"   \
    "router:\n  dualmap: {rebalance_tokens: 0, index_blocks: 0}\n"                             \
    "workload:\n  type: synthetic\n  duration_s: 60\n  keys: {n: 100, active_set: 16}\n"

static const char *mixed_cfg = BASE
    "cluster:\n"
    "  model: llama-3.3-70b\n"
    "  tp: 2\n"
    "  groups:\n"
    "    - {name: h100, destinations: 20, hardware: h100-sxm}\n"
    "    - {name: h200, destinations: 10, hardware: h200-sxm,\n"
    "       engine: {max_num_batched_tokens: 16384}}\n";

static const char *uniform_cfg = BASE "cluster: {destinations: 30, model: llama-3.3-70b}\n";

static void load_setup(const char *text, exp_config *cfg, exp_setup *s)
{
    char path[256];
    snprintf(path, sizeof path, "%s/c.yaml", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
    if (exp_config_load(path, NULL, 0, cfg) != SIM_OK || exp_setup_init(cfg, s) != SIM_OK) {
        fprintf(stderr, "%s\n", sim_errmsg());
        CHECK(!"config loads and sets up");
    }
}

/* What the probe saw when cluster_run created the router (replica 0). */
#define N_MAX 64
static struct {
    int created;
    uint32_t n;
    int had_dest_arrays;
    uint32_t env_pool[N_MAX], env_batch[N_MAX];
    const void *env_cost[N_MAX];
    double tp[N_MAX], backlog[N_MAX];
    uint32_t cap[N_MAX];
    /* preble */
    double pb_tp[N_MAX], pb_pf[N_MAX];
    uint32_t pb_bt[N_MAX];
} seen;

static const route_type *real_dualmap, *real_preble, *real;

/* The real router's create, then a copy of its per-destination estimates. */
static int probe_create(void *state, const route_env *env, const void *const *params)
{
    int rc = real->create(state, env, params);
    if (rc || seen.created++)
        return rc;
    CHECK(env->n_dest <= N_MAX);
    seen.n = env->n_dest;
    seen.had_dest_arrays = env->dest_pool_blocks && env->dest_batch_tokens && env->dest_cost;
    for (uint32_t d = 0; d < env->n_dest; d++) {
        seen.env_pool[d] = route_env_pool_blocks(env, d);
        seen.env_batch[d] = route_env_batch_tokens(env, d);
        seen.env_cost[d] = route_env_cost(env, d);
        if (real == real_dualmap) {
            seen.tp[d] = route__dualmap_tp_s(state, d);
            seen.backlog[d] = route__dualmap_backlog(state, d);
            seen.cap[d] = route__dualmap_index_cap(state, d);
        } else {
            seen.pb_tp[d] = route__preble_tp_s(state, d);
            seen.pb_bt[d] = route__preble_batch_tokens(state, d);
            seen.pb_pf[d] = route__preble_prefill_s(state, d, 2 * seen.pb_bt[d], 0);
        }
    }
    return rc;
}

/* t_p from a cost model and a batch budget: one chunk of `bt` tokens with
 * no earlier context, per token (docs/policies.md, dualmap). */
static double tp_of(const cost_model *m, uint32_t bt)
{
    const double c = bt;
    const cost_batch b = {.prefill_tokens = bt, .sampled = 1, .prefill_attn = c * c / 2};
    return cost_step_time(m, &b) / c;
}

/* Preble's prefill chunk: `n` new tokens after `ctx` cached ones in one
 * step (docs/policies.md, preble: ceil(new / batch_tokens) equal chunks,
 * attention over the cached context plus half the chunk). */
static double pb_chunk(const cost_model *m, uint32_t n, uint32_t ctx)
{
    const double c = n;
    const cost_batch b = {.prefill_tokens = n, .sampled = 1, .prefill_attn = c * (ctx + c / 2),
                          .prefill_ctx = ctx + n / 2};
    return cost_step_time(m, &b);
}

/* Preble's known answers for destination d on cost model m with batch
 * budget bt: t_p = one chunk of bt tokens / bt; a prompt of 2·bt new
 * tokens = 2 chunks of bt, the second after bt of context (the equal-chunk
 * rule spreads the context: attention 2bt·(0 + bt)/2 per chunk). */
static void check_preble(uint32_t d, const cost_model *m, uint32_t bt)
{
    CHECK_INT_EQ(seen.pb_bt[d], bt);
    CHECK(seen.pb_tp[d] == pb_chunk(m, bt, 0) / bt);
    const double c = bt, n = 2.0 * bt;
    const cost_batch b = {.prefill_tokens = bt, .sampled = 1, .prefill_attn = n * (n / 2) / 2,
                          .prefill_ctx = bt};
    CHECK(seen.pb_pf[d] == 2 * cost_step_time(m, &b));
    CHECK(seen.pb_pf[d] > 2 * c * seen.pb_tp[d] * 0.999); /* a longer prompt is no cheaper per token */
}

/* Run `text` with router `rt` through the probe; returns the run result. */
static void run_probe(const char *text, const route_type *rt, exp_config *cfg, exp_setup *s,
                      cluster_result *r)
{
    load_setup(text, cfg, s);
    route_env env = exp_setup_route_env(s, 1, 10);
    real = rt;
    route_type probe = *rt;
    probe.create = probe_create;
    memset(&seen, 0, sizeof seen);
    exp_stream *st;
    CHECK_INT_EQ(exp_stream_open(s, 1, 10, &st), SIM_OK);
    CHECK_INT_EQ(cluster_run(&s->cp, &probe, &env, cfg->router, exp_stream_source(st), r),
                 SIM_OK);
    exp_stream_close(st);
    CHECK_INT_EQ(seen.created, 1);
    CHECK_INT_EQ(seen.n, 30);
    /* Conservation holds with per-destination estimates. */
    CHECK_U64_EQ(r->n_arrived, r->n_completed + r->n_unfinished + r->n_rejected +
                                   r->n_too_long + r->n_failed);
    CHECK(r->n_completed > 0);
}

static void test_mixed(void)
{
    exp_config cfg;
    exp_setup s;
    cluster_result r;
    run_probe(mixed_cfg, real_dualmap, &cfg, &s, &r);
    CHECK(seen.had_dest_arrays);
    const double slo = 3; /* the median of experiment.slos */
    const uint32_t bt[2] = {8192, 16384};
    const uint32_t pool[2] = {28335, 73309}; /* docs/mixed-fleets.md (test fleet) */
    double tpg[2];
    for (int g = 0; g < 2; g++) {
        CHECK_INT_EQ(s.groups[g].pool_blocks, pool[g]);
        tpg[g] = tp_of(&s.groups[g].cost, bt[g]);
        CHECK(tpg[g] > 0 && isfinite(tpg[g]));
    }
    /* The estimates differ by group ... */
    CHECK(tpg[1] != tpg[0]);
    for (uint32_t d = 0; d < 30; d++) {
        const int g = d < 20 ? 0 : 1;
        CHECK_INT_EQ(seen.env_pool[d], pool[g]);
        CHECK_INT_EQ(seen.env_batch[d], bt[g]);
        CHECK(seen.env_cost[d] == &s.cp.groups[g].cost);
        /* ... and are exactly the group's closed form. */
        CHECK(seen.tp[d] == tpg[g]);
        CHECK(seen.backlog[d] == slo / tpg[g]);
        CHECK_INT_EQ(seen.cap[d], pool[g]);
    }
    CHECK(r.dest[25].routed > 0 && r.dest[5].routed > 0);
    cluster_result_fini(&r);
    exp_setup_fini(&s);
    exp_config_fini(&cfg);
}

static void test_uniform(void)
{
    exp_config cfg;
    exp_setup s;
    cluster_result r;
    run_probe(uniform_cfg, real_dualmap, &cfg, &s, &r);
    CHECK(!seen.had_dest_arrays); /* no groups: route_env as before */
    const double tp = tp_of(&s.cost, 8192);
    for (uint32_t d = 0; d < 30; d++) {
        CHECK_INT_EQ(seen.env_pool[d], 28335);
        CHECK(seen.tp[d] == tp);
        CHECK(seen.backlog[d] == 3 / tp);
        CHECK_INT_EQ(seen.cap[d], 28335);
    }
    cluster_result_fini(&r);
    exp_setup_fini(&s);
    exp_config_fini(&cfg);
}

static void test_preble(void)
{
    exp_config cfg;
    exp_setup s;
    cluster_result r;
    run_probe(mixed_cfg, real_preble, &cfg, &s, &r);
    CHECK(seen.had_dest_arrays);
    const uint32_t bt[2] = {8192, 16384};
    for (uint32_t d = 0; d < 30; d++) {
        const int g = d < 20 ? 0 : 1;
        check_preble(d, &s.groups[g].cost, bt[g]);
    }
    /* The groups differ (same compute, but the H200 group's chunk of
     * 16384 tokens carries more attention per token). */
    CHECK(seen.pb_tp[25] != seen.pb_tp[5]);
    CHECK(seen.pb_pf[25] != seen.pb_pf[5]);
    CHECK(r.dest[25].routed > 0 && r.dest[5].routed > 0);
    cluster_result_fini(&r);
    exp_setup_fini(&s);
    exp_config_fini(&cfg);
    /* Without groups: every destination has the single cluster's values. */
    run_probe(uniform_cfg, real_preble, &cfg, &s, &r);
    CHECK(!seen.had_dest_arrays);
    for (uint32_t d = 0; d < 30; d++)
        check_preble(d, &s.cost, 8192);
    cluster_result_fini(&r);
    exp_setup_fini(&s);
    exp_config_fini(&cfg);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_route_fleet SPEC_DIR\n");
        return 99;
    }
    setenv("CRSIM_SPEC_DIR", argv[1], 1);
    CHECK(mkdtemp(tmpdir) != NULL);
    real_dualmap = route_find("dualmap");
    real_preble = route_find("preble");
    CHECK(real_dualmap != NULL && real_preble != NULL);
    test_mixed();
    test_uniform();
    test_preble();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    CHECK(system(cmd) == 0);
    printf("route_fleet: ok\n");
    return 0;
}
