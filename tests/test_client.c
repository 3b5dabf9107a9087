/*
 * Closed-loop clients (workloads/client.h) against closed forms and
 * whole-run invariants.
 *
 *  - Little's law, exactly: N clients, deterministic service S (one
 *    engine step of a linear cost model with only the fixed term, a
 *    one-token output) and think time Z send N/(S+Z) requests/s.
 *  - The finite-source queue (machine repairman): N clients with
 *    exponential think times (mean Z) in front of one FCFS server with
 *    exponential service (mean S), driven through the client's wl_source
 *    feedback interface by a minimal server in this file, as
 *    test_queueing.c validates the kernel: mean response time
 *    R = N / X − Z with X = (1 − p0) / S and
 *    p0 = [Σ_{k=0..N} N!/(N−k)! (S/Z)^k]^−1 (Kleinrock, Queueing Systems
 *    vol. 1, §3.8, M/M/1//N), within 3 %.
 *  - Invariants over whole cluster runs: no turn before the previous turn
 *    of its conversation completed (plus its think time); at most N in
 *    flight under concurrency N; no stage k+1 send before stage k's last
 *    completion with the barrier; under sticky with a pool nothing evicts
 *    from, turn t+1 hits at least the full blocks of turn t's prompt and
 *    output; the same users (lengths, keys) for every router.
 *  - max_concurrency: the cap holds, waiting sends keep their intended
 *    time, and latency_from: intended moves the run's percentiles to it.
 *  - Bad input: one message naming the key.
 *
 * usage: test_client SPEC_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cluster.h"
#include "models/spec_load.h"
#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "sim/exp/client_metrics.h"
#include "workloads/client.h"
#include "workloads/wl_config.h"
#include "check.h"

static spec_hw hw;
static spec_model model;

static wl_config parse(const char *text)
{
    wl_config cfg;
    const int rc = wl_config_parse(text, "test", &cfg);
    if (rc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    return cfg;
}

/* One destination, steps of exactly `step_s` whatever the batch. */
static cluster_params params(uint32_t n_dest, double step_s)
{
    cluster_params p = {
        .n_dest = n_dest,
        .deploy = {.hw = &hw, .model = &model, .tp = 2, .weight_dtype = SPEC_FP8,
                   .kv_dtype = SPEC_FP8, .mem_util = 0.9, .block_size = 16},
        .engine = {.block_size = 16, .max_num_batched_tokens = 65536, .max_num_seqs = 1024,
                   .prefix_caching = true},
        .warmup_s = 0,
        .drain_s = 1e6,
        .gateway = {.replicas = 1},
    };
    const cost_linear lin = {.a_s = step_s};
    cost_linear_init(&p.cost, &lin);
    return p;
}

static void run(const cluster_params *p, const char *policy, wl_client *cl, cluster_result *res)
{
    const route_env env = {.n_dest = p->n_dest, .seed = 1};
    route_config *rc = NULL;
    CHECK_INT_EQ(route_config_parse("router: {}\n", "test_client", &rc), SIM_OK);
    const route_type *rt = route_find(policy);
    CHECK(rt != NULL);
    const int crc = cluster_run(p, rt, &env, rc, wl_client_source(cl), res);
    if (crc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(crc, SIM_OK);
    route_config_free(rc);
}

static wl_client *client(const wl_config *cfg, uint64_t seed, double load)
{
    wl_client *c = NULL;
    const int rc = wl_client_create(cfg, NULL, seed, load, 16, &c);
    if (rc)
        fprintf(stderr, "%s\n", sim_errmsg());
    CHECK_INT_EQ(rc, SIM_OK);
    return c;
}

/* A test router: key k to destination k mod R (so each of the N clients
 * below, whose keys are distinct in every cycle, has a destination of its
 * own and is served as soon as it sends). */
static int bykey_create(void *state, const route_env *env, const void *const *params)
{
    (void)state, (void)env, (void)params;
    return SIM_OK;
}

static uint32_t bykey_route(void *state, const wl_request *r, const route_view *v)
{
    (void)state;
    return (uint32_t)(r->key % v->n_dest);
}

static const route_type bykey_type = {.name = "bykey", .help = "test", .state_size = 1,
                                      .metrics_blind = true, .create = bykey_create,
                                      .route = bykey_route};

/* N clients, service S, think Z: every cycle is exactly S + Z.  The
 * shared-prefix benchmark with G = N groups of one prompt, in order:
 * conversation c has key c mod N, and the N sends of a cycle are N
 * consecutive conversations. */
static void test_littles_law(void)
{
    const double S = 0.25, Z = 0.5, D = 60;
    const uint32_t N = 8;
    wl_config cfg = parse("workload:\n  type: synthetic\n  duration_s: 60\n"
                          "  benchmark: shared_prefix\n"
                          "  shared_prefix: {groups: 8, prompts_per_group: 1, "
                          "system_prompt_tokens: 32, question_tokens: 16, output_tokens: 1, "
                          "shuffle: false}\n"
                          "  client: {mode: concurrency, think: {dist: const, mean_s: 0.5}}\n");
    wl_client *cl = client(&cfg, 1, N);
    const cluster_params p = params(N, S);
    cluster_result r;
    const route_env env = {.n_dest = p.n_dest, .seed = 1};
    route_config *rc = NULL;
    CHECK_INT_EQ(route_config_parse("router: {}\n", "test_client", &rc), SIM_OK);
    CHECK_INT_EQ(cluster_run(&p, &bykey_type, &env, rc, wl_client_source(cl), &r), SIM_OK);
    route_config_free(rc);
    /* Sends at k (S + Z), k = 0 .. floor(D / (S + Z)), N each. */
    const uint64_t cycles = (uint64_t)floor(D / (S + Z)) + 1;
    CHECK_INT_EQ(r.n_arrived, N * cycles);
    CHECK_INT_EQ(r.n_completed, r.n_arrived);
    for (uint64_t i = 0; i < r.n_arrived; i++) {
        CHECK(r.rec[i].e2e_s == S);
        const double k = r.rec[i].arrival_s / (S + Z);
        CHECK(k == floor(k));
    }
    /* Throughput: completions per second over whole cycles, N / (S + Z)
     * exactly (Little's law for the closed loop: N = X (S + Z)). */
    uint64_t in_window = 0;
    const double T = (double)(cycles - 1) * (S + Z);
    for (uint64_t i = 0; i < r.n_arrived; i++)
        in_window += r.rec[i].arrival_s + r.rec[i].e2e_s <= T;
    const double x = (double)in_window / T;
    CHECK(x == N / (S + Z));
    cluster_result_fini(&r);
    wl_client_destroy(cl);
    wl_config_fini(&cfg);
    printf("littles_law: %u clients, S %g s, Z %g s: %llu requests, %g requests/s = N/(S+Z)\n",
           N, S, Z, (unsigned long long)(N * cycles), x);
}

/* A FCFS single server on the client's feedback interface. */
typedef struct job {
    wl_request r;
    double t_send;
} job;

static void test_machine_repairman(void)
{
    const unsigned N = 5;
    const double S = 0.25, Z = 1.0;
    const uint64_t n_req = 200000;
    wl_config cfg = parse("workload:\n  type: synthetic\n  max_requests: 200000\n"
                          "  keys: {n: 4}\n  prefix: {dist: const, mean: 16}\n"
                          "  turns: {dist: const, mean: 1}\n  input: {dist: const, mean: 16}\n"
                          "  output: {dist: const, mean: 1}\n"
                          "  client: {mode: concurrency, concurrency: 5,\n"
                          "           think: {dist: exponential, mean_s: 1.0}}\n");
    wl_client *cl = client(&cfg, 7, 1);
    wl_source src = wl_client_source(cl);
    sim_pcg32 g;
    sim_pcg32_seed(&g, 20261207, 1);
    job q[16];
    size_t qn = 0;
    double now = 0, t_free = INFINITY, sum_r = 0;
    uint64_t done = 0;
    for (;;) {
        double t_send = INFINITY;
        const int pk = src.peek(src.state, now, &t_send);
        if (pk < 0 && qn == 0)
            break;
        if (pk <= 0)
            t_send = INFINITY;
        if (t_send <= t_free && isfinite(t_send)) {
            now = t_send;
            src.peek(src.state, now, &t_send);
            CHECK(qn < 16);
            CHECK_INT_EQ(src.next(src.state, &q[qn].r), 1);
            CHECK(q[qn].r.arrival_s == now);
            q[qn].t_send = now;
            if (qn++ == 0)
                t_free = now - S * log1p(-sim_pcg32_uniform(&g));
        } else {
            CHECK(isfinite(t_free));
            now = t_free;
            job j = q[0];
            memmove(q, q + 1, --qn * sizeof *q);
            sum_r += now - j.t_send;
            done++;
            src.done(src.state, &j.r, now, now - j.t_send);
            wl_request_fini(&j.r);
            t_free = qn ? now - S * log1p(-sim_pcg32_uniform(&g)) : INFINITY;
        }
    }
    CHECK_INT_EQ(done, n_req);
    double sum = 0, term = 1;
    for (unsigned k = 0; k <= N; k++) {
        sum += term;
        term *= (double)(N - k) * S / Z;
    }
    const double p0 = 1 / sum, X = (1 - p0) / S, R = N / X - Z;
    const double got = sum_r / (double)done;
    printf("machine_repairman: N %u, S %g, Z %g: mean response %.4f s, formula %.4f s "
           "(%.2f %%)\n", N, S, Z, got, R, 100 * (got / R - 1));
    CHECK(fabs(got / R - 1) < 0.03);
    wl_client_destroy(cl);
    wl_config_fini(&cfg);
}

static const char *multi_turn =
    "workload:\n  type: synthetic\n  duration_s: 120\n  keys: {n: 32}\n"
    "  prefix: {dist: const, mean: 256}\n  turns: {dist: uniform, mean: 4, min: 2, max: 6}\n"
    "  input: {dist: lognormal, mean: 128, cv: 0.5, min: 8, max: 1024}\n"
    "  output: {dist: lognormal, mean: 64, cv: 0.5, min: 4, max: 512}\n";

/* Completion time of every record (send + e2e; NaN if unfinished). */
static double end_of(const cluster_result *r, uint64_t i)
{
    return r->rec[i].e2e_s >= 0 ? r->rec[i].arrival_s + r->rec[i].e2e_s : NAN;
}

static void test_sessions_invariants(void)
{
    char text[1024];
    snprintf(text, sizeof text, "%s  client: {mode: sessions, think: {dist: lognormal, "
             "mean_s: 2, cv: 1}}\n", multi_turn);
    wl_config cfg = parse(text);
    const cluster_params p = params(2, 0.02);
    /* The same users for two routers (keys, lengths by conversation and
     * turn), different send times. */
    const char *pol[2] = {"sticky", "flat_lb"};
    uint64_t sig[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        wl_client *cl = client(&cfg, 3, 2.0);
        cluster_result r;
        run(&p, pol[k], cl, &r);
        uint64_t n;
        const wl_client_rec *cr = wl_client_records(cl, &n);
        CHECK_INT_EQ(n, r.n_arrived);
        CHECK(n > 100);
        /* Last turn seen per conversation. */
        uint64_t max_conv = 0;
        for (uint64_t i = 0; i < n; i++)
            max_conv = cr[i].conv > max_conv ? cr[i].conv : max_conv;
        uint64_t *last = malloc((max_conv + 1) * sizeof *last);
        for (uint64_t i = 0; i <= max_conv; i++)
            last[i] = UINT64_MAX;
        uint64_t turns2 = 0, hist_ok = 0;
        for (uint64_t i = 0; i < n; i++) {
            CHECK(cr[i].send_s == r.rec[i].arrival_s);
            CHECK(cr[i].intended_s <= cr[i].send_s);
            const uint64_t prev = last[cr[i].conv];
            if (cr[i].turn == 0) {
                CHECK(prev == UINT64_MAX);
            } else {
                CHECK(prev != UINT64_MAX && cr[prev].turn + 1 == cr[i].turn);
                /* Turn t+1 is sent after turn t completed. */
                CHECK(r.rec[prev].e2e_s >= 0);
                CHECK(cr[i].send_s >= end_of(&r, prev));
                CHECK(r.rec[i].key == r.rec[prev].key);
                turns2++;
                /* The history (turn t's prompt and output) leads this
                 * prompt; under sticky its full blocks are cached, but for
                 * the last output token, whose KV no step computes (it is
                 * sampled, never fed back: as in vLLM). */
                const uint64_t hist = r.rec[prev].prompt_tokens + r.rec[prev].output_tokens;
                CHECK(r.rec[i].prompt_tokens > hist);
                if (k == 0 && r.rec[i].hit_tokens >= (hist - 1) / 16 * 16)
                    hist_ok++;
            }
            last[cr[i].conv] = i;
            /* A signature of who the users are, independent of send order. */
            sig[k] += (cr[i].conv * 1000003 + cr[i].turn) *
                      (r.rec[i].prompt_tokens * 31 + r.rec[i].output_tokens * 7 + r.rec[i].key);
        }
        CHECK(turns2 > 50);
        if (k == 0) {
            /* 2 destinations of ~28k blocks each, ~60 conversations of
             * at most ~150 blocks: nothing is evicted. */
            CHECK(r.pool_blocks > 20000);
            CHECK_INT_EQ(hist_ok, turns2);
        }
        free(last);
        printf("sessions/%s: %llu requests, %llu later turns%s\n", pol[k],
               (unsigned long long)n, (unsigned long long)turns2,
               k == 0 ? ", every one hitting its history" : "");
        cluster_result_fini(&r);
        wl_client_destroy(cl);
    }
    (void)sig;
    wl_config_fini(&cfg);
}

/* Same users for every router: the multiset of (conversation, turn,
 * lengths, key) is the same up to the number of conversations each run
 * got to; compare the common ones. */
static void test_same_users(void)
{
    char text[1024];
    snprintf(text, sizeof text, "%s  client: {mode: concurrency, think: {dist: exponential, "
             "mean_s: 1}}\n", multi_turn);
    wl_config cfg = parse(text);
    const cluster_params p = params(2, 0.03);
    const char *pol[2] = {"sticky", "flat_lb"};
    uint64_t *tok[2];
    uint64_t nconv[2];
    for (int k = 0; k < 2; k++) {
        wl_client *cl = client(&cfg, 5, 6);
        cluster_result r;
        run(&p, pol[k], cl, &r);
        uint64_t n;
        const wl_client_rec *cr = wl_client_records(cl, &n);
        /* At most N = 6 in flight at any time: sends and completions
         * swept in time order (completions first at ties). */
        double *ev = malloc(2 * n * sizeof *ev);
        int *dv = malloc(2 * n * sizeof *dv);
        size_t m = 0;
        for (uint64_t i = 0; i < n; i++) {
            ev[m] = cr[i].send_s;
            dv[m++] = 1;
            if (r.rec[i].e2e_s >= 0) {
                ev[m] = end_of(&r, i);
                dv[m++] = -1;
            }
        }
        int live = 0, peak = 0;
        for (;;) { /* selection of the next event: small n, simple */
            size_t best = SIZE_MAX;
            for (size_t j = 0; j < m; j++)
                if (dv[j] != 0 && (best == SIZE_MAX || ev[j] < ev[best] ||
                                   (ev[j] == ev[best] && dv[j] < dv[best])))
                    best = j;
            if (best == SIZE_MAX)
                break;
            live += dv[best];
            dv[best] = 0;
            peak = live > peak ? live : peak;
            CHECK(live <= 6);
        }
        CHECK_INT_EQ(peak, 6);
        free(ev);
        free(dv);
        nconv[k] = 0;
        for (uint64_t i = 0; i < n; i++)
            nconv[k] = cr[i].conv + 1 > nconv[k] ? cr[i].conv + 1 : nconv[k];
        tok[k] = calloc(nconv[k] * 8, sizeof *tok[k]);
        for (uint64_t i = 0; i < n; i++)
            if (cr[i].turn < 8)
                tok[k][cr[i].conv * 8 + cr[i].turn] =
                    ((uint64_t)r.rec[i].prompt_tokens << 32 | r.rec[i].output_tokens) ^
                    r.rec[i].key * 0x9e3779b97f4a7c15ULL;
        cluster_result_fini(&r);
        wl_client_destroy(cl);
    }
    const uint64_t common = nconv[0] < nconv[1] ? nconv[0] : nconv[1];
    uint64_t same = 0, both = 0;
    for (uint64_t i = 0; i < common * 8; i++)
        if (tok[0][i] && tok[1][i]) {
            both++;
            same += tok[0][i] == tok[1][i];
        }
    CHECK(both > 100);
    CHECK_INT_EQ(same, both);
    printf("concurrency 6: at most 6 in flight; %llu turns of %llu common conversations "
           "identical under sticky and flat_lb\n", (unsigned long long)both,
           (unsigned long long)common);
    free(tok[0]);
    free(tok[1]);
    wl_config_fini(&cfg);
}

static void test_stages_barrier(void)
{
    char text[1024];
    snprintf(text, sizeof text, "%s  client:\n    mode: stages\n    barrier: true\n"
             "    stages: [{rate: 4, duration_s: 20}, {concurrency: 3, duration_s: 20},\n"
             "             {rate: 8, duration_s: 20}]\n", multi_turn);
    wl_config cfg = parse(text);
    /* Slow steps, so that stages overrun their duration and the barrier
     * matters. */
    const cluster_params p = params(1, 0.05);
    wl_client *cl = client(&cfg, 9, 1);
    cluster_result r;
    run(&p, "flat_lb", cl, &r);
    uint64_t n;
    const wl_client_rec *cr = wl_client_records(cl, &n);
    size_t ns;
    const wl_client_stage *st = wl_client_stages(cl, &ns);
    CHECK_INT_EQ(ns, 3);
    double last_end[3] = {0, 0, 0}, first_send[3] = {INFINITY, INFINITY, INFINITY};
    uint64_t per[3] = {0, 0, 0};
    for (uint64_t i = 0; i < n; i++) {
        CHECK(cr[i].stage < 3);
        per[cr[i].stage]++;
        CHECK(r.rec[i].e2e_s >= 0);
        if (end_of(&r, i) > last_end[cr[i].stage])
            last_end[cr[i].stage] = end_of(&r, i);
        if (cr[i].send_s < first_send[cr[i].stage])
            first_send[cr[i].stage] = cr[i].send_s;
        /* Sends stop at the stage's end. */
        CHECK(cr[i].send_s < st[cr[i].stage].end_s);
    }
    for (int k = 0; k < 3; k++)
        CHECK(per[k] > 10);
    for (int k = 0; k < 2; k++) {
        CHECK(first_send[k + 1] >= last_end[k]);
        CHECK(st[k + 1].start_s >= last_end[k]);
        CHECK(st[k + 1].start_s >= st[k].start_s + 20);
    }
    printf("stages: %llu / %llu / %llu requests; stage 2 starts at %.3f s after stage 1's "
           "last completion at %.3f s\n", (unsigned long long)per[0],
           (unsigned long long)per[1], (unsigned long long)per[2], st[1].start_s, last_end[0]);
    cluster_result_fini(&r);
    wl_client_destroy(cl);
    wl_config_fini(&cfg);
}

static void test_burst_and_determinism(void)
{
    wl_config cfg = parse("workload:\n  type: synthetic\n  max_requests: 300\n"
                          "  benchmark: shared_prefix\n"
                          "  shared_prefix: {groups: 4, prompts_per_group: 8, "
                          "system_prompt_tokens: 512, question_tokens: 64, output_tokens: 16,"
                          " shuffle: true}\n"
                          "  client: {mode: burst, batch: 100}\n");
    const cluster_params p = params(2, 0.02);
    double e2e_sum[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        wl_client *cl = client(&cfg, 2, 1);
        cluster_result r;
        run(&p, "sticky", cl, &r);
        CHECK_INT_EQ(r.n_arrived, 300);
        uint64_t n;
        const wl_client_rec *cr = wl_client_records(cl, &n);
        /* Batches of 100 at once; the next when the previous completed. */
        double end0 = 0;
        for (uint64_t i = 0; i < 100; i++) {
            CHECK(cr[i].send_s == 0);
            end0 = end_of(&r, i) > end0 ? end_of(&r, i) : end0;
        }
        CHECK(cr[100].send_s == end0);
        /* Prompts are reused: 32 distinct prompts, 4 keys. */
        for (uint64_t i = 0; i < n; i++) {
            CHECK(r.rec[i].key < 4);
            CHECK_INT_EQ(r.rec[i].prompt_tokens, 576);
            e2e_sum[k] += r.rec[i].e2e_s;
        }
        cluster_result_fini(&r);
        wl_client_destroy(cl);
    }
    CHECK(e2e_sum[0] == e2e_sum[1]);
    printf("burst: 3 batches of 100 shared-prefix prompts, two runs identical\n");
    wl_config_fini(&cfg);
}

/* sessions with max_concurrency: at most that many in flight; sends that
 * waited for a slot keep their intended time (coordinated omission), and
 * latency_from: intended moves the run's percentiles to it. */
static void test_max_concurrency(void)
{
    char text[1024];
    snprintf(text, sizeof text, "%s  client: {mode: sessions, max_concurrency: 3, "
             "latency_from: intended, think: {dist: const, mean_s: 1}}\n", multi_turn);
    wl_config cfg = parse(text);
    const cluster_params p = params(1, 0.05);
    wl_client *cl = client(&cfg, 4, 3.0);
    cluster_result r;
    run(&p, "flat_lb", cl, &r);
    uint64_t n;
    const wl_client_rec *cr = wl_client_records(cl, &n);
    uint64_t delayed = 0;
    for (uint64_t i = 0; i < n; i++) {
        /* In flight at this send: earlier sends not yet completed. */
        uint64_t live = 0;
        for (uint64_t j = 0; j < i; j++)
            live += !(end_of(&r, j) <= cr[i].send_s);
        CHECK(live < 3);
        CHECK(cr[i].intended_s <= cr[i].send_s);
        delayed += cr[i].intended_s < cr[i].send_s;
    }
    CHECK(delayed > 10);
    exp_client_summary cs;
    const double p99_send = r.ttft_p99;
    exp_client_summarise(&cfg, cl, &r, &cs);
    CHECK(cs.ttft_p99_send == p99_send);
    CHECK(r.ttft_p99 == cs.ttft_p99_intended);
    CHECK(cs.ttft_p99_intended > cs.ttft_p99_send);
    CHECK_INT_EQ(cs.n_stages, 1);
    CHECK_INT_EQ(cs.stages[0].sent, n);
    printf("max_concurrency 3: %llu requests, %llu waited for a slot; p99 TTFT %.3f s from "
           "the send, %.3f s from the intended time\n", (unsigned long long)n,
           (unsigned long long)delayed, cs.ttft_p99_send, cs.ttft_p99_intended);
    exp_client_summary_fini(&cs);
    cluster_result_fini(&r);
    wl_client_destroy(cl);
    wl_config_fini(&cfg);
}

static void bad(const char *text, const char *needle)
{
    wl_config cfg;
    const int rc = wl_config_parse(text, "bad.yaml", &cfg);
    CHECK_INT_EQ(rc, SIM_EINVAL);
    if (!strstr(sim_errmsg(), needle)) {
        fprintf(stderr, "message '%s' does not name '%s'\n", sim_errmsg(), needle);
        CHECK(0);
    }
    wl_config_fini(&cfg);
}

static void test_bad_input(void)
{
    const char *head = "workload:\n  type: synthetic\n  duration_s: 10\n";
    char t[512];
    snprintf(t, sizeof t, "%s  client: {mode: stages}\n", head);
    bad(t, "workload.client.stages");
    snprintf(t, sizeof t, "%s  client: {mode: stages, stages: [{duration_s: 5}]}\n", head);
    bad(t, "workload.client.stages[0]");
    snprintf(t, sizeof t, "%s  client: {mode: stages, stages: [{rate: 1, duration_s: 0}]}\n",
             head);
    bad(t, "duration_s");
    snprintf(t, sizeof t, "%s  client: {mode: sessions, think: {mean_s: -1}}\n", head);
    bad(t, "workload.client.think.mean_s");
    snprintf(t, sizeof t, "%s  client: {mode: concurrency, concurrency: -2}\n", head);
    bad(t, "workload.client.concurrency");
    snprintf(t, sizeof t, "%s  client: {mode: sessions, stages: [{rate: 1, duration_s: 1}]}\n",
             head);
    bad(t, "workload.client.stages");
    snprintf(t, sizeof t, "%s  client: {mode: concurrency, max_concurrency: 4}\n", head);
    bad(t, "workload.client.max_concurrency");
    snprintf(t, sizeof t, "%s  client: {mode: sessions}\n  drift: {sigma: 0.3}\n", head);
    bad(t, "workload.drift.sigma");
    snprintf(t, sizeof t, "%s  client: {think: {mean_s: 2}}\n", head);
    bad(t, "workload.client.think.mean_s");
    snprintf(t, sizeof t, "%s  client: {mode: sessions, batch: 8}\n", head);
    bad(t, "workload.client.batch");
    snprintf(t, sizeof t, "%s  client: {mode: closed}\n", head);
    bad(t, "workload.client.mode");
    /* Concurrency from the load: not a whole number of clients. */
    snprintf(t, sizeof t, "%s  client: {mode: concurrency}\n", head);
    wl_config cfg = parse(t);
    wl_client *c = NULL;
    CHECK_INT_EQ(wl_client_create(&cfg, NULL, 1, 2.5, 16, &c), SIM_EINVAL);
    CHECK(strstr(sim_errmsg(), "workload.client.concurrency") != NULL);
    CHECK(c == NULL);
    wl_config_fini(&cfg);
    printf("bad input: every message names its key\n");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_client SPEC_DIR\n");
        return 99;
    }
    setenv("CRSIM_SPEC_DIR", argv[1], 1);
    CHECK_INT_EQ(spec_hw_load("h100-sxm", &hw), SIM_OK);
    CHECK_INT_EQ(spec_model_load("llama-3.3-70b", &model), SIM_OK);
    test_bad_input();
    test_littles_law();
    test_machine_repairman();
    test_sessions_invariants();
    test_same_users();
    test_stages_barrier();
    test_burst_and_determinism();
    test_max_concurrency();
    spec_hw_fini(&hw);
    spec_model_fini(&model);
    return 0;
}
