/*
 * Everything a run needs that follows from an experiment config: the
 * hardware and model specs, the deployment and its KV pool, the calibrated
 * cost model, the workload's shared data (a loaded trace), the cluster and
 * router parameters, and per-run request streams.  Built once per config
 * (or sweep point) and shared read-only by the runs of that point, which
 * may execute on several threads: each run opens its own stream.
 */
#ifndef CRSIM_SIM_SETUP_H
#define CRSIM_SIM_SETUP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "models/cluster.h"
#include "models/routers/route.h"
#include "models/spec.h"
#include "workloads/keyrates.h"
#include "workloads/mooncake.h"
#include "sim/exp/exp.h"

/* One destination group of a mixed fleet, built (docs/mixed-fleets.md). */
typedef struct exp_setup_group {
    exp_group g;             /* the resolved config (strings point into it) */
    spec_hw hw;
    spec_model model;
    spec_deploy dep;         /* points into hw and model */
    uint64_t pool_tokens;    /* KV pool per destination of the group, tokens */
    uint32_t pool_blocks;    /* ... blocks */
    cost_model cost;
    char cost_profile[256];  /* name or path of its calibration profile */
} exp_setup_group;

typedef struct exp_setup {
    const exp_config *cfg;   /* not owned; must outlive the setup */
    spec_hw hw;
    spec_model model;
    spec_deploy dep;         /* points into hw and model */
    uint64_t pool_tokens;    /* KV pool per destination, tokens */
    uint32_t pool_blocks;    /* KV pool per destination, blocks */
    cost_model cost;
    char cost_profile[256];  /* name or path of the calibration profile used */
    cluster_params cp;       /* everything but `stop` */
    bool is_trace;           /* workload.type mooncake */
    const wl_trace *trace;   /* the process's shared trace (wl_config_trace_acquire,
                                read-only, released by exp_setup_fini), or NULL */
    const struct wl_trace_hashes *hashes; /* its shared block hashes at
                                engine.block_size (wl_ingest_hashes), or NULL:
                                per-request hashing */
    double tick_s;           /* replay tick, s (workload.tick_s or detected) */
    int tick_detected;       /* tick_s came from wl_trace_detect_tick */
    bool has_keys;           /* synthetic workload: its key population is built */
    wl_keyrates keys;        /* ... here once (wl_synth_keys), shared by the runs */
    double keys_theta;       /* its shape parameter */
    struct plan_key *nominal; /* when a selected router needs them
                                 (ROUTE_NEEDS_KEY_SHARES, e.g. cacheroute's
                                 warm_start): every routing key's share of
                                 requests (sums to 1), descending; else NULL */
    size_t n_nominal;
    char nominal_for[256];   /* the policies that asked for them, ", "-joined */
    /* Mixed fleet (cluster.groups): n_groups >= 1 groups, owned; hw,
     * model, dep, pool_*, cost and cost_profile above are then group 0's
     * and cp.groups points at `cgroups`.  0 without groups. */
    exp_setup_group *groups;
    size_t n_groups;
    cluster_group *cgroups;  /* n_groups entries for cluster_run */
    uint32_t *group_of;      /* destination -> group (route_env.group_of) */
} exp_setup;

/* Every routing key of the workload with its share of requests (summing
 * to 1), in descending share: the key-rate population of a synthetic
 * workload, or the request counts per routing key of a trace.  *out is a
 * new array the caller frees.  Returns SIM_OK or the workload errors. */
int exp_setup_key_shares(const exp_setup *s, struct plan_key **out, size_t *n);

/* Load specs, cost profile and trace for `cfg` and fill *s (zeroed first).
 * Returns SIM_OK or SIM_EIO/SIM_EINVAL (a spec, profile or trace error,
 * naming the file and line); on error *s holds nothing to free
 * (exp_setup_fini is safe). */
int exp_setup_init(const exp_config *cfg, exp_setup *s);

/* Free what the setup owns.  Safe on a zeroed setup and twice. */
void exp_setup_fini(exp_setup *s);

/* What the gateway knows for run seed `seed` at offered load `rate`
 * requests/s (exp_config_route_env plus the seed, KV pool, cost model and
 * key shares of the setup; the rate scales the shares for a warm start).
 * Points into `s`.  Cannot fail.  The router's own parameters are
 * s->cfg->router. */
route_env exp_setup_route_env(const exp_setup *s, uint64_t seed, double rate);

/* One run's request stream: a trace replay or a synthetic generator. */
typedef struct exp_stream exp_stream;

/* Open the request stream of (seed, rate requests/s) — identical for
 * every policy.  *out must be closed with exp_stream_close.  Returns
 * SIM_OK or the errors of the workload constructors. */
int exp_stream_open(const exp_setup *s, uint64_t seed, double rate, exp_stream **out);

/* What the first requests of a stream look like (exp_setup_probe). */
typedef struct exp_probe {
    uint64_t n;         /* requests read (< max when the stream is shorter) */
    double mean_blocks; /* mean wl_request.n_blocks (engine-size blocks) */
    double mean_prompt; /* mean prompt length, tokens */
} exp_probe;

/* Open the stream of (seed, rate requests/s), read its first `max`
 * requests and close it: a check, before any run is stored, that the
 * workload can be generated at all (a trace whose requests share one
 * timestamp, an all-idle ServeGen folder, an arrival CSV with zero gaps
 * fail here, naming their file and key), and the request size the memory
 * estimate uses.  Returns SIM_OK or the errors of exp_stream_open. */
int exp_setup_probe(const exp_setup *s, uint64_t seed, double rate, uint64_t max,
                    exp_probe *out);

/* The measurement window of one run (exp_setup_window). */
typedef struct exp_window {
    double warmup_s;     /* requests arriving at or after it are measured, s */
    uint64_t n;          /* arrivals read (all, unless the count stopped early) */
    uint64_t n_measured; /* of them, arriving at or after warmup_s */
    bool by_count;       /* warm-up from experiment.warmup_requests/_share */
} exp_window;

/*
 * The measurement window of the run (seed, rate requests/s), from the
 * stream itself (docs/harness.md, "Measurement window").  Warm-up by
 * time (experiment.warmup_s, both counts 0): warmup_s as configured.  By
 * count: N = experiment.warmup_requests, or floor(warmup_share x n) for a
 * stream of n arrivals; warmup_s = the arrival time of the request of
 * 0-based index N (arrival order), so N requests are unmeasured (more only
 * when arrivals tie at that time), +INFINITY when N >= n.  `enough` > 0
 * stops reading once that many are measured (a minimum check: n and
 * n_measured are then lower bounds), unless the share needs n.  O(n) time,
 * O(n) memory (arrival times) for a share.  Returns SIM_OK or the errors
 * of exp_stream_open / the stream.
 */
int exp_setup_window(const exp_setup *s, uint64_t seed, double rate, uint64_t enough,
                     exp_window *out);

/* The stream as a wl_source for cluster_run. */
wl_source exp_stream_source(exp_stream *st);

/*
 * The stream as an infinitely fast server would receive it, as a
 * wl_source without feedback (next() only): a closed-loop client's
 * requests complete at their send time (zero service time), so a
 * conversation's next turn is sent one think time after the previous one
 * and concurrency limits never bind; the stream then depends on the
 * workload, the client and the rate only, not on a router or an engine
 * (crsim fit's workload targets of a closed-loop candidate, docs/fit.md).
 * An open-loop stream or a trace: exp_stream_source.  Valid while st is
 * open; use one of the two sources of a stream, not both.  Cannot fail.
 */
wl_source exp_stream_source_unloaded(exp_stream *st);

/* The closed-loop client of a stream (workload.client.mode other than
 * open), owned by the stream; NULL for an open-loop stream or st NULL.
 * Cannot fail. */
struct wl_client *exp_stream_client(exp_stream *st);

/* Close a stream.  Accepts NULL. */
void exp_stream_close(exp_stream *st);

/* Print the set-up (cluster, cost model, KV pool, workload) to `out`. */
void exp_setup_print(const exp_setup *s, FILE *out);

/* The trace's reading rules, one line: "trace: format F, key RULE, prefix
 * MODEL, tick T s (detected | workload.tick_s)" (issue 39 item 2), for
 * trace `t` read under `cfg` with replay tick `tick_s` (s; tick_detected:
 * found by wl_trace_detect_tick rather than set).  Cannot fail. */
void exp_setup_print_trace_rule(const exp_config *cfg, const wl_trace *t, double tick_s,
                                bool tick_detected, FILE *out);

/*
 * The calibration notes of a stored experiment for `crsim report`: the
 * `NOTE:` line of every deployment (every group of a mixed fleet) whose
 * cost profile transfers factors (cost_profile.transferred), as
 * exp_setup_print prints them at start-up, from the canonical config text
 * stored with the experiment (bound through a temporary file, without the
 * routers' checks; the specs and profiles are those this binary finds,
 * sim/core/datadir.h).  A config or profile that cannot be resolved gives
 * one line saying so instead.  Returns a new string of complete lines,
 * "" when there is nothing to note; the caller frees it.  Aborts on OOM.
 */
char *exp_setup_calib_notes(const char *config_text);

/*
 * The unit of a stored experiment's loads (experiment.rates) for `crsim
 * report` and `crsim plot`, from its canonical config text as
 * exp_setup_calib_notes binds it: exp_load_unit of that config, or
 * "requests/s" when the text cannot be bound.  A static string.
 */
const char *exp_setup_load_unit(const char *config_text);

#endif
