/*
 * Cruise (engine_cruise, docs/performance.md "Round 5: cruise"): runs of
 * pure steady-decode steps without a kernel event each give exactly the
 * simulation of one event per step.  On the real Mooncake trace (long
 * prompts, steady decode between arrivals), every configuration below is
 * run with the cruise off (CRSIM_CRUISE=0) and on, and the two results
 * must agree bit for bit: every request record (times, destination, hit
 * tokens, retries), every destination's engine counters (steps, tokens,
 * busy time, window counters), the event and step counts, the end time
 * and the KV-event count.  The configurations cover what can cut a
 * cruise: arrivals at low and high load, a scraped and the exact view,
 * KV-event consumers (dynamo_kv, llmd precise), two gateway replicas,
 * a migrating router (dualmap), crashes, drains, stragglers and
 * recoveries, and the linear cost model.  The cruise must actually have
 * run (cruise_steps > 0 with it on, 0 with it off).  A recording router
 * checks that every scraped metric a router is shown is the same (the KV
 * blocks in use change inside a cruise: a scrape materialises it first),
 * and a migrating one that a request moved into a cruising engine ends
 * its cruise.
 *
 * usage: test_cruise TRACE SPEC_DIR
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mooncake_fixture.h"

/* The fixture's cluster with a scraped view (every 50 ms) and a 20-s
 * warm-up. */
static cluster_params params(uint32_t n_dest)
{
    cluster_params p = fx_params(n_dest);
    p.warmup_s = 20;
    p.gateway.scrape_interval_s = 0.05;
    return p;
}

/* A test router for migrations into cruising engines: every request goes
 * to destination 0, and each decision first moves the head of 0's queue
 * to destination 1 + id mod (n - 1), whose requests are then mostly in
 * steady decode. */
static uint32_t to_zero(void *state, const wl_request *r, const route_view *v)
{
    (void)state;
    const wl_request *head;
    if (v->ops->waiting(v->ops->ctx, 0, &head, 1) == 1)
        (void)v->ops->migrate(v->ops->ctx, head, 1 + (uint32_t)(r->id % (v->n_dest - 1)));
    return 0;
}

static int mig_create(void *state, const route_env *env, const void *const *params)
{
    (void)state;
    (void)params;
    return env->n_dest > 1 ? SIM_OK : SIM_EINVAL;
}

static void mig_destroy(void *state) { (void)state; }

/* A test router that sums, bit pattern by bit pattern, every engine metric
 * it is shown (scraped queued tokens, waiting, running, KV utilisation):
 * the cruise must not change what a scrape reads. */
static uint64_t view_sum;
static uint32_t view_route(void *state, const wl_request *r, const route_view *v)
{
    (void)state;
    for (uint32_t d = 0; d < v->n_dest; d++) {
        uint64_t u;
        memcpy(&u, &v->kv_util[d], sizeof u);
        view_sum = view_sum * 1000003u + u + v->queued_tokens[d] * 31u + v->waiting[d] * 7u +
                   v->running[d];
    }
    return (uint32_t)(r->id % v->n_dest);
}

static const route_type view_router = {.name = "test_view", .state_size = 8,
                                       .create = mig_create, .route = view_route,
                                       .destroy = mig_destroy};

static const route_type mig_router = {.name = "test_migrate", .state_size = 8,
                                      .create = mig_create, .route = to_zero,
                                      .destroy = mig_destroy};

static void run(const cluster_params *p, const char *policy, const char *rcfg, double rate,
                uint64_t max_req, int cruise, cluster_result *res)
{
    setenv("CRSIM_CRUISE", cruise ? "1" : "0", 1);
    const route_type *rt = !strcmp(policy, "test_migrate") ? &mig_router
                           : !strcmp(policy, "test_view")  ? &view_router
                                                            : route_find(policy);
    fx_run(p, rt, rcfg, rate, max_req, 3, res);
}

static int same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Run `policy` with the cruise off and on; 1 if the results are identical. */
static uint64_t cruise_equal(const cluster_params *p, const char *policy, const char *rcfg,
                             double rate, uint64_t max_req)
{
    cluster_result a, b;
    run(p, policy, rcfg, rate, max_req, 0, &a);
    run(p, policy, rcfg, rate, max_req, 1, &b);
    int bad = 0;
    bad += a.n_arrived != b.n_arrived || a.n_completed != b.n_completed;
    bad += a.steps != b.steps || a.events != b.events || a.kv_events != b.kv_events;
    bad += a.n_retries != b.n_retries || a.n_lost != b.n_lost || a.n_failed != b.n_failed;
    bad += !same_double(a.sim_end_s, b.sim_end_s) || !same_double(a.ttft_p99, b.ttft_p99);
    for (uint64_t i = 0; i < a.n_arrived && i < b.n_arrived; i++) {
        const cluster_rec *x = &a.rec[i], *y = &b.rec[i];
        bad += !same_double(x->ttft_s, y->ttft_s) || !same_double(x->e2e_s, y->e2e_s) ||
               !same_double(x->queue_s, y->queue_s) || x->dest != y->dest ||
               x->hit_tokens != y->hit_tokens || x->retries != y->retries ||
               x->preemptions != y->preemptions;
    }
    for (uint32_t d = 0; d < a.n_dest; d++)
        bad += memcmp(&a.dest[d].st, &b.dest[d].st, sizeof a.dest[d].st) != 0;
    if (bad)
        fprintf(stderr, "cruise changed %s at %g req/s (%d differences)\n", policy, rate, bad);
    CHECK_INT_EQ(bad, 0);
    CHECK_U64_EQ(a.cruise_steps, 0);
    const uint64_t cs = b.cruise_steps;
    CHECK(cs < b.steps);
    cluster_result_fini(&a);
    cluster_result_fini(&b);
    return cs;
}

static void test_plain(void)
{
    cluster_params p = params(6);
    /* Low load: long steady decodes between arrivals (most steps cruise). */
    CHECK(cruise_equal(&p, "flat_lb", NULL, 1, 600) > 10000);
    CHECK(cruise_equal(&p, "sticky", NULL, 4, 900) > 1000);
    /* The exact view, and two gateway replicas with a scraped one. */
    cluster_params x = p;
    x.gateway.scrape_interval_s = 0;
    CHECK(cruise_equal(&x, "flat_lb", NULL, 2, 600) > 1000);
    x = p;
    x.gateway.replicas = 2;
    CHECK(cruise_equal(&x, "chwbl", NULL, 2, 600) > 1000);
    /* The linear cost model. */
    x = p;
    cost_linear_init(&x.cost, &(cost_linear){.a_s = 0.012, .b_s_per_token = 2e-5,
                                             .c_s_per_attn = 1e-10, .d_s_per_decode = 1e-4,
                                             .e_s_per_ctx = 3e-8});
    CHECK(cruise_equal(&x, "flat_lb", NULL, 2, 600) > 1000);
}

static void test_routers(void)
{
    cluster_params p = params(6);
    p.gateway.kv_event_delay_s = 0.02;
    CHECK(cruise_equal(&p, "dynamo_kv", NULL, 2, 600) > 1000);
    CHECK(cruise_equal(&p, "llmd", "router:\n  llmd: {mode: precise}\n", 2, 600) > 1000);
    CHECK(cruise_equal(&p, "llmd", NULL, 3, 600) > 1000);
    CHECK(cruise_equal(&p, "dualmap", NULL, 3, 600) > 100);
    CHECK(cruise_equal(&p, "test_migrate", NULL, 3, 600) > 1000); /* into cruising engines */
    /* What every scrape shows, at low and high load: */
    for (double rate = 1; rate <= 4; rate *= 2) {
        uint64_t sum[2];
        for (int on = 0; on < 2; on++) {
            cluster_result r;
            view_sum = 0;
            run(&p, "test_view", NULL, rate, 600, on, &r);
            sum[on] = view_sum;
            CHECK(on == 0 || r.cruise_steps > 1000);
            cluster_result_fini(&r);
        }
        CHECK(sum[0] == sum[1]);
    }
    CHECK(cruise_equal(&p, "preble", NULL, 3, 600) > 100);
    CHECK(cruise_equal(&p, "cacheroute",
                       "router:\n  cacheroute: {q_cap: 0.6, slots: 4, interval_s: 30}\n", 3,
                       600) > 100);
}

static void test_faults(void)
{
    static const cluster_fault ev[] = {
        {.t_s = 100, .dest = 1, .kind = CLUSTER_FAULT_CRASH, .factor = 1},
        {.t_s = 110, .dest = 2, .kind = CLUSTER_FAULT_SLOW, .factor = 3},
        {.t_s = 130, .dest = 3, .kind = CLUSTER_FAULT_DRAIN, .factor = 1},
        {.t_s = 180, .dest = 2, .kind = CLUSTER_FAULT_SLOW, .factor = 1.5},
        {.t_s = 220, .dest = 1, .kind = CLUSTER_FAULT_RECOVER, .factor = 1},
        {.t_s = 250, .dest = 2, .kind = CLUSTER_FAULT_RECOVER, .factor = 1},
        {.t_s = 260, .dest = 3, .kind = CLUSTER_FAULT_RECOVER, .factor = 1},
        {.t_s = 300, .dest = 0, .kind = CLUSTER_FAULT_CRASH, .warm = true, .factor = 1},
        {.t_s = 301, .dest = 0, .kind = CLUSTER_FAULT_RECOVER, .factor = 1},
    };
    cluster_params p = params(4);
    p.faults.events = ev;
    p.faults.n_events = sizeof ev / sizeof *ev;
    CHECK(cruise_equal(&p, "flat_lb", NULL, 2, 800) > 1000);
    CHECK(cruise_equal(&p, "dynamo_kv", NULL, 2, 800) > 1000);
    /* Step-time factors changing every 3.7 s on every destination: a
     * change ends a cruise planned with the old factor. */
    static cluster_fault slow[400];
    size_t ns = 0;
    for (double t = 30; ns < 400; t += 3.7, ns++)
        slow[ns] = (cluster_fault){.t_s = t, .dest = (uint32_t)(ns % 4),
                                   .kind = CLUSTER_FAULT_SLOW, .factor = 1.0 + 0.5 * (double)(ns % 3)};
    cluster_params q = params(4);
    q.faults.events = slow;
    q.faults.n_events = ns;
    CHECK(cruise_equal(&q, "flat_lb", NULL, 2, 800) > 1000);
    /* Random crashes and repairs. */
    cluster_params r = params(4);
    r.faults.mtbf_s = 60;
    r.faults.mttr_s = 20;
    CHECK(cruise_equal(&r, "sticky", NULL, 2, 800) > 1000);
}

/* A run cut short by its drain window ends mid-cruise: the planned steps
 * before the end are counted, the rest not (as one event per step). */
static void test_end(void)
{
    cluster_params p = params(3);
    p.drain_s = 7.25;
    CHECK(cruise_equal(&p, "flat_lb", NULL, 1, 300) > 100);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_cruise TRACE SPEC_DIR\n");
        return 99;
    }
    fx_load(argv[1], argv[2]);
    test_plain();
    test_routers();
    test_faults();
    test_end();
    fx_fini();
    puts("cruise: ok");
    return 0;
}
