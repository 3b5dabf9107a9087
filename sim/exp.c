/*
 * The experiment harness: binds the crsim config, loads the trace and
 * specs once, then runs every (rate, seed, policy) point, stores each run
 * and prints one table row per run.  Every policy at a given (seed, rate)
 * gets a fresh replay of the same trace with the same seed, so all
 * policies see the identical request stream (common random numbers).
 */
#include "exp.h"

#include <gsl/gsl_sort.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "../models/cluster.h"
#include "../models/cost_profile.h"
#include "../models/route.h"
#include "../models/spec_load.h"
#include "../workloads/mooncake.h"
#include "../workloads/replay.h"
#include "../workloads/describe.h"
#include "../workloads/synth.h"
#include "error.h"
#include "store.h"
#include "version.h"

/* Policy names accepted in experiment.policies; a test checks that this
 * list equals the router registry. */
static const char *const policy_names[] = {"flat_lb",     "sticky",       "chwbl",
                                            "cacheroute",  "cr_replicate", "cr_affinity",
                                            NULL};
static const char *const dtype_names[] = {"bf16", "fp16", "fp8", NULL};

#define OFF(f) offsetof(exp_config, f)
#define CNT(f) offsetof(exp_config, f)

const sim_cfg_key exp_config_schema[] = {
    /* experiment */
    {.path = "experiment.name", .type = SIM_CFG_STRING, .offset = OFF(name),
     .help = "experiment name (names the default database)"},
    {.path = "experiment.db", .type = SIM_CFG_STRING, .offset = OFF(db), .def = "\"\"",
     .help = "result database; empty = results/<name>.db (relative to the current directory)"},
    {.path = "experiment.policies", .type = SIM_CFG_STRING_LIST, .offset = OFF(policies),
     .count_offset = CNT(n_policies), .min_len = 1, .choices = policy_names,
     .def = "[flat_lb, sticky]", .help = "routers to compare"},
    {.path = "experiment.rates", .type = SIM_CFG_DOUBLE_LIST, .offset = OFF(rates),
     .count_offset = CNT(n_rates), .min_len = 1, .min = 0, .max = 1e7,
     .flags = SIM_CFG_EXCL_MIN, .unit = "requests/s", .help = "offered loads (mean arrival rate)"},
    {.path = "experiment.seeds", .type = SIM_CFG_INT_LIST, .offset = OFF(seeds),
     .count_offset = CNT(n_seeds), .min_len = 1, .min = 0, .max = 9007199254740992.0,
     .def = "[1]", .help = "seeds; each (seed, rate) is one request stream shared by all policies"},
    {.path = "experiment.warmup_s", .type = SIM_CFG_DOUBLE, .offset = OFF(warmup_s), .min = 0,
     .max = 1e9, .def = "60", .unit = "s",
     .help = "requests arriving earlier are simulated but not measured"},
    {.path = "experiment.drain_s", .type = SIM_CFG_DOUBLE, .offset = OFF(drain_s), .min = 0,
     .max = 1e9, .def = "600", .unit = "s",
     .help = "simulate at most this long after the last arrival; later = unfinished"},
    {.path = "experiment.slo_ttft_s", .type = SIM_CFG_DOUBLE, .offset = OFF(slo_ttft_s),
     .min = 0, .max = 1e6, .flags = SIM_CFG_EXCL_MIN, .def = "3.5", .unit = "s",
     .help = "TTFT p99 SLO marked in the table"},
    /* cluster */
    {.path = "cluster.destinations", .type = SIM_CFG_INT, .offset = OFF(destinations), .min = 1,
     .max = 100000, .def = "30", .help = "destinations R (one engine each)"},
    {.path = "cluster.hardware", .type = SIM_CFG_STRING, .offset = OFF(hardware),
     .def = "h100-sxm", .help = "GPU spec: a name in models/specs/ or a path"},
    {.path = "cluster.model", .type = SIM_CFG_STRING, .offset = OFF(model),
     .def = "llama-3.3-70b", .help = "model spec: a name in models/specs/ or a path"},
    {.path = "cluster.tp", .type = SIM_CFG_INT, .offset = OFF(tp), .min = 1, .max = 64, .def = "2",
     .unit = "GPUs", .help = "tensor-parallel degree per destination"},
    {.path = "cluster.weight_dtype", .type = SIM_CFG_STRING, .offset = OFF(weight_dtype),
     .choices = dtype_names, .def = "fp8", .help = "weight format"},
    {.path = "cluster.kv_dtype", .type = SIM_CFG_STRING, .offset = OFF(kv_dtype),
     .choices = dtype_names, .def = "fp8", .help = "KV-cache format"},
    {.path = "cluster.mem_util", .type = SIM_CFG_DOUBLE, .offset = OFF(mem_util), .min = 0,
     .max = 1, .flags = SIM_CFG_EXCL_MIN, .def = "0.9",
     .help = "share of GPU memory the engine uses (vLLM gpu_memory_utilization)"},
    /* engine */
    {.path = "engine.block_size", .type = SIM_CFG_INT, .offset = OFF(block_size), .min = 1,
     .max = 4096, .def = "16", .unit = "tokens", .help = "KV block size"},
    {.path = "engine.max_num_batched_tokens", .type = SIM_CFG_INT,
     .offset = OFF(max_num_batched_tokens), .min = 1, .max = 1e7, .def = "8192",
     .unit = "tokens", .help = "token budget per step (chunked prefill)"},
    {.path = "engine.max_num_seqs", .type = SIM_CFG_INT, .offset = OFF(max_num_seqs), .min = 1,
     .max = 1e6, .def = "256", .help = "running requests per engine at most"},
    {.path = "engine.prefix_caching", .type = SIM_CFG_BOOL, .offset = OFF(prefix_caching),
     .def = "true", .help = "reuse cached prompt prefixes"},
    /* cost */
    {.path = "cost.model", .type = SIM_CFG_ENUM, .offset = OFF(cost_model),
     .choices = cost_kind_names, .def = "roofline",
     .help = "step-time model: roofline (DESIGN.md 4) or linear (fitted a + b.P + ...)"},
    {.path = "cost.profile", .type = SIM_CFG_STRING, .offset = OFF(cost_profile), .def = "\"\"",
     .help = "calibration profile: a name in models/specs/cost/ or a path; empty = the "
             "deployment's default (docs/calibration.md)"},
    /* routers */
    {.path = "router.sticky.vnodes", .type = SIM_CFG_INT, .offset = OFF(sticky_vnodes), .min = 1,
     .max = 1e5, .def = "256", .help = "virtual nodes per destination (sticky, chwbl)"},
    {.path = "router.chwbl.c", .type = SIM_CFG_DOUBLE, .offset = OFF(chwbl_c), .min = 1,
     .max = 1e9, .def = "1.25",
     .help = "bound factor c = 1 + eps: at most ceil(c x mean) in flight per destination"},
    {.path = "router.cacheroute.q_cap", .type = SIM_CFG_DOUBLE, .offset = OFF(cr_q_cap), .min = 0,
     .max = 1e9, .def = "0", .unit = "requests/s",
     .help = "per-destination capacity q_cap (measured; 0 = not set, an error for cacheroute)"},
    {.path = "router.cacheroute.slots", .type = SIM_CFG_DOUBLE, .offset = OFF(cr_slots), .min = 0,
     .max = 1e9, .def = "0",
     .help = "warm-slot budget W per destination (derived; 0 = not set, an error for cacheroute)"},
    {.path = "router.cacheroute.interval_s", .type = SIM_CFG_DOUBLE, .offset = OFF(cr_interval_s),
     .min = 0, .max = 1e9, .flags = SIM_CFG_EXCL_MIN, .def = "60", .unit = "s",
     .help = "control interval: rates measured over one interval plan the next"},
    {0},
};

int exp_config_load(const char *path, const char *const *sets, size_t n_set, exp_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    sim_cfgdoc *d = NULL;
    int rc = sim_cfgdoc_load(path, &d);
    if (rc)
        return rc;
    for (size_t i = 0; i < n_set && rc == SIM_OK; i++)
        rc = sim_cfgdoc_set(d, sets[i]);
    /* The workload section has its own schema (workloads/wl_config.h); it
     * is declared opaque here and bound right after. */
    const sim_cfg_section sections[] = {{NULL, exp_config_schema, cfg}, {"workload", NULL, NULL}};
    if (rc == SIM_OK)
        rc = sim_cfg_bind_sections(d, sections, 2);
    if (rc == SIM_OK)
        rc = wl_config_bind(d, &cfg->wl);
    if (rc == SIM_OK && strcmp(cfg->wl.type, "mooncake") == 0 &&
        cfg->wl.trace_block_tokens % cfg->block_size != 0)
        rc = SIM_ERROR(SIM_EINVAL, "%s: engine.block_size %lld does not divide "
                       "workload.trace_block_tokens %lld; expected a divisor (e.g. 16)",
                       path, (long long)cfg->block_size, (long long)cfg->wl.trace_block_tokens);
    for (size_t i = 0; rc == SIM_OK && i < cfg->n_policies; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->policies[i], cfg->policies[j]) == 0) {
                rc = SIM_ERROR(SIM_EINVAL, "%s: experiment.policies lists '%s' twice; expected "
                               "each policy once", path, cfg->policies[i]);
                break;
            }
    sim_cfgdoc_destroy(d);
    if (rc)
        exp_config_fini(cfg);
    return rc;
}

void exp_config_fini(exp_config *cfg)
{
    wl_config_fini(&cfg->wl);
    sim_cfg_free(exp_config_schema, cfg);
}

/* Canonical text of the harness keys followed by the workload section. */
static char *dump_all(const exp_config *cfg)
{
    char *a = sim_cfg_dump(exp_config_schema, cfg);
    char *b = wl_config_dump(&cfg->wl);
    size_t na = strlen(a), nb = strlen(b);
    char *s = sim_xmalloc(na + nb + 1);
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
    free(a);
    free(b);
    return s;
}

char *exp_config_dump(const exp_config *cfg) { return dump_all(cfg); }

/* The full config of one run: the experiment's config with the lists of
 * policies, rates and seeds narrowed to this run's point. */
static char *run_config_text(const exp_config *cfg, size_t ip, size_t ir, size_t is)
{
    exp_config one = *cfg;
    one.policies = &cfg->policies[ip];
    one.n_policies = 1;
    one.rates = &cfg->rates[ir];
    one.n_rates = 1;
    one.seeds = &cfg->seeds[is];
    one.n_seeds = 1;
    return dump_all(&one);
}

static void hash_hex(const char *text, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)XXH3_64bits(text, strlen(text)));
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fmt_s(char *buf, size_t n, double x)
{
    if (isnan(x))
        snprintf(buf, n, "-");
    else if (isinf(x))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, "%.3f", x);
}

static int replay_next(void *state, wl_request *out) { return wl_replay_next(state, out); }

/* Request streams of an experiment: the trace is loaded once; every run
 * gets a fresh stream for its (seed, rate), identical for every policy. */
typedef struct streams {
    const exp_config *cfg;
    bool is_trace;
    wl_trace *trace;
    wl_replay *replay;
    wl_synth *synth;
} streams;

static int streams_init(streams *s, const exp_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->is_trace = strcmp(cfg->wl.type, "mooncake") == 0;
    if (s->is_trace)
        return wl_mooncake_load(cfg->wl.trace, (uint32_t)cfg->wl.trace_block_tokens, &s->trace);
    return SIM_OK;
}

static int streams_open(streams *s, uint64_t seed, double rate, wl_source *out)
{
    const exp_config *cfg = s->cfg;
    int rc;
    if (s->is_trace) {
        wl_replay_params wp = {.block_size = (uint32_t)cfg->block_size,
                               .key_ids = (uint32_t)cfg->wl.key_ids, .rate = rate,
                               .tick_s = cfg->wl.tick_s, .seed = seed,
                               .max_requests = (uint64_t)cfg->wl.max_requests};
        if ((rc = wl_replay_create(s->trace, &wp, &s->replay)))
            return rc;
        *out = (wl_source){s->replay, replay_next};
        return SIM_OK;
    }
    if ((rc = wl_synth_create(&cfg->wl, seed, rate, (uint32_t)cfg->block_size, &s->synth)))
        return rc;
    *out = wl_synth_source(s->synth);
    return SIM_OK;
}

static void streams_close(streams *s)
{
    wl_replay_destroy(s->replay);
    wl_synth_destroy(s->synth);
    s->replay = NULL;
    s->synth = NULL;
}

static void streams_fini(streams *s)
{
    streams_close(s);
    wl_trace_destroy(s->trace);
    s->trace = NULL;
}

/* One line saying what the workload is. */
static void describe_workload(const streams *s, FILE *out)
{
    const exp_config *cfg = s->cfg;
    if (s->is_trace) {
        fprintf(out, "workload: %s (%zu requests, %.0f s, %.2f requests/s as recorded)\n\n",
                cfg->wl.trace, s->trace->n, wl_trace_span_s(s->trace),
                wl_trace_mean_rate(s->trace));
        return;
    }
    wl_keyrates kr = {0};
    wl_keystats ks = {0};
    if (wl_synth_keys(&cfg->wl, &kr, NULL) == SIM_OK && wl_keyrates_describe(&kr, &ks) == SIM_OK)
        fprintf(out, "workload: synthetic%s%s, %zu keys, Gini %.3f, top 4%% of keys %.1f%% of "
                "requests, max key share %.3f%%\n\n", cfg->wl.name[0] ? " " : "", cfg->wl.name,
                ks.n, ks.gini, 100 * ks.top4, 100 * ks.max_share);
    wl_keyrates_fini(&kr);
}

static void print_header(FILE *out)
{
    fprintf(out, "%-12s %8s %5s %7s %9s %9s %9s %7s %7s %7s %6s  %s\n", "policy", "rate/s",
            "seed", "hit%", "TTFTp50", "TTFTp99", "E2Ep99", "imbal", "done", "unfin", "preempt",
            "SLO");
}

static void print_row(FILE *out, const char *policy, double rate, int64_t seed,
                      const cluster_result *r, double slo)
{
    char t50[16], t99[16], e99[16];
    fmt_s(t50, sizeof t50, r->ttft_p50);
    fmt_s(t99, sizeof t99, r->ttft_p99);
    fmt_s(e99, sizeof e99, r->e2e_p99);
    fprintf(out, "%-12s %8.2f %5lld %7.2f %9s %9s %9s %7.3f %7llu %7llu %6llu  %s\n", policy, rate,
            (long long)seed, 100.0 * r->hit_rate, t50, t99, e99, r->imbalance_work,
            (unsigned long long)r->n_completed, (unsigned long long)(r->n_unfinished + r->n_rejected),
            (unsigned long long)r->preemptions, r->ttft_p99 <= slo ? "pass" : "FAIL");
}

static void print_keystats(FILE *out, const char *what, const wl_keystats *ks)
{
    fprintf(out, "%s: %zu keys, Gini %.4f, top 1%% %.1f%%, top 4%% %.1f%%, top 10%% %.1f%%, "
            "largest key %.3f%%\n", what, ks->n, ks->gini, 100 * ks->top1, 100 * ks->top4,
            100 * ks->top10, 100 * ks->max_share);
}

int exp_workload_describe(const wl_config *wl, uint64_t seed, double rate, uint64_t max,
                          uint32_t block_size, FILE *out)
{
    exp_config cfg = {.wl = *wl, .block_size = block_size};
    streams st;
    int rc = streams_init(&st, &cfg);
    if (rc)
        return rc;
    wl_keystats ks;
    if (st.is_trace) {
        /* Per-key request counts of the whole trace. */
        size_t n = st.trace->n;
        unsigned long *keys = sim_xmalloc(n * sizeof *keys); /* 64-bit on LP64 */
        for (size_t i = 0; i < n; i++)
            keys[i] = wl_trace_routing_key(st.trace, i, (uint32_t)wl->key_ids);
        gsl_sort_ulong(keys, 1, n);
        double *cnt = sim_xmalloc(n * sizeof *cnt);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || keys[i] != keys[i - 1])
                cnt[k++] = 0;
            cnt[k - 1] += 1;
        }
        rc = wl_rates_describe(cnt, k, &ks);
        free(keys);
        free(cnt);
        if (rc == SIM_OK) {
            fprintf(out, "trace %s: %zu requests over %.0f s (%.2f requests/s as recorded)\n",
                    wl->trace, n, wl_trace_span_s(st.trace), wl_trace_mean_rate(st.trace));
            print_keystats(out, "routing keys (request counts)", &ks);
        }
    } else {
        wl_keyrates kr = {0};
        double theta = NAN;
        rc = wl_synth_keys(wl, &kr, &theta);
        if (rc == SIM_OK)
            rc = wl_keyrates_describe(&kr, &ks);
        if (rc == SIM_OK) {
            fprintf(out, "synthetic workload %s: %s key rates, shape parameter %.4f\n",
                    wl->name[0] ? wl->name : "(unnamed)", wl->keys.distribution, theta);
            print_keystats(out, "key-rate population", &ks);
        }
        wl_keyrates_fini(&kr);
    }
    wl_source src;
    if (rc == SIM_OK)
        rc = streams_open(&st, seed, rate, &src);
    if (rc == SIM_OK) {
        wl_stream_stats ss;
        rc = wl_stream_describe(src, max, block_size, &ss);
        if (rc == SIM_OK)
            fprintf(out, "stream (seed %llu, target %.2f requests/s, first %llu requests): "
                    "%.2f requests/s over %.0f s, inter-arrival CV %.2f, %llu distinct keys,\n"
                    "  mean prompt %.0f tokens, mean output %.0f tokens, infinite-cache hit "
                    "rate %.3f (%llu-token blocks)\n", (unsigned long long)seed, rate,
                    (unsigned long long)ss.requests, ss.rate, ss.span_s, ss.iat_cv,
                    (unsigned long long)ss.keys, ss.mean_prompt, ss.mean_output,
                    ss.inf_hit_rate, (unsigned long long)block_size);
    }
    streams_fini(&st);
    return rc;
}

int exp_run(const exp_config *cfg, const exp_run_opts *o, FILE *out)
{
    spec_hw hw = {0};
    spec_model model = {0};
    streams st;
    exp_store *store = NULL;
    char *cfg_text = NULL;
    char *db_path = NULL;
    int64_t exp_id = 0;
    bool begun = false;
    int rc;

    memset(&st, 0, sizeof st);
    if ((rc = spec_hw_load(cfg->hardware, &hw)) || (rc = spec_model_load(cfg->model, &model)))
        goto done;
    spec_deploy dep = {.hw = &hw, .model = &model, .tp = cfg->tp, .mem_util = cfg->mem_util,
                       .block_size = cfg->block_size};
    spec_dtype_parse(cfg->weight_dtype, &dep.weight_dtype);
    spec_dtype_parse(cfg->kv_dtype, &dep.kv_dtype);
    uint64_t pool_tokens;
    uint32_t pool_blocks;
    if ((rc = spec_kv_pool(&dep, &pool_tokens, &pool_blocks)))
        goto done;
    if ((rc = streams_init(&st, cfg)))
        goto done;
    cost_model cost;
    char cost_line[512] = "";
    {
        char *pname = cfg->cost_profile[0] ? sim_xstrdup(cfg->cost_profile)
                                           : cost_profile_default_name(&dep);
        cost_profile prof;
        rc = cost_profile_load(pname, &prof);
        if (rc == SIM_OK) {
            rc = cost_model_from_profile(&cost, (enum cost_kind)cfg->cost_model, &dep, &prof);
            cost_profile_fini(&prof);
        }
        if (rc == SIM_OK)
            snprintf(cost_line, sizeof cost_line, "cost model: %s, calibration profile %s\n",
                     cost_kind_name((enum cost_kind)cfg->cost_model), pname);
        free(pname);
        if (rc)
            goto done;
    }

    if (cfg->db && cfg->db[0]) {
        db_path = sim_xstrdup(cfg->db);
    } else {
        size_t n = strlen(cfg->name) + 16;
        db_path = sim_xmalloc(n);
        snprintf(db_path, n, "results/%s.db", cfg->name);
    }
    if ((rc = exp_store_open(db_path, &store)))
        goto done;
    cfg_text = exp_config_dump(cfg);
    char hash[17];
    hash_hex(cfg_text, hash);
    const size_t n_runs = cfg->n_policies * cfg->n_rates * cfg->n_seeds;
    if ((rc = exp_store_begin(store, cfg->name, o->config_path, cfg_text, hash, CRSIM_VERSION,
                              (int64_t)n_runs, &exp_id)))
        goto done;
    begun = true;

    fprintf(out, "crsim %s: experiment '%s' (id %lld), %zu runs -> %s\n", CRSIM_VERSION,
            cfg->name, (long long)exp_id, n_runs, db_path);
    fprintf(out, "cluster: %lld x %s on %lld x %s, weights %s, KV %s\n",
            (long long)cfg->destinations, model.name, (long long)cfg->tp, hw.name,
            cfg->weight_dtype, cfg->kv_dtype);
    fputs(cost_line, out);
    fprintf(out, "KV pool per destination: %u blocks x %lld tokens = %llu tokens (%.1f GB)\n",
            pool_blocks, (long long)cfg->block_size, (unsigned long long)pool_tokens,
            (double)pool_tokens * spec_kv_bytes_per_token(&model, dep.kv_dtype) / 1e9);
    describe_workload(&st, out);
    print_header(out);
    fflush(out);

    cluster_params cp = {
        .n_dest = (uint32_t)cfg->destinations,
        .deploy = dep,
        .cost = cost,
        .engine = {.block_size = (uint32_t)cfg->block_size,
                   .max_num_batched_tokens = (uint32_t)cfg->max_num_batched_tokens,
                   .max_num_seqs = (uint32_t)cfg->max_num_seqs,
                   .prefix_caching = cfg->prefix_caching},
        .warmup_s = cfg->warmup_s,
        .drain_s = cfg->drain_s,
        .stop = o->stop,
    };
    size_t done_runs = 0;
    for (size_t ir = 0; ir < cfg->n_rates && rc == SIM_OK; ir++) {
        for (size_t is = 0; is < cfg->n_seeds && rc == SIM_OK; is++) {
            for (size_t ip = 0; ip < cfg->n_policies && rc == SIM_OK; ip++) {
                const route_type *rt = route_find(cfg->policies[ip]);
                SIM_ALWAYS(rt != NULL); /* validated against policy_names */
                route_params rp = {.n_dest = cp.n_dest, .seed = (uint64_t)cfg->seeds[is],
                                   .sticky_vnodes = (uint32_t)cfg->sticky_vnodes,
                                   .chwbl_c = cfg->chwbl_c, .cr_q_cap = cfg->cr_q_cap,
                                   .cr_slots = cfg->cr_slots,
                                   .interval_s = cfg->cr_interval_s};
                wl_source src;
                if ((rc = streams_open(&st, (uint64_t)cfg->seeds[is], cfg->rates[ir], &src)))
                    break;
                char started[32];
                exp_utc_now(started, sizeof started);
                double t0 = wall_now();
                cluster_result res;
                rc = cluster_run(&cp, rt, &rp, src, &res);
                double wall = wall_now() - t0;
                streams_close(&st);
                if (rc == SIM_OK) {
                    char *text = run_config_text(cfg, ip, ir, is);
                    char rhash[17];
                    hash_hex(text, rhash);
                    exp_run_row row = {.policy = rt->name, .seed = cfg->seeds[is],
                                       .rate_rps = cfg->rates[ir], .config_text = text,
                                       .config_hash = rhash, .started_at = started,
                                       .wall_s = wall};
                    rc = exp_store_add_run(store, exp_id, &row, &res, NULL);
                    free(text);
                    if (rc == SIM_OK) {
                        print_row(out, rt->name, cfg->rates[ir], cfg->seeds[is], &res,
                                  cfg->slo_ttft_s);
                        fflush(out);
                        done_runs++;
                        if (!o->quiet)
                            fprintf(stderr, "[%zu/%zu] %s rate %.2f seed %lld: %llu requests "
                                    "in %.2f s wall (%.0f requests/s)\n", done_runs, n_runs,
                                    rt->name, cfg->rates[ir], (long long)cfg->seeds[is],
                                    (unsigned long long)res.n_arrived, wall,
                                    (double)res.n_arrived / wall);
                    }
                }
                cluster_result_fini(&res);
            }
        }
    }
    if (rc == SIM_OK)
        fprintf(out, "\nhit%% = served token-weighted KV prefix-hit rate; times in seconds; "
                "imbal = max/mean served tokens per destination;\nunfin = unfinished at the "
                "end of the drain window (counted as SLO violations); SLO = TTFT p99 <= %g s.\n"
                "stored in %s (experiment %lld)\n", cfg->slo_ttft_s, db_path, (long long)exp_id);

done:
    if (begun) {
        int rc2 = exp_store_end(store, exp_id, rc == SIM_OK ? "complete" : "incomplete");
        if (rc == SIM_OK)
            rc = rc2;
    }
    exp_store_close(store);
    free(cfg_text);
    free(db_path);
    streams_fini(&st);
    spec_hw_fini(&hw);
    spec_model_fini(&model);
    return rc;
}
