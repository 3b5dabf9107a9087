/*
 * Mixed fleets (issue 15 item 5, docs/mixed-fleets.md): the config
 * binder's lists of mappings (SIM_CFG_TABLE), cluster.groups in the
 * experiment config, the per-group KV pools and step times a set-up
 * builds, the destinations a router sees, CacheRoute's planner with
 * per-destination capacity on a hand-made case, and bad group configs.
 *
 * usage: test_fleet SPEC_DIR
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/cluster.h"
#include "models/cost.h"
#include "models/routers/plan.h"
#include "models/routers/route.h"
#include "sim/core/config.h"
#include "sim/core/error.h"
#include "sim/exp/exp.h"
#include "sim/exp/setup.h"
#include "check.h"

/* ---- binder: SIM_CFG_TABLE ---- */

typedef struct item {
    char *name;
    int64_t n;
    double x;
    int64_t deep;
} item;

typedef struct top {
    item *items;
    size_t n_items;
    int64_t other;
} top;

static const sim_cfg_key item_schema[] = {
    {.path = "name", .type = SIM_CFG_STRING, .offset = offsetof(item, name)},
    {.path = "count", .type = SIM_CFG_INT, .offset = offsetof(item, n), .min = 1, .max = 10},
    {.path = "x", .type = SIM_CFG_DOUBLE, .offset = offsetof(item, x), .def = "0.5"},
    {.path = "sub.deep", .type = SIM_CFG_INT, .offset = offsetof(item, deep), .def = "7"},
    {0},
};

static const sim_cfg_key top_schema[] = {
    {.path = "a.items", .type = SIM_CFG_TABLE, .offset = offsetof(top, items),
     .count_offset = offsetof(top, n_items), .table = item_schema, .elem_size = sizeof(item),
     .def = "[]"},
    {.path = "a.other", .type = SIM_CFG_INT, .offset = offsetof(top, other), .def = "3"},
    {0},
};

/* Bind `text` (named "t.yaml") into *t; returns the bind status. */
static int bind_text(const char *text, top *t)
{
    sim_cfgdoc *d = NULL;
    memset(t, 0, sizeof *t);
    int rc = sim_cfgdoc_parse_string(text, "t.yaml", &d);
    if (rc == SIM_OK)
        rc = sim_cfg_bind(d, top_schema, t);
    sim_cfgdoc_destroy(d);
    return rc;
}

static void test_table_binder(void)
{
    CHECK_INT_EQ(sim_cfg_schema_check(top_schema), SIM_OK);
    top t;
    CHECK_INT_EQ(bind_text("a:\n"
                           "  items:\n"
                           "    - {name: p, count: 2}\n"
                           "    - name: q\n"
                           "      count: 10\n"
                           "      x: 1.25\n"
                           "      sub: {deep: 9}\n", &t), SIM_OK);
    CHECK_INT_EQ(t.n_items, 2);
    CHECK(strcmp(t.items[0].name, "p") == 0 && strcmp(t.items[1].name, "q") == 0);
    CHECK_INT_EQ(t.items[0].n, 2);
    CHECK_INT_EQ(t.items[1].n, 10);
    CHECK(t.items[0].x == 0.5 && t.items[1].x == 1.25); /* default, written */
    CHECK_INT_EQ(t.items[0].deep, 7);
    CHECK_INT_EQ(t.items[1].deep, 9);
    CHECK_INT_EQ(t.other, 3);
    /* Canonical dump: flow style, schema order, and it binds back to the
     * same dump. */
    char *dump = sim_cfg_dump(top_schema, &t);
    CHECK(strstr(dump, "items: [{name: p, count: 2, x: 0.5, sub: {deep: 7}}, "
                       "{name: q, count: 10, x: 1.25, sub: {deep: 9}}]") != NULL);
    top u;
    CHECK_INT_EQ(bind_text(dump, &u), SIM_OK);
    char *dump2 = sim_cfg_dump(top_schema, &u);
    CHECK(strcmp(dump, dump2) == 0);
    free(dump);
    free(dump2);
    sim_cfg_free(top_schema, &t);
    sim_cfg_free(top_schema, &u);
    CHECK(t.items == NULL && t.n_items == 0);

    /* Absent: the default []. */
    CHECK_INT_EQ(bind_text("a: {other: 4}\n", &t), SIM_OK);
    CHECK(t.n_items == 0 && t.items == NULL && t.other == 4);
    dump = sim_cfg_dump(top_schema, &t);
    CHECK(strstr(dump, "items: []") != NULL);
    free(dump);

    /* Errors name file, line and the element's key. */
    CHECK_INT_EQ(bind_text("a:\n  items: 3\n", &t), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "t.yaml:2: key 'a.items' is '3'; expected a list of mappings");
    CHECK_INT_EQ(bind_text("a:\n  items:\n    - {name: p, count: 2}\n    - 5\n", &t), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "t.yaml:4: key 'a.items[1]' is '5'; expected a mapping with "
                                     "keys: name, count, x, sub");
    CHECK_INT_EQ(bind_text("a:\n  items:\n    - {name: p, count: 2}\n    - {name: q, m: 2}\n", &t),
                 SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "t.yaml:4: unknown key 'a.items[1].m'");
    CHECK_STR_CONTAINS(sim_errmsg(), "under 'a.items[1]'");
    CHECK_INT_EQ(bind_text("a:\n  items:\n    - {name: p, count: 2}\n    - {name: q}\n", &t),
                 SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "t.yaml:4: missing required key 'a.items[1].count'");
    CHECK_INT_EQ(bind_text("a:\n  items:\n    - {name: p, count: 11}\n", &t), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "t.yaml:3: key 'a.items[0].count' is 11; expected an integer "
                                     "in [1, 10]");
    CHECK_INT_EQ(bind_text("a:\n  items:\n    - {name: p, count: 1, sub: 2}\n", &t), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "key 'a.items[0].sub' is '2'; expected a mapping");
    CHECK(t.items == NULL && t.n_items == 0); /* nothing left on error */

    /* Locating an element and a key inside it. */
    sim_cfgdoc *d;
    CHECK_INT_EQ(sim_cfgdoc_parse_string("a:\n  items:\n    - {name: p, count: 2}\n    - name: q\n"
                                         "      count: 3\n", "t.yaml", &d), SIM_OK);
    char at[64];
    CHECK(sim_cfgdoc_locate(d, "a.items[1]", NULL, at, sizeof at));
    CHECK(strcmp(at, "t.yaml:4") == 0);
    CHECK(sim_cfgdoc_locate(d, "a.items[1].count", NULL, at, sizeof at));
    CHECK(strcmp(at, "t.yaml:5") == 0);
    CHECK(!sim_cfgdoc_locate(d, "a.items[2]", NULL, at, sizeof at));
    sim_cfgdoc_destroy(d);

    /* A TABLE default other than [] is a schema error. */
    static const sim_cfg_key bad[] = {
        {.path = "t", .type = SIM_CFG_TABLE, .offset = 0, .count_offset = sizeof(void *),
         .table = item_schema, .elem_size = sizeof(item), .def = "[{name: a, count: 1}]"},
        {0},
    };
    CHECK_INT_EQ(sim_cfg_schema_check(bad), SIM_EINVAL);
}

/* ---- experiment configs with groups ---- */

static char tmpdir[] = "/tmp/test_fleet.XXXXXX";

/* Write `text` to tmpdir/name and return the path (static buffer). */
static const char *write_config(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
    return path;
}

#define BASE                                                                                 \
    "experiment:\n  name: fleet\n  policies: [flat_lb, cacheroute]\n  rates: [10]\n"          \
    "router:\n  cacheroute: {q_cap: 1.2, slots: 50}\n"                                        \
    "workload:\n  type: synthetic\n  duration_s: 100\n  keys: {n: 100, active_set: 16}\n"

static const char *mixed_cfg = BASE
    "cluster:\n"
    "  model: llama-3.3-70b\n"
    "  groups:\n"
    "    - {name: h100, destinations: 20, hardware: h100-sxm, tp: 2}\n"
    "    - name: h200\n"
    "      destinations: 10\n"
    "      hardware: h200-sxm\n"
    "      engine: {max_num_seqs: 512}\n";

/* Load and set up `text` (with `n` overrides); both must succeed. */
static void load_setup(const char *text, const char *const *sets, size_t n, exp_config *cfg,
                       exp_setup *s)
{
    const char *path = write_config("c.yaml", text);
    if (exp_config_load(path, sets, n, cfg) != SIM_OK || exp_setup_init(cfg, s) != SIM_OK) {
        fprintf(stderr, "%s\n", sim_errmsg());
        CHECK(!"config loads and sets up");
    }
}

/* A prefill of `n` tokens from an empty context, one step. */
static double prefill_s(const cost_model *m, uint64_t n)
{
    const cost_batch b = {.prefill_tokens = n, .prefill_attn = (double)n * ((double)n / 2),
                          .sampled = 1};
    return cost_step_time(m, &b);
}

static void test_groups_setup(void)
{
    exp_config cfg, one100, one200;
    exp_setup s, s100, s200;
    load_setup(mixed_cfg, NULL, 0, &cfg, &s);
    /* Routers see R = 20 + 10 destinations. */
    CHECK_INT_EQ(cfg.destinations, 30);
    CHECK_INT_EQ(cfg.n_groups, 2);
    CHECK_INT_EQ(s.cp.n_dest, 30);
    CHECK_INT_EQ(s.cp.n_groups, 2);
    route_env env = exp_setup_route_env(&s, 1, 10);
    CHECK_INT_EQ(env.n_dest, 30);
    CHECK_INT_EQ(env.n_groups, 2);
    CHECK(env.group_of[0] == 0 && env.group_of[19] == 0 && env.group_of[20] == 1 &&
          env.group_of[29] == 1);
    exp_group g1 = exp_config_group(&cfg, 1);
    CHECK(g1.first == 20 && g1.n_dest == 10 && g1.tp == 2 && g1.max_num_seqs == 512);
    CHECK(strcmp(g1.model, "llama-3.3-70b") == 0 && strcmp(g1.kv_dtype, "fp8") == 0);
    CHECK_INT_EQ(s.cgroups[0].engine.max_num_seqs, 256); /* inherited engine.max_num_seqs */
    CHECK_INT_EQ(s.cgroups[1].engine.max_num_seqs, 512);

    /* Pools per group: the single-cluster values of each deployment, and
     * the known answers of spec_kv_pool (docs/design.md §5):
     * H100: (2·80 GiB·0.9 − 70.6e9·... weights − 2·3.842e9) / 163,840 B. */
    const char *h200[] = {"cluster.hardware=h200-sxm"};
    load_setup(BASE "cluster: {destinations: 30, model: llama-3.3-70b}\n", NULL, 0, &one100,
               &s100);
    load_setup(BASE "cluster: {destinations: 30, model: llama-3.3-70b}\n", h200, 1, &one200,
               &s200);
    CHECK_INT_EQ(s.groups[0].pool_blocks, s100.pool_blocks);
    CHECK_INT_EQ(s.groups[1].pool_blocks, s200.pool_blocks);
    CHECK_U64_EQ(s.groups[1].pool_tokens, s200.pool_tokens);
    CHECK_INT_EQ(s100.pool_blocks, 28335);  /* 453,360 tokens (flagship set-up line) */
    CHECK_INT_EQ(s200.pool_blocks, 73309);  /* 1,172,944 tokens */
    /* Closed form for the H200 group: (141 GiB x 2 x 0.9 - weights -
     * 2 x 3.842 GB) / 160 KiB per token, floored to 16-token blocks. */
    const double wb = spec_weight_bytes(&s.groups[1].model, SPEC_FP8);
    const double bytes = 141.0 * 1073741824.0 * 2 * 0.9 - wb - 2 * 3.842e9;
    CHECK_INT_EQ(s.groups[1].pool_blocks, (uint32_t)(floor(bytes / 163840.0) / 16));
    CHECK(s.groups[1].pool_blocks > 2 * s.groups[0].pool_blocks);
    /* The run's group 0 fields are the H100 group's. */
    CHECK_INT_EQ(s.pool_blocks, s100.pool_blocks);

    /* Step times per group equal the single-group ones; the H200 group's
     * prefill is faster (same compute, more bandwidth: memory-bound part). */
    for (uint64_t n = 512; n <= 8192; n *= 4) {
        CHECK(prefill_s(&s.groups[0].cost, n) == prefill_s(&s100.cost, n));
        CHECK(prefill_s(&s.groups[1].cost, n) == prefill_s(&s200.cost, n));
        CHECK(prefill_s(&s.cgroups[1].cost, n) == prefill_s(&s200.cost, n));
        CHECK(prefill_s(&s.groups[1].cost, n) <= prefill_s(&s.groups[0].cost, n));
    }
    const cost_batch dec = {.decode_tokens = 64, .decode_ctx = 64 * 4096, .sampled = 64};
    CHECK(cost_step_time(&s.groups[1].cost, &dec) < cost_step_time(&s.groups[0].cost, &dec));

    /* A short run: every destination runs its group's pool. */
    exp_stream *st;
    CHECK_INT_EQ(exp_stream_open(&s, 1, 10, &st), SIM_OK);
    cluster_result r;
    const route_type *rt = route_find("flat_lb");
    CHECK_INT_EQ(cluster_run(&s.cp, rt, &env, cfg.router, exp_stream_source(st), &r), SIM_OK);
    CHECK_INT_EQ(r.n_dest, 30);
    for (uint32_t d = 0; d < 30; d++) {
        CHECK_INT_EQ(r.dest[d].group, d < 20 ? 0u : 1u);
        CHECK_INT_EQ(r.dest[d].pool_blocks, d < 20 ? s100.pool_blocks : s200.pool_blocks);
    }
    uint64_t routed = 0;
    for (uint32_t d = 0; d < 30; d++)
        routed += r.dest[d].routed;
    CHECK_U64_EQ(routed, r.n_arrived);
    CHECK(r.dest[25].routed > 0); /* the router sends to both groups */
    cluster_result_fini(&r);
    exp_stream_close(st);

    /* The set-up line names the groups. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    exp_setup_print(&s, f);
    fclose(f);
    CHECK_STR_CONTAINS(buf, "mixed fleet of 30 destinations in 2 groups");
    CHECK_STR_CONTAINS(buf, "group h200: destinations 20-29, 10 x Llama-3.3-70B on 2 x H200-SXM");
    CHECK_STR_CONTAINS(buf, "KV pool 73309 blocks");
    free(buf);

    exp_setup_fini(&s);
    exp_setup_fini(&s100);
    exp_setup_fini(&s200);
    exp_config_fini(&cfg);
    exp_config_fini(&one100);
    exp_config_fini(&one200);
}

/* ---- planner: per-destination capacity, hand-made case ---- */

static void test_plan_capacity(void)
{
    /* R = 3: destinations 0, 1 of capacity 1 and destination 2 of
     * capacity 2 (mean 4/3).  Keys 10 (rate 4), 11 (rate 2), 12 (rate 1),
     * 13 (rate 0.5); W = 2 -> C = 6.  Sizing by the mean capacity:
     * k = ceil(4 / (4/3)) = 3, ceil(1.5) = 2, 1, 1: 3 + 2 + 1 = 6 = C, so
     * key 13 is not admitted (cold = 0.5).
     * Cold tail by capacity: loads 0.125, 0.125, 0.25.
     * Key 10 (share 4/3) takes all three: 1.458, 1.458, 1.583.
     * Key 11 (share 1): (l+1)/q = 2.458, 2.458, 1.292 -> 2, then 0 (tie
     *   with 1: lower index): loads 2.458, 1.458, 2.583.
     * Key 12 (share 1): 3.458, 2.458, 1.792 -> destination 2.
     * The uniform LPT at q_cap 4/3 gives key 11 destinations 0 and 1. */
    const plan_key keys[] = {{10, 4}, {11, 2}, {12, 1}, {13, 0.5}};
    const double cap[] = {1, 1, 2};
    plan_params p = {.n_dest = 3, .q_cap = 99 /* not read */, .slots = 2, .placement = PLAN_LPT,
                     .replicate = 1, .cap = cap};
    plan pl;
    CHECK_INT_EQ(plan_build(keys, 4, &p, &pl), SIM_OK);
    CHECK_INT_EQ(pl.n_admitted, 3);
    CHECK_U64_EQ(pl.sum_k, 6);
    CHECK(plan_lookup(&pl, 13) < 0);
    CHECK_NEAR(pl.q_cap_w, 4.0 / 3, 1e-15);
    CHECK_NEAR(pl.cold_rate, 0.5, 1e-15);
    int64_t a = plan_lookup(&pl, 10), b = plan_lookup(&pl, 11), c = plan_lookup(&pl, 12);
    CHECK(a >= 0 && b >= 0 && c >= 0);
    CHECK_INT_EQ(pl.k[a], 3);
    CHECK_INT_EQ(pl.k[b], 2);
    CHECK_INT_EQ(pl.dest[pl.off[b]], 2);
    CHECK_INT_EQ(pl.dest[pl.off[b] + 1], 0);
    CHECK_INT_EQ(pl.k[c], 1);
    CHECK_INT_EQ(pl.dest[pl.off[c]], 2);
    CHECK_NEAR(pl.load[0], 0.125 + 4.0 / 3 + 1, 1e-12);
    CHECK_NEAR(pl.load[1], 0.125 + 4.0 / 3, 1e-12);
    CHECK_NEAR(pl.load[2], 0.25 + 4.0 / 3 + 1 + 1, 1e-12);
    /* Imbalance relative to capacity: max(2.458/1, 1.458/1, 3.583/2) /
     * (7.5 / 4). */
    CHECK_NEAR(plan_imbalance(&pl), (0.125 + 4.0 / 3 + 1) / (7.5 / 4), 1e-12);
    plan_fini(&pl);
    /* The uniform planner at the mean capacity places key 11 on 0 and 1. */
    plan_params pm = p;
    pm.cap = NULL;
    pm.q_cap = 4.0 / 3;
    CHECK_INT_EQ(plan_build(keys, 4, &pm, &pl), SIM_OK);
    CHECK_INT_EQ(pl.dest[pl.off[plan_lookup(&pl, 11)]], 0);
    CHECK_INT_EQ(pl.dest[pl.off[plan_lookup(&pl, 11)] + 1], 1);
    plan_fini(&pl);

    /* Equal capacities reproduce the uniform planner's table. */
    const double eq[] = {1.5, 1.5, 1.5};
    plan_params pu = p, pe = p;
    pu.cap = NULL;
    pu.q_cap = 1.5;
    pe.cap = eq;
    plan u, e;
    CHECK_INT_EQ(plan_build(keys, 4, &pu, &u), SIM_OK);
    CHECK_INT_EQ(plan_build(keys, 4, &pe, &e), SIM_OK);
    CHECK_INT_EQ(u.n_admitted, e.n_admitted);
    CHECK(memcmp(u.k, e.k, u.n_admitted * sizeof *u.k) == 0);
    CHECK(memcmp(u.dest, e.dest, u.sum_k * sizeof *u.dest) == 0);
    CHECK_NEAR(plan_imbalance(&u), plan_imbalance(&e), 1e-12);
    plan_fini(&u);
    plan_fini(&e);

    /* A bad capacity is an error. */
    const double neg[] = {1, 0, 2};
    p.cap = neg;
    CHECK_INT_EQ(plan_build(keys, 4, &p, &pl), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "capacity 0 at destination 1");
    plan_fini(&pl);
}

/* cacheroute with q_cap_by_group builds its capacities from the groups. */
static void test_cacheroute_groups(void)
{
    exp_config cfg;
    exp_setup s;
    const char *sets[] = {"router.cacheroute.q_cap_by_group=[1.0, 2.0]",
                          "router.cacheroute.q_cap=0", "experiment.policies=[cacheroute]"};
    load_setup(mixed_cfg, sets, 3, &cfg, &s);
    route_env env = exp_setup_route_env(&s, 1, 10);
    exp_stream *st;
    CHECK_INT_EQ(exp_stream_open(&s, 1, 10, &st), SIM_OK);
    cluster_result r;
    CHECK_INT_EQ(cluster_run(&s.cp, route_find("cacheroute"), &env, cfg.router,
                             exp_stream_source(st), &r), SIM_OK);
    CHECK(r.n_completed > 0);
    CHECK(r.tel.n_iv > 0); /* it planned */
    cluster_result_fini(&r);
    exp_stream_close(st);
    exp_setup_fini(&s);
    exp_config_fini(&cfg);
}

/* ---- bad group configs: one error naming the key, exit 2 class ---- */

static void expect_error(const char *text, const char *const *sets, size_t n, const char *msg)
{
    const char *path = write_config("bad.yaml", text);
    exp_config cfg;
    exp_setup s;
    int rc = exp_config_load(path, sets, n, &cfg);
    if (rc == SIM_OK) {
        rc = exp_setup_init(&cfg, &s);
        exp_setup_fini(&s);
        exp_config_fini(&cfg);
    }
    CHECK(rc == SIM_EINVAL || rc == SIM_EIO);
    if (!strstr(sim_errmsg(), msg))
        fprintf(stderr, "message: %s\nexpected: %s\n", sim_errmsg(), msg);
    CHECK_STR_CONTAINS(sim_errmsg(), msg);
}

static void test_bad_groups(void)
{
    const char *one[1];
    expect_error(BASE "cluster:\n  groups:\n    - {name: a, destinations: 2, hardware: h300}\n",
                 NULL, 0, "bad.yaml:13: key 'cluster.groups[0].hardware' is 'h300': no such "
                          "GPU spec");
    expect_error(BASE "cluster:\n  groups:\n    - {name: a, destinations: 0}\n", NULL, 0,
                 "bad.yaml:13: key 'cluster.groups[0].destinations' is 0; expected an integer "
                 "in [1, 100000]");
    expect_error(BASE "cluster:\n  groups:\n    - {name: a}\n", NULL, 0,
                 "bad.yaml:13: missing required key 'cluster.groups[0].destinations'");
    expect_error(BASE "cluster:\n  groups:\n    - {name: a, destinations: 2}\n"
                      "    - {name: a, destinations: 2}\n", NULL, 0,
                 "bad.yaml:14: key 'cluster.groups[1].name' is 'a', the name of "
                 "cluster.groups[0] too");
    expect_error(BASE "cluster:\n  groups:\n    - {name: a, destinations: 2, kv_dtype: fp4}\n",
                 NULL, 0, "key 'cluster.groups[0].kv_dtype' is 'fp4'");
    expect_error(BASE "cluster:\n  destinations: 5\n  groups:\n    - {name: a, destinations: 2}\n",
                 NULL, 0, "bad.yaml:12: key 'cluster.destinations' is 5 but cluster.groups add "
                          "up to 2 destinations");
    one[0] = "router.cacheroute.q_cap_by_group=[1, 2, 3]";
    expect_error(mixed_cfg, one, 1, "key 'router.cacheroute.q_cap_by_group' has 3 values but "
                                    "cluster.groups has 2 groups");
    one[0] = "router.cacheroute.q_cap_by_group=[1]";
    expect_error(BASE "cluster: {destinations: 4}\n", one, 1,
                 "has 1 value but cluster.groups has 0 groups");
    one[0] = "router.cacheroute.q_cap_by_group=[1, 0]";
    expect_error(mixed_cfg, one, 1, "key 'router.cacheroute.q_cap_by_group[1]' is 0");
    expect_error(BASE "cluster:\n  groups:\n    - {name: a, destinations: 2, tp: 1, "
                      "weight_dtype: bf16}\n", NULL, 0,
                 "bad.yaml:13: cluster.groups[0] ('a'): "); /* weights do not fit */
    expect_error(BASE "cluster:\n  groups:\n    - {name: a, destinations: 2, model: qwen2.5-32b}\n",
                 NULL, 0, "calibration profile 'qwen2.5-32b_h100-sxm_tp2_fp8-fp8'");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_fleet SPEC_DIR\n");
        return 99;
    }
    setenv("CRSIM_SPEC_DIR", argv[1], 1);
    CHECK(mkdtemp(tmpdir) != NULL);
    test_table_binder();
    test_groups_setup();
    test_plan_capacity();
    test_cacheroute_groups();
    test_bad_groups();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    CHECK(system(cmd) == 0);
    printf("fleet: ok\n");
    return 0;
}
