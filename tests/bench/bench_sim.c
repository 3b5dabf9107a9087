/*
 * Simulation-cost benchmark (not a test: it asserts nothing about time).
 * Runs cluster_run() on one of two fixed scenarios and prints wall time per
 * simulated request, requests per wall-second, the run's CPU time (and its
 * user and system parts, with its minor page faults), peak RSS, and a fingerprint
 * of the results (so that two builds can be checked to simulate the same
 * thing, bit for bit, before their speeds are compared).
 *
 *   bench_sim flagship PRESET.yaml [DURATION_S] [RATE] [POLICY]
 *       30 destinations of Llama-3.3-70B fp8 TP=2 (calibrated cost
 *       profile), 16-token blocks, prefix caching, the synthetic preset
 *       (workloads/specs/paper-main.yaml) with keys.active_set = 128, at
 *       RATE requests/s (default 100) for DURATION_S simulated seconds of
 *       arrivals (default 3600), router POLICY (default cacheroute with
 *       q_cap 6, slots 4, interval 60 s).
 *   bench_sim mooncake TRACE [RATE] [POLICY] [MAX_REQUESTS]
 *       The Mooncake conversation trace on the same cluster, time-scaled to
 *       RATE requests/s (default 20), router POLICY (default flat_lb).
 *   bench_sim experiment CONFIG.yaml RATE POLICY [SEED] [--set KEY=VALUE]...
 *       One run of an experiment config exactly as `crsim run` sets it up
 *       (cluster, engine, gateway, router parameters, warm-up, drain and
 *       workload of the file, then the --set overrides as `crsim run
 *       --set`; seed default 1), without the result store: e.g.
 *       experiments/flagship.yaml 100 cacheroute is the flagship
 *       experiment's run at 100 requests/s, and --set
 *       gateway.scrape_interval_s=0 gives it the exact information model
 *       of the recorded fingerprints.
 *
 * The generation cost of the request stream is measured separately (the
 * same stream, generated and freed without simulating) and reported both
 * included and subtracted, so the figure the engine and cache are
 * responsible for is visible on its own.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "models/cluster.h"
#include "models/cost_profile.h"
#include "models/spec_load.h"
#include "sim/core/error.h"
#include "sim/exp/cli.h"
#include "sim/exp/exp.h"
#include "sim/core/metrics.h"
#include "sim/exp/setup.h"
#include "workloads/mooncake.h"
#include "workloads/replay.h"
#include "workloads/synth.h"
#include "sim/core/wall.h"

static void die(const char *what)
{
    fprintf(stderr, "bench_sim: %s: %s\n", what, sim_errmsg());
    exit(1);
}

static int synth_next(void *s, wl_request *out) { return wl_synth_next(s, out); }
static int replay_next(void *s, wl_request *out) { return wl_replay_next(s, out); }

/* One scenario: how to (re)open its request stream. */
typedef struct scenario {
    const char *name;
    wl_config wl;      /* flagship */
    wl_trace *trace;   /* mooncake */
    double rate;
    uint64_t max_requests;
    wl_synth *synth;
    wl_replay *replay;
} scenario;

static wl_source open_stream(scenario *s)
{
    if (s->trace) {
        wl_replay_params wp = {.block_size = 16, .key_ids = 2, .rate = s->rate, .tick_s = 3,
                               .seed = 1, .max_requests = s->max_requests};
        if (wl_replay_create(s->trace, &wp, &s->replay))
            die("replay");
        return (wl_source){.state = s->replay, .next = replay_next};
    }
    if (wl_synth_create(&s->wl, 1, s->rate, 16, &s->synth))
        die("synthetic workload");
    return (wl_source){.state = s->synth, .next = synth_next};
}

static void close_stream(scenario *s)
{
    wl_synth_destroy(s->synth);
    wl_replay_destroy(s->replay);
    s->synth = NULL;
    s->replay = NULL;
}

/* Process CPU time, s (CLOCK_PROCESS_CPUTIME_ID): on a loaded machine
 * the run's CPU time is steadier than its wall time. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_run_s; /* CPU time of the timed run, set before report() */

/* The run's user and system CPU time, s, and minor page faults, from
 * getrusage before and after it (run_usage_start, run_usage_stop).  On a
 * virtual machine whose balloon hands freed memory back to its host
 * (Firecracker), a run's first touch of pages its process had not used
 * waits for the host, and that wait is system time of the page faults:
 * the user time is the simulator's own (docs/performance.md, round 10). */
static struct rusage ru_run0;
static double user_run_s, sys_run_s;
static long minflt_run;

static double tv_s(struct timeval t) { return (double)t.tv_sec + 1e-6 * (double)t.tv_usec; }

static void run_usage_start(void) { getrusage(RUSAGE_SELF, &ru_run0); }

static void run_usage_stop(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    user_run_s = tv_s(r.ru_utime) - tv_s(ru_run0.ru_utime);
    sys_run_s = tv_s(r.ru_stime) - tv_s(ru_run0.ru_stime);
    minflt_run = r.ru_minflt - ru_run0.ru_minflt;
}

static void report(const char *name, const char *policy, double rate, uint64_t gen,
                   uint64_t blocks, double t_gen, double t_run, const cluster_result *res)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double n = (double)res->n_arrived;
    printf("%s: %s at %.0f requests/s: %llu requests (%.0f blocks each), %llu events, "
           "%llu steps\n", name, policy, rate, (unsigned long long)res->n_arrived,
           (double)blocks / (double)gen, (unsigned long long)res->events,
           (unsigned long long)res->steps);
    printf("%s: wall %.3f s = %.2f us/request (%.0f requests/s); stream generation alone "
           "%.2f us/request; simulation %.2f us/request\n", name, t_run, 1e6 * t_run / n,
           n / t_run, 1e6 * t_gen / (double)gen, 1e6 * (t_run - t_gen) / n);
    printf("%s: cpu %.3f s = %.2f us/request (process CPU time of the run)\n", name, cpu_run_s,
           1e6 * cpu_run_s / n);
    printf("%s: user %.2f us/request, system %.2f us/request, %ld minor page faults (of the run)\n",
           name, 1e6 * user_run_s / n, 1e6 * sys_run_s / n, minflt_run);
    printf("%s: peak RSS %.1f MB\n", name, (double)ru.ru_maxrss / 1024.0);
    /* The run's percentile step, timed alone: p50/p90/p99 of TTFT, E2E
     * and TPOT over every request, by selection (sim_quantiles), as
     * cluster_run's summary does. */
    {
        const size_t nr = (size_t)res->n_arrived;
        double *v = malloc((nr ? nr : 1) * sizeof *v);
        const double q[3] = {0.5, 0.9, 0.99};
        double out[3], sink = 0;
        const double t0 = sim_wall_s();
        for (int a = 0; a < 3; a++) {
            for (size_t i = 0; i < nr; i++) {
                const cluster_rec *x = &res->rec[i];
                const double t = a == 0 ? x->ttft_s : a == 1 ? x->e2e_s
                                 : x->output_tokens > 1 && x->e2e_s >= 0
                                     ? (x->e2e_s - x->ttft_s) / (x->output_tokens - 1)
                                     : -1;
                v[i] = t >= 0 ? t : INFINITY;
            }
            sim_quantiles(v, nr, q, 3, out);
            sink += out[2];
        }
        const double t_q = sim_wall_s() - t0;
        free(v);
        printf("%s: percentiles (p50/p90/p99 of TTFT, E2E, TPOT over %zu requests, by "
               "selection): %.1f ms = %.2f us/request = %.1f %% of the run (p99 sum %.3g)\n",
               name, nr, 1e3 * t_q, 1e6 * t_q / n, 100 * t_q / t_run, sink);
    }
    printf("%s: fingerprint completed=%llu unfinished=%llu rejected=%llu hit_tokens=%llu "
           "preemptions=%llu ttft_p99=%.17g e2e_p99=%.17g end=%.17g\n", name,
           (unsigned long long)res->n_completed, (unsigned long long)res->n_unfinished,
           (unsigned long long)res->n_rejected, (unsigned long long)res->hit_tokens,
           (unsigned long long)res->preemptions, res->ttft_p99, res->e2e_p99, res->sim_end_s);
}

/* bench_sim experiment CONFIG RATE POLICY [SEED] [--set KEY=VALUE]...: one
 * run as crsim run. */
static int bench_experiment(int argc, char **argv)
{
    static const char usage[] =
        "usage: bench_sim experiment CONFIG.yaml RATE POLICY [SEED] [--set KEY=VALUE]...\n";
    if (argc < 5) {
        fputs(usage, stderr);
        return 2;
    }
    int a = 5;
    uint64_t seed = 1;
    if (a < argc && strcmp(argv[a], "--set") != 0)
        seed = strtoull(argv[a++], NULL, 10);
    const char **sets = calloc((size_t)argc, sizeof *sets);
    size_t n_set = 0;
    for (; a < argc; a += 2) {
        if (strcmp(argv[a], "--set") != 0 || a + 1 >= argc) {
            fputs(usage, stderr);
            return 2;
        }
        sets[n_set++] = argv[a + 1];
    }
    exp_config cfg;
    exp_setup su;
    if (exp_config_load(argv[2], sets, n_set, &cfg))
        die(argv[2]);
    free(sets);
    if (exp_setup_init(&cfg, &su))
        die(argv[2]);
    const double rate = atof(argv[3]);
    const char *policy = argv[4];
    const route_type *rt = route_find(policy);
    if (!rt || !(rate > 0)) {
        fprintf(stderr, "bench_sim: bad policy or rate\n");
        return 2;
    }
    /* Generation alone: the same stream, produced and freed. */
    exp_stream *st;
    if (exp_stream_open(&su, seed, rate, &st))
        die("stream");
    wl_source src = exp_stream_source(st);
    double t0 = sim_wall_s();
    wl_request r;
    uint64_t gen = 0, blocks = 0;
    while (src.next(src.state, &r) > 0) {
        gen++;
        blocks += r.n_blocks;
        wl_request_fini(&r);
    }
    double t_gen = sim_wall_s() - t0;
    exp_stream_close(st);

    const route_env env = exp_setup_route_env(&su, seed, rate);
    cluster_result res;
    if (exp_stream_open(&su, seed, rate, &st))
        die("stream");
    t0 = sim_wall_s();
    const double c0 = cpu_s();
    run_usage_start();
    if (cluster_run(&su.cp, rt, &env, cfg.router, exp_stream_source(st), &res))
        die("cluster_run");
    double t_run = sim_wall_s() - t0;
    cpu_run_s = cpu_s() - c0;
    run_usage_stop();
    exp_stream_close(st);
    report("experiment", policy, rate, gen, blocks, t_gen, t_run, &res);
    cluster_result_fini(&res);
    exp_setup_fini(&su);
    exp_config_fini(&cfg);
    return 0;
}

int main(int argc, char **argv)
{
    exp_hugepages(argv); /* as crsim does (sim/exp/main.c) */
    exp_tune_malloc();
    if (argc >= 2 && !strcmp(argv[1], "experiment"))
        return bench_experiment(argc, argv);
    if (argc < 3 || (strcmp(argv[1], "flagship") && strcmp(argv[1], "mooncake"))) {
        fprintf(stderr, "usage: bench_sim flagship PRESET.yaml [DURATION_S] [RATE] [POLICY]\n"
                        "       bench_sim mooncake TRACE [RATE] [POLICY] [MAX_REQUESTS]\n"
                        "       bench_sim experiment CONFIG.yaml RATE POLICY [SEED] "
                        "[--set KEY=VALUE]...\n");
        return 2;
    }
    scenario s = {.name = argv[1]};
    const char *policy;
    if (!strcmp(argv[1], "flagship")) {
        if (wl_config_load(argv[2], &s.wl))
            die(argv[2]);
        s.wl.duration_s = argc > 3 ? atof(argv[3]) : 3600;
        s.wl.max_requests = 0;
        s.wl.keys.active_set = 128;
        s.rate = argc > 4 ? atof(argv[4]) : 100;
        policy = argc > 5 ? argv[5] : "cacheroute";
    } else {
        if (wl_mooncake_load(argv[2], 512, &s.trace))
            die(argv[2]);
        s.rate = argc > 3 ? atof(argv[3]) : 20;
        policy = argc > 4 ? argv[4] : "flat_lb";
        s.max_requests = argc > 5 ? strtoull(argv[5], NULL, 10) : 0;
    }

    spec_hw hw;
    spec_model model;
    if (spec_hw_load("h100-sxm", &hw) || spec_model_load("llama-3.3-70b", &model))
        die("specs");
    cluster_params p = {
        .n_dest = 30,
        .deploy = {.hw = &hw, .model = &model, .tp = 2, .weight_dtype = SPEC_FP8,
                   .kv_dtype = SPEC_FP8, .mem_util = 0.9, .block_size = 16},
        .engine = {.block_size = 16, .max_num_batched_tokens = 8192, .max_num_seqs = 256,
                   .prefix_caching = true},
        .warmup_s = 60,
        .drain_s = 600,
    };
    char *pname = cost_profile_default_name(&p.deploy);
    cost_profile prof;
    if (cost_profile_load(pname, &prof) ||
        cost_model_from_profile(&p.cost, COST_ROOFLINE, &p.deploy, &prof))
        die(pname);
    cost_profile_fini(&prof);
    free(pname);
    const route_type *rt = route_find(policy);
    if (!rt) {
        fprintf(stderr, "bench_sim: unknown policy %s\n", policy);
        return 2;
    }
    /* The fixed scenarios' router inputs (cacheroute keeps its first plan:
     * replan false, as these fingerprints always had). */
    const route_env env = {.n_dest = 30, .seed = 1, .ttft_slo_s = 3.5};
    route_config *rcfg = NULL;
    if (route_config_parse("router:\n  sticky: {vnodes: 256}\n  chwbl: {c: 1.25}\n"
                           "  cacheroute: {q_cap: 6, slots: 4, interval_s: 60, replan: false}\n",
                           "bench_sim", &rcfg))
        die("router config");

    /* Generation alone: the same stream, produced and freed. */
    wl_source src = open_stream(&s);
    double t0 = sim_wall_s();
    wl_request r;
    uint64_t gen = 0, blocks = 0;
    while (src.next(src.state, &r) > 0) {
        gen++;
        blocks += r.n_blocks;
        wl_request_fini(&r);
    }
    double t_gen = sim_wall_s() - t0;
    close_stream(&s);

    src = open_stream(&s);
    cluster_result res;
    t0 = sim_wall_s();
    const double c0 = cpu_s();
    run_usage_start();
    if (cluster_run(&p, rt, &env, rcfg, src, &res))
        die("cluster_run");
    double t_run = sim_wall_s() - t0;
    cpu_run_s = cpu_s() - c0;
    run_usage_stop();
    close_stream(&s);

    report(s.name, policy, s.rate, gen, blocks, t_gen, t_run, &res);
    cluster_result_fini(&res);
    route_config_free(rcfg);
    if (s.trace)
        wl_trace_destroy(s.trace);
    else
        wl_config_fini(&s.wl);
    spec_hw_fini(&hw);
    spec_model_fini(&model);
    return 0;
}
