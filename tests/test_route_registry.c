/*
 * The router plug-in contract, checked over every registered router and
 * config section (STYLE.md §3): each section's schema is well formed, its
 * defaults bind, every key out of range is rejected, the canonical dump
 * reads back; each router names only registered sections, its check
 * accepts good parameters and rejects bad ones (naming the key), and
 * create/route/destroy on a small environment routes into [0, n_dest),
 * the same for the same seed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cost.h"
#include "models/routers/route.h"
#include "sim/core/config.h"
#include "sim/core/error.h"
#include "check.h"

/* Parameters every registered router accepts (cacheroute's q_cap and W
 * have no defaults: they are measured). */
static const char good_yaml[] = "router:\n  cacheroute: {q_cap: 5, slots: 8, interval_s: 10}\n";

/* Bad parameters per router: a config text and the environment's n_dest.
 * Every router with a check must have at least one. */
typedef struct bad_case {
    const char *router;
    const char *yaml;
    uint32_t n_dest;
    const char *key; /* named in the message */
} bad_case;

static const bad_case bad_cases[] = {
    {"sticky", "router: {sticky: {vnodes: 100000}}\n", 100000, "router.sticky.vnodes"},
    {"chwbl", "router: {sticky: {vnodes: 100000}}\n", 100000, "router.sticky.vnodes"},
    {"dualmap", "router: {dualmap: {vnodes: 100000}}\n", 100000, "router.dualmap.vnodes"},
    {"cacheroute", "router: {}\n", 4, "router.cacheroute.q_cap"},
    {"cacheroute", "router: {cacheroute: {q_cap: 5}}\n", 4, "router.cacheroute.slots"},
    {"cacheroute", "router: {cacheroute: {q_cap: 5, slots: 8}, sticky: {vnodes: 100000}}\n",
     100000, "router.sticky.vnodes"},
    {"cr_replicate", "router: {cacheroute: {slots: 8}}\n", 4, "router.cacheroute.q_cap"},
    {"cr_affinity", "router: {cacheroute: {q_cap: 1, slots: 0}}\n", 4,
     "router.cacheroute.slots"},
    {"llmd", "router: {llmd: {hash_block_tokens: 24}}\n", 4, "router.llmd.hash_block_tokens"},
};

static route_config *parse(const char *yaml)
{
    route_config *c = NULL;
    int rc = route_config_parse(yaml, "test_route_registry", &c);
    if (rc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    return c;
}

static void test_sections(void)
{
    size_t n = route_config_n_sections();
    CHECK(n >= 1);
    for (size_t i = 0; i < n; i++) {
        const route_section *sec = route_sections[i];
        CHECK(sec && sec->prefix && sec->schema && sec->params_size > 0);
        CHECK(strncmp(sec->prefix, "router.", 7) == 0);
        int rc = sim_cfg_schema_check(sec->schema);
        if (rc)
            fprintf(stderr, "%s: %s\n", sec->prefix, sim_errmsg());
        CHECK_INT_EQ(rc, SIM_OK);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(route_sections[j]->prefix, sec->prefix) != 0);
        /* Every key has a default (a plug-in section is bound whether or
         * not its router is selected) and rejects values out of range. */
        for (const sim_cfg_key *k = sec->schema; k->path; k++) {
            CHECK(k->def != NULL);
            CHECK(k->help && *k->help);
            if (k->min == 0 && k->max == 0)
                continue;
            double bad[2] = {isfinite(k->max) ? 10 * k->max + 1 : NAN,
                             isfinite(k->min) ? k->min - 1 : NAN};
            for (int b = 0; b < 2; b++) {
                if (isnan(bad[b]))
                    continue;
                char yaml[256];
                const char *leaf = strchr(sec->prefix, '.') + 1;
                snprintf(yaml, sizeof yaml, "router:\n  %s:\n    %s: %.17g\n", leaf, k->path,
                         k->type == SIM_CFG_INT ? floor(bad[b]) : bad[b]);
                route_config *c = NULL;
                CHECK_INT_EQ(route_config_parse(yaml, "test_route_registry", &c), SIM_EINVAL);
                CHECK(c == NULL);
                CHECK_STR_CONTAINS(sim_errmsg(), k->path);
            }
        }
        /* Each section is read by some router. */
        int read = 0;
        for (size_t t = 0; route_registry[t]; t++)
            for (size_t j = 0; route_registry[t]->sections && route_registry[t]->sections[j]; j++)
                read += route_registry[t]->sections[j] == sec;
        CHECK(read > 0);
    }
    /* Defaults bind, and the canonical dump reads back to the same text. */
    route_config *c = parse("router: {}\n");
    sim_cfg_section *secs = calloc(n, sizeof *secs);
    CHECK(secs);
    CHECK_INT_EQ(route_config_sections(c, secs), n);
    char *text = sim_cfg_dump_sections(secs, n);
    route_config *back = parse(text);
    CHECK_INT_EQ(route_config_sections(back, secs), n);
    char *again = sim_cfg_dump_sections(secs, n);
    CHECK(strcmp(text, again) == 0);
    free(text);
    free(again);
    free(secs);
    route_config_free(back);
    route_config_free(c);
}

static void *make(const route_type *rt, const route_env *env, const route_config *c)
{
    void *s = calloc(1, rt->state_size ? rt->state_size : 1);
    CHECK(s);
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, rt, args);
    int rc = rt->create(s, env, args);
    if (rc)
        fprintf(stderr, "create %s: %s\n", rt->name, sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    return s;
}

static void drop(const route_type *rt, void *s)
{
    if (rt->telemetry) {
        route_telemetry t = {0};
        rt->telemetry(s, &t);
        route_telemetry_fini(&t);
    }
    if (rt->destroy)
        rt->destroy(s);
    free(s);
}

static void test_types(void)
{
    enum { R = 5, N = 3000 };
    static const cost_model cm = {.lin_s_per_token = 1e-4, .overhead_s = 1e-3};
    route_config *good = parse(good_yaml);
    size_t count = 0;
    for (size_t i = 0; route_registry[i]; i++, count++) {
        const route_type *rt = route_registry[i];
        CHECK(rt->name && rt->help && rt->create && rt->route);
        CHECK(route_names[i] && strcmp(route_names[i], rt->name) == 0);
        CHECK(route_find(rt->name) == rt);
        CHECK(!rt->interval_s || rt->on_interval);
        size_t nread = 0;
        for (; rt->sections && rt->sections[nread]; nread++) {
            size_t k = 0;
            while (route_sections[k] && route_sections[k] != rt->sections[nread])
                k++;
            CHECK(route_sections[k] != NULL); /* registered */
        }
        CHECK(nread <= ROUTE_MAX_READS);

        /* check: good parameters pass, every bad case fails naming its key. */
        route_env env = {.n_dest = R, .block_size = 16, .batch_tokens = 2048, .ttft_slo_s = 2};
        CHECK_INT_EQ(route_check(rt, good, &env, NULL), SIM_OK);
        CHECK((route_needs(rt, good) &
               ~(ROUTE_NEEDS_KEY_SHARES | ROUTE_NEEDS_KV_EVENTS | ROUTE_READS_NO_METRICS)) == 0);
        /* The parameter-dependent form is for routers not blind always. */
        CHECK(!(route_needs(rt, good) & ROUTE_READS_NO_METRICS) || !rt->metrics_blind);
        /* A router that asks for KV events can take them. */
        CHECK(!(route_needs(rt, good) & ROUTE_NEEDS_KV_EVENTS) || rt->on_kv_event);
        CHECK(route_interval_s(rt, good) >= 0);
        int n_bad = 0;
        for (size_t b = 0; b < sizeof bad_cases / sizeof *bad_cases; b++) {
            if (strcmp(bad_cases[b].router, rt->name) != 0)
                continue;
            route_config *c = parse(bad_cases[b].yaml);
            route_env e = env;
            e.n_dest = bad_cases[b].n_dest;
            CHECK_INT_EQ(route_check(rt, c, &e, NULL), SIM_EINVAL);
            CHECK_STR_CONTAINS(sim_errmsg(), bad_cases[b].key);
            route_config_free(c);
            n_bad++;
        }
        if (rt->check && n_bad == 0)
            fprintf(stderr, "router %s has a check but no bad case here\n", rt->name);
        CHECK(!rt->check || n_bad > 0);

        /* create/route/destroy: in range, deterministic for a seed. */
        env.seed = 42;
        env.pool_blocks = 256;
        env.cost = &cm;
        void *a = make(rt, &env, good), *b = make(rt, &env, good);
        uint32_t load[R] = {0};
        uint64_t queued[R] = {0};
        route_view v = {.n_dest = R, .outstanding = load, .queued_tokens = queued};
        const double iv = route_interval_s(rt, good);
        for (uint64_t k = 0; k < N; k++) {
            /* Six chained blocks: keys share their first block in pairs. */
            uint64_t blk[6];
            blk[0] = wl_block_hash(0, (k % 97) / 2);
            for (int j = 1; j < 6; j++)
                blk[j] = wl_block_hash(blk[j - 1], (k % 97) * 8 + (uint64_t)j);
            wl_request r = {.id = k, .key = (k % 97) * 0x9e3779b97f4a7c15ULL,
                            .prompt_tokens = 100, .output_tokens = 10,
                            .arrival_s = 0.01 * (double)k, .n_blocks = 6, .blocks = blk};
            v.now_s = r.arrival_s;
            load[k % R] = (uint32_t)(k % 3);
            uint32_t da = rt->route(a, &r, &v), db = rt->route(b, &r, &v);
            CHECK(da < R);
            CHECK_INT_EQ(da, db);
            if (rt->on_first_token) {
                rt->on_first_token(a, &r, da, v.now_s);
                rt->on_first_token(b, &r, db, v.now_s);
            }
            if (rt->on_kv_event) { /* the engine stores the blocks, evicts some later */
                route_kv_event ev = {.dest = da, .kind = ROUTE_KV_STORED, .hashes = blk,
                                     .n = 6, .t_s = v.now_s, .now_s = v.now_s};
                rt->on_kv_event(a, &ev);
                rt->on_kv_event(b, &ev);
                if (k % 7 == 3) {
                    ev = (route_kv_event){.dest = da, .kind = ROUTE_KV_REMOVED,
                                          .hashes = blk + 3, .n = 3, .t_s = v.now_s,
                                          .now_s = v.now_s};
                    rt->on_kv_event(a, &ev);
                    rt->on_kv_event(b, &ev);
                }
            }
            if (rt->on_complete) {
                rt->on_complete(a, &r, da, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
                rt->on_complete(b, &r, db, &(route_done){.now_s = -1, .ttft_s = -1, .e2e_s = -1});
            }
            if (rt->on_interval && iv > 0 && k % 500 == 499) {
                rt->on_interval(a, v.now_s);
                rt->on_interval(b, v.now_s);
            }
        }
        drop(rt, a);
        drop(rt, b);
    }
    CHECK(count >= 1);
    CHECK(route_names[count] == NULL);
    route_config_free(good);
}

int main(void)
{
    test_sections();
    test_types();
    printf("route_registry: all passed\n");
    return 0;
}
