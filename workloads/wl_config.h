/*
 * The `workload:` section of an experiment config, as one C struct and its
 * sim_cfg_key schema.  It keeps the Mooncake replay keys (type, trace,
 * trace_block_tokens, key_ids, tick_s, max_requests) and adds everything
 * the synthetic business-key generator (synth.h) needs: the key-rate
 * population, the arrival process, the token structure of requests and
 * rate drift.  Presets in workloads/specs/ (YAML files) are complete sections of
 * this form; docs/workloads.md documents every key.
 */
#ifndef CRSIM_WORKLOADS_WL_CONFIG_H
#define CRSIM_WORKLOADS_WL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/core/config.h"
#include "sim/core/xenum.h"
#include "workloads/mooncake.h"

/* The length distributions, defined once (X-macro, sim/core/xenum.h): X(constant,
 * name of `dist`).  The order is the enum value; append only. */
#define WL_LENDISTS(X) \
    X(WL_LEN_CONST, const) X(WL_LEN_UNIFORM, uniform) X(WL_LEN_LOGNORMAL, lognormal) \
    X(WL_LEN_GAMMA, gamma)

/* WL_LEN_N is the number of distributions. */
enum wl_lendist { WL_LENDISTS(SIM_XENUM_CONST) WL_LEN_N };

/* Names of the length distributions by enum wl_lendist (from
 * WL_LENDISTS), NULL-terminated; the choices of every `dist` key. */
extern const char *const wl_lendist_names[];

/*
 * A token-length distribution (workload.prefix / input / output / turns).
 * `dist` is one of "const" (always round(mean)), "uniform" (integer uniform
 * on [min, max]), "lognormal" (mean `mean`, coefficient of variation `cv`:
 * σ² = ln(1 + cv²), μ = ln(mean) − σ²/2, gsl_ran_lognormal) or "gamma"
 * (mean `mean`, CV `cv`: shape 1/cv², scale mean·cv², gsl_ran_gamma).
 * Draws are rounded to the nearest integer and clamped to [min, max].
 * Units: tokens (turns: turns per session).
 */
typedef struct wl_lenspec {
    char *dist;
    double mean;
    double cv;
    int64_t min;
    int64_t max;
} wl_lenspec;

/* One stage of workload.client.stages (a table row): exactly one of
 * `rate` (> 0, requests/s) and `concurrency` (> 0, clients), for
 * duration_s (> 0, s).  Both are multiplied by the run's load. */
typedef struct wl_stage {
    double rate;
    int64_t concurrency;
    double duration_s;
} wl_stage;

/* A think-time distribution (workload.client.think): "const" (always
 * mean_s), "exponential" (mean mean_s) or "lognormal" (mean mean_s,
 * coefficient of variation cv).  Units: s. */
typedef struct wl_thinkspec {
    char *dist;
    double mean_s;
    double cv;
} wl_thinkspec;

typedef struct wl_config {
    /* common */
    char *type;             /* "trace" (or its former name "mooncake") or "synthetic" */
    char *name;             /* preset name, for reports ("" = none) */
    int64_t max_requests;   /* stop after N requests; 0 = no limit */
    /* mooncake replay (unchanged from the walking skeleton) */
    char *trace;            /* JSONL path, resolved against the config file */
    int64_t trace_block_tokens;
    int64_t key_ids;
    double tick_s;          /* -1 = auto (wl_trace_detect_tick) */
    double loop_s;          /* replay the trace repeatedly to this duration, s; 0 = once */
    char *trace_format;     /* auto | mooncake | azure | burstgpt */
    char *key_field;        /* field/column naming the routing key ("" = none) */
    char *trace_prefix;     /* auto | hashes | none | per_key */
    int64_t trace_prefix_tokens; /* per_key: shared tokens per key */
    /* synthetic */
    uint64_t seed;          /* workload seed: fixes the key population */
    double duration_s;      /* stop at this simulated time, s; 0 = no limit */
    struct {
        char *distribution; /* lognormal | zipf | file */
        int64_t n;          /* keys in the population */
        double sigma;       /* lognormal σ (of ln rate) */
        double fit_gini;    /* > 0: fit σ (or zipf_s) to this Gini instead */
        double cap;         /* max share of one key, 0 = none */
        double zipf_s;      /* Zipf exponent */
        double zipf_q;      /* Zipf-Mandelbrot offset */
        char *file;         /* CSV key,rate ("" = none) */
        int64_t active_set; /* keep the top K keys; 0 = all */
        double *whales;     /* shares of injected whale keys */
        size_t n_whales;
    } keys;
    struct {
        char *process;      /* poisson | gamma | bootstrap */
        double cv;          /* gamma: CV of gaps */
        char *iat_file;     /* bootstrap: CSV of arrival times ("" = none) */
        char *iat_column;   /* column holding times */
        bool iat_is_gaps;   /* column holds gaps rather than times */
        int64_t block_len;  /* bootstrap block, gaps */
    } arrival;
    int64_t global_prefix_tokens; /* tokens shared by every key's prompts */
    wl_lenspec prefix;      /* per-key shared prefix length, tokens */
    wl_lenspec turns;       /* turns per session */
    wl_lenspec input;       /* new input per turn, tokens */
    wl_lenspec output;      /* output per turn, tokens */
    int64_t sessions_per_key;   /* concurrent conversations per key */
    int64_t max_prompt_tokens;  /* a session ends before exceeding this */
    /* Who sends the requests (workload.client.*, workloads/client.h,
     * docs/clients.md); mode "open" is the stream above as it is. */
    struct {
        char *mode;         /* open | sessions | concurrency | stages | burst */
        char *rate_unit;    /* sessions: the load is a request or a
                               conversation rate (requests | conversations) */
        wl_thinkspec think; /* think time between a reply and the next turn */
        double patience_s;  /* sessions: abandon after a TTFT above this; 0 = none */
        int64_t concurrency;     /* concurrency: clients N; 0 = the run's load */
        int64_t max_concurrency; /* sessions, rate stages: cap on requests in
                                    flight (a send waits for a slot); 0 = none */
        wl_stage *stages;   /* stages: the ladder, in order */
        size_t n_stages;
        bool barrier;       /* stages: drain each stage before the next */
        int64_t batch;      /* burst: requests per batch; 0 = the run's load */
        double batch_interval_s; /* burst: gap between batches; 0 = the next
                                    batch when the previous has completed */
        char *latency_from; /* the SLO's latency: send | intended */
    } client;
    /* Synthetic benchmark prompts (workload.benchmark, docs/clients.md). */
    char *benchmark;        /* conversations | shared_prefix */
    struct {
        int64_t groups;            /* G */
        int64_t prompts_per_group; /* P */
        int64_t system_prompt_tokens;
        int64_t question_tokens;
        int64_t output_tokens;
        bool shuffle;              /* false: prompts in order */
    } shared_prefix;
    struct {
        double sigma;       /* σ of the per-interval log-rate step; 0 = off */
        double interval_s;  /* control interval, s */
        int64_t intervals;  /* number of steps; 0 = every interval */
    } drift;
} wl_config;

/* The choices of workload.client.mode, .rate_unit, .think.dist,
 * .latency_from and workload.benchmark (NULL-terminated; the enums of
 * workloads/client.h follow their order). */
extern const char *const wl_client_mode_names[];
extern const char *const wl_client_rate_units[];
extern const char *const wl_think_dist_names[];
extern const char *const wl_latency_from_names[];
extern const char *const wl_benchmark_names[];

/* The schema, paths relative to "workload" (NULL-terminated).  Use it
 * with sim_cfg_bind_prefix(doc, "workload", wl_config_schema, &cfg), or
 * call wl_config_bind. */
extern const sim_cfg_key wl_config_schema[];

/* Whether `c` replays a trace: workload.type trace, or mooncake (its former
 * name).  Cannot fail. */
bool wl_config_is_trace(const wl_config *c);

/*
 * Check that every key of `c` set to other than its default applies to
 * the workload `c` describes: trace keys only with type trace, synthetic
 * keys only with type synthetic, keys.n/sigma/zipf_s/zipf_q/fit_gini only
 * with the key-rate family that reads them, keys.file only with file or
 * servegen, arrival.cv only with gamma, arrival.iat_* only with bootstrap,
 * a length's cv only with lognormal or gamma, drift.interval_s/intervals
 * only with drift.sigma > 0, trace_prefix_tokens only with trace_prefix
 * per_key, key_ids only without key_field (issue 38 C10).  A key left at
 * its default counts as not set, so a stored run's full config passes.
 * `d` (may be NULL) locates the key in its file or --set.  Returns SIM_OK or
 * SIM_EINVAL: "FILE:LINE: key 'workload.K' does not apply to this workload
 * (type T, keys D) and would be ignored; expected SETTING, or remove the
 * key".  Called by wl_config_bind.
 */
int wl_config_check_keys(const wl_config *c, const sim_cfgdoc *d);

/*
 * The keys of `c` that are set (not at their default) but do not apply, as
 * wl_config_check_keys judges them: needs[i] (an array of wl_config_n_keys()
 * entries, indexed like wl_config_schema) is the setting key i needs, or
 * NULL when it is unset or applies.  Returns the index of the first such
 * key, or wl_config_n_keys() when there is none.  Strings are static.
 * Cannot fail.  (Used with a sweep: a key is inapplicable only when it is
 * so at every point.)
 */
size_t wl_config_inapplicable(const wl_config *c, const char **needs);

/* Number of keys in wl_config_schema.  Cannot fail. */
size_t wl_config_n_keys(void);

/* The error of wl_config_check_keys for schema key i and its `needs`,
 * located in `d` (may be NULL) or else at `file`.  Returns SIM_EINVAL. */
int wl_config_key_error(const wl_config *c, const sim_cfgdoc *d, const char *file, size_t i,
                        const char *needs);

/* The default of workload key `path` ("keys.n") as YAML text, or NULL for
 * an unknown path.  Static storage.  Cannot fail. */
const char *wl_config_default(const char *path);

/*
 * Bind the `workload` subtree of `d` into *out (zeroed by the call), apply
 * defaults (the paths trace, keys.file and arrival.iat_file are optional
 * SIM_CFG_PATH keys: relative to the config file's folder when written in
 * the file, to the current directory when given with --set, "" when not
 * set), then run wl_config_check and wl_config_check_keys.  Returns SIM_OK or
 * SIM_EINVAL with one line naming the file, line or key path and the
 * expected form; on error *out holds nothing (wl_config_fini is safe).
 */
int wl_config_bind(const sim_cfgdoc *d, wl_config *out);

/* As wl_config_bind; with check_keys false wl_config_check_keys is left to
 * the caller (an experiment with a sweep checks the keys over its points). */
int wl_config_bind_opts(const sim_cfgdoc *d, bool check_keys, wl_config *out);

/*
 * Parse YAML `text` (a document with a top-level `workload:` mapping;
 * `name` stands for the file name in messages and path resolution) and
 * bind it as wl_config_bind does.  For tests and tools.  Same returns.
 */
int wl_config_parse(const char *text, const char *name, wl_config *out);

/* As wl_config_parse, from the YAML file `path` (a preset in
 * workloads/specs/, or an experiment config).  Adds SIM_EIO. */
int wl_config_load(const char *path, wl_config *out);

/*
 * Cross-key checks that the schema cannot express: a trace for type
 * mooncake; for synthetic, max_requests or duration_s set, keys.file for
 * distribution file, iat_file for bootstrap, n·cap >= 1, whale shares
 * summing below 1, min <= max and mean within [min, max] for every length
 * distribution.  `where` names the source in messages.  Returns SIM_OK or
 * SIM_EINVAL ("WHERE: workload.keys.file is empty; expected a CSV path
 * when workload.keys.distribution is file").
 */
int wl_config_check(const wl_config *cfg, const char *where);

/* Canonical YAML of the section (every key, defaults included), nested
 * under `workload:`; the caller frees it.  Cannot fail. */
char *wl_config_dump(const wl_config *cfg);

/*
 * Load the trace of a trace-replay config (workload.trace with its
 * trace_format, key_field, trace_prefix, trace_prefix_tokens and
 * trace_block_tokens) through wl_trace_load.  Same returns.
 */
int wl_config_trace_load(const wl_config *cfg, wl_trace **out);

/* As wl_config_trace_load, but shared: the process's one copy of the
 * trace for these options (wl_ingest_trace, workloads/ingest.h), read-only,
 * released with wl_ingest_release.  Same returns. */
int wl_config_trace_acquire(const wl_config *cfg, const wl_trace **out);

/* The tick a replay of `t` uses: workload.tick_s if >= 0, else
 * wl_trace_detect_tick(t); *detected (if not NULL) says which.  Cannot
 * fail. */
double wl_config_trace_tick(const wl_config *cfg, const wl_trace *t, int *detected);

/* Free what the config owns and zero those fields.  Safe on a zeroed
 * config and twice.  Cannot fail. */
void wl_config_fini(wl_config *cfg);

#endif
