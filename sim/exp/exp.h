/*
 * The experiment harness: the crsim config schema, and running an
 * experiment (every policy × seed × rate point of a config) into the
 * SQLite result store while printing the summary table.
 */
#ifndef CRSIM_SIM_EXP_H
#define CRSIM_SIM_EXP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "models/routers/route.h"
#include "workloads/wl_config.h"
#include "sim/core/config.h"
#include "sim/core/xenum.h"

/* Bounds the harness checks at config load (docs/harness.md, "Bad input").
 * EXP_NAME_MAX: most characters of experiment.name (a file name, so far
 * below NAME_MAX = 255 of Linux with room for ".db").  EXP_TIMELINE_MIN_S:
 * shortest experiment.timeline_s other than 0, s.  EXP_INTERVAL_MIN_S:
 * shortest router control interval (e.g. router.cacheroute.interval_s),
 * s.  Both windows write one row per window and run; the minimums keep a
 * run at most 10 (timeline) or 1 (interval) rows per simulated second. */
#define EXP_NAME_MAX 128
#define EXP_TIMELINE_MIN_S 0.1
#define EXP_INTERVAL_MIN_S 1.0

/* Where a config comes from: a config file and its ordered "KEY=VALUE"
 * overrides (not owned). */
typedef struct exp_config_src {
    const char *path;
    const char *const *sets;
    size_t n_set;
    bool unchecked;           /* skip the routers' checks (as
                                 exp_config_load_unchecked): regime and
                                 calibrate, whose router inputs are measured */
} exp_config_src;

/* One destination group of cluster.groups (docs/mixed-fleets.md): a
 * share of the destinations with its own hardware, model, TP, dtypes,
 * memory share, cost profile and scheduler limits.  A string "" or a
 * number 0 means "as the cluster-level key" (cluster.*, engine.*,
 * cost.profile); exp_config_group resolves them. */
typedef struct exp_group_cfg {
    char *name;               /* unique: 1-63 of A-Z a-z 0-9 . _ - */
    int64_t destinations;     /* >= 1 */
    char *hardware;           /* "" = cluster.hardware */
    char *model;              /* "" = cluster.model */
    int64_t tp;               /* 0 = cluster.tp */
    char *weight_dtype;       /* "" = cluster.weight_dtype */
    char *kv_dtype;           /* "" = cluster.kv_dtype */
    double mem_util;          /* 0 = cluster.mem_util */
    char *cost_profile;       /* "" = cost.profile, or the group deployment's
                                 default profile when cost.profile is "" */
    int64_t max_num_batched_tokens; /* 0 = engine.max_num_batched_tokens */
    int64_t max_num_seqs;     /* 0 = engine.max_num_seqs */
    /* not a config key (not dumped): where the element was written
     * ("FILE:LINE" or "--set cluster.groups"), set at load for messages */
    char where[256];
} exp_group_cfg;

/* A group with every inherited value resolved (exp_config_group).
 * Strings point into the config. */
typedef struct exp_group {
    const char *name;
    const char *where;        /* "FILE:LINE" of the element */
    uint32_t first, n_dest;   /* destinations [first, first + n_dest) */
    const char *hardware, *model, *weight_dtype, *kv_dtype;
    int64_t tp;
    double mem_util;
    const char *cost_profile; /* "" = the deployment's default profile */
    int64_t max_num_batched_tokens, max_num_seqs;
} exp_group;

/* The whole configuration of an experiment (docs/config.md).  Bound once
 * from YAML plus --set overrides, then read-only. */
typedef struct exp_config {
    /* where it was loaded from (owned copies; not config keys, not dumped):
     * what exp_config_derive_from starts from */
    exp_config_src src;
    /* experiment */
    char *name;
    char *db;                 /* result database path */
    char **policies;
    size_t n_policies;
    double *rates;            /* offered loads, requests/s */
    size_t n_rates;
    int64_t *seeds;
    size_t n_seeds;
    double warmup_s;          /* s; unused when warmup_requests or warmup_share > 0 */
    int64_t warmup_requests;  /* first N arrivals unmeasured; 0 = off */
    double warmup_share;      /* first floor(share x n) arrivals unmeasured; 0 = off */
    int64_t min_measured;     /* fewest measured requests of a run; 0 = no check */
    double drain_s;
    double *slos;             /* SLO thresholds, s */
    size_t n_slos;
    int slo_metric;           /* index into exp_slo_metric_names */
    double report_rate;       /* requests/s; 0 = median tested load */
    double timeline_s;        /* window of the stored per-run timeline, s */
    int64_t fair_min_requests; /* per-key fairness: keys with at least this
                                  many measured requests */
    bool requests;            /* store per-request records (requests table) */
    double goodput_ttft_s;    /* goodput bounds, s (models/latency.h); 0 = none */
    double goodput_tpot_s;
    char **joint_slo;         /* joint SLO terms "METRIC<=SECONDS" (capacity.h) */
    size_t n_joint_slo;
    char **sweep;             /* axes "KEY=[v1, ...]" */
    size_t n_sweep;
    int sweep_mode;           /* 0 grid, 1 zip */
    bool prune;               /* skip loads above a series' first failure */
    /* cluster */
    int64_t destinations;
    char *hardware;
    char *model;
    int64_t tp;
    char *weight_dtype;
    char *kv_dtype;
    double mem_util;
    exp_group_cfg *groups;    /* cluster.groups; n_groups = 0: one group of
                                 every destination (cluster.* as above).
                                 With groups, `destinations` is their sum */
    size_t n_groups;
    /* engine */
    int64_t block_size;
    int64_t max_num_batched_tokens;
    int64_t max_num_seqs;
    bool prefix_caching;
    int64_t long_prefill_token_threshold; /* tokens per request per step; 0 = off */
    int engine_flavor;        /* enum engine_flavor */
    int64_t chunked_prefill_size; /* sglang: prefill tokens per step; 0 = by GPU memory */
    int schedule_policy;      /* enum engine_policy */
    int64_t max_model_len;    /* context limit, tokens; 0 = none */
    /* gateway (models/cluster.h cluster_gateway) */
    double scrape_interval_s; /* s; 0 = exact view */
    double scrape_delay_s;    /* s */
    int64_t replicas;
    int replica_assign;       /* enum cluster_assign */
    double kv_event_delay_s;  /* s: engine KV events reach the routers */
    double health_check_interval_s; /* s: gateway health checks (faults) */
    /* faults (models/cluster.h cluster_faults, docs/faults.md) */
    char **fault_events;      /* "TIME_S:KIND:DEST[:ARG]" as written */
    size_t n_fault_events;
    struct cluster_fault *faults; /* fault_events parsed (n_fault_events), owned */
    double mtbf_s, mttr_s;    /* random crashes per destination, s; 0 = none */
    double retry_timeout_s;   /* client retry delay after a loss, s */
    int64_t max_retries;      /* client retries per request */
    /* cost */
    int cost_model;           /* enum cost_kind */
    char *cost_profile;       /* "" = the deployment's default profile */
    /* workload (its own schema: workloads/wl_config.h) */
    wl_config wl;
    /* router.*: every router section's parameters (models/routers/route.h), owned;
     * shallow copies of the config share it */
    route_config *router;
} exp_config;

/* The SLO metrics, defined once (X-macro): X(constant suffix, name =
 * run_metrics column and cluster_result field).  The order is the value of
 * experiment.slo_metric; append only. */
#define EXP_SLO_METRICS(X) \
    X(TTFT_P99, ttft_p99)  \
    X(TTFT_P90, ttft_p90)  \
    X(TTFT_P50, ttft_p50)  \
    X(E2E_P99, e2e_p99)    \
    X(E2E_P90, e2e_p90)    \
    X(TPOT_P99, tpot_p99)

enum exp_slo_metric {
#define EXP__SLO_ENUM(c, f) EXP_SLO_##c,
    EXP_SLO_METRICS(EXP__SLO_ENUM)
#undef EXP__SLO_ENUM
    EXP_SLO_N /* number of metrics */
};

/* The sweep modes, defined once (X-macro, sim/core/xenum.h): X(constant, name of
 * experiment.sweep_mode).  The order is the stored value of
 * exp_config.sweep_mode; append only.  GRID: the Cartesian product of the
 * sweep axes; ZIP: the axes advance together (equal lengths). */
#define EXP_SWEEP_MODES(X) X(EXP_SWEEP_GRID, grid) X(EXP_SWEEP_ZIP, zip)

/* EXP_SWEEP_N is the number of modes. */
enum exp_sweep_mode { EXP_SWEEP_MODES(SIM_XENUM_CONST) EXP_SWEEP_N };

/* Names of experiment.slo_metric (run_metrics columns; from
 * EXP_SLO_METRICS) and experiment.sweep_mode (from EXP_SWEEP_MODES),
 * NULL-terminated. */
extern const char *const exp_slo_metric_names[];
extern const char *const exp_sweep_mode_names[];

/* The harness's own schema (NULL-terminated): every key but the router
 * sections (route_sections) and the workload (wl_config_schema). */
extern const sim_cfg_key exp_config_schema[];

/* Print every config key, harness, router sections and workload, as
 * `crsim help config` (docs/config.md).  Cannot fail. */
void exp_config_help(FILE *f);

/*
 * Load config file `path`, apply the `n_set` overrides "a.b=value" in
 * order, and bind the result into *cfg (zeroed by the call).  Then check
 * cross-key constraints (known policy names, dtypes, a block size dividing
 * the trace block) and run the check of every selected router, so that a
 * router input that is not set (cacheroute's q_cap) fails here, before any
 * run.  Returns SIM_OK or SIM_EIO/SIM_EINVAL with the message naming the
 * file, line or key; on error *cfg holds nothing to free (exp_config_fini
 * is still safe).
 */
int exp_config_load(const char *path, const char *const *sets, size_t n_set, exp_config *cfg);


/*
 * The one way to make a derived config (a sweep point, a regime probe):
 * exp_config_load (or exp_config_load_unchecked when base->unchecked) of
 * base->path with base's overrides followed by the `n` overrides `sets`,
 * so every derived config is validated like a loaded one
 * and dumps to canonical text.  Returns as exp_config_load; *out is then
 * the caller's to exp_config_fini.
 */
int exp_config_derive(const exp_config_src *base, const char *const *sets, size_t n,
                      exp_config *out);

/* exp_config_derive from the source of the loaded config `base` (its file
 * and overrides, checked as it was): a calibration probe, a described
 * workload.  `base` is not changed.  Returns as exp_config_load. */
int exp_config_derive_from(const exp_config *base, const char *const *sets, size_t n,
                           exp_config *out);

/* As exp_config_load without the routers' checks: for a config whose
 * router inputs are still to be filled in (a sweep template, whose
 * points are each loaded with exp_config_load; `crsim calibrate`, which
 * measures q_cap; `crsim regime`). */
int exp_config_load_unchecked(const char *path, const char *const *sets, size_t n_set,
                              exp_config *cfg);

/* The median of experiment.slos, s: the run's TTFT SLO that routers get
 * (route_env.ttft_slo_s).  Cannot fail. */
double exp_config_median_slo(const exp_config *cfg);

/* What a gateway knows from the config alone: route_env with n_dest,
 * block_size, batch_tokens and ttft_slo_s (the rest zero; exp_setup adds
 * the run's seed, KV pool, cost model and key shares).  Cannot fail. */
route_env exp_config_route_env(const exp_config *cfg);

/* Group `i` (< cfg->n_groups) of cluster.groups with the cluster-level
 * values it inherits filled in, and its destination range (destinations
 * are numbered group by group, in the order written).  Cannot fail. */
exp_group exp_config_group(const exp_config *cfg, size_t i);

/* Free what a config owns.  Safe on a zeroed config and twice. */
void exp_config_fini(exp_config *cfg);

/* The unit of cfg's loads (experiment.rates), by workload.client.mode
 * (docs/clients.md, "Modes"): "requests/s" (open, and sessions with
 * rate_unit requests), "conversations/s" (sessions with rate_unit
 * conversations), "clients" (concurrency), "conversations per batch"
 * (burst), "x the stage ladder" (stages: a multiplier).  A static
 * string; cannot fail. */
const char *exp_load_unit(const exp_config *cfg);

/* Canonical YAML of the full config (every key, defaults included); the
 * caller frees it.  Cannot fail. */
char *exp_config_dump(const exp_config *cfg);

/* Options of `crsim run`. */
typedef struct exp_run_opts {
    const char *config_path;  /* as given on the command line */
    const char *const *sets;  /* --set overrides "KEY=VALUE", applied in order */
    size_t n_set;
    unsigned jobs;            /* parallel runs (>= 1) */
    unsigned shard_i, shard_n; /* run only runs with run_index % shard_n == shard_i */
    bool resume;              /* reuse runs stored with the same config hash
                                 by the same build (CRSIM_VERSION) */
    bool resume_any_build;    /* with resume: reuse runs of any build */
    bool force;               /* run even when the estimated memory exceeds
                                 the machine's available memory */
    bool quiet;               /* no progress output */
    bool dry_run;             /* check the config and every sweep point, print
                                 "experiment HASH LENGTH" and one line "run
                                 INDEX POLICY HASH" per run, run nothing and
                                 open no database */
    const double *prune_keep; /* with experiment.prune: loads (requests/s, of
                                 experiment.rates) that run even above their
                                 series' first failure, as the report rate
                                 does (crsim fit: the loads its targets and
                                 its capacity smoothing read); n_prune_keep
                                 entries, not owned; NULL when none */
    size_t n_prune_keep;
    const volatile sig_atomic_t *stop; /* set by SIGINT/SIGTERM */
    volatile sig_atomic_t *setup_phase; /* or NULL: nonzero while setting up
                                           (nothing stored yet; the CLI's
                                           signal handler then exits at
                                           once, status 130); exp_run sets
                                           it to 0 just before it writes
                                           the experiment row */
} exp_run_opts;

/*
 * Run the experiment of config `o->config_path` (with the --set
 * overrides): every sweep point × rate × seed × policy, in parallel on
 * `o->jobs` threads, storing runs in run_index order (so the database does
 * not depend on the number of jobs), then the SLO capacities, and print the
 * per-run table to `out` (progress and ETA go to stderr on a terminal).
 * Returns SIM_OK; SIM_EINVAL/SIM_EIO for bad input (config, sweep axis,
 * spec, trace); SIM_EDB when the database cannot be written; SIM_EINTR
 * when interrupted (runs finished so far are stored, the experiment row is
 * marked incomplete).
 */
int exp_run(const exp_run_opts *o, FILE *out);

/*
 * `crsim workload describe`: print what a workload is — for a synthetic
 * one the key-rate statistics of its population (keys, Gini, top 1/4/10 %
 * shares, largest share) and for a trace the same statistics of its
 * per-key request counts; then, for both, the statistics of the first
 * `max` requests of its stream at `rate` requests/s with run seed `seed`
 * (rate, gap CV, mean lengths, distinct keys, and the infinite-cache hit
 * rate with engine.block_size-token blocks), and the infinite-cache hit
 * rate of the measured window — the requests arriving after the config's
 * warm-up (experiment.warmup_s, _requests or _share; exp_setup_window),
 * the bound on a run's measured hit rate.  With workload.keys.active_set
 * > 0 the whole population's statistics are printed before the active
 * set's.  `cfg` is a loaded config (exp_config_load or exp_config_derive;
 * its workload and experiment sections and engine.block_size are read).  Returns SIM_OK or the errors of the
 * workload constructors.
 */
/* Before exp_workload_describe: refuse (unless `force`) when describing
 * the first `max` requests at `rate` would need more memory than is
 * available (MemAvailable, or CRSIM_MEM_AVAILABLE_GB): the key population
 * (workload.keys.n) plus about 2.1 KB per described request (measured,
 * sim/exp/exp.c), the requests being min(max, the stream's length).
 * Returns SIM_OK or SIM_EINVAL naming the estimate and what to change
 * (docs/harness.md, "Size estimate"). */
int exp_workload_describe_check(const exp_config *cfg, double rate, uint64_t max, bool force);

int exp_workload_describe(const exp_config *cfg, uint64_t seed, double rate, uint64_t max,
                          FILE *out);

/* Input-file manifests (runs.inputs: one "HASH SIZE PATH" line per file
 * a run's set-up read, HASH the XXH3-64 of its bytes in 16 hex digits,
 * sorted by path; issue 38 D5): false if `was` and `now` agree, else true
 * with the first file that differs in `path` (n_path bytes) and what
 * changed in `why` (n_why bytes), e.g. "content hash 0123... (200 bytes),
 * now 4567... (100 bytes)".  Cannot fail. */
bool exp_inputs_diff(const char *was, const char *now, char *path, size_t n_path, char *why,
                     size_t n_why);

#endif
