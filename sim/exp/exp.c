/*
 * The experiment harness: binds the crsim config, expands the sweep into
 * points (each a full config), runs every point × rate × seed × policy on
 * a pool of worker threads, and stores the runs in run-index order, so the
 * database never depends on the number of jobs.  Every policy at a given
 * (point, seed, rate) gets a fresh stream with the same seed, so all
 * policies see the identical request stream (common random numbers).
 */
#include "sim/exp/exp.h"
#include "sim/exp/capacity.h"

#include <gsl/gsl_sort.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>


#include "models/cluster.h"
#include "models/routers/route.h"
#include "models/spec_load.h"
#include "workloads/client.h"
#include "workloads/describe.h"
#include "workloads/ingest.h"
#include "workloads/keyrates.h"
#include "workloads/synth.h"
#include "sim/core/error.h"
#include "sim/core/number.h"
#include "sim/core/fileio.h"
#include "sim/exp/client_metrics.h"
#include "sim/exp/pool.h"
#include "sim/exp/setup.h"
#include "sim/exp/store.h"
#include "version.h"
#include "sim/core/wall.h"

#define SLO_NAME(c, f) #f,
const char *const exp_slo_metric_names[] = {EXP_SLO_METRICS(SLO_NAME) NULL};
#undef SLO_NAME
const char *const exp_sweep_mode_names[] = {EXP_SWEEP_MODES(SIM_XENUM_NAME) NULL};
/* gateway.replica_assignment, in enum cluster_assign order. */
static const char *const assign_names[] = {"round_robin", "random", NULL};
/* enum engine_flavor and enum engine_policy order. */
static const char *const flavor_names[] = {"vllm", "sglang", NULL};
static const char *const sched_policy_names[] = {"fcfs", "lpm", NULL};

#define OFF(f) offsetof(exp_config, f)
#define CNT(f) offsetof(exp_config, f)

/* ---- mixed fleets: cluster.groups (docs/mixed-fleets.md) ---- */

#define GOFF(f) offsetof(exp_group_cfg, f)

/* One element of cluster.groups.  "" and 0 inherit the cluster-level key
 * (exp_config_group), so a group states only what differs. */
static const sim_cfg_key group_schema[] = {
    {.path = "name", .type = SIM_CFG_STRING, .offset = GOFF(name),
     .help = "group name (unique; 1-63 of A-Z a-z 0-9 . _ -), shown in the run's set-up "
             "line"},
    {.path = "destinations", .type = SIM_CFG_INT, .offset = GOFF(destinations), .min = 1,
     .max = 100000, .help = "destinations in this group (one engine each)"},
    {.path = "hardware", .type = SIM_CFG_STRING, .offset = GOFF(hardware), .def = "\"\"",
     .help = "GPU spec: a name in models/specs/ or a path; \"\" = cluster.hardware"},
    {.path = "model", .type = SIM_CFG_STRING, .offset = GOFF(model), .def = "\"\"",
     .help = "model spec; \"\" = cluster.model"},
    {.path = "tp", .type = SIM_CFG_INT, .offset = GOFF(tp), .min = 0, .max = 64, .def = "0",
     .unit = "GPUs", .help = "tensor-parallel degree; 0 = cluster.tp"},
    {.path = "weight_dtype", .type = SIM_CFG_STRING, .offset = GOFF(weight_dtype),
     .def = "\"\"", .help = "weight format (bf16, fp16, fp8); \"\" = cluster.weight_dtype"},
    {.path = "kv_dtype", .type = SIM_CFG_STRING, .offset = GOFF(kv_dtype), .def = "\"\"",
     .help = "KV-cache format (bf16, fp16, fp8); \"\" = cluster.kv_dtype"},
    {.path = "mem_util", .type = SIM_CFG_DOUBLE, .offset = GOFF(mem_util), .min = 0, .max = 1,
     .def = "0", .help = "share of GPU memory the engine uses; 0 = cluster.mem_util"},
    {.path = "cost_profile", .type = SIM_CFG_STRING, .offset = GOFF(cost_profile),
     .def = "\"\"",
     .help = "calibration profile; \"\" = cost.profile, or the group deployment's default "
             "when cost.profile is \"\""},
    {.path = "engine.max_num_batched_tokens", .type = SIM_CFG_INT,
     .offset = GOFF(max_num_batched_tokens), .min = 0, .max = 1e7, .def = "0",
     .unit = "tokens", .help = "token budget per step; 0 = engine.max_num_batched_tokens"},
    {.path = "engine.max_num_seqs", .type = SIM_CFG_INT, .offset = GOFF(max_num_seqs),
     .min = 0, .max = 1e6, .def = "0",
     .help = "running requests per engine at most; 0 = engine.max_num_seqs"},
    {0},
};

exp_group exp_config_group(const exp_config *cfg, size_t i)
{
    SIM_ALWAYS(i < cfg->n_groups);
    uint32_t first = 0;
    for (size_t j = 0; j < i; j++)
        first += (uint32_t)cfg->groups[j].destinations;
    const exp_group_cfg *g = &cfg->groups[i];
#define INHERIT_S(gf, cf) (g->gf && *g->gf ? g->gf : cfg->cf)
#define INHERIT_N(gf, cf) (g->gf > 0 ? g->gf : cfg->cf)
    return (exp_group){.name = g->name, .where = g->where, .first = first,
                       .n_dest = (uint32_t)g->destinations,
                       .hardware = INHERIT_S(hardware, hardware),
                       .model = INHERIT_S(model, model),
                       .weight_dtype = INHERIT_S(weight_dtype, weight_dtype),
                       .kv_dtype = INHERIT_S(kv_dtype, kv_dtype),
                       .tp = INHERIT_N(tp, tp), .mem_util = INHERIT_N(mem_util, mem_util),
                       .cost_profile = INHERIT_S(cost_profile, cost_profile),
                       .max_num_batched_tokens =
                           INHERIT_N(max_num_batched_tokens, max_num_batched_tokens),
                       .max_num_seqs = INHERIT_N(max_num_seqs, max_num_seqs)};
#undef INHERIT_S
#undef INHERIT_N
}

/* Cross-key checks of cluster.groups after binding: unique well-formed
 * names, known dtypes, cluster.destinations (if written) equal to the
 * groups' sum; then set cfg->destinations to that sum and record where
 * each element was written.  Specs and profiles are opened by
 * exp_setup_init, which names the group key. */
static int check_groups(const sim_cfgdoc *d, exp_config *cfg)
{
    if (cfg->n_groups == 0)
        return SIM_OK;
    int64_t sum = 0;
    for (size_t i = 0; i < cfg->n_groups; i++) {
        exp_group_cfg *g = &cfg->groups[i];
        char key[64];
        snprintf(key, sizeof key, "cluster.groups[%zu]", i);
        if (!sim_cfgdoc_locate(d, key, NULL, g->where, sizeof g->where))
            snprintf(g->where, sizeof g->where, "%s", sim_cfgdoc_path(d));
        size_t len = strlen(g->name), ok = strspn(g->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "abcdefghijklmnopqrstuvwxyz"
                                                             "0123456789._-");
        if (len == 0 || len > 63 || ok != len)
            return SIM_ERROR(SIM_EINVAL, "%s: key '%s.name' is \"%s\"; expected 1-63 of "
                             "A-Z a-z 0-9 . _ -", g->where, key, g->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->groups[j].name, g->name) == 0)
                return SIM_ERROR(SIM_EINVAL, "%s: key '%s.name' is '%s', the name of "
                                 "cluster.groups[%zu] too; expected unique group names",
                                 g->where, key, g->name, j);
        const char *dt[2] = {g->weight_dtype, g->kv_dtype};
        const char *dk[2] = {"weight_dtype", "kv_dtype"};
        for (int k = 0; k < 2; k++) {
            enum spec_dtype t;
            if (*dt[k] && spec_dtype_parse(dt[k], &t) != 0)
                return SIM_ERROR(SIM_EINVAL, "%s: key '%s.%s' is '%s'; expected one of: bf16, "
                                 "fp16, fp8, or \"\" for cluster.%s", g->where, key, dk[k],
                                 dt[k], dk[k]);
        }
        sum += g->destinations;
    }
    char at[512];
    if (sum > 100000)
        return SIM_ERROR(SIM_EINVAL, "%s: cluster.groups add up to %lld destinations; expected "
                         "at most 100000", cfg->groups[0].where, (long long)sum);
    if (sim_cfgdoc_locate(d, "cluster.destinations", NULL, at, sizeof at) &&
        cfg->destinations != sum)
        return SIM_ERROR(SIM_EINVAL, "%s: key 'cluster.destinations' is %lld but cluster.groups "
                         "add up to %lld destinations; expected the sum of the groups' "
                         "destinations, or no cluster.destinations", at,
                         (long long)cfg->destinations, (long long)sum);
    cfg->destinations = sum;
    return SIM_OK;
}

/* ---- end of mixed fleets ---- */

const sim_cfg_key exp_config_schema[] = {
    /* experiment */
    {.path = "experiment.name", .type = SIM_CFG_STRING, .offset = OFF(name),
     .help = "experiment name (names the default database): 1-128 of A-Z a-z 0-9 . _ -, "
             "not starting with '.'"},
    {.path = "experiment.db", .type = SIM_CFG_STRING, .offset = OFF(db), .def = "\"\"",
     .help = "result database; empty = results/<name>.db (relative to the current directory)"},
    {.path = "experiment.policies", .type = SIM_CFG_STRING_LIST, .offset = OFF(policies),
     .count_offset = CNT(n_policies), .min_len = 1, .choices = route_names,
     .def = "[flat_lb, sticky]", .help = "routers to compare"},
    {.path = "experiment.rates", .type = SIM_CFG_DOUBLE_LIST, .offset = OFF(rates),
     .count_offset = CNT(n_rates), .min_len = 1, .min = 0, .max = 1e7,
     .flags = SIM_CFG_EXCL_MIN, .unit = "requests/s", .help = "offered loads (mean arrival rate)"},
    {.path = "experiment.seeds", .type = SIM_CFG_INT_LIST, .offset = OFF(seeds),
     .count_offset = CNT(n_seeds), .min_len = 1, .min = 0, .max = 9007199254740992.0,
     .def = "[1]", .help = "seeds; each (seed, rate) is one request stream shared by all policies"},
    {.path = "experiment.warmup_s", .type = SIM_CFG_DOUBLE, .offset = OFF(warmup_s), .min = 0,
     .max = 1e9, .def = "60", .unit = "s",
     .help = "requests arriving earlier are simulated but not measured (unless "
             "experiment.warmup_requests or experiment.warmup_share is set)"},
    {.path = "experiment.warmup_requests", .type = SIM_CFG_INT, .offset = OFF(warmup_requests),
     .min = 0, .max = 1e12, .def = "0", .unit = "requests",
     .help = "warm-up by count: the first N arrivals of each run are simulated but not "
             "measured (replaces warmup_s); 0 = off (docs/harness.md, \"Measurement window\")"},
    {.path = "experiment.warmup_share", .type = SIM_CFG_DOUBLE, .offset = OFF(warmup_share),
     .min = 0, .max = 1, .flags = SIM_CFG_EXCL_MAX, .def = "0",
     .help = "warm-up by share: the first floor(share x n) of a run's n arrivals are not "
             "measured (replaces warmup_s; for time-scaled traces); 0 = off"},
    {.path = "experiment.min_measured", .type = SIM_CFG_INT, .offset = OFF(min_measured),
     .min = 0, .max = 1e12, .def = "100", .unit = "requests",
     .help = "fewest measured requests a run may have; a load with fewer is refused before "
             "running (with under 100 samples a p99 is the sample maximum); 0 = no check"},
    {.path = "experiment.drain_s", .type = SIM_CFG_DOUBLE, .offset = OFF(drain_s), .min = 0,
     .max = 1e9, .def = "600", .unit = "s",
     .help = "simulate at most this long after the last arrival; later = unfinished"},
    {.path = "experiment.slos", .type = SIM_CFG_DOUBLE_LIST, .offset = OFF(slos),
     .count_offset = CNT(n_slos), .min_len = 1, .min = 0, .max = 1e6, .flags = SIM_CFG_EXCL_MIN,
     .def = "[2, 3.5, 5]", .unit = "s",
     .help = "SLO thresholds on experiment.slo_metric; capacity is reported for each"},
    {.path = "experiment.slo_metric", .type = SIM_CFG_ENUM, .offset = OFF(slo_metric),
     .choices = exp_slo_metric_names, .def = "ttft_p99",
     .help = "latency percentile the SLO applies to (run_metrics column)"},
    {.path = "experiment.report_rate", .type = SIM_CFG_DOUBLE, .offset = OFF(report_rate),
     .min = 0, .max = 1e7, .def = "0", .unit = "requests/s",
     .help = "load at which tables show p99, hit rate and imbalance; 0 = the median tested load"},
    {.path = "experiment.prune", .type = SIM_CFG_BOOL, .offset = OFF(prune), .def = "false",
     .help = "skip a (point, policy, seed)'s loads above its first failure of the largest SLO "
             "(capacity is unchanged; the report rate always runs)"},
    {.path = "experiment.timeline_s", .type = SIM_CFG_DOUBLE, .offset = OFF(timeline_s),
     .min = 0, .max = 1e9, .def = "60", .unit = "s",
     .help = "window of the per-run timeline (hit rate, p99 TTFT by arrival time); 0 = none, "
             "else >= 0.1 s (one stored row per window)"},
    {.path = "experiment.fair_min_requests", .type = SIM_CFG_INT,
     .offset = OFF(fair_min_requests), .min = 1, .max = 1e9, .def = "100", .unit = "requests",
     .help = "per-tenant fairness counts routing keys with at least this many measured "
             "requests (with fewer a key's p99 is its sample maximum, as for "
             "experiment.min_measured; docs/report.md, \"Fairness\")"},
    {.path = "experiment.requests", .type = SIM_CFG_BOOL, .offset = OFF(requests),
     .def = "false",
     .help = "store one row per arrived request in the requests table (crsim export; about "
             "100 MB of database per million requests, docs/results-schema.md); off by "
             "default"},
    {.path = "experiment.goodput_ttft_s", .type = SIM_CFG_DOUBLE, .offset = OFF(goodput_ttft_s),
     .min = 0, .max = 1e6, .def = "0", .unit = "s",
     .help = "goodput: a completed request counts when its TTFT is at most this (and its TPOT "
             "at most experiment.goodput_tpot_s); 0 = TTFT not bounded; both 0 = no goodput "
             "(DistServe; vLLM bench serve --goodput; docs/report.md)"},
    {.path = "experiment.goodput_tpot_s", .type = SIM_CFG_DOUBLE, .offset = OFF(goodput_tpot_s),
     .min = 0, .max = 1e6, .def = "0", .unit = "s",
     .help = "goodput: TPOT bound, s per output token (a one-token request has TPOT 0); 0 = "
             "TPOT not bounded"},
    {.path = "experiment.joint_slo", .type = SIM_CFG_STRING_LIST, .offset = OFF(joint_slo),
     .count_offset = CNT(n_joint_slo), .def = "[]",
     .help = "joint SLO, every term \"METRIC<=SECONDS\" at once (METRIC a TTFT, TPOT, ITL or "
             "E2E mean/p50/p90/p99 column, e.g. [ttft_p99<=2, tpot_p99<=0.1]): its capacity is "
             "reported besides experiment.slos'; [] = none"},
    {.path = "experiment.sweep", .type = SIM_CFG_STRING_LIST, .offset = OFF(sweep),
     .count_offset = CNT(n_sweep), .def = "[]",
     .help = "sweep axes, each \"KEY=[v1, v2, ...]\" (any config key); runs the cross product"},
    {.path = "experiment.sweep_mode", .type = SIM_CFG_ENUM, .offset = OFF(sweep_mode),
     .choices = exp_sweep_mode_names, .def = "grid",
     .help = "grid: cross product of the axes; zip: the i-th values of every axis together"},
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
     .choices = spec_dtype_names, .def = "fp8", .help = "weight format"},
    {.path = "cluster.kv_dtype", .type = SIM_CFG_STRING, .offset = OFF(kv_dtype),
     .choices = spec_dtype_names, .def = "fp8", .help = "KV-cache format"},
    {.path = "cluster.mem_util", .type = SIM_CFG_DOUBLE, .offset = OFF(mem_util), .min = 0,
     .max = 1, .flags = SIM_CFG_EXCL_MIN, .def = "0.9",
     .help = "share of GPU memory the engine uses (vLLM gpu_memory_utilization)"},
    {.path = "cluster.groups", .type = SIM_CFG_TABLE, .offset = OFF(groups),
     .count_offset = CNT(n_groups), .table = group_schema, .elem_size = sizeof(exp_group_cfg),
     .def = "[]",
     .help = "mixed fleet: destination groups, each with its own hardware, model, TP, "
             "dtypes, cost profile, engine limits (\"\"/0 = the cluster-level key); "
             "destinations numbered group by group; [] = one group (docs/mixed-fleets.md)"},
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
    {.path = "engine.long_prefill_token_threshold", .type = SIM_CFG_INT,
     .offset = OFF(long_prefill_token_threshold), .min = 0, .max = 1e7, .def = "0",
     .unit = "tokens",
     .help = "vLLM V1 --long-prefill-token-threshold: a request computes at most this many "
             "tokens per step (a long prompt's prefill spread over more steps, so short "
             "prompts behind it start sooner); 0 = off, vLLM's default (docs/engine.md)"},
    {.path = "engine.flavor", .type = SIM_CFG_ENUM, .offset = OFF(engine_flavor),
     .choices = flavor_names, .def = "vllm",
     .help = "whose scheduler and prefix cache the engines follow: vllm (V1: prefill chunks "
             "and decodes in one step, decodes first) or sglang (prefill and decode batches "
             "apart, prefill first; chunked_prefill_size; schedule_policy; a prefix cached "
             "one step after its prefill ends) (docs/engine.md)"},
    {.path = "engine.chunked_prefill_size", .type = SIM_CFG_INT,
     .offset = OFF(chunked_prefill_size), .min = 0, .max = 1e7, .def = "0", .unit = "tokens",
     .help = "engine.flavor sglang: prompt tokens per prefill batch (SGLang "
             "--chunked-prefill-size); 0 = SGLang's default by GPU memory: < 35 GiB 2048, "
             "< 60 GiB 4096, < 160 GiB 8192, else 16384; with vllm it must be 0 (the budget "
             "is engine.max_num_batched_tokens)"},
    {.path = "engine.schedule_policy", .type = SIM_CFG_ENUM, .offset = OFF(schedule_policy),
     .choices = sched_policy_names, .def = "fcfs",
     .help = "waiting-queue order: fcfs, or with engine.flavor sglang lpm (longest cached "
             "prefix first, FCFS while more than 128 wait; SGLang --schedule-policy, whose "
             "default is fcfs)"},
    {.path = "engine.max_model_len", .type = SIM_CFG_INT, .offset = OFF(max_model_len),
     .min = 0, .max = 1e9, .def = "0", .unit = "tokens",
     .help = "context limit (vLLM --max-model-len): a request whose prompt + output tokens "
             "exceed it is rejected at the gateway (vLLM: HTTP 400), counted as too_long; "
             "0 = none (vLLM's default is the model's max_position_embeddings, 131072 for "
             "Llama 3.1/3.3)"},
    /* gateway: what the routers know (docs/information-model.md) */
    {.path = "gateway.scrape_interval_s", .type = SIM_CFG_DOUBLE,
     .offset = OFF(scrape_interval_s), .min = 0, .max = 1e6, .def = "0.05", .unit = "s",
     .help = "engine-metrics snapshot period; 0 = exact (re-read at every decision, the "
             "idealised view); default 50 ms as the Gateway API inference extension / llm-d "
             "endpoint picker (--refresh-metrics-interval) and AIBrix"},
    {.path = "gateway.scrape_delay_s", .type = SIM_CFG_DOUBLE, .offset = OFF(scrape_delay_s),
     .min = 0, .max = 1e6, .def = "0", .unit = "s",
     .help = "extra delay before a snapshot reaches the routers (0 with the exact view)"},
    {.path = "gateway.replicas", .type = SIM_CFG_INT, .offset = OFF(replicas), .min = 1,
     .max = CLUSTER_MAX_REPLICAS, .def = "1",
     .help = "gateway (router) replicas; each has its own router state and in-flight counts"},
    {.path = "gateway.replica_assignment", .type = SIM_CFG_ENUM, .offset = OFF(replica_assign),
     .choices = assign_names, .def = "round_robin",
     .help = "how requests are spread over the replicas: round_robin or random (uniform)"},
    {.path = "gateway.kv_event_delay_s", .type = SIM_CFG_DOUBLE,
     .offset = OFF(kv_event_delay_s), .min = 0, .max = 1e6, .def = "0.001", .unit = "s",
     .help = "engine KV events (blocks stored / evicted) reach the routers that consume them "
             "(dynamo_kv, llmd precise) this long after the cache changed; 1 ms: no public "
             "end-to-end figure, one ZMQ and one NATS hop without batching (vLLM kv_events, "
             "Dynamo publisher DEFAULT_BATCHING_TIMEOUT_MS = None); 0 = instantaneous"},
    {.path = "gateway.health_check_interval_s", .type = SIM_CFG_DOUBLE,
     .offset = OFF(health_check_interval_s), .min = 0, .max = 1e6, .flags = SIM_CFG_EXCL_MIN,
     .def = "10", .unit = "s",
     .help = "with faults configured: the gateway health-checks every destination this often "
             "and its routers skip those found crashed or draining until a check finds them "
             "up (Kubernetes probe periodSeconds default 10 s; docs/faults.md)"},
    /* faults: destinations that fail or slow down (docs/faults.md) */
    {.path = "faults.events", .type = SIM_CFG_STRING_LIST, .offset = OFF(fault_events),
     .count_offset = CNT(n_fault_events), .def = "[]",
     .help = "scheduled faults, each \"TIME_S:KIND:DEST[:ARG]\": KIND crash (ARG cold, the "
             "default, or warm: keeps the prefix cache), drain, slow (ARG the step-time "
             "factor >= 1) or recover; e.g. [\"600:crash:3\", \"720:recover:3\"]"},
    {.path = "faults.mtbf_s", .type = SIM_CFG_DOUBLE, .offset = OFF(mtbf_s), .min = 0,
     .max = 1e12, .def = "0", .unit = "s",
     .help = "random crashes: mean up time per destination (exponential, own RNG stream: "
             "the same faults for every policy); 0 = none"},
    {.path = "faults.mttr_s", .type = SIM_CFG_DOUBLE, .offset = OFF(mttr_s), .min = 0,
     .max = 1e12, .flags = SIM_CFG_EXCL_MIN, .def = "120", .unit = "s",
     .help = "random crashes: mean time to a cold recovery (exponential); 120 s: an "
             "assumed engine restart (model load and warm-up), no public figure"},
    {.path = "faults.retry_timeout_s", .type = SIM_CFG_DOUBLE, .offset = OFF(retry_timeout_s),
     .min = 0, .max = 1e6, .def = "0.5", .unit = "s",
     .help = "a client retries a lost or refused request this long after the loss (OpenAI "
             "Python client: INITIAL_RETRY_DELAY 0.5 s on a connection error)"},
    {.path = "faults.max_retries", .type = SIM_CFG_INT, .offset = OFF(max_retries), .min = 0,
     .max = 1000, .def = "2",
     .help = "retries per request; one more loss and it has failed for good (OpenAI Python "
             "client: DEFAULT_MAX_RETRIES 2)"},
    /* cost */
    {.path = "cost.model", .type = SIM_CFG_ENUM, .offset = OFF(cost_model),
     .choices = cost_kind_names, .def = "roofline",
     .help = "step-time model: roofline (docs/calibration.md) or linear (fitted a + b.P + ...)"},
    {.path = "cost.profile", .type = SIM_CFG_STRING, .offset = OFF(cost_profile), .def = "\"\"",
     .help = "calibration profile: a name in models/specs/cost/ or a path; empty = the "
             "deployment's default (docs/calibration.md)"},
    /* router.*: the routers' own sections (route_sections), bound with this
     * schema and dumped right after it */
    {0},
};

double exp_config_median_slo(const exp_config *cfg)
{
    double *v = sim_xmalloc(cfg->n_slos * sizeof *v);
    memcpy(v, cfg->slos, cfg->n_slos * sizeof *v);
    gsl_sort(v, 1, cfg->n_slos);
    double m = v[(cfg->n_slos - 1) / 2];
    free(v);
    return m;
}

route_env exp_config_route_env(const exp_config *cfg)
{
    return (route_env){.n_dest = (uint32_t)cfg->destinations,
                       .n_groups = (uint32_t)cfg->n_groups,
                       .block_size = (uint32_t)cfg->block_size,
                       .batch_tokens = (uint32_t)cfg->max_num_batched_tokens,
                       .ttft_slo_s = exp_config_median_slo(cfg)};
}

/* The sections of a whole config: the harness's keys, every router
 * section, then the workload (opaque here: it has its own binder, and
 * NULL `wl` leaves it out).  Returns the count; `out` has room for
 * route_config_n_sections() + 2. */
static size_t all_sections(const exp_config *cfg, void *harness, sim_cfg_section *out, bool wl)
{
    size_t n = 0;
    out[n++] = (sim_cfg_section){NULL, exp_config_schema, harness};
    n += route_config_sections(cfg ? cfg->router : NULL, out + n);
    if (wl)
        out[n++] = (sim_cfg_section){"workload", NULL, NULL};
    return n;
}

void exp_config_help(FILE *f)
{
    size_t cap = route_config_n_sections() + 2;
    sim_cfg_section *secs = sim_xcalloc(cap, sizeof *secs);
    size_t n = all_sections(NULL, NULL, secs, false);
    secs[n++] = (sim_cfg_section){"workload", wl_config_schema, NULL};
    sim_cfg_help_sections(secs, n, f);
    free(secs);
}

/* Where a router's key was written (route_locate): the key, else its
 * section, else the experiment.policies entry that selected the router. */
typedef struct locate_ctx {
    const sim_cfgdoc *d;
    const char *policy;
} locate_ctx;

static void locate_key(void *ctx, const char *key, char *buf, size_t n)
{
    const locate_ctx *c = ctx;
    if (sim_cfgdoc_locate(c->d, key, NULL, buf, n))
        return;
    char parent[256];
    snprintf(parent, sizeof parent, "%s", key);
    char *dot = strrchr(parent, '.');
    if (dot) {
        *dot = '\0';
        if (strchr(parent, '.') && sim_cfgdoc_locate(c->d, parent, NULL, buf, n))
            return;
    }
    if (sim_cfgdoc_locate(c->d, "experiment.policies", c->policy, buf, n) ||
        sim_cfgdoc_locate(c->d, "experiment.policies", NULL, buf, n))
        return;
    snprintf(buf, n, "%s", sim_cfgdoc_path(c->d));
}

/* ---- harness checks at load (docs/harness.md "Bad input") ---- */

/* Where `key` was written ("FILE:LINE" or "--set KEY"), else the file. */
static const char *where_key(const sim_cfgdoc *d, const char *key, char *buf, size_t n)
{
    if (!sim_cfgdoc_locate(d, key, NULL, buf, n))
        snprintf(buf, n, "%s", sim_cfgdoc_path(d));
    return buf;
}

/* experiment.name names files (results/<name>.db, results/<name>/): a
 * safe file name of 1..EXP_NAME_MAX characters from [A-Za-z0-9._-], not
 * starting with '.' (no hidden files, no "..", no path separators). */
static int check_name(const sim_cfgdoc *d, const char *name)
{
    size_t n = strlen(name);
    bool ok = n >= 1 && n <= EXP_NAME_MAX && name[0] != '.';
    for (size_t i = 0; ok && i < n; i++) {
        const char ch = name[i];
        ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '_' || ch == '-';
    }
    if (ok)
        return SIM_OK;
    char at[512];
    /* The name is not echoed raw: it may hold control characters. */
    char shown[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < sizeof shown; i++) {
        const unsigned char ch = (unsigned char)name[i];
        if (ch >= 0x20 && ch < 0x7f)
            shown[k++] = (char)ch;
        else
            k += (size_t)snprintf(shown + k, sizeof shown - k, "\\x%02x", ch);
    }
    shown[k] = '\0';
    return SIM_ERROR(SIM_EINVAL, "%s: key 'experiment.name' is '%s%s'; expected 1 to %d "
                     "characters from A-Z a-z 0-9 . _ - not starting with '.' (it names "
                     "results/<name>.db)", where_key(d, "experiment.name", at, sizeof at),
                     shown, k < n ? "..." : "", EXP_NAME_MAX);
}

/* Duplicate loads or seeds would run every run twice and then fail the
 * capacity step (a load tested twice); reject them now, like duplicate
 * policies. */
static int check_unique(const sim_cfgdoc *d, const exp_config *cfg)
{
    char at[512];
    for (size_t i = 0; i < cfg->n_rates; i++)
        for (size_t j = 0; j < i; j++)
            if (cfg->rates[i] == cfg->rates[j])
                return SIM_ERROR(SIM_EINVAL, "%s: experiment.rates lists %g twice (items %zu "
                                 "and %zu); expected each load once",
                                 where_key(d, "experiment.rates", at, sizeof at), cfg->rates[i],
                                 j, i);
    for (size_t i = 0; i < cfg->n_seeds; i++)
        for (size_t j = 0; j < i; j++)
            if (cfg->seeds[i] == cfg->seeds[j])
                return SIM_ERROR(SIM_EINVAL, "%s: experiment.seeds lists %lld twice (items %zu "
                                 "and %zu); expected each seed once",
                                 where_key(d, "experiment.seeds", at, sizeof at),
                                 (long long)cfg->seeds[i], j, i);
    return SIM_OK;
}

/* Lower bounds on the windows that write one stored row each: the
 * timeline (EXP_TIMELINE_MIN_S) and every selected router's control
 * interval (EXP_INTERVAL_MIN_S).  A window of 1e-6 s wrote millions of
 * rows per run (issue 17); these minimums keep a run's rows near its
 * simulated seconds. */
static int check_windows(const sim_cfgdoc *d, const exp_config *cfg)
{
    char at[512];
    if (cfg->timeline_s > 0 && cfg->timeline_s < EXP_TIMELINE_MIN_S)
        return SIM_ERROR(SIM_EINVAL, "%s: key 'experiment.timeline_s' is %g; expected 0 (no "
                         "timeline) or a window >= %g s (one stored row per window and run)",
                         where_key(d, "experiment.timeline_s", at, sizeof at), cfg->timeline_s,
                         EXP_TIMELINE_MIN_S);
    for (size_t i = 0; i < cfg->n_policies; i++) {
        const route_type *rt = route_find(cfg->policies[i]);
        const double iv = rt ? route_interval_s(rt, cfg->router) : 0;
        if (!(iv > 0) || iv >= EXP_INTERVAL_MIN_S)
            continue;
        /* The key is the interval_s of one of the router's sections. */
        char key[256];
        snprintf(key, sizeof key, "the control interval of %s", cfg->policies[i]);
        for (size_t j = 0; rt->sections && rt->sections[j]; j++)
            for (const sim_cfg_key *k = rt->sections[j]->schema; k->path; k++)
                if (strcmp(k->path, "interval_s") == 0)
                    snprintf(key, sizeof key, "%s.interval_s", rt->sections[j]->prefix);
        return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is %g (router %s); expected a control "
                         "interval >= %g s (one stored row per interval and run)",
                         where_key(d, key, at, sizeof at), key, iv, cfg->policies[i],
                         EXP_INTERVAL_MIN_S);
    }
    return SIM_OK;
}

const char *exp_load_unit(const exp_config *cfg)
{
    switch (wl_client_mode_of(&cfg->wl)) {
    case WL_CLIENT_CONCURRENCY:
        return "clients";
    case WL_CLIENT_BURST:
        return "conversations per batch";
    case WL_CLIENT_STAGES:
        return "x the stage ladder";
    case WL_CLIENT_SESSIONS:
        return strcmp(cfg->wl.client.rate_unit, "conversations") == 0 ? "conversations/s"
                                                                      : "requests/s";
    default:
        return "requests/s";
    }
}

static int check_experiment(const sim_cfgdoc *d, const exp_config *cfg)
{
    if (cfg->warmup_requests > 0 && cfg->warmup_share > 0) {
        char at[512];
        return SIM_ERROR(SIM_EINVAL, "%s: keys 'experiment.warmup_requests' (%lld) and "
                         "'experiment.warmup_share' (%g) are both set; expected at most one "
                         "warm-up by count", where_key(d, "experiment.warmup_share", at,
                                                        sizeof at),
                         (long long)cfg->warmup_requests, cfg->warmup_share);
    }
    if ((cfg->warmup_requests > 0 || cfg->warmup_share > 0) && wl_client_closed(&cfg->wl)) {
        char at[512];
        const char *key = cfg->warmup_requests > 0 ? "experiment.warmup_requests"
                                                   : "experiment.warmup_share";
        return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is set with workload.client.mode %s; "
                         "expected a warm-up by time (experiment.warmup_s): a closed-loop "
                         "client's send times are known only as the run goes",
                         where_key(d, key, at, sizeof at), key, cfg->wl.client.mode);
    }
    /* A client that fixes its own load (N clients, a batch size) makes
     * every experiment load the same run: several loads would store
     * identical runs under different load labels and a capacity over
     * them. */
    const char *fixed = NULL;
    int64_t fixed_v = 0;
    if (strcmp(cfg->wl.client.mode, "concurrency") == 0 && cfg->wl.client.concurrency > 0)
        fixed = "workload.client.concurrency", fixed_v = cfg->wl.client.concurrency;
    else if (strcmp(cfg->wl.client.mode, "burst") == 0 && cfg->wl.client.batch > 0)
        fixed = "workload.client.batch", fixed_v = cfg->wl.client.batch;
    if (fixed && cfg->n_rates > 1) {
        char at[512];
        return SIM_ERROR(SIM_EINVAL, "%s: key 'experiment.rates' has %zu loads but '%s' is "
                         "%lld, which fixes the load of every run; expected one load, or %s 0 "
                         "so that experiment.rates sets it", where_key(d, "experiment.rates", at,
                                                                     sizeof at),
                         cfg->n_rates, fixed, (long long)fixed_v, fixed);
    }
    int rc = check_name(d, cfg->name);
    for (size_t i = 0; rc == SIM_OK && i < cfg->n_joint_slo; i++) {
        char metric[EXP_JOINT_METRIC_MAX], at[512];
        double bound;
        if (exp_joint_parse(cfg->joint_slo[i], metric, &bound) == SIM_OK)
            continue;
        char *why = sim_xstrdup(sim_errmsg());
        if (!sim_cfgdoc_locate(d, "experiment.joint_slo", cfg->joint_slo[i], at, sizeof at))
            where_key(d, "experiment.joint_slo", at, sizeof at);
        rc = SIM_ERROR(SIM_EINVAL, "%s: key 'experiment.joint_slo' item %zu: %s", at, i, why);
        free(why);
    }
    if (rc == SIM_OK)
        rc = check_unique(d, cfg);
    if (rc == SIM_OK)
        rc = check_windows(d, cfg);
    return rc;
}

/* The engine keys of one flavour only: with vllm, chunked_prefill_size 0
 * and schedule_policy fcfs; with sglang, no long_prefill_token_threshold
 * and no max_num_batched_tokens written (its budget is
 * chunked_prefill_size), in the engine section or a group. */
static int check_flavor(const sim_cfgdoc *d, const exp_config *cfg)
{
    char at[512];
    const char *key = NULL, *want = NULL;
    if (cfg->engine_flavor == 0) {
        if (cfg->chunked_prefill_size)
            key = "engine.chunked_prefill_size", want = "0 (the vLLM budget is "
                                                        "engine.max_num_batched_tokens)";
        else if (cfg->schedule_policy)
            key = "engine.schedule_policy", want = "fcfs (lpm is SGLang's)";
        if (key && !sim_cfgdoc_locate(d, key, NULL, at, sizeof at))
            snprintf(at, sizeof at, "%s", sim_cfgdoc_path(d));
        if (key)
            return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is set with engine.flavor vllm; expected "
                             "%s, or engine.flavor sglang", at, key, want);
        return SIM_OK;
    }
    char gkey[96] = "";
    want = "SGLang's prefill budget is engine.chunked_prefill_size";
    if (cfg->long_prefill_token_threshold)
        key = "engine.long_prefill_token_threshold", want = "SGLang has no such cap; its "
                                                            "chunks are "
                                                            "engine.chunked_prefill_size";
    else if (sim_cfgdoc_locate(d, "engine.max_num_batched_tokens", NULL, at, sizeof at))
        key = "engine.max_num_batched_tokens";
    for (size_t i = 0; !key && i < cfg->n_groups; i++)
        if (cfg->groups[i].max_num_batched_tokens) {
            snprintf(gkey, sizeof gkey, "cluster.groups[%zu].engine.max_num_batched_tokens", i);
            key = gkey;
        }
    if (!key)
        return SIM_OK;
    if (!sim_cfgdoc_locate(d, key, NULL, at, sizeof at))
        snprintf(at, sizeof at, "%s", sim_cfgdoc_path(d));
    return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is vLLM's, set with engine.flavor sglang; "
                     "expected it absent (%s)", at, key, want);
}

/* faults.events: parse every entry (models/cluster.h cluster_fault_parse)
 * and check them against cluster.destinations (with cluster.groups: their
 * sum, set by check_groups, which runs first), each error at its list
 * item; mtbf_s with its mttr_s. */
static int check_faults(const sim_cfgdoc *d, exp_config *cfg)
{
    char at[512], why[320];
    cfg->faults = sim_xcalloc(cfg->n_fault_events ? cfg->n_fault_events : 1,
                              sizeof *cfg->faults);
    for (size_t i = 0; i < cfg->n_fault_events; i++)
        if (cluster_fault_parse(cfg->fault_events[i], &cfg->faults[i], why, sizeof why)) {
            if (!sim_cfgdoc_locate(d, "faults.events", cfg->fault_events[i], at, sizeof at))
                where_key(d, "faults.events", at, sizeof at);
            return SIM_ERROR(SIM_EINVAL, "%s: key 'faults.events' item %zu is '%s'; %s", at, i,
                             cfg->fault_events[i], why);
        }
    const long bad = cluster_faults_check(cfg->faults, cfg->n_fault_events,
                                          (uint32_t)cfg->destinations, why, sizeof why);
    if (bad >= 0) {
        if (!sim_cfgdoc_locate(d, "faults.events", cfg->fault_events[bad], at, sizeof at))
            where_key(d, "faults.events", at, sizeof at);
        return SIM_ERROR(SIM_EINVAL, "%s: key 'faults.events' item %ld is '%s': %s", at, bad,
                         cfg->fault_events[bad], why);
    }
    return SIM_OK;
}

static int config_load(const char *path, const char *const *sets, size_t n_set, exp_config *cfg,
                       bool check_routers)
{
    memset(cfg, 0, sizeof *cfg);
    sim_cfgdoc *d = NULL;
    int rc = sim_cfgdoc_load(path, &d);
    if (rc)
        return rc;
    for (size_t i = 0; i < n_set && rc == SIM_OK; i++)
        rc = sim_cfgdoc_set(d, sets[i]);
    /* The router sections are the routers' own schemas; the workload
     * section has its own (workloads/wl_config.h): it is declared opaque
     * here and bound right after. */
    cfg->router = route_config_new();
    sim_cfg_section *sections = sim_xcalloc(route_config_n_sections() + 2, sizeof *sections);
    size_t n_sections = all_sections(cfg, cfg, sections, true);
    if (rc == SIM_OK)
        rc = sim_cfg_bind_sections(d, sections, n_sections);
    free(sections);
    /* With a sweep a key may apply at some points only (an iat_file
     * beside a sweep of arrival.process): exp_run checks the keys over
     * the points instead. */
    if (rc == SIM_OK)
        rc = wl_config_bind_opts(d, cfg->n_sweep == 0, &cfg->wl);
    /* Groups first: they set cluster.destinations to the fleet's size,
     * which the fault destinations are checked against (issue 38 D11). */
    if (rc == SIM_OK)
        rc = check_groups(d, cfg);
    if (rc == SIM_OK)
        rc = check_faults(d, cfg);
    if (rc == SIM_OK && cfg->scrape_interval_s == 0 && cfg->scrape_delay_s > 0) {
        char at[512];
        if (!sim_cfgdoc_locate(d, "gateway.scrape_delay_s", NULL, at, sizeof at))
            snprintf(at, sizeof at, "%s", path);
        rc = SIM_ERROR(SIM_EINVAL, "%s: key 'gateway.scrape_delay_s' is %g with "
                       "gateway.scrape_interval_s 0 (the exact view); expected 0, or a scrape "
                       "interval > 0", at, cfg->scrape_delay_s);
    }
    if (rc == SIM_OK)
        rc = check_flavor(d, cfg);
    if (rc == SIM_OK && wl_config_is_trace(&cfg->wl) &&
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
    if (rc == SIM_OK)
        rc = check_experiment(d, cfg);
    /* Every selected router checks its parameters now, before any run. */
    if (rc == SIM_OK && check_routers) {
        const route_env env = exp_config_route_env(cfg);
        for (size_t i = 0; rc == SIM_OK && i < cfg->n_policies; i++) {
            const route_type *rt = route_find(cfg->policies[i]);
            SIM_ALWAYS(rt != NULL); /* the schema's choices are the registry */
            locate_ctx lc = {d, cfg->policies[i]};
            const route_locate loc = {&lc, locate_key};
            rc = route_check(rt, cfg->router, &env, &loc);
        }
    }
    sim_cfgdoc_destroy(d);
    if (rc) {
        exp_config_fini(cfg);
        return rc;
    }
    char **own = sim_xcalloc(n_set + 1, sizeof *own);
    for (size_t i = 0; i < n_set; i++)
        own[i] = sim_xstrdup(sets[i]);
    cfg->src = (exp_config_src){.path = sim_xstrdup(path), .sets = (const char *const *)own,
                                .n_set = n_set, .unchecked = !check_routers};
    return SIM_OK;
}

int exp_config_derive_from(const exp_config *base, const char *const *sets, size_t n,
                           exp_config *out)
{
    SIM_ALWAYS(base->src.path != NULL); /* made by exp_config_load */
    return exp_config_derive(&base->src, sets, n, out);
}

int exp_config_derive(const exp_config_src *base, const char *const *sets, size_t n,
                      exp_config *out)
{
    const char **all = sim_xcalloc(base->n_set + n + 1, sizeof *all);
    for (size_t i = 0; i < base->n_set; i++)
        all[i] = base->sets[i];
    for (size_t i = 0; i < n; i++)
        all[base->n_set + i] = sets[i];
    int rc = config_load(base->path, all, base->n_set + n, out, !base->unchecked);
    free(all);
    return rc;
}

int exp_config_load(const char *path, const char *const *sets, size_t n_set, exp_config *cfg)
{
    return config_load(path, sets, n_set, cfg, true);
}

int exp_config_load_unchecked(const char *path, const char *const *sets, size_t n_set,
                              exp_config *cfg)
{
    return config_load(path, sets, n_set, cfg, false);
}

void exp_config_fini(exp_config *cfg)
{
    free((char *)cfg->src.path);
    for (size_t i = 0; i < cfg->src.n_set; i++)
        free((char *)cfg->src.sets[i]);
    free((char **)cfg->src.sets);
    cfg->src = (exp_config_src){0};
    wl_config_fini(&cfg->wl);
    free(cfg->faults);
    cfg->faults = NULL;
    sim_cfg_free(exp_config_schema, cfg);
    route_config_free(cfg->router);
    cfg->router = NULL;
}

/* Canonical text of the harness keys, the router sections (in
 * route_sections order, where the harness schema once ended: after cost.*)
 * and the workload section.
 * experiment.db is left out (printed as ""): where results go is not an
 * input, so shards and resumed runs written to other databases keep the
 * same config hash. */
static char *dump_all(const exp_config *cfg)
{
    exp_config c = *cfg;
    char empty[1] = "";
    c.db = empty;
    sim_cfg_section *secs = sim_xcalloc(route_config_n_sections() + 2, sizeof *secs);
    size_t n = all_sections(cfg, &c, secs, false);
    char *a = sim_cfg_dump_sections(secs, n);
    free(secs);
    char *b = wl_config_dump(&c.wl);
    size_t na = strlen(a), nb = strlen(b);
    char *s = sim_xmalloc(na + nb + 1);
    memcpy(s, a, na);
    memcpy(s + na, b, nb + 1);
    free(a);
    free(b);
    return s;
}

char *exp_config_dump(const exp_config *cfg) { return dump_all(cfg); }

/* The full config of one run: the point's config with the sweep removed
 * and the lists of policies, rates and seeds narrowed to this run, so that
 * `crsim run` on it reproduces the run alone. */
static char *run_config_text(const exp_config *cfg, size_t ip, size_t ir, size_t is)
{
    exp_config one = *cfg;
    one.policies = &cfg->policies[ip];
    one.n_policies = 1;
    one.rates = &cfg->rates[ir];
    one.n_rates = 1;
    one.seeds = &cfg->seeds[is];
    one.n_seeds = 1;
    one.sweep = NULL;
    one.n_sweep = 0;
    return dump_all(&one);
}

static void hash_hex(const char *text, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)XXH3_64bits(text, strlen(text)));
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

/* ---- sweep expansion ---- */

/* One sweep axis: a key and its values, each as YAML text. */
typedef struct axis {
    char *key;
    char **values;
    size_t n;
} axis;

static const sim_cfg_key axis_schema[] = {
    {.path = "v", .type = SIM_CFG_STRING_LIST, .offset = offsetof(axis, values),
     .count_offset = offsetof(axis, n), .min_len = 1, .help = "axis values"},
    {0},
};

static void axes_free(axis *ax, size_t n)
{
    for (size_t i = 0; ax && i < n; i++) {
        free(ax[i].key);
        sim_cfg_free(axis_schema, &ax[i]);
    }
    free(ax);
}

/* Keys no sweep may vary: where results go (experiment.db, and
 * experiment.name, which names the default database) is not an input of a
 * run, and experiment.sweep / sweep_mode define the points themselves.
 * Varying one would scatter one experiment over several databases or
 * nest sweeps. */
static int check_axis_key(const char *path, size_t i, const char *key)
{
    static const char *const fixed[] = {"experiment.db", "experiment.name", "experiment.sweep",
                                        "experiment.sweep_mode", NULL};
    for (size_t j = 0; fixed[j]; j++)
        if (strcmp(key, fixed[j]) == 0)
            return SIM_ERROR(SIM_EINVAL, "%s: experiment.sweep[%zu] varies '%s'; expected a key "
                             "of a run (experiment.db, experiment.name, experiment.sweep and "
                             "experiment.sweep_mode are one per experiment)", path, i, key);
    return SIM_OK;
}

/* The binder names the axis values 'v[J]' (the internal key of
 * axis_schema); say experiment.sweep[I] and its key instead. */
static int axis_bind_error(int rc, const char *path, size_t i, const char *key)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", sim_errmsg());
    const char *k = strstr(msg, "key 'v");
    if (!k)
        return SIM_ERROR(rc, "%s: experiment.sweep[%zu] (%s): %s", path, i, key, msg);
    const char *rest = strchr(k + 6, '\'');
    const char *what = rest ? rest + 1 : "";
    long j = k[6] == '[' ? strtol(k + 7, NULL, 10) : -1;
    if (j >= 0)
        return SIM_ERROR(rc, "%s: experiment.sweep[%zu] (%s): value %ld%s", path, i, key, j + 1,
                         what);
    return SIM_ERROR(rc, "%s: experiment.sweep[%zu] (%s): values%s", path, i, key, what);
}

/* Parse experiment.sweep entries "KEY=[v1, v2]" (a scalar counts as a
 * one-value axis). */
static int parse_axes(const exp_config *cfg, const char *path, axis **out)
{
    axis *ax = sim_xcalloc(cfg->n_sweep ? cfg->n_sweep : 1, sizeof *ax);
    int rc = SIM_OK;
    for (size_t i = 0; i < cfg->n_sweep && rc == SIM_OK; i++) {
        const char *e = cfg->sweep[i], *eq = strchr(e, '=');
        if (!eq || eq == e) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: experiment.sweep[%zu] is '%s'; expected "
                           "\"KEY=[value, ...]\"", path, i, e);
            break;
        }
        ax[i].key = sim_xmalloc((size_t)(eq - e) + 1);
        memcpy(ax[i].key, e, (size_t)(eq - e));
        ax[i].key[eq - e] = '\0';
        const char *rhs = eq + 1;
        while (*rhs == ' ')
            rhs++;
        size_t len = strlen(rhs) + 8;
        char *text = sim_xmalloc(len);
        snprintf(text, len, rhs[0] == '[' ? "v: %s\n" : "v: [%s]\n", rhs);
        char name[64];
        snprintf(name, sizeof name, "experiment.sweep[%zu]", i);
        sim_cfgdoc *d = NULL;
        rc = sim_cfgdoc_parse_string(text, name, &d);
        free(text);
        if (rc == SIM_OK)
            rc = check_axis_key(path, i, ax[i].key);
        if (rc == SIM_OK && (rc = sim_cfg_bind(d, axis_schema, &ax[i])))
            rc = axis_bind_error(rc, path, i, ax[i].key);
        sim_cfgdoc_destroy(d);
        /* A value twice in a grid axis would run its points twice and store
         * them as two sweep points (issue 38 C10); an axis twice, likewise.
         * A zip axis may repeat a value (the tuples differ). */
        for (size_t j = 0; rc == SIM_OK && j < i; j++)
            if (strcmp(ax[j].key, ax[i].key) == 0)
                rc = SIM_ERROR(SIM_EINVAL, "%s: experiment.sweep[%zu] and [%zu] both vary '%s'; "
                               "expected each key in one axis", path, j, i, ax[i].key);
        for (size_t a = 0; rc == SIM_OK && cfg->sweep_mode != EXP_SWEEP_ZIP && a < ax[i].n; a++)
            for (size_t b = 0; b < a; b++)
                if (strcmp(ax[i].values[a], ax[i].values[b]) == 0) {
                    rc = SIM_ERROR(SIM_EINVAL, "%s: experiment.sweep[%zu] (%s) lists '%s' "
                                   "twice (values %zu and %zu); expected each value once", path,
                                   i, ax[i].key, ax[i].values[a], b + 1, a + 1);
                    break;
                }
        if (rc == SIM_OK && cfg->sweep_mode == EXP_SWEEP_ZIP && ax[i].n != ax[0].n)
            rc = SIM_ERROR(SIM_EINVAL, "%s: experiment.sweep[%zu] has %zu values but the first "
                           "axis has %zu; expected equal lengths with sweep_mode zip",
                           path, i, ax[i].n, ax[0].n);
    }
    if (rc) {
        axes_free(ax, cfg->n_sweep);
        return rc;
    }
    *out = ax;
    return SIM_OK;
}

/* Number of sweep points. */
static size_t n_points(const exp_config *cfg, const axis *ax)
{
    if (cfg->n_sweep == 0)
        return 1;
    if (cfg->sweep_mode == EXP_SWEEP_ZIP)
        return ax[0].n;
    size_t n = 1; /* saturates: check_points_memory refuses it */
    for (size_t i = 0; i < cfg->n_sweep; i++)
        n = ax[i].n && n > SIZE_MAX / ax[i].n ? SIZE_MAX : n * ax[i].n;
    return n;
}

/* The overrides "KEY=VALUE" of point `p` (first axis slowest) into
 * sets[0..n_sweep) (strings the caller frees) and its label. */
static void point_sets(const exp_config *cfg, const axis *ax, size_t p, char **sets, char *label,
                       size_t label_len)
{
    size_t rem = p, stride = 1;
    for (size_t i = cfg->n_sweep; i-- > 0;) {
        size_t v = cfg->sweep_mode == EXP_SWEEP_ZIP ? p : (rem / stride) % ax[i].n;
        if (cfg->sweep_mode == EXP_SWEEP_GRID)
            stride *= ax[i].n;
        size_t len = strlen(ax[i].key) + strlen(ax[i].values[v]) + 2;
        sets[i] = sim_xmalloc(len);
        snprintf(sets[i], len, "%s=%s", ax[i].key, ax[i].values[v]);
    }
    label[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < cfg->n_sweep && used + 1 < label_len; i++)
        used += (size_t)snprintf(label + used, label_len - used, "%s%s", i ? " " : "", sets[i]);
}

/* ---- runs ---- */

typedef struct sweep_point {
    exp_config cfg;
    exp_setup setup;
    char label[512];
    char *inputs; /* its input files' manifest (inputs_text); part of a run's identity */
} sweep_point;

/* ---- input files: part of a run's identity (issue 38 D5) ---------------
 * The config hash covers the config's text, which names files (traces,
 * CSVs, key-rate files, GPU/model specs, cost profiles) but not what they
 * hold.  While a point is set up, every input file opened (sim_file_open,
 * the trace ingester) is noted; the manifest "HASH SIZE PATH" per file
 * (XXH3-64 of the bytes, sorted by path) is stored with each run
 * (runs.inputs), and --resume and merge compare it. */
typedef struct input_list {
    char **path;
    size_t n, cap;
} input_list;

static void note_input(void *ctx, const char *path)
{
    input_list *l = ctx;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->path[i], path) == 0)
            return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->path = sim_xrealloc(l->path, l->cap * sizeof *l->path);
    }
    l->path[l->n++] = sim_xstrdup(path);
}


/* One manifest line "HASH SIZE PATH\n" at *p: its fields; advances *p.
 * false at the end of the text. */
typedef struct mline {
    const char *hash, *size, *path;
    int n_size, n_path;
} mline;

static bool next_mline(const char **p, mline *m)
{
    const char *s = *p;
    if (!*s)
        return false;
    const char *e = strchr(s, '\n');
    if (!e)
        e = s + strlen(s);
    const char *sp1 = memchr(s, ' ', (size_t)(e - s));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(e - sp1 - 1)) : NULL;
    m->hash = s;
    m->size = sp1 ? sp1 + 1 : e;
    m->n_size = sp2 ? (int)(sp2 - sp1 - 1) : 0;
    m->path = sp2 ? sp2 + 1 : e;
    m->n_path = (int)(e - m->path);
    *p = *e ? e + 1 : e;
    return true;
}

/* qsort order of manifest lines: by name. */
static int cmp_line(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    mline mx = {0}, my = {0}; /* next_mline fills both (a release build cannot see it) */
    next_mline(&x, &mx);
    next_mline(&y, &my);
    const int c = strncmp(mx.path, my.path, (size_t)(mx.n_path < my.n_path ? mx.n_path : my.n_path));
    return c ? c : mx.n_path - my.n_path;
}

/* The manifest line of file `path` ("HASH SIZE NAME\n", NAME the path,
 * or "<specs>/REST" for a file of the spec folder so that checkouts in
 * other places agree), hashed once per experiment (`memo` holds the lines
 * made so far).  Returns the line (owned by memo) or NULL with SIM_EIO. */
static const char *input_line(input_list *memo, const char *path)
{
    char *sd = NULL;
    char name[4096];
    /* No spec folder found: no path can be inside it. */
    const size_t sdl = spec_dir(&sd) == SIM_OK ? strlen(sd) : 0;
    if (sdl && strncmp(path, sd, sdl) == 0 && path[sdl] == '/')
        snprintf(name, sizeof name, "<specs>%s", path + sdl);
    else
        snprintf(name, sizeof name, "%s", path);
    free(sd);
    for (size_t i = 0; i < memo->n; i++) {
        const char *l = memo->path[i];
        mline m;
        if (next_mline(&l, &m) && (size_t)m.n_path == strlen(name) &&
            strncmp(m.path, name, (size_t)m.n_path) == 0)
            return memo->path[i];
    }
    uint64_t h = 0, size = 0;
    if (sim_file_hash(path, &h, &size))
        return NULL;
    char line[4200];
    snprintf(line, sizeof line, "%016llx %llu %s\n", (unsigned long long)h,
             (unsigned long long)size, name);
    note_input(memo, line);
    return memo->path[memo->n - 1];
}

/* The manifest of the files in `l` (emptied here) into *out (malloc'd).
 * Returns SIM_OK or SIM_EIO (a file that cannot be read again). */
static int inputs_text(input_list *l, input_list *memo, char **out)
{
    char **lines = sim_xcalloc(l->n + 1, sizeof *lines);
    size_t cap = 1, n = 0;
    int rc = SIM_OK;
    for (size_t i = 0; i < l->n; i++) {
        const char *line = rc == SIM_OK ? input_line(memo, l->path[i]) : NULL;
        if (!line && rc == SIM_OK)
            rc = SIM_EIO; /* sim_file_hash set the message */
        if (line) {
            lines[n++] = (char *)line;
            cap += strlen(line);
        }
        free(l->path[i]);
    }
    free(l->path);
    *l = (input_list){0};
    /* sorted by name (the text after "HASH SIZE ") */
    qsort(lines, n, sizeof *lines, cmp_line);
    char *t = sim_xmalloc(cap);
    size_t len = 0;
    t[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i && strcmp(lines[i], lines[i - 1]) == 0)
            continue;
        const size_t k = strlen(lines[i]);
        memcpy(t + len, lines[i], k + 1);
        len += k;
    }
    free(lines);
    if (rc) {
        free(t);
        t = NULL;
    }
    *out = t;
    return rc;
}

bool exp_inputs_diff(const char *was, const char *now, char *path, size_t n_path, char *why,
                     size_t n_why)
{
    mline a, b;
    bool ha = next_mline(&was, &a), hb = next_mline(&now, &b);
    while (ha || hb) {
        int c = !ha ? 1 : !hb ? -1 : strncmp(a.path, b.path, (size_t)(a.n_path < b.n_path ? a.n_path : b.n_path));
        if (ha && hb && c == 0)
            c = a.n_path - b.n_path;
        if (c < 0) {
            snprintf(path, n_path, "%.*s", a.n_path, a.path);
            snprintf(why, n_why, "read by the stored run, not now");
            return true;
        }
        if (c > 0) {
            snprintf(path, n_path, "%.*s", b.n_path, b.path);
            snprintf(why, n_why, "read now, not by the stored run");
            return true;
        }
        if (strncmp(a.hash, b.hash, 16) != 0 || a.n_size != b.n_size ||
            strncmp(a.size, b.size, (size_t)a.n_size) != 0) {
            snprintf(path, n_path, "%.*s", a.n_path, a.path);
            snprintf(why, n_why, "content hash %.16s (%.*s bytes), now %.16s (%.*s bytes)",
                     a.hash, a.n_size, a.size, b.hash, b.n_size, b.size);
            return true;
        }
        ha = next_mline(&was, &a);
        hb = next_mline(&now, &b);
    }
    return false;
}

typedef struct task {
    size_t point, ir, is, ip;
    uint64_t run_index;
    char *config_text;
    char hash[17];
    int64_t resume_from; /* > 0: copy this stored run instead of simulating */
    int selected;        /* in this shard */
    size_t prev;         /* the same series' task at the next lower load, or SIZE_MAX */
    int prunable;        /* not at the report rate */
    /* scheduling state (under the pool mutex) */
    int taken;           /* a worker started it */
    int pruned;          /* skipped: its series already failed the largest SLO */
    int fails;           /* its SLO metric exceeds the largest SLO (or is undefined) */
    /* filled by the worker */
    int done;
    int rc;
    char err[1024];
    double warmup_s;     /* measurement window start of the run (exp_setup_window), s */
    cluster_result res;
    exp_client_summary cs; /* closed-loop client runs (has_cs): per-stage metrics */
    bool has_cs;
    char started[32];
    double wall_s;
} task;

typedef struct pool {
    sweep_point *pts;
    task *tasks;
    size_t n_tasks;
    size_t next;          /* next task a worker takes */
    exp_pool wp;          /* the workers; its mutex guards the task states */
    const volatile sig_atomic_t *stop;
    int abort;            /* stop taking new tasks */
    int prune;            /* experiment.prune */
    int slo_metric;       /* experiment.slo_metric of the base config */
    double max_slo;       /* the largest SLO threshold, s */
    unsigned jobs;        /* workers asked for (--jobs, >= 1) */
} pool;

/* Is `rate` one of the loads that always run under pruning
 * (exp_run_opts.prune_keep)? */
static bool kept_load(const exp_run_opts *o, double rate)
{
    for (size_t i = 0; i < o->n_prune_keep; i++)
        if (o->prune_keep[i] == rate)
            return true;
    return false;
}

static int needs_sim(const task *t) { return t->selected && t->resume_from <= 0; }

/* The SLO metric of a result (the run_metrics column named by
 * experiment.slo_metric). */
static double slo_value(const cluster_result *r, int metric)
{
    switch (metric) {
#define SLO_CASE(c, f) case EXP_SLO_##c: return r->f;
    EXP_SLO_METRICS(SLO_CASE)
#undef SLO_CASE
    }
    /* The schema's choices are the list: another value is a bug. */
    sim_panic(__FILE__, __LINE__, "unknown SLO metric");
}

static int resolved(const task *t)
{
    return t->done || t->pruned || t->resume_from > 0 || !t->selected;
}

/* Under the pool mutex, with pruning: 1 when a lower load of t's series
 * failed the largest SLO (a pruned one implies it), 0 when every lower
 * load ran and held, -1 while neither is known (a lower load is still to
 * run).  Which tasks are pruned is a function of the results alone, never
 * of the order they finished in: a task is pruned exactly when some lower
 * load of its series fails.  A load that always runs (the report rate, a
 * kept load) does not wait for its lower loads. */
static int failed_below(const pool *pl, const task *t)
{
    int pending = 0;
    for (size_t k = t->prev; k != SIZE_MAX; k = pl->tasks[k].prev) {
        const task *u = &pl->tasks[k];
        if (u->pruned || ((u->done || u->resume_from > 0) && u->fails))
            return 1;
        if (!resolved(u))
            pending = 1;
    }
    return pending ? -1 : 0;
}

/* Under the pool mutex: the expected cost of task `t` (defined below). */
static double est_cost(const pool *pl, const task *t);

/* Under the pool mutex: the next task a worker may start, pruning the
 * tasks whose series already failed.  NULL if none is ready now; sets
 * *finished when nothing is left to start at all.  Of the ready tasks
 * the one expected to take longest (est_cost; the lowest index among
 * equals) among the next 8 x workers tasks starts first (or else the
 * first ready one), so that a sweep does not end with one long run on
 * one core while the others idle (longest processing time first, Graham
 * 1969; issue 18, "Sweep speedup"). */
static task *next_task(pool *pl, int *finished)
{
    *finished = 0;
    while (pl->next < pl->n_tasks && (!needs_sim(&pl->tasks[pl->next]) ||
                                      pl->tasks[pl->next].taken || pl->tasks[pl->next].pruned))
        pl->next++;
    if (pl->next >= pl->n_tasks) {
        *finished = 1;
        return NULL;
    }
    /* Longest first only among the next few tasks in run-index order: the
     * main thread stores results in that order, so a result finished far
     * ahead waits in memory (up to ~50 MB of records per run). */
    const size_t window = 8 * (size_t)pl->jobs;
    task *best = NULL;
    double best_cost = -1;
    for (size_t k = pl->next; k < pl->n_tasks; k++) {
        if (best && k >= pl->next + window)
            break;
        task *t = &pl->tasks[k];
        if (!needs_sim(t) || t->taken || t->pruned)
            continue;
        if (pl->prune && t->prunable) {
            const int fb = failed_below(pl, t);
            if (fb < 0)
                continue; /* a lower load that decides it is still running */
            if (fb) {
                /* Capacity is decided by the first failure: loads above it
                 * cannot change it (docs/design.md §10). */
                t->pruned = 1; /* the pool broadcasts after the take */
                continue;
            }
        }
        const double cost = est_cost(pl, t);
        if (cost > best_cost) {
            best = t;
            best_cost = cost;
        }
    }
    return best;
}

static void run_task(pool *pl, task *t)
{
    const sweep_point *pt = &pl->pts[t->point];
    const exp_config *cfg = &pt->cfg;
    const route_type *rt = route_find(cfg->policies[t->ip]);
    SIM_ALWAYS(rt != NULL); /* the schema's choices are the registry */
    const route_env env =
        exp_setup_route_env(&pt->setup, (uint64_t)cfg->seeds[t->is], cfg->rates[t->ir]);
    cluster_params cp = pt->setup.cp;
    cp.stop = pl->stop;
    cp.warmup_s = t->warmup_s;
    exp_stream *st = NULL;
    exp_utc_now(t->started, sizeof t->started);
    double t0 = sim_wall_s();
    t->rc = exp_stream_open(&pt->setup, (uint64_t)cfg->seeds[t->is], cfg->rates[t->ir], &st);
    /* A client's stages need ITL over their own windows
     * (exp_client_summarise); open-loop runs keep no steps. */
    cp.keep_itl_steps = t->rc == SIM_OK && exp_stream_client(st) != NULL;
    if (t->rc == SIM_OK)
        t->rc = cluster_run(&cp, rt, &env, cfg->router, exp_stream_source(st), &t->res);
    if (t->rc == SIM_OK && exp_stream_client(st)) {
        exp_client_summarise(&cfg->wl, exp_stream_client(st), &t->res, &t->cs);
        if (cfg->requests) /* the requests table names each one's stage and client */
            exp_client_keep_requests(exp_stream_client(st), t->res.n_arrived, &t->cs);
        t->has_cs = true;
    }
    t->wall_s = sim_wall_s() - t0;
    exp_stream_close(st);
    if (t->rc)
        snprintf(t->err, sizeof t->err, "%s", sim_errmsg());
}

/* Pool callbacks (sim/exp/pool.h): take and done run under the pool's
 * mutex, run_task outside it. */
static void *take_task(void *ctx, int *finished)
{
    pool *pl = ctx;
    if (pl->stop && *pl->stop)
        pl->abort = 1; /* a signal: no new run starts (a short run may not poll it) */
    if (pl->abort) {
        *finished = 1;
        return NULL;
    }
    task *t = next_task(pl, finished);
    if (t)
        t->taken = 1;
    return t;
}

static void run_one(void *ctx, void *t)
{
    run_task(ctx, t);
}

static void task_done(void *ctx, void *arg)
{
    pool *pl = ctx;
    task *t = arg;
    t->done = 1;
    if (t->rc) {
        pl->abort = 1;
    } else {
        double m = slo_value(&t->res, pl->slo_metric);
        t->fails = !(m <= pl->max_slo);
    }
}

static const exp_pool_ops sweep_ops = {.take = take_task, .run = run_one, .done = task_done};

/* A run with arrivals none of which completed because every one was
 * rejected (its prompt can never fit a destination's KV pool): no
 * latency exists, so it must not read as a normal result. */
static bool served_nothing(const cluster_result *r)
{
    return r->n_arrived > 0 && r->n_completed == 0 && r->n_rejected + r->n_too_long > 0;
}

/* The run table's policy column: as wide as the longest router name of
 * the experiment, at least 12 (issue 39 item 9: long names shifted the
 * columns). */
static int policy_width(const sweep_point *pts, size_t np)
{
    size_t w = 12;
    for (size_t p = 0; p < np; p++)
        for (size_t i = 0; i < pts[p].cfg.n_policies; i++)
            w = strlen(pts[p].cfg.policies[i]) > w ? strlen(pts[p].cfg.policies[i]) : w;
    return (int)w;
}

static void print_header(FILE *out, bool sweep, int pw)
{
    fprintf(out, "%s%-*s %8s %5s %7s %9s %9s %9s %7s %7s %7s %7s %7s %7s\n",
            sweep ? "point " : "", pw, "policy", "rate/s", "seed", "hit%", "TTFTp50", "TTFTp99",
            "E2Ep99", "imbal", "done", "unfin", "rej", "preempt", "toolong");
}

static void print_row(FILE *out, bool sweep, int pw, size_t point, const char *policy,
                      double rate, int64_t seed, const cluster_result *r)
{
    char t50[16], t99[16], e99[16];
    fmt_s(t50, sizeof t50, r->ttft_p50);
    fmt_s(t99, sizeof t99, r->ttft_p99);
    fmt_s(e99, sizeof e99, r->e2e_p99);
    if (sweep)
        fprintf(out, "%5zu ", point);
    fprintf(out, "%-*s %8.2f %5lld %7.2f %9s %9s %9s %7.3f %7llu %7llu %7llu %7llu %7llu%s\n",
            pw, policy, rate, (long long)seed, 100.0 * r->hit_rate, t50, t99, e99, r->imbalance_work,
            (unsigned long long)r->n_completed, (unsigned long long)r->n_unfinished,
            (unsigned long long)r->n_rejected, (unsigned long long)r->preemptions,
            (unsigned long long)r->n_too_long, served_nothing(r) ? "  SERVED NOTHING" : "");
    if (r->n_crashes || r->n_refused) /* faults (docs/faults.md) */
        fprintf(out, "%s  faults: %llu crash%s, %llu lost, %llu refused, %llu retries, %llu "
                "failed for good\n", sweep ? "      " : "", (unsigned long long)r->n_crashes,
                r->n_crashes == 1 ? "" : "es", (unsigned long long)r->n_lost,
                (unsigned long long)r->n_refused, (unsigned long long)r->n_retries,
                (unsigned long long)r->n_failed);
}

static void progress(bool tty, size_t done, size_t total, double elapsed, const task *t,
                     const sweep_point *pt)
{
    double eta = done ? elapsed / (double)done * (double)(total - done) : 0;
    if (tty)
        fprintf(stderr, "\r[%zu/%zu] %3.0f%%  elapsed %.0f s  ETA %.0f s   ", done, total,
                100.0 * (double)done / (double)total, elapsed, eta);
    else
        fprintf(stderr, "[%zu/%zu] %s%s%s rate %.2f seed %lld: %llu requests in %.2f s wall "
                "(ETA %.0f s)\n", done, total, pt->label, pt->label[0] ? " " : "",
                pt->cfg.policies[t->ip], pt->cfg.rates[t->ir], (long long)pt->cfg.seeds[t->is],
                (unsigned long long)t->res.n_arrived, t->wall_s, eta);
}

/* The builds (runs.build_version) of the runs --resume reuses, for the
 * run header: distinct values with their counts, the first few kept. */
typedef struct resume_builds {
    char name[4][128];
    size_t count[4];
    size_t n, other; /* distinct builds kept; runs of further builds */
} resume_builds;

static void note_build(resume_builds *rb, const char *build)
{
    for (size_t i = 0; i < rb->n; i++)
        if (strcmp(rb->name[i], build) == 0) {
            rb->count[i]++;
            return;
        }
    if (rb->n == 4) {
        rb->other++;
        return;
    }
    snprintf(rb->name[rb->n], sizeof rb->name[0], "%s", build);
    rb->count[rb->n++] = 1;
}

/* "resume: N of M runs reused from stored runs of build B (K), ...; the
 * others run now" (docs/harness.md, "Resume"). */
static void print_resumed(FILE *out, const resume_builds *rb, size_t n, size_t of, bool any)
{
    fprintf(out, "resume: %zu of %zu runs reused", n, of);
    for (size_t i = 0; i < rb->n; i++)
        fprintf(out, "%s%zu of build %s%s", i ? ", " : " (", rb->count[i], rb->name[i],
                strcmp(rb->name[i], CRSIM_VERSION) == 0 ? " (this build)" : "");
    if (rb->other)
        fprintf(out, ", %zu of other builds", rb->other);
    if (rb->n)
        fputc(')', out);
    if (any)
        fprintf(out, "; stored runs of any build match (--resume-any-build)\n");
    else
        fprintf(out, "; only runs stored by this build %s match (--resume-any-build reuses "
                "other builds' runs)\n", CRSIM_VERSION);
}

/* ---- size estimate before a sweep (docs/harness.md, "Size estimate") ---- */

/* Memory a run holds per request, measured on this build (x86-64, glibc;
 * commands in docs/harness.md): a request inside the cluster costs about
 * EXP_EST_REQ_BYTES plus EXP_EST_BLOCK_BYTES per block hash of its
 * sequence (a 200 s paper-main overload, 150 k requests in flight, gave
 * 1.82 KB/request at 101 blocks; the Mooncake trace 5.86 KB at 752), and
 * every arrived request keeps a result record and its share of the
 * summaries (EXP_EST_REC_BYTES, with the record array's doubling).  A
 * synthetic key population costs EXP_EST_KEY_BYTES per key while built
 * (maxrss of `crsim workload describe` at workload.keys.n = 4e6: 238 MB).
 * The time figure is a rough EXP_EST_REQ_US microseconds per simulated
 * request and core (the same overload: 0.51 s for 150 k requests). */
#define EXP_EST_REQ_BYTES 1200.0
#define EXP_EST_BLOCK_BYTES 8.0
#define EXP_EST_REC_BYTES 200.0
#define EXP_EST_KEY_BYTES 60.0
#define EXP_EST_REQ_US 3.0
/* Per run, besides requests (measured on this build with
 * reliability-repro/probes/syn-small.yaml, maxrss of one flat_lb run at
 * 10 .. 32,000 destinations, of sticky at gateway.replicas 1 and 256 on
 * 1,000 destinations, and of a 20,000 s run at experiment.timeline_s 60
 * and 0.1): each destination's engine, gateway and router state
 * (8.7-9.0 KB up to 32,000 destinations; above 14 KB at 100,000, where
 * the reliability campaign of issue 38 saw 1.4 GB after 15 s: 15 KB), each (replica x destination) of a gateway replica's own
 * router state (3.0 KB, a sticky hash ring; less for other routers), each
 * timeline window (55-77 B). Time: a metrics scrape costs about 50 ns per
 * destination (32,000 destinations, 0.05 s scrapes over 120 s: 4.3 s). */
#define EXP_EST_DEST_BYTES 15000.0
#define EXP_EST_REPLICA_DEST_BYTES 3000.0
#define EXP_EST_WINDOW_BYTES 80.0
#define EXP_EST_SCRAPE_DEST_US 0.05
/* Per sweep point while the sweep is set up (config, set-up, probe): a
 * 2,000-point --dry-run of syn-small took 100 MB and 8.6 s. */
#define EXP_EST_POINT_BYTES 50000.0
#define EXP_EST_POINT_US 4300.0
/* Requests probed per point for the block count of the estimate. */
#define EXP_EST_PROBE 2000

/* MemAvailable, or CRSIM_MEM_AVAILABLE_GB (sim/core/fileio.h). */
static double mem_available(void) { return sim_mem_available(); }

/* The share of a run's memory that scales with the cluster and the
 * timeline, not with requests (EXP_EST_DEST_BYTES...), for `req`
 * requests at `rate`: bytes; *dest_b and *win_b receive the parts (per
 * destination and replica, per timeline window) and *cpu_s the scrape
 * time.  The run's span is req / rate + experiment.drain_s. */
static double scale_bytes(const exp_config *c, double rate, double req, double *dest_b,
                          double *win_b, double *cpu_s)
{
    const double d = (double)c->destinations, w = (double)(c->replicas > 0 ? c->replicas : 1);
    const double span = (rate > 0 && isfinite(req) ? req / rate : 0) + c->drain_s;
    *dest_b = d * (EXP_EST_DEST_BYTES + w * EXP_EST_REPLICA_DEST_BYTES);
    *win_b = c->timeline_s > 0 ? ceil(span / c->timeline_s) * EXP_EST_WINDOW_BYTES : 0;
    *cpu_s = c->scrape_interval_s > 0 ? d * span / c->scrape_interval_s * EXP_EST_SCRAPE_DEST_US
                                             * 1e-6
                                       : 0;
    return *dest_b + *win_b;
}

/* Before the sweep's points are set up: refuse (unless --force) when
 * `np` points would not fit in memory (EXP_EST_POINT_BYTES each).
 * Returns SIM_OK or SIM_EINVAL naming experiment.sweep. */
static int check_points_memory(size_t np, const exp_run_opts *o)
{
    const double avail = mem_available(), bytes = (double)np * EXP_EST_POINT_BYTES;
    if (o->force || !(bytes > avail))
        return SIM_OK;
    return SIM_ERROR(SIM_EINVAL, "%s: the sweep has %zu points, which need about %.3g GB of "
                     "memory to set up (about %.0f KB each) and about %.2g s, but only %.3g GB "
                     "is available (MemAvailable); expected fewer values in experiment.sweep, "
                     "or --force to run anyway", o->config_path, np, bytes / 1e9,
                     EXP_EST_POINT_BYTES / 1e3, (double)np * EXP_EST_POINT_US * 1e-6,
                     avail / 1e9);
}

/* Requests one run of `c` at `rate` will arrive: the trace's (or
 * workload.max_requests of them), or rate x workload.duration_s capped by
 * workload.max_requests.  `n_trace` is the trace's length (0 for a
 * synthetic workload). */
static double run_requests(const exp_config *c, double rate, size_t n_trace)
{
    const double mr = c->wl.max_requests > 0 ? (double)c->wl.max_requests : INFINITY;
    if (n_trace)
        return fmin((double)n_trace, mr);
    if (wl_client_closed(&c->wl))
        return fmin(wl_client_estimate_requests(&c->wl, rate), mr);
    const double d = c->wl.duration_s > 0 ? rate * c->wl.duration_s : INFINITY;
    return fmin(d, mr);
}

/* Under the pool mutex: the expected cost of task `t`, CPU-seconds: its
 * series' lower load's measured time scaled by the load ratio once that
 * ran, else its request count at EXP_EST_REQ_US.  Only orders the tasks
 * (longest first); results never depend on it. */
static double est_cost(const pool *pl, const task *t)
{
    const exp_config *c = &pl->pts[t->point].cfg;
    const double rate = c->rates[t->ir];
    const task *pv = t->prev == SIZE_MAX ? NULL : &pl->tasks[t->prev];
    if (pv && pv->done && pv->wall_s > 0 && c->rates[pv->ir] > 0)
        return pv->wall_s * rate / c->rates[pv->ir];
    const wl_trace *tr = pl->pts[t->point].setup.trace;
    const double n = run_requests(c, rate, tr ? tr->n : 0);
    return (isfinite(n) ? n : 1e9) * EXP_EST_REQ_US * 1e-6;
}


/* Prefix an error of sweep point `p` with its index and label. */
static int point_error(int rc, size_t p, const char *label)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", sim_errmsg());
    return SIM_ERROR(rc, "sweep point %zu (%s): %s", p, label, msg);
}

/* Before set-up: the bytes the key population of `c` needs while built
 * (a synthetic workload with a generated population, lognormal or zipf:
 * workload.keys.n x EXP_EST_KEY_BYTES; a file's population is bounded
 * by its file), 0 otherwise. */
static double keys_bytes(const exp_config *c)
{
    const wl_config *wl = &c->wl;
    if (strcmp(wl->type, "synthetic") != 0 || (strcmp(wl->keys.distribution, "lognormal") != 0 &&
                                               strcmp(wl->keys.distribution, "zipf") != 0))
        return 0;
    return (double)wl->keys.n * EXP_EST_KEY_BYTES;
}

/* Every point's population stays alive during the sweep: refuse (unless
 * --force) when those of points 0..p (`bytes` in all, `c` the latest)
 * exceed MemAvailable, before building the next.  Returns SIM_OK or
 * SIM_EINVAL. */
static int check_keys_memory(double bytes, const exp_config *c, size_t p, const exp_run_opts *o)
{
    const double avail = mem_available();
    if (o->force || !(bytes > avail))
        return SIM_OK;
    return SIM_ERROR(SIM_EINVAL, "%s: the key population%s need%s about %.3g GB (workload.keys.n "
                     "%lld keys x about %.0f B) but only %.3g GB of memory is available "
                     "(MemAvailable); expected fewer keys (workload.keys.n), or --force to run "
                     "anyway", o->config_path, p ? "s of the sweep points" : "", p ? "" : "s",
                     bytes / 1e9, (long long)c->wl.keys.n, EXP_EST_KEY_BYTES, avail / 1e9);
}

/* After set-up, before any database is opened: open every point's
 * stream at every load of its first seed (a workload error shows at one
 * seed like at another, but the rate scales the stream), so bad input
 * fails before the experiment row exists, and measure the mean blocks
 * per request of its first EXP_EST_PROBE requests into mean_blocks[p].
 * Returns SIM_OK or the stream errors (prefixed with the sweep point). */
static int probe_points(const sweep_point *pts, size_t np, double *mean_blocks,
                        input_list *inputs)
{
    int rc = SIM_OK;
    for (size_t p = 0; p < np && rc == SIM_OK; p++) {
        const exp_config *c = &pts[p].cfg;
        sim_file_set_hook(note_input, &inputs[p]); /* files a stream reads (iat_file) */
        for (size_t ir = 0; ir < c->n_rates && rc == SIM_OK; ir++) {
            exp_probe pr;
            rc = exp_setup_probe(&pts[p].setup, (uint64_t)c->seeds[0], c->rates[ir],
                                 ir == 0 ? EXP_EST_PROBE : 1, &pr);
            if (rc == SIM_OK && ir == 0)
                mean_blocks[p] = pr.mean_blocks;
        }
        sim_file_set_hook(NULL, NULL);
        if (rc && np > 1)
            rc = point_error(rc, p, pts[p].label);
    }
    return rc;
}

/* Every run's measurement window (exp_setup_window) into its tasks'
 * warmup_s, and the minimum: a (point, rate, seed) with fewer than
 * experiment.min_measured measured requests is refused before any
 * database is opened — no load is stored as a pass or a failure on too
 * few requests (a trace replayed at a high load may end inside the
 * warm-up).  Returns SIM_OK or SIM_EINVAL naming the run. */
static int check_measured(const sweep_point *pts, size_t np, task *tasks, size_t n_tasks)
{
    for (size_t i = 0; i < n_tasks; i++) {
        task *t = &tasks[i];
        if (t->ip != 0) { /* every policy shares the stream of (point, rate, seed) */
            t->warmup_s = tasks[i - t->ip].warmup_s;
            continue;
        }
        const exp_config *c = &pts[t->point].cfg;
        exp_window w;
        int rc = exp_setup_window(&pts[t->point].setup, (uint64_t)c->seeds[t->is],
                                  c->rates[t->ir], (uint64_t)c->min_measured, &w);
        if (rc)
            return np > 1 ? point_error(rc, t->point, pts[t->point].label) : rc;
        t->warmup_s = w.warmup_s;
        if (c->min_measured > 0 && w.n_measured < (uint64_t)c->min_measured) {
            char warm[128];
            if (c->warmup_requests > 0)
                snprintf(warm, sizeof warm, "warm-up the first %lld arrivals",
                         (long long)c->warmup_requests);
            else if (c->warmup_share > 0)
                snprintf(warm, sizeof warm, "warm-up the first %g of the arrivals",
                         c->warmup_share);
            else
                snprintf(warm, sizeof warm, "warm-up %g s", c->warmup_s);
            char pt[600] = "";
            if (np > 1)
                snprintf(pt, sizeof pt, "sweep point %zu (%s), ", t->point, pts[t->point].label);
            return SIM_ERROR(SIM_EINVAL, "%s: %sload %g requests/s, seed %lld: no data: %llu of "
                             "%llu requests measured (%s), fewer than experiment.min_measured "
                             "%lld; expected a longer workload, a shorter warm-up, "
                             "experiment.warmup_share for a time-scaled trace, or a lower "
                             "experiment.min_measured (docs/harness.md)",
                             c->src.path ? c->src.path : "config", pt, c->rates[t->ir],
                             (long long)c->seeds[t->is], (unsigned long long)w.n_measured,
                             (unsigned long long)w.n, warm, (long long)c->min_measured);
        }
    }
    return SIM_OK;
}

/* Estimate each run still to simulate (selected, not resumed): its
 * requests and peak memory; print the estimate, and refuse (unless
 * --force) when the `jobs` largest runs at once exceed MemAvailable.
 * Returns SIM_OK or SIM_EINVAL (too large). */
static int estimate(const sweep_point *pts, const double *mean_blocks, const task *tasks,
                    size_t n_tasks, const exp_run_opts *o, FILE *out)
{
    int rc = SIM_OK;
    /* Per selected run: requests, bytes; the jobs largest at once. */
    const unsigned jobs = o->jobs ? o->jobs : 1;
    double *top = sim_xcalloc(jobs, sizeof *top);
    double total_req = 0, max_req = 0, max_rate = 0, max_kb = 0, cpu_s = 0;
    double max_bytes = 0, max_dest_b = 0, max_win_b = 0;
    size_t n_run = 0, max_point = 0, big_point = 0;
    for (size_t i = 0; i < n_tasks; i++) {
        const task *t = &tasks[i];
        if (!t->selected || t->resume_from > 0)
            continue;
        const sweep_point *pt = &pts[t->point];
        const double rate = pt->cfg.rates[t->ir];
        const double req = run_requests(&pt->cfg, rate, pt->setup.trace ? pt->setup.trace->n : 0);
        double dest_b, win_b, scrape_s;
        const double bytes = req * (EXP_EST_REC_BYTES + EXP_EST_REQ_BYTES +
                                    EXP_EST_BLOCK_BYTES * mean_blocks[t->point]) +
                             scale_bytes(&pt->cfg, rate, req, &dest_b, &win_b, &scrape_s);
        n_run++;
        total_req += req;
        cpu_s += req * EXP_EST_REQ_US * 1e-6 + scrape_s;
        if (bytes > max_bytes) {
            max_bytes = bytes;
            big_point = t->point;
            max_dest_b = dest_b;
            max_win_b = win_b;
        }
        if (req > max_req) {
            max_req = req;
            max_rate = rate;
            max_point = t->point;
            max_kb = (bytes - dest_b - win_b) / req / 1e3;
        }
        /* keep the `jobs` largest (insertion into a short sorted array) */
        for (unsigned j = 0; j < jobs; j++)
            if (bytes > top[j]) {
                for (unsigned m = jobs - 1; m > j; m--)
                    top[m] = top[m - 1];
                top[j] = bytes;
                break;
            }
    }
    double peak = 0;
    for (unsigned j = 0; j < jobs; j++)
        peak += top[j];
    free(top);
    const double avail = mem_available();
    const unsigned cores = jobs < n_run ? jobs : (unsigned)(n_run ? n_run : 1);
    if (!o->quiet && n_run) {
        char av[64] = "MemAvailable unknown";
        if (!isnan(avail))
            snprintf(av, sizeof av, "%.3g GB available", avail / 1e9);
        fprintf(out, "estimate: %zu run%s to simulate, %.3g requests (at most %.3g per run), "
                "peak memory about %.2g GB with %u run%s at once (%s), time about %.2g s "
                "(%.0f us per request per core and the metrics scrapes, rough)\n", n_run, n_run == 1 ? "" : "s",
                total_req, max_req, peak / 1e9, cores, cores == 1 ? "" : "s", av, cpu_s / cores,
                EXP_EST_REQ_US);
    }
    if (o->force || !(peak > avail) || n_run == 0)
        return rc;
    const exp_config *c = &pts[max_point].cfg;
    char why[256];
    const exp_config *bc = &pts[big_point].cfg;
    if (max_dest_b >= 0.5 * max_bytes) {
        snprintf(why, sizeof why, "cluster.destinations %lld x gateway.replicas %lld: about "
                 "%.3g GB per run", (long long)bc->destinations, (long long)bc->replicas,
                 max_dest_b / 1e9);
        return SIM_ERROR(SIM_EINVAL, "%s: the runs may need about %.3g GB of memory (%s; %u at "
                         "once with --jobs %u) but only %.3g GB is available (MemAvailable); "
                         "expected fewer destinations (cluster.destinations, "
                         "cluster.groups[].destinations) or gateway replicas "
                         "(gateway.replicas), fewer --jobs, or --force to run anyway",
                         o->config_path, peak / 1e9, why, cores, jobs, avail / 1e9);
    }
    if (max_win_b >= 0.5 * max_bytes)
        return SIM_ERROR(SIM_EINVAL, "%s: the runs may need about %.3g GB of memory (a timeline "
                         "of %.3g windows of experiment.timeline_s %g per run, %u at once with "
                         "--jobs %u) but only %.3g GB is available (MemAvailable); expected a "
                         "longer experiment.timeline_s (or 0), a shorter run, fewer --jobs, or "
                         "--force to run anyway", o->config_path, peak / 1e9,
                         max_win_b / EXP_EST_WINDOW_BYTES, bc->timeline_s, cores, jobs,
                         avail / 1e9);
    if (pts[max_point].setup.trace)
        snprintf(why, sizeof why, "the trace's %.0f requests (workload.trace, "
                 "workload.max_requests)", max_req);
    else if (c->wl.max_requests > 0 && max_req == (double)c->wl.max_requests)
        snprintf(why, sizeof why, "workload.max_requests %.0f", max_req);
    else
        snprintf(why, sizeof why, "experiment.rates %g x workload.duration_s %g = %.3g requests",
                 max_rate, c->wl.duration_s, max_req);
    return SIM_ERROR(SIM_EINVAL, "%s: the runs may need about %.3g GB of memory (largest run: %s; "
                     "about %.1f KB per request in flight, %u at once with --jobs %u) but only "
                     "%.3g GB is available (MemAvailable); expected smaller runs (experiment.rates, "
                     "workload.duration_s, workload.max_requests), fewer --jobs, or --force to run "
                     "anyway", o->config_path, peak / 1e9, why, max_kb, cores, jobs, avail / 1e9);
}

static char *default_db(const exp_config *cfg)
{
    if (cfg->db && cfg->db[0])
        return sim_xstrdup(cfg->db);
    size_t n = strlen(cfg->name) + 16;
    char *p = sim_xmalloc(n);
    snprintf(p, n, "results/%s.db", cfg->name);
    return p;
}

/* The out-of-memory hook of a running experiment: the runs stored so far
 * stay; the experiment row says it is incomplete. */
typedef struct oom_ctx {
    exp_store *store;
    int64_t exp_id;
} oom_ctx;

static void on_oom(void *ctx)
{
    const oom_ctx *oc = ctx;
    if (exp_store_end(oc->store, oc->exp_id, "incomplete") == SIM_OK)
        fputs("crsim: the experiment is marked incomplete; the runs stored so far are kept\n",
              stderr);
    else
        fprintf(stderr, "crsim: %s\n", sim_errmsg());
}

/* A workload key set but inapplicable at every point of a sweep is an
 * error (wl_config_check_keys); one that applies at some point is read
 * there. */
static int check_sweep_keys(const sweep_point *pts, size_t np, const char *path)
{
    const size_t nk = wl_config_n_keys();
    const char **needs = sim_xcalloc(nk + 1, sizeof *needs), **first = sim_xcalloc(nk + 1, sizeof *first);
    bool *all = sim_xcalloc(nk + 1, sizeof *all);
    for (size_t i = 0; i < nk; i++)
        all[i] = np > 0;
    for (size_t p = 0; p < np; p++) {
        wl_config_inapplicable(&pts[p].cfg.wl, needs);
        for (size_t i = 0; i < nk; i++) {
            all[i] = all[i] && needs[i];
            if (p == 0)
                first[i] = needs[i];
        }
    }
    int rc = SIM_OK;
    for (size_t i = 0; i < nk && rc == SIM_OK; i++)
        if (all[i])
            rc = wl_config_key_error(&pts[0].cfg.wl, NULL, path, i, first[i]);
    free(needs);
    free(first);
    free(all);
    return rc;
}

int exp_run(const exp_run_opts *o, FILE *out)
{
    /* The base config is the sweep's template: its router inputs may come
     * from the axes, so the routers check every point instead (all
     * before the database is opened). */
    exp_config base;
    int rc = exp_config_load_unchecked(o->config_path, o->sets, o->n_set, &base);
    if (rc)
        return rc;
    axis *ax = NULL;
    if ((rc = parse_axes(&base, o->config_path, &ax))) {
        exp_config_fini(&base);
        return rc;
    }
    const size_t np = n_points(&base, ax);
    if ((rc = check_points_memory(np, o))) {
        axes_free(ax, base.n_sweep);
        exp_config_fini(&base);
        return rc;
    }
    sweep_point *pts = sim_xcalloc(np, sizeof *pts);
    size_t np_ok = 0;
    const exp_config_src src = {.path = o->config_path, .sets = o->sets, .n_set = o->n_set};
    char **psets = sim_xcalloc(base.n_sweep + 1, sizeof *psets);
    input_list *inputs = sim_xcalloc(np, sizeof *inputs);
    size_t n_tasks = 0;
    double key_bytes = 0;
    /* Set-up (specs, traces, key populations) may take long: until the
     * database is opened a SIGINT ends the process at once (nothing is
     * stored yet; sim/exp/cli.c). */
    for (size_t p = 0; p < np && rc == SIM_OK; p++) {
        point_sets(&base, ax, p, psets, pts[p].label, sizeof pts[p].label);
        rc = exp_config_derive(&src, (const char *const *)psets, base.n_sweep, &pts[p].cfg);
        for (size_t i = 0; i < base.n_sweep; i++)
            free(psets[i]);
        if (rc)
            break;
        key_bytes += keys_bytes(&pts[p].cfg);
        if ((rc = check_keys_memory(key_bytes, &pts[p].cfg, p, o)) == SIM_OK) {
            sim_file_set_hook(note_input, &inputs[p]);
            rc = exp_setup_init(&pts[p].cfg, &pts[p].setup);
            sim_file_set_hook(NULL, NULL);
        }
        if (rc) {
            if (np > 1)
                rc = point_error(rc, p, pts[p].label);
            exp_config_fini(&pts[p].cfg);
            break;
        }
        np_ok++;
        n_tasks += pts[p].cfg.n_rates * pts[p].cfg.n_seeds * pts[p].cfg.n_policies;
    }
    free(psets);
    axes_free(ax, base.n_sweep);
    if (rc == SIM_OK && base.n_sweep > 0)
        rc = check_sweep_keys(pts, np_ok, o->config_path);

    char *db_path = default_db(&base);
    char *cfg_text = NULL;
    exp_store *store = NULL;
    task *tasks = NULL;
    int64_t exp_id = 0;
    bool begun = false;
    double *mean_blocks = NULL;
    if (rc)
        goto done;

    double report_rate = base.report_rate;
    if (!(report_rate > 0)) {
        double *r = sim_xmalloc(base.n_rates * sizeof *r);
        memcpy(r, base.rates, base.n_rates * sizeof *r);
        gsl_sort(r, 1, base.n_rates);
        report_rate = r[(base.n_rates - 1) / 2];
        free(r);
    }
    if (base.prune && o->shard_n > 1) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: experiment.prune needs every load of a series in one "
                       "process; expected prune: false with --shard", o->config_path);
        goto done;
    }

    /* The tasks, in run-index order: point, rate, seed, policy.  With
     * pruning, each task waits for its series' next lower load. */
    tasks = sim_xcalloc(n_tasks ? n_tasks : 1, sizeof *tasks);
    size_t k = 0;
    for (size_t p = 0; p < np; p++) {
        const exp_config *c = &pts[p].cfg;
        const size_t base_k = k, per_rate = c->n_seeds * c->n_policies;
        size_t *rank = sim_xmalloc(c->n_rates * sizeof *rank);
        gsl_sort_index(rank, c->rates, 1, c->n_rates); /* rank[j] = j-th lowest rate */
        size_t *lower = sim_xmalloc(c->n_rates * sizeof *lower);
        for (size_t j = 0; j < c->n_rates; j++)
            lower[rank[j]] = j ? rank[j - 1] : SIZE_MAX;
        for (size_t ir = 0; ir < c->n_rates; ir++)
            for (size_t is = 0; is < c->n_seeds; is++)
                for (size_t ip = 0; ip < c->n_policies; ip++, k++) {
                    task *t = &tasks[k];
                    *t = (task){.point = p, .ir = ir, .is = is, .ip = ip, .run_index = k};
                    t->selected = o->shard_n <= 1 || k % o->shard_n == o->shard_i;
                    t->prev = lower[ir] == SIZE_MAX
                                  ? SIZE_MAX
                                  : base_k + lower[ir] * per_rate + is * c->n_policies + ip;
                    t->prunable = c->rates[ir] != report_rate &&
                                  !kept_load(o, c->rates[ir]);
                    t->config_text = run_config_text(c, ip, ir, is);
                    hash_hex(t->config_text, t->hash);
                }
        free(rank);
        free(lower);
    }

    /* Every point's stream opens, before any database is touched. */
    mean_blocks = sim_xcalloc(np, sizeof *mean_blocks);
    if ((rc = probe_points(pts, np, mean_blocks, inputs)) ||
        (rc = check_measured(pts, np, tasks, n_tasks)))
        goto done;
    {
        input_list memo = {0};
        for (size_t p = 0; p < np && rc == SIM_OK; p++)
            rc = inputs_text(&inputs[p], &memo, &pts[p].inputs);
        for (size_t i = 0; i < memo.n; i++)
            free(memo.path[i]);
        free(memo.path);
    }
    if (rc)
        goto done;
    if (o->dry_run) {
        /* What each point would run (the trace's tick and key rule among
         * it; issue 39 item 2), unless --quiet.  The config hashes are
         * what --resume matches and what old databases hold:
         * tests/config_hashes.sh pins them. */
        for (size_t p = 0; p < np && !o->quiet; p++) {
            if (np > 1)
                fprintf(out, "point %zu: %s\n", p, pts[p].label);
            exp_setup_print(&pts[p].setup, out);
        }
        char *ct = exp_config_dump(&base);
        char hh[17];
        hash_hex(ct, hh);
        fprintf(out, "experiment %s %zu\n", hh, strlen(ct));
        free(ct);
        for (size_t i = 0; i < n_tasks; i++)
            fprintf(out, "run %llu %s %s\n", (unsigned long long)tasks[i].run_index,
                    pts[tasks[i].point].cfg.policies[tasks[i].ip], tasks[i].hash);
        goto done;
    }
    if (!o->resume && (rc = estimate(pts, mean_blocks, tasks, n_tasks, o, out)))
        goto done;
    if ((rc = exp_store_open(db_path, &store)))
        goto done;
    size_t n_selected = 0, n_resumed = 0, n_stale = 0;
    char stale_path[512] = "";
    resume_builds rb = {0};
    for (size_t i = 0; i < n_tasks; i++) {
        if (!tasks[i].selected)
            continue;
        n_selected++;
        char from_build[128];
        char *was = NULL;
        if (o->resume &&
            exp_store_find_run(store, tasks[i].hash, o->resume_any_build ? NULL : CRSIM_VERSION,
                               &tasks[i].resume_from, from_build, sizeof from_build,
                               &was) == SIM_OK &&
            tasks[i].resume_from > 0) {
            /* Same config text, other input files: simulate it again. */
            char fpath[512], why[160];
            if (exp_inputs_diff(was, pts[tasks[i].point].inputs, fpath, sizeof fpath, why,
                                sizeof why)) {
                if (n_stale++ == 0 || strcmp(fpath, stale_path) != 0)
                    fprintf(stderr, "crsim: resume: %s changed since run %lld was stored (%s): "
                            "runs that read it are simulated again\n", fpath,
                            (long long)tasks[i].resume_from, why);
                snprintf(stale_path, sizeof stale_path, "%s", fpath);
                tasks[i].resume_from = 0;
            }
        }
        free(was);
        if (tasks[i].resume_from > 0) {
            n_resumed++;
            note_build(&rb, from_build);
            double m = NAN;
            exp_store_run_metric(store, tasks[i].resume_from,
                                 exp_slo_metric_names[base.slo_metric], &m);
            double mx = 0;
            for (size_t j = 0; j < base.n_slos; j++)
                mx = fmax(mx, base.slos[j]);
            tasks[i].fails = !(m <= mx);
        }
    }
    /* With --resume only the runs not found need memory: estimate after
     * the look-ups; else before the database is opened. */
    if (o->resume && (rc = estimate(pts, mean_blocks, tasks, n_tasks, o, out)))
        goto done;
    if (o->setup_phase)
        *o->setup_phase = 0; /* from here a SIGINT stops the runs cooperatively */
    cfg_text = exp_config_dump(&base);
    char hash[17];
    hash_hex(cfg_text, hash);
    char shard[32] = "";
    if (o->shard_n > 1)
        snprintf(shard, sizeof shard, "%u/%u", o->shard_i, o->shard_n);
    char slos[256] = "";
    for (size_t i = 0, used = 0; i < base.n_slos && used + 1 < sizeof slos; i++)
        used += (size_t)snprintf(slos + used, sizeof slos - used, "%s%.17g", i ? "," : "",
                                 base.slos[i]);
    char joint[1024] = "";
    for (size_t i = 0, used = 0; i < base.n_joint_slo && used + 1 < sizeof joint; i++)
        used += (size_t)snprintf(joint + used, sizeof joint - used, "%s%s", i ? " and " : "",
                                 base.joint_slo[i]);
    exp_store_meta meta = {.name = base.name, .config_path = o->config_path,
                           .config_text = cfg_text, .config_hash = hash,
                           .build = CRSIM_VERSION, .n_runs_planned = (int64_t)n_tasks,
                           .n_points = (int64_t)np, .shard = shard[0] ? shard : NULL,
                           .slo_metric = exp_slo_metric_names[base.slo_metric], .slos = slos,
                           .report_rate = report_rate, .goodput_ttft_s = base.goodput_ttft_s,
                           .goodput_tpot_s = base.goodput_tpot_s, .joint_slo = joint};
    if ((rc = exp_store_begin(store, &meta, &exp_id)))
        goto done;
    begun = true;
    /* From here an allocation failure anywhere (an aborting allocator deep
     * in a run) marks the experiment incomplete and exits 1, never an
     * abort that leaves it 'running' (sim_set_oom_hook). */
    oom_ctx oc = {store, exp_id};
    sim_set_oom_hook(on_oom, &oc);

    const bool sweep = np > 1;
    fprintf(out, "crsim %s: experiment '%s' (id %lld): %zu point%s, %zu runs", CRSIM_VERSION,
            base.name, (long long)exp_id, np, np == 1 ? "" : "s", n_tasks);
    if (shard[0])
        fprintf(out, ", shard %s: %zu runs", shard, n_selected);
    fprintf(out, ", %u job%s -> %s\n", o->jobs, o->jobs == 1 ? "" : "s", db_path);
    if (o->resume)
        print_resumed(out, &rb, n_resumed, n_selected, o->resume_any_build);
    for (size_t p = 0; p < np; p++) {
        if (sweep)
            fprintf(out, "point %zu: %s\n", p, pts[p].label);
        if (p == 0 || sweep)
            exp_setup_print(&pts[p].setup, out);
    }
    fputc('\n', out);
    const int pw = policy_width(pts, np);
    print_header(out, sweep, pw);
    fflush(out);

    /* Workers simulate; this thread stores in run-index order. */
    pool pl = {.pts = pts, .tasks = tasks, .n_tasks = n_tasks, .stop = o->stop,
               .prune = base.prune, .slo_metric = base.slo_metric,
               .jobs = o->jobs ? o->jobs : 1};
    for (size_t i = 0; i < base.n_slos; i++)
        pl.max_slo = fmax(pl.max_slo, base.slos[i]);
    if (exp_pool_start(&pl.wp, o->jobs ? o->jobs : 1, &sweep_ops, &pl) == 0)
        exp_pool_work(&pl.wp); /* no thread could start: simulate everything here first */
    const bool tty = !o->quiet && isatty(2);
    const double t_start = sim_wall_s();
    /* Test hook (tests/harness_defects.sh, D1): send this process SIGTERM
     * right after the N-th run is stored, i.e. between runs. */
    const char *sig_after = getenv("CRSIM_TEST_SIGTERM_AFTER_RUNS");
    const size_t n_sig_after = sig_after ? (size_t)strtoull(sig_after, NULL, 10) : 0;
    size_t stored = 0, n_nothing = 0, n_pruned = 0;
    bool cut = false; /* a selected task was never run (abort) */
    for (size_t i = 0; i < n_tasks; i++) {
        task *t = &tasks[i];
        if (!t->selected)
            continue;
        if (o->stop && *o->stop) {
            /* A signal: stop at once; results finished but not yet stored
             * are dropped (--resume simulates them again). */
            exp_pool_lock(&pl.wp);
            pl.abort = 1;
            exp_pool_unlock(&pl.wp);
            cut = true;
            break;
        }
        const sweep_point *pt = &pts[t->point];
        exp_run_row row = {.policy = pt->cfg.policies[t->ip], .seed = pt->cfg.seeds[t->is],
                           .rate_rps = pt->cfg.rates[t->ir], .config_text = t->config_text,
                           .config_hash = t->hash, .run_index = (int64_t)t->run_index,
                           .point = (int64_t)t->point, .point_label = pt->label,
                           .inputs = pt->inputs,
                           .requests = pt->cfg.requests,
                           .groups = pt->setup.groups, .n_groups = pt->setup.n_groups};
        if (t->resume_from > 0) {
            if (rc == SIM_OK)
                rc = exp_store_copy_run(store, exp_id, &row, t->resume_from);
            if (rc == SIM_OK) {
                stored++;
                if (!o->quiet && !tty)
                    fprintf(stderr, "[%zu/%zu] resumed run %lld\n", stored, n_selected,
                            (long long)t->resume_from);
            }
            continue;
        }
        exp_pool_lock(&pl.wp);
        while (!t->done && !t->pruned && !(pl.abort && !t->taken))
            exp_pool_wait(&pl.wp);
        const int pruned = t->pruned, done = t->done;
        exp_pool_unlock(&pl.wp);
        if (pruned) {
            n_pruned++;
            continue; /* not run: its series failed at a lower load */
        }
        if (!done) {
            cut = true;
            break; /* aborted before this task started */
        }
        if (t->rc) {
            if (rc == SIM_OK)
                rc = SIM_ERROR(t->rc, "%s", t->err);
            cluster_result_fini(&t->res);
            continue;
        }
        if (rc == SIM_OK) {
            row.started_at = t->started;
            row.wall_s = t->wall_s;
            row.client = t->has_cs ? &t->cs : NULL;
            rc = exp_store_add_run(store, exp_id, &row, &t->res, NULL);
            if (rc == SIM_OK) {
                stored++;
                if (stored == n_sig_after)
                    raise(SIGTERM); /* to this thread: handled before it returns */
                if (tty)
                    fputc('\r', stderr);
                print_row(out, sweep, pw, t->point, row.policy, row.rate_rps, row.seed, &t->res);
                fflush(out);
                if (served_nothing(&t->res)) {
                    n_nothing++;
                    if (t->res.n_too_long)
                        fprintf(stderr, "crsim: warning: %s%s%s rate %g seed %lld served "
                                "nothing: %llu of %llu requests were over "
                                "engine.max_model_len (%lld tokens: prompt + output), "
                                "rejected at the gateway, and %llu longer than a "
                                "destination's KV pool\n", pt->label, pt->label[0] ? " " : "",
                                row.policy, row.rate_rps, (long long)row.seed,
                                (unsigned long long)t->res.n_too_long,
                                (unsigned long long)t->res.n_arrived,
                                (long long)base.max_model_len,
                                (unsigned long long)t->res.n_rejected);
                    else
                        fprintf(stderr, "crsim: warning: %s%s%s rate %g seed %lld served "
                                "nothing: all %llu requests were rejected (prompts longer than "
                                "a destination's KV pool of %llu tokens)\n", pt->label,
                                pt->label[0] ? " " : "", row.policy, row.rate_rps,
                                (long long)row.seed, (unsigned long long)t->res.n_rejected,
                                (unsigned long long)t->res.pool_tokens);
                }
                if (!o->quiet)
                    progress(tty, stored, n_selected, sim_wall_s() - t_start, t, pt);
            } else {
                exp_pool_lock(&pl.wp);
                pl.abort = 1;
                exp_pool_unlock(&pl.wp);
            }
        }
        cluster_result_fini(&t->res);
        exp_client_summary_fini(&t->cs);
    }
    exp_pool_join(&pl.wp);
    /* Results of tasks finished after an abort are dropped (not stored). */
    for (size_t i = 0; i < n_tasks; i++) {
        if (tasks[i].done && tasks[i].res.rec)
            cluster_result_fini(&tasks[i].res);
        exp_client_summary_fini(&tasks[i].cs);
    }
    if (tty)
        fputc('\n', stderr);
    /* Only a grid run to its end is complete: a run left out by an abort
     * (another run's failure, or a signal, possibly arriving between
     * runs) leaves it incomplete, without capacities (docs/harness.md,
     * "Interruptions"; issue 38 D1). */
    if (rc == SIM_OK && cut)
        for (size_t i = 0; i < n_tasks && rc == SIM_OK; i++)
            if (tasks[i].selected && tasks[i].done && tasks[i].rc && tasks[i].rc != SIM_EINTR)
                rc = SIM_ERROR(tasks[i].rc, "%s", tasks[i].err);
    if ((rc == SIM_OK || rc == SIM_EINTR) && ((o->stop && *o->stop) || cut))
        rc = SIM_ERROR(SIM_EINTR, "interrupted by a signal: %zu of %zu runs stored, experiment "
                       "%lld marked incomplete (no capacities); crsim run %s --resume completes "
                       "it", stored, n_selected - n_pruned, (long long)exp_id, o->config_path);
    if (rc == SIM_OK && !shard[0])
        rc = exp_store_capacities(store, exp_id);
    if (rc == SIM_OK) {
        fprintf(out, "\nhit%% = served token-weighted KV prefix-hit rate; times in seconds; "
                "imbal = max/mean served tokens per destination;\nunfin = unfinished at the end "
                "of the drain window; rej = rejected (prompt longer than the KV pool); both "
                "count as SLO violations;\ntoolong = prompt + output over "
                "engine.max_model_len, rejected at the gateway (vLLM: HTTP 400), in no "
                "percentile.\n");
        if (wl_client_closed(&base.wl)) {
            const enum wl_client_mode m = wl_client_mode_of(&base.wl);
            fprintf(out, "rate/s = the load of workload.client.mode %s: %s; latencies from the "
                    "%s; per-stage metrics and achieved requests/s: crsim report "
                    "(docs/clients.md).\n", base.wl.client.mode,
                    m == WL_CLIENT_CONCURRENCY ? "the number of clients N"
                    : m == WL_CLIENT_STAGES    ? "the multiplier of every stage's rate and "
                                                 "concurrency"
                    : m == WL_CLIENT_BURST     ? "the batch size"
                    : strcmp(base.wl.client.rate_unit, "conversations") == 0
                        ? "conversations started per second"
                        : "requests per second (conversations start at rate / E[turns])",
                    strcmp(base.wl.client.latency_from, "intended") == 0
                        ? "intended send time" : "send");
        }
        if (n_nothing)
            fprintf(out, "WARNING: %zu run(s) served nothing (SERVED NOTHING: every request "
                    "rejected: over engine.max_model_len or longer than the KV pool); their "
                    "latencies are undefined.\n", n_nothing);
        fprintf(out, "stored %zu runs in %s (experiment %lld); capacities: crsim report %s\n",
                stored, db_path, (long long)exp_id, db_path);
    }

done:
    sim_set_oom_hook(NULL, NULL);
    sim_file_set_hook(NULL, NULL);
    for (size_t p = 0; p < np; p++) {
        for (size_t i = 0; i < inputs[p].n; i++)
            free(inputs[p].path[i]);
        free(inputs[p].path);
        free(pts[p].inputs);
    }
    free(inputs);
    if (begun) {
        int rc2 = exp_store_end(store, exp_id, rc == SIM_OK ? "complete" : "incomplete");
        if (rc == SIM_OK)
            rc = rc2;
    }
    exp_store_close(store);
    for (size_t i = 0; tasks && i < n_tasks; i++)
        free(tasks[i].config_text);
    free(tasks);
    for (size_t p = 0; p < np_ok; p++) {
        exp_setup_fini(&pts[p].setup);
        exp_config_fini(&pts[p].cfg);
    }
    free(pts);
    free(mean_blocks);
    free(cfg_text);
    free(db_path);
    exp_config_fini(&base);
    return rc;
}

static void print_keystats(FILE *out, const char *what, const wl_keystats *ks)
{
    fprintf(out, "%s: %zu keys, Gini %.4f, top 1%% %.1f%%, top 4%% %.1f%%, top 10%% %.1f%%, "
            "largest key %.3f%%\n", what, ks->n, ks->gini, 100 * ks->top1, 100 * ks->top4,
            100 * ks->top10, 100 * ks->max_share);
}

/* The statistics of a synthetic workload's whole key population (as if
 * workload.keys.active_set were 0) and the share of its rate the top
 * active_set keys hold; printed before the active set's own. */
static int describe_population(const wl_config *wl, FILE *out)
{
    wl_config pop = *wl; /* shallow: wl_synth_keys only reads it */
    pop.keys.active_set = 0;
    wl_keyrates all = {0};
    wl_keystats ps;
    int rc = wl_synth_keys(&pop, &all, NULL);
    if (rc == SIM_OK)
        rc = wl_keyrates_describe(&all, &ps);
    if (rc == SIM_OK) {
        double *r = sim_xmalloc((all.n ? all.n : 1) * sizeof *r);
        memcpy(r, all.rate, all.n * sizeof *r);
        gsl_sort(r, 1, all.n);
        const size_t k = (size_t)wl->keys.active_set < all.n ? (size_t)wl->keys.active_set
                                                             : all.n;
        double top = 0;
        for (size_t i = 0; i < k; i++)
            top += r[all.n - 1 - i];
        free(r);
        print_keystats(out, "key-rate population (all keys)", &ps);
        fprintf(out, "active set: workload.keys.active_set %lld keys hold %.1f%% of the "
                "population's rate\n", (long long)wl->keys.active_set,
                ps.total > 0 ? 100 * top / ps.total : 0);
    }
    wl_keyrates_fini(&all);
    return rc;
}

/* Memory and time per request described by exp_workload_describe
 * (maxrss and wall time of `crsim workload describe` of syn-small at
 * --requests 10,000 and 200,000: 38 and 431 MB, 0.19 and 3.7 s). */
#define EXP_EST_DESCRIBE_BYTES 2100.0
#define EXP_EST_DESCRIBE_US 18.0

int exp_workload_describe_check(const exp_config *cfg, double rate, uint64_t max, bool force)
{
    const wl_config *wl = &cfg->wl;
    double n = (double)max;
    if (!wl_config_is_trace(wl) && !wl_client_closed(wl))
        n = fmin(n, run_requests(cfg, rate, 0));
    const double keys = keys_bytes(cfg), bytes = keys + n * EXP_EST_DESCRIBE_BYTES;
    const double avail = mem_available();
    if (force || !(bytes > avail))
        return SIM_OK;
    const char *path = cfg->src.path ? cfg->src.path : "config";
    if (keys >= 0.5 * bytes)
        return SIM_ERROR(SIM_EINVAL, "%s: the key population needs about %.3g GB "
                         "(workload.keys.n %lld keys x about %.0f B) but only %.3g GB of memory "
                         "is available (MemAvailable); expected fewer keys (workload.keys.n), or "
                         "--force to describe anyway", path, bytes / 1e9,
                         (long long)wl->keys.n, EXP_EST_KEY_BYTES, avail / 1e9);
    return SIM_ERROR(SIM_EINVAL, "%s: describing %.3g requests needs about %.3g GB of memory "
                     "(about %.1f KB each) and about %.2g s, but only %.3g GB is available "
                     "(MemAvailable); expected fewer --requests, or --force to describe anyway",
                     path, n, bytes / 1e9, EXP_EST_DESCRIBE_BYTES / 1e3,
                     n * EXP_EST_DESCRIBE_US * 1e-6, avail / 1e9);
}

int exp_workload_describe(const exp_config *cfg, uint64_t seed, double rate, uint64_t max,
                          FILE *out)
{
    const wl_config *wl = &cfg->wl;
    const uint32_t block_size = (uint32_t)cfg->block_size;
    /* Only the stream is needed: no cluster, cost model or router. */
    exp_setup s = {.cfg = cfg, .is_trace = wl_config_is_trace(wl)};
    int rc = SIM_OK;
    wl_keystats ks;
    if (s.is_trace) {
        if ((rc = wl_config_trace_acquire(wl, &s.trace)))
            return rc;
        /* The replay tick a run uses (exp_setup_init), so the described
         * stream is the one runs see. */
        s.tick_s = wl_config_trace_tick(wl, s.trace, &s.tick_detected);
        /* Per-key request counts of the whole trace. */
        size_t n = s.trace->n;
        unsigned long *keys = sim_xmalloc(n * sizeof *keys); /* 64-bit on LP64 */
        for (size_t i = 0; i < n; i++)
            keys[i] = wl_trace_routing_key(s.trace, i, (uint32_t)wl->key_ids);
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
                    wl->trace, n, wl_trace_span_s(s.trace), wl_trace_mean_rate(s.trace));
            exp_setup_print_trace_rule(cfg, s.trace, s.tick_s, s.tick_detected, out);
            print_keystats(out, "routing keys (request counts)", &ks);
        }
    } else if (wl->benchmark && strcmp(wl->benchmark, "shared_prefix") == 0) {
        /* The routing keys are the groups (docs/clients.md), equal shares. */
        fprintf(out, "synthetic workload %s: benchmark shared_prefix: %lld groups (the routing "
                "keys, equal shares) x %lld prompts; %lld-token system prompt per group, "
                "%lld-token question and %lld output tokens per prompt; %s\n",
                wl->name[0] ? wl->name : "(unnamed)", (long long)wl->shared_prefix.groups,
                (long long)wl->shared_prefix.prompts_per_group,
                (long long)wl->shared_prefix.system_prompt_tokens,
                (long long)wl->shared_prefix.question_tokens,
                (long long)wl->shared_prefix.output_tokens,
                wl->shared_prefix.shuffle ? "shuffled order" : "in group order");
    } else {
        wl_keyrates kr = {0};
        double theta = NAN;
        rc = wl_synth_keys(wl, &kr, &theta);
        if (rc == SIM_OK)
            rc = wl_keyrates_describe(&kr, &ks);
        if (rc == SIM_OK) {
            fprintf(out, "synthetic workload %s: %s key rates, shape parameter %.4f\n",
                    wl->name[0] ? wl->name : "(unnamed)", wl->keys.distribution, theta);
            if (wl->keys.active_set > 0)
                rc = describe_population(wl, out);
            print_keystats(out, wl->keys.active_set > 0 ? "active set (renormalised)"
                                                        : "key-rate population", &ks);
        }
        wl_keyrates_fini(&kr);
    }
    if (rc == SIM_OK && wl_client_closed(wl)) {
        /* A closed-loop client sends as completions come: there is no
         * stream to read ahead without a simulated cluster. */
        fprintf(out, "stream: workload.client.mode %s sends as its requests complete, so "
                "no stream is described without a run (docs/clients.md); crsim report "
                "shows what a run sent\n", wl->client.mode);
        wl_ingest_release(s.trace);
        return SIM_OK;
    }
    exp_stream *st = NULL;
    if (rc == SIM_OK)
        rc = exp_stream_open(&s, seed, rate, &st);
    if (rc == SIM_OK) {
        /* The measured window of a run of this config at this rate and
         * seed (warm-up by time, requests or share: exp_setup_window). */
        exp_window w;
        rc = exp_setup_window(&s, seed, rate, 0, &w);
        wl_stream_stats ss;
        if (rc == SIM_OK)
            rc = wl_stream_describe_from(exp_stream_source(st), max, block_size, w.warmup_s, &ss);
        if (rc == SIM_OK) {
            fprintf(out, "stream (seed %llu, target %.2f requests/s, first %llu requests): "
                    "%.2f requests/s over %.0f s, inter-arrival CV %.2f, %llu distinct keys,\n"
                    "  mean prompt %.0f tokens, mean output %.0f tokens, infinite-cache hit "
                    "rate %.3f (%llu-token blocks)\n", (unsigned long long)seed, rate,
                    (unsigned long long)ss.requests, ss.rate, ss.span_s, ss.iat_cv,
                    (unsigned long long)ss.keys, ss.mean_prompt, ss.mean_output,
                    ss.inf_hit_rate, (unsigned long long)block_size);
            char rule[96];
            if (w.by_count && cfg->warmup_share > 0)
                snprintf(rule, sizeof rule, "experiment.warmup_share %g", cfg->warmup_share);
            else if (w.by_count)
                snprintf(rule, sizeof rule, "experiment.warmup_requests %lld",
                         (long long)cfg->warmup_requests);
            else
                snprintf(rule, sizeof rule, "experiment.warmup_s %g", cfg->warmup_s);
            if (ss.win_requests == 0)
                fprintf(out, "measured window (after the warm-up, %s: from %.1f s): no request "
                        "of the first %llu is measured; no bound\n", rule, w.warmup_s,
                        (unsigned long long)ss.requests);
            else
                fprintf(out, "measured window (after the warm-up, %s: from %.1f s): %llu of the "
                        "%llu requests, infinite-cache hit rate %.3f\n  (the bound on a run's "
                        "measured KV hit rate; the cache has seen the warm-up)\n", rule,
                        w.warmup_s, (unsigned long long)ss.win_requests,
                        (unsigned long long)ss.requests, ss.win_inf_hit_rate);
        }
    }
    exp_stream_close(st);
    wl_ingest_release(s.trace);
    return rc;
}
