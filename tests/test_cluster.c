/*
 * Whole-run tests on the real Mooncake trace: conservation (every request
 * that arrives completes, is rejected, or is reported unfinished), the
 * same seed and config giving bit-identical results, every policy seeing
 * the identical request stream, sticky's key-to-destination mapping, and a
 * golden run whose metrics are diffed against tests/expected/.
 *
 * usage: test_cluster TRACE SPEC_DIR GOLDEN_FILE
 * With CRSIM_UPDATE_GOLDEN=1 the golden file is rewritten instead.
 */
#include <stdlib.h>
#include <string.h>

#include "models/cluster.h"
#include "sim/core/error.h"
#include "models/spec_load.h"
#include "workloads/mooncake.h"
#include "workloads/replay.h"
#include "check.h"

static wl_trace *trace;
static spec_hw hw;
static spec_model model;

static int next_req(void *s, wl_request *out) { return wl_replay_next(s, out); }

static cluster_params params(uint32_t n_dest, double drain_s)
{
    cluster_params p = {
        .n_dest = n_dest,
        .deploy = {.hw = &hw, .model = &model, .tp = 2, .weight_dtype = SPEC_FP8,
                   .kv_dtype = SPEC_FP8, .mem_util = 0.9, .block_size = 16},
        .engine = {.block_size = 16, .max_num_batched_tokens = 8192, .max_num_seqs = 256,
                   .prefix_caching = true},
        .warmup_s = 10,
        .drain_s = drain_s,
        /* The exact information model and one router: the golden run
         * predates scraped signals (docs/information-model.md). */
        .gateway = {.scrape_interval_s = 0, .replicas = 1},
    };
    /* Fixed roofline factors (not the calibrated profile), so the golden
     * run does not move when the calibration is refitted. */
    const cost_params cp = {.mfu = 0.5, .mbu = 0.8, .step_overhead_s = 0.0044,
                            .allreduce_latency_s = 10e-6};
    cost_roofline_init(&p.cost, &p.deploy, &cp);
    return p;
}

static void run(const cluster_params *p, const char *policy, uint64_t seed, double rate,
                uint64_t max_req, cluster_result *res)
{
    wl_replay_params wp = {.block_size = 16, .key_ids = 2, .rate = rate, .tick_s = 3,
                           .seed = seed, .max_requests = max_req};
    wl_replay *rp = NULL;
    CHECK_INT_EQ(wl_replay_create(trace, &wp, &rp), SIM_OK);
    /* The golden run's router inputs (cacheroute keeps its first plan). */
    const route_env env = {.n_dest = p->n_dest, .seed = seed};
    route_config *rc = NULL;
    CHECK_INT_EQ(route_config_parse("router:\n  cacheroute: {q_cap: 1, slots: 4, interval_s: 60, "
                                    "replan: false}\n", "test_cluster", &rc),
                 SIM_OK);
    const route_type *rt = route_find(policy);
    CHECK(rt != NULL);
    CHECK_INT_EQ(cluster_run(p, rt, &env, rc, (wl_source){.state = rp, .next = next_req}, res), SIM_OK);
    route_config_free(rc);
    wl_replay_destroy(rp);
}

static void test_conservation(void)
{
    /* Overload 4 destinations and cut the drain short: some requests must
     * be left unfinished, and none may vanish. */
    cluster_params p = params(4, 5.0);
    cluster_result r;
    run(&p, "flat_lb", 3, 40, 600, &r);
    CHECK_INT_EQ(r.n_arrived, 600);
    CHECK(r.n_unfinished > 0);
    CHECK_INT_EQ(r.n_arrived, r.n_completed + r.n_unfinished + r.n_rejected);
    uint64_t done = 0, routed = 0;
    for (uint64_t i = 0; i < r.n_arrived; i++) {
        const cluster_rec *c = &r.rec[i];
        CHECK(c->dest < 4);
        if (c->e2e_s >= 0) {
            done++;
            CHECK(c->ttft_s > 0 && c->ttft_s <= c->e2e_s);
            CHECK(c->hit_tokens < c->prompt_tokens);
        }
        if (i)
            CHECK(c->arrival_s >= r.rec[i - 1].arrival_s); /* arrivals in time order */
    }
    CHECK_INT_EQ(done, r.n_completed);
    for (uint32_t d = 0; d < 4; d++)
        routed += r.dest[d].routed;
    CHECK_INT_EQ(routed, r.n_arrived);
    /* Unfinished requests make the tail infinite (SLO violations). */
    CHECK(r.ttft_p99 > 1e300 || r.e2e_p99 > 1e300);
    cluster_result_fini(&r);

    /* With enough drain time everything completes. */
    p = params(4, 1e6);
    run(&p, "sticky", 3, 5, 300, &r);
    CHECK_INT_EQ(r.n_completed + r.n_rejected, 300);
    CHECK_INT_EQ(r.n_unfinished, 0);
    cluster_result_fini(&r);
}

/* Compare every simulated quantity of two results bit for bit. */
static void same_result(const cluster_result *a, const cluster_result *b)
{
    cluster_result x = *a, y = *b;
    x.dest = y.dest = NULL;
    x.rec = y.rec = NULL;
    x.keys = y.keys = NULL;
    CHECK(memcmp(&x, &y, sizeof x) == 0);
    CHECK(a->n_keys == b->n_keys &&
          (a->n_keys == 0 || memcmp(a->keys, b->keys, a->n_keys * sizeof *a->keys) == 0));
    CHECK(memcmp(a->dest, b->dest, a->n_dest * sizeof *a->dest) == 0);
    CHECK(memcmp(a->rec, b->rec, a->n_arrived * sizeof *a->rec) == 0);
}

/* Jain's index, closed forms: equal values 1; one nonzero among n 1/n;
 * (1, 2, 3): 36 / (3 x 14) = 6/7. */
static void test_jain(void)
{
    const double eq[4] = {3, 3, 3, 3}, one[5] = {0, 0, 7, 0, 0}, x[3] = {1, 2, 3};
    CHECK_NEAR(cluster_jain_index(eq, 4), 1.0, 1e-15);
    CHECK_NEAR(cluster_jain_index(one, 5), 0.2, 1e-15);
    CHECK_NEAR(cluster_jain_index(x, 3), 6.0 / 7.0, 1e-15);
    CHECK(isnan(cluster_jain_index(x, 0)));
}

/* engine.max_model_len: exactly the requests with prompt + output over the
 * limit are refused at arrival (never routed), conservation holds with
 * them, the others are served as before the limit existed when it is
 * above every request, and fairness keys are sorted and count only
 * measured, routed requests. */
static void test_context_limit(void)
{
    cluster_params p = params(4, 1e6);
    cluster_result base, lim, same;
    run(&p, "flat_lb", 3, 5, 300, &base);
    uint64_t want = 0, longest = 0;
    for (uint64_t i = 0; i < base.n_arrived; i++) {
        const uint64_t len = (uint64_t)base.rec[i].prompt_tokens + base.rec[i].output_tokens;
        want += len > 20000;
        longest = len > longest ? len : longest;
    }
    CHECK(want > 0 && want < base.n_arrived);
    CHECK_INT_EQ(base.n_too_long, 0);
    p.max_model_len = 20000;
    run(&p, "flat_lb", 3, 5, 300, &lim);
    CHECK_INT_EQ(lim.n_too_long, want);
    CHECK_INT_EQ(lim.n_arrived, lim.n_completed + lim.n_unfinished + lim.n_rejected +
                                lim.n_too_long);
    uint64_t routed = 0, measured = 0;
    for (uint32_t d = 0; d < 4; d++)
        routed += lim.dest[d].routed;
    CHECK_INT_EQ(routed, lim.n_arrived - want);
    for (uint64_t i = 0; i < lim.n_arrived; i++) {
        const cluster_rec *c = &lim.rec[i];
        const bool over = (uint64_t)c->prompt_tokens + c->output_tokens > 20000;
        CHECK_INT_EQ(c->too_long, over);
        if (over)
            CHECK(c->dest == CLUSTER_NO_DEST && c->ttft_s < 0 && c->queue_s < 0);
        measured += c->arrival_s >= p.warmup_s && !over;
    }
    CHECK_INT_EQ(lim.n_measured, measured);
    uint64_t in_keys = 0;
    for (size_t k = 0; k < lim.n_keys; k++) {
        in_keys += lim.keys[k].requests;
        CHECK(lim.keys[k].requests >= 1);
        if (k)
            CHECK(lim.keys[k].key > lim.keys[k - 1].key);
    }
    CHECK_INT_EQ(in_keys, measured); /* fair_min_requests 0 = every key */
    CHECK(lim.fair_jain > 0 && lim.fair_jain <= 1);
    CHECK(lim.fair_worst_p99 >= lim.fair_spread_p99);
    /* A limit above every request changes nothing. */
    p.max_model_len = (uint32_t)longest;
    run(&p, "flat_lb", 3, 5, 300, &same);
    same_result(&base, &same);
    cluster_result_fini(&base);
    cluster_result_fini(&lim);
    cluster_result_fini(&same);
}

static void test_determinism_and_pairing(void)
{
    cluster_params p = params(8, 600);
    cluster_result a, b, c;
    run(&p, "flat_lb", 11, 15, 1500, &a);
    run(&p, "flat_lb", 11, 15, 1500, &b);
    same_result(&a, &b);
    /* Another policy at the same (seed, rate) sees the identical stream. */
    run(&p, "sticky", 11, 15, 1500, &c);
    CHECK_INT_EQ(c.n_arrived, a.n_arrived);
    for (uint64_t i = 0; i < a.n_arrived; i++) {
        CHECK(a.rec[i].arrival_s == c.rec[i].arrival_s);
        CHECK_INT_EQ(a.rec[i].prompt_tokens, c.rec[i].prompt_tokens);
        CHECK_INT_EQ(a.rec[i].output_tokens, c.rec[i].output_tokens);
    }
    /* A different seed changes the stream (tick spreading). */
    cluster_result d;
    run(&p, "flat_lb", 12, 15, 1500, &d);
    int differ = 0;
    for (uint64_t i = 0; i < a.n_arrived && !differ; i++)
        differ = a.rec[i].arrival_s != d.rec[i].arrival_s;
    CHECK(differ);
    /* Sticky sends requests with equal routing keys to one destination:
     * in the Mooncake trace every request of a key group shares its first
     * two blocks, so sticky's hit rate exceeds flat_lb's. */
    CHECK(c.hit_rate > a.hit_rate + 0.1);
    cluster_result_fini(&a);
    cluster_result_fini(&b);
    cluster_result_fini(&c);
    cluster_result_fini(&d);
}

/* A stop request (SIGINT in crsim) ends the run early with SIM_EINTR and a
 * result marked interrupted. */
static void test_interrupt(void)
{
    static volatile sig_atomic_t stop = 1;
    cluster_params p = params(4, 600);
    p.stop = &stop;
    wl_replay_params wp = {.block_size = 16, .key_ids = 2, .rate = 5, .tick_s = 3, .seed = 1,
                           .max_requests = 2000};
    wl_replay *rp = NULL;
    CHECK_INT_EQ(wl_replay_create(trace, &wp, &rp), SIM_OK);
    const route_env env = {.n_dest = 4, .seed = 1};
    route_config *rc = NULL;
    CHECK_INT_EQ(route_config_parse("router: {}\n", "test_cluster", &rc), SIM_OK);
    cluster_result r;
    CHECK_INT_EQ(cluster_run(&p, route_find("flat_lb"), &env, rc, (wl_source){.state = rp, .next = next_req}, &r),
                 SIM_EINTR);
    route_config_free(rc);
    CHECK_INT_EQ(r.interrupted, 1);
    CHECK(r.n_arrived < 2000);
    cluster_result_fini(&r);
    wl_replay_destroy(rp);
}

/* ITL from the engines' steps against the requests' own records: with no
 * warm-up, every request completed and none preempted, each completed
 * request's output_tokens - 1 gaps are exactly the decode tokens the
 * steps counted, and their durations sum to its E2E - TTFT
 * (models/latency.h).  Goodput with loose bounds is the throughput, with
 * a TTFT bound below every TTFT it is 0. */
static void test_itl_from_steps(void)
{
    cluster_params p = params(16, 1e6);
    p.warmup_s = 0;
    cluster_result r;
    run(&p, "flat_lb", 5, 1, 300, &r);
    CHECK_INT_EQ(r.n_completed, 300);
    CHECK_INT_EQ(r.preemptions, 0);
    uint64_t gaps = 0, out = 0;
    double sum = 0, tmin = INFINITY;
    for (uint64_t i = 0; i < r.n_arrived; i++) {
        gaps += r.rec[i].output_tokens - 1;
        out += r.rec[i].output_tokens;
        sum += r.rec[i].e2e_s - r.rec[i].ttft_s;
        tmin = fmin(tmin, r.rec[i].ttft_s);
    }
    CHECK_INT_EQ(r.itl_gaps, gaps);
    CHECK_NEAR(r.itl_mean * (double)r.itl_gaps, sum, 1e-9 * sum);
    CHECK(r.itl_p50 <= r.itl_p90 && r.itl_p90 <= r.itl_p99);
    CHECK_NEAR(r.output_tps, (double)out / r.sim_end_s, 1e-12 * r.output_tps);
    CHECK(isnan(r.goodput_rps)); /* no bounds */
    cluster_result_fini(&r);
    p.goodput = (latency_slo){.ttft_s = 1e6, .tpot_s = 1e6};
    run(&p, "flat_lb", 5, 1, 300, &r);
    CHECK_INT_EQ(r.n_good, 300);
    CHECK(r.goodput_rps == r.throughput_rps);
    cluster_result_fini(&r);
    p.goodput = (latency_slo){.ttft_s = tmin / 2};
    run(&p, "flat_lb", 5, 1, 300, &r);
    CHECK_INT_EQ(r.n_good, 0);
    CHECK(r.goodput_rps == 0);
    cluster_result_fini(&r);
}

static void golden(const char *path)
{
    cluster_params p = params(4, 600);
    char buf[8192];
    size_t len = 0;
    const char *policies[] = {"flat_lb", "sticky"};
    for (int i = 0; i < 2; i++) {
        cluster_result r;
        run(&p, policies[i], 1, 2, 1000, &r);
        len += (size_t)snprintf(
            buf + len, sizeof buf - len,
            "%s arrived=%llu completed=%llu unfinished=%llu hit_tokens=%llu prompt_tokens=%llu "
            "ttft_p50=%.17g ttft_p99=%.17g e2e_p99=%.17g tpot_p50=%.17g imbalance=%.17g "
            "steps=%llu preemptions=%llu end=%.17g\n",
            policies[i], (unsigned long long)r.n_arrived, (unsigned long long)r.n_completed,
            (unsigned long long)r.n_unfinished, (unsigned long long)r.hit_tokens,
            (unsigned long long)r.prompt_tokens, r.ttft_p50, r.ttft_p99, r.e2e_p99, r.tpot_p50,
            r.imbalance_work, (unsigned long long)r.steps, (unsigned long long)r.preemptions,
            r.sim_end_s);
        cluster_result_fini(&r);
    }
    if (getenv("CRSIM_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        fputs(buf, f);
        fclose(f);
        printf("golden file %s rewritten\n", path);
        return;
    }
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char want[8192];
    size_t n = fread(want, 1, sizeof want - 1, f);
    want[n] = '\0';
    fclose(f);
    if (strcmp(want, buf) != 0) {
        fprintf(stderr, "golden run differs from %s\n--- expected\n%s--- got\n%s", path, want,
                buf);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_cluster TRACE SPEC_DIR GOLDEN\n");
        return 99;
    }
    setenv("CRSIM_SPEC_DIR", argv[2], 1);
    CHECK_INT_EQ(wl_mooncake_load(argv[1], 512, &trace), SIM_OK);
    CHECK_INT_EQ(spec_hw_load("h100-sxm", &hw), SIM_OK);
    CHECK_INT_EQ(spec_model_load("llama-3.3-70b", &model), SIM_OK);
    test_conservation();
    test_determinism_and_pairing();
    test_jain();
    test_context_limit();
    test_interrupt();
    test_itl_from_steps();
    golden(argv[3]);
    wl_trace_destroy(trace);
    spec_hw_fini(&hw);
    spec_model_fini(&model);
    puts("cluster: ok");
    return 0;
}
