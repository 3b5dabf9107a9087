/*
 * The regime estimator.  One evaluation = calibration (q_cap, W) +
 * the fast diagnostic (affinity vs spreading hit rates within the eviction
 * window) + paired baseline/cacheroute simulations (the baseline is
 * --baseline, any registered router but cacheroute, default flat_lb) over a
 * load grid scaled to R·q_cap, run through the ordinary harness (exp_run) into a database,
 * whose SLO capacities give the verdict.  The region map repeats the
 * evaluation over two workload axes with one calibration at the base.
 */
#include "sim/exp/regime.h"

#include <gsl/gsl_sort.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/routers/plan.h"
#include "models/routers/route.h"
#include "workloads/diag.h"
#include "workloads/keyrates.h"
#include "workloads/synth.h"
#include "sim/exp/calib.h"
#include "sim/exp/capacity.h"
#include "sim/core/error.h"
#include "sim/exp/exp.h"
#include "sim/exp/fit.h"
#include "sim/exp/plot.h"
#include "sim/exp/setup.h"
#include "sim/exp/store.h"
#include "sim/core/wall.h"

const char *exp_verdict_name(enum exp_verdict v)
{
    return v == EXP_WIN ? "win" : v == EXP_LOSE ? "lose" : "tie";
}

static double point_value(const exp_cap_interval *c)
{
    return isinf(c->hi) ? c->lo : c->lo > 0 ? (c->lo + c->hi) / 2 : c->hi;
}

enum exp_verdict exp_regime_verdict(const exp_cap_interval *cand, const exp_cap_interval *base,
                                    size_t n, double tie, double *ratio, double *ratio_lo,
                                    double *ratio_hi)
{
    double sc = 0, sb = 0, rlo = INFINITY, rhi = 0;
    double c_lo = INFINITY, c_hi = 0, b_lo = INFINITY, b_hi = 0;
    for (size_t i = 0; i < n; i++) {
        sc += point_value(&cand[i]);
        sb += point_value(&base[i]);
        double lo = base[i].hi > 0 ? cand[i].lo / base[i].hi : INFINITY;
        double hi = base[i].lo > 0 ? cand[i].hi / base[i].lo : INFINITY;
        rlo = fmin(rlo, lo);
        rhi = fmax(rhi, hi);
        c_lo = fmin(c_lo, cand[i].lo);
        c_hi = fmax(c_hi, cand[i].hi);
        b_lo = fmin(b_lo, base[i].lo);
        b_hi = fmax(b_hi, base[i].hi);
    }
    double r = sb > 0 ? sc / sb : INFINITY;
    *ratio = r;
    *ratio_lo = rlo;
    *ratio_hi = rhi;
    /* Seed ranges overlap when neither lies wholly above the other.  An
     * open interval end [lowest, inf) overlaps everything above lowest. */
    bool above = c_lo > b_hi, below = c_hi < b_lo;
    if (r > 1 + tie && above)
        return EXP_WIN;
    if (r < 1 - tie && below)
        return EXP_LOSE;
    return EXP_TIE;
}

/* ---- options ---- */

/* Times the simulation grid may move by 3x to resolve censored capacities
 * (3^4 = 81x from the first grid). */
#define REGIME_GRID_MOVES 4

typedef struct regime_opts {
    const char *config;
    const char **sets;
    size_t n_set;
    size_t n_seeds;
    double slo;        /* 0 = median of experiment.slos */
    double tie;
    unsigned jobs;
    bool fast;
    const char *db;
    const char *map[2];
    const char *outdir;
    const char *baseline; /* router cacheroute is compared against (--baseline) */
    double *grid;         /* --grid: the calibration's load grid (owned), or NULL */
    size_t n_grid;
    const char *targets;  /* --targets: fit, then a verdict per identified alternative */
    const char **others;  /* further routers simulated beside the pair (--targets: the
                             targets' policies), for the best router overall */
    size_t n_others;
} regime_opts;

/* Everything one evaluation measured. */
typedef struct regime_eval {
    double slo_s;
    int64_t slots;
    double q_cap;
    uint32_t n_dest;
    uint64_t pool_tokens;
    wl_diag diag;
    double diag_rate;
    double admitted_share;   /* share of requests carried by the top C keys */
    double hot_share;        /* the busiest key's share */
    double revisit_s;        /* traffic-weighted median of R / λ_b at diag_rate */
    size_t n_keys;
    bool simulated;
    size_t n_seeds;
    exp_cap_interval *cap_cr, *cap_fl;
    double hit_cr, hit_fl;   /* mean over seeds at the mid load */
    double ratio, ratio_lo, ratio_hi;
    enum exp_verdict verdict;
    const char *reason;
    double loads[7];
    double calib_wall_s, diag_wall_s, sim_wall_s;
    size_t n_ext;            /* calibration probes below its grid (all seeds) */
    double ext_low;          /* the lowest of them, requests/s (NAN: none) */
    /* Every simulated router's mean capacity over seeds (censored values
     * at their bound), requests/s, and hit at the mid load. */
    char pol[16][64];
    double pol_cap[16], pol_hit[16];
    size_t n_pol;
    char trace_rule[512];    /* a trace's reading rules (format, key, prefix, tick), or "" */
    char reason_buf[512];    /* a reason with numbers in it (ev->reason may point here) */
    int grid_moves;          /* times the load grid moved to resolve censored capacities */
    const char *grid_stop;   /* why the grid stopped moving with capacities censored, or NULL */
    bool no_prefix_info;     /* a trace read with trace_prefix none (no reuse by assumption) */
} regime_eval;

double exp_regime_round_load(double x)
{
    if (!(x > 0) || !isfinite(x))
        return x;
    char b[32];
    snprintf(b, sizeof b, "%.3g", x);
    return strtod(b, NULL);
}

/* Relative key shares of the workload, descending (for the conditions). */
static int key_shares(const exp_setup *s, double **out, size_t *n)
{
    plan_key *k = NULL;
    int rc = exp_setup_key_shares(s, &k, n);
    if (rc)
        return rc;
    double *c = sim_xmalloc((*n ? *n : 1) * sizeof *c);
    for (size_t i = 0; i < *n; i++)
        c[i] = k[i].rate;
    free(k);
    *out = c;
    return SIM_OK;
}

/* The config derived with the extra sets after the options' sets
 * (exp_config_derive), and in *all_out those sets in that order (for the
 * sweep of the same derived config; caller frees the array). */
static int load_cfg(const regime_opts *o, const char *const *extra, size_t n_extra,
                    exp_config *cfg, const char ***all_out, size_t *n_all)
{
    const exp_config_src src = {.path = o->config, .sets = o->sets, .n_set = o->n_set,
                                .unchecked = true};
    int rc = exp_config_derive(&src, extra, n_extra, cfg);
    if (rc)
        return rc;
    const char **all = sim_xcalloc(o->n_set + n_extra + 1, sizeof *all);
    for (size_t i = 0; i < o->n_set; i++)
        all[i] = o->sets[i];
    for (size_t i = 0; i < n_extra; i++)
        all[o->n_set + i] = extra[i];
    *all_out = all;
    *n_all = o->n_set + n_extra;
    return SIM_OK;
}


/* Run the paired baseline/cacheroute sweep on ev->loads into `db` and read
 * back per-seed capacities and mid-load hit rates into *ev. */
static int simulate(const regime_opts *o, const char *const *all, size_t n_all, const char *db,
                    FILE *log, regime_eval *ev)
{
    int rc;
    double t0;
    char rates[256], qcap[64], slots[64], dbset[1200], slos[64], seeds[128], name[64];
    /* %.17g: the stored rates are these doubles bit for bit, so the exact
     * rate match of exp_store_policy_means finds the mid load. */
    snprintf(rates, sizeof rates, "experiment.rates=[%.17g, %.17g, %.17g, %.17g, %.17g, %.17g, "
             "%.17g]",
             ev->loads[0], ev->loads[1], ev->loads[2], ev->loads[3], ev->loads[4],
             ev->loads[5], ev->loads[6]);
    snprintf(qcap, sizeof qcap, "router.cacheroute.q_cap=%.17g", ev->q_cap);
    snprintf(slots, sizeof slots, "router.cacheroute.slots=%lld", (long long)ev->slots);
    snprintf(dbset, sizeof dbset, "experiment.db=%s", db);
    snprintf(slos, sizeof slos, "experiment.slos=[%.17g]", ev->slo_s);
    size_t ns = o->n_seeds ? o->n_seeds : 3, used = 0;
    used += (size_t)snprintf(seeds + used, sizeof seeds - used, "experiment.seeds=[");
    for (size_t i = 0; i < ns && used + 8 < sizeof seeds; i++)
        used += (size_t)snprintf(seeds + used, sizeof seeds - used, "%s%zu", i ? "," : "",
                                 i + 1);
    snprintf(seeds + used, sizeof seeds - used, "]");
    snprintf(name, sizeof name, "experiment.name=regime");
    char pols[1024];
    size_t pu = (size_t)snprintf(pols, sizeof pols, "experiment.policies=[%s, cacheroute",
                                 o->baseline);
    for (size_t i = 0; i < o->n_others && pu + 80 < sizeof pols; i++)
        if (strcmp(o->others[i], o->baseline) && strcmp(o->others[i], "cacheroute"))
            pu += (size_t)snprintf(pols + pu, sizeof pols - pu, ", %s", o->others[i]);
    snprintf(pols + pu, sizeof pols - pu, "]");
    const char *more[] = {pols, rates, qcap, slots,
                          dbset, slos, seeds, name, "experiment.sweep=[]"};
    const size_t nm = sizeof more / sizeof *more;
    const char **runsets = sim_xcalloc(n_all + nm, sizeof *runsets);
    memcpy(runsets, all, n_all * sizeof *runsets);
    memcpy(runsets + n_all, more, nm * sizeof *runsets);
    exp_run_opts ro = {.config_path = o->config, .sets = runsets, .n_set = n_all + nm,
                       .jobs = o->jobs ? o->jobs : 1, .quiet = true};
    t0 = sim_wall_s();
    rc = exp_run(&ro, log);
    ev->sim_wall_s += sim_wall_s() - t0;
    free(runsets);
    if (rc)
        return rc;
    /* Capacities of the experiment just stored. */
    exp_store *store = NULL;
    if ((rc = exp_store_open_read(db, &store)))
        return rc;
    int64_t exp_id = 0;
    rc = exp_store_latest_experiment(store, &exp_id);
    exp_capacity_row *rows = NULL;
    size_t nr = 0;
    if (rc == SIM_OK)
        rc = exp_store_capacity_rows(store, exp_id, &rows, &nr);
    ev->n_seeds = ns;
    ev->cap_cr = sim_xcalloc(ns, sizeof *ev->cap_cr);
    ev->cap_fl = sim_xcalloc(ns, sizeof *ev->cap_fl);
    for (size_t i = 0; rc == SIM_OK && i < nr; i++) {
        const exp_capacity *c = &rows[i].cap;
        size_t si = (size_t)rows[i].seed - 1;
        if (si >= ns)
            continue;
        exp_cap_interval iv = c->censoring == EXP_CENS_LEFT ? (exp_cap_interval){0, c->lowest_rps}
                              : c->censoring == EXP_CENS_RIGHT
                                  ? (exp_cap_interval){c->highest_rps, INFINITY}
                                  : (exp_cap_interval){c->capacity_rps, c->capacity_rps};
        if (strcmp(rows[i].policy, "cacheroute") == 0)
            ev->cap_cr[si] = iv;
        else if (strcmp(rows[i].policy, o->baseline) == 0)
            ev->cap_fl[si] = iv;
        size_t k = 0;
        while (k < ev->n_pol && strcmp(ev->pol[k], rows[i].policy))
            k++;
        if (k == ev->n_pol && k < 16) {
            snprintf(ev->pol[k], sizeof ev->pol[k], "%s", rows[i].policy);
            ev->pol_cap[k] = 0;
            ev->pol_hit[k] = NAN;
            ev->n_pol++;
        }
        if (k < 16)
            ev->pol_cap[k] += point_value(&iv) / (double)ns;
    }
    exp_capacity_rows_free(rows, nr);
    /* Hit rates at the middle load, mean over seeds. */
    exp_store_policy_mean *hm = NULL;
    size_t nh = 0;
    if (rc == SIM_OK)
        rc = exp_store_policy_means(store, exp_id, "hit_rate", ev->loads[3], &hm, &nh);
    for (size_t i = 0; i < nh; i++) {
        if (strcmp(hm[i].policy, "cacheroute") == 0)
            ev->hit_cr = hm[i].mean;
        else if (strcmp(hm[i].policy, o->baseline) == 0)
            ev->hit_fl = hm[i].mean;
        for (size_t k = 0; k < ev->n_pol; k++)
            if (strcmp(ev->pol[k], hm[i].policy) == 0)
                ev->pol_hit[k] = hm[i].mean;
    }
    exp_store_policy_means_free(hm, nh);
    exp_store_close(store);
    if (rc)
        return rc;
    return SIM_OK;
}

/* The reason when the diagnostic finds no reuse: a measured fact for a
 * workload with prompt content, an assumption of the format for a trace
 * read without it (issue 39 item 5). */
static const char *nothing_reason(regime_eval *ev)
{
    if (ev->no_prefix_info)
        return "nothing to recover, by assumption: this trace carries no prompt content "
               "(workload.trace_prefix none: every prompt block is taken as unique), so no "
               "request can re-use a cached prefix here; that is an assumption of the format, "
               "not a measurement of the traffic. To supply prefix information: "
               "workload.key_field (a session or tenant column) with workload.trace_prefix "
               "per_key and trace_prefix_tokens N, or a JSONL trace with hash_ids "
               "(docs/trace-replay.md) (tie/lose)";
    return "nothing to recover: no request of this workload re-uses a cached prefix (the "
           "prompts' blocks, as read, are all distinct) (tie/lose)";
}

static bool is_cache_blind(const char *router)
{
    return strcmp(router, "flat_lb") == 0 || strcmp(router, "round_robin") == 0 ||
           strcmp(router, "random") == 0;
}

/* The baseline's own routing mechanism, for the reasons (issue 39 item 7). */
static const char *mechanism(const char *router)
{
    static const struct {
        const char *name, *what;
    } m[] = {
        {"flat_lb", "cache-blind load balancing"},
        {"round_robin", "cache-blind round robin"},
        {"random", "cache-blind random choice"},
        {"sticky", "key affinity without load or replicas (consistent hashing of the key)"},
        {"chwbl", "consistent hashing of the key with bounded loads"},
        {"dualmap", "two hash choices per key, the less loaded"},
        {"preble", "prefix-tree matching with load balancing"},
        {"sglang_cache_aware", "the SGLang router's prefix-tree matching"},
        {"aibrix_prefix", "AIBrix's prefix-hash matching"},
        {"dynamo_kv", "Dynamo's KV-event overlap scoring against load"},
        {"llmd", "llm-d's prefix-cache and load scorers"},
    };
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (strcmp(m[i].name, router) == 0)
            return m[i].what;
    return "its own routing rule";
}

/*
 * Evaluate one workload point.  `calib` (may be NULL) supplies q_cap and W
 * measured elsewhere (the region map calibrates once at its base).
 */
static int evaluate(const regime_opts *o, const char *const *extra, size_t n_extra,
                    const regime_eval *calib, const char *db, FILE *log, regime_eval *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->ext_low = NAN;
    exp_config cfg;
    const char **all = NULL;
    size_t n_all = 0;
    int rc = load_cfg(o, extra, n_extra, &cfg, &all, &n_all);
    if (rc)
        return rc;
    exp_setup s;
    if ((rc = exp_setup_init(&cfg, &s)))
        goto out_cfg;
    if (s.is_trace) { /* the tick and key rule the runs use (issue 39 item 2) */
        FILE *m = fmemopen(ev->trace_rule, sizeof ev->trace_rule, "w");
        if (m) {
            exp_setup_print_trace_rule(&cfg, s.trace, s.tick_s, s.tick_detected, m);
            fclose(m);
        }
        ev->no_prefix_info = strcmp(s.trace->prefix, "none") == 0;
    }
    if (cfg.destinations < 2) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: a cluster of %lld destination: every router sends "
                       "everything to it, so there is nothing to decide; expected "
                       "cluster.destinations >= 2", o->config, (long long)cfg.destinations);
        goto out_setup;
    }
    ev->n_dest = (uint32_t)cfg.destinations;
    ev->pool_tokens = s.pool_tokens;
    ev->slo_s = o->slo > 0 ? o->slo : exp_config_median_slo(&cfg);

    /* 0. A workload without any prefix reuse has nothing to recover, and no
     * warm footprint to calibrate W from: say so without simulating. */
    double t0 = sim_wall_s();
    {
        exp_stream *st0 = NULL;
        if ((rc = exp_stream_open(&s, 1, (double)ev->n_dest, &st0)))
            goto out_setup;
        wl_diag_opts d0 = {.max = 20000, .block_size = (uint32_t)cfg.block_size,
                           .n_dest = ev->n_dest, .pool_tokens = s.pool_tokens};
        rc = wl_diag_stream_opts(exp_stream_source(st0), &d0, &ev->diag);
        exp_stream_close(st0);
        if (rc)
            goto out_setup;
        if (ev->diag.affinity_hit < 0.005) {
            ev->diag_rate = (double)ev->n_dest;
            ev->q_cap = NAN;
            ev->diag_wall_s = sim_wall_s() - t0;
            ev->verdict = EXP_TIE;
            ev->ratio = NAN;
            ev->reason = nothing_reason(ev);
            goto out_setup;
        }
    }

    /* 1. q_cap and W. */
    t0 = sim_wall_s();
    if (calib) {
        ev->q_cap = calib->q_cap;
        ev->slots = calib->slots;
    } else {
        uint64_t seeds[16];
        size_t ns = o->n_seeds ? (o->n_seeds < 16 ? o->n_seeds : 16) : 2;
        for (size_t i = 0; i < ns; i++)
            seeds[i] = i + 1;
        exp_calib_opts co = {.seeds = seeds, .n_seeds = ns, .jobs = o->jobs,
                             .grid = o->grid, .n_grid = o->n_grid};
        exp_calib_result cr;
        rc = exp_calibrate_opts(&cfg, ev->slo_s, &co, &cr);
        ev->ext_low = NAN;
        /* The downward extensions of the calibration grid, one line each
         * (on stderr, as calibrate's progress), before any verdict. */
        for (size_t i = 0; rc == SIM_OK && i < cr.n_probes; i++) {
            const exp_calib_probe *p = &cr.probes[i];
            if (!p->ext)
                continue;
            ev->n_ext++;
            ev->ext_low = isnan(ev->ext_low) ? p->load_rps : fmin(ev->ext_low, p->load_rps);
            fprintf(stderr, "regime: calibration seed %llu: the SLO fails at %.4g requests/s; "
                    "grid extended down to %.4g requests/s: p99 %.3f s, %s\n",
                    (unsigned long long)p->seed, 2 * p->load_rps, p->load_rps, p->metric_s,
                    p->pass ? "pass" : "FAIL");
        }
        if (rc == SIM_OK) {
            ev->slots = cr.slots;
            ev->q_cap = cr.q_cap_rps;
            if (isnan(ev->q_cap)) {
                if (cr.n_right > 0) { /* passes everywhere: the top of the grid */
                    double mx = 0;
                    for (size_t i = 0; i < cr.n_probes; i++)
                        mx = fmax(mx, cr.probes[i].load_rps);
                    ev->q_cap = mx;
                } else {
                    rc = SIM_ERROR(SIM_EINVAL, "%s: one destination misses the %g s SLO even at "
                                   "the lowest calibration load (grid extended down to %.4g "
                                   "requests/s, floor %.4g: left-censored), so q_cap cannot be "
                                   "measured; expected a workload a destination can serve (or "
                                   "a looser --slo, or a lower --grid)", o->config, ev->slo_s,
                                   isnan(ev->ext_low) ? cr.probes[0].load_rps : ev->ext_low,
                                   cr.ext_floor_rps);
                }
            }
        }
        exp_calib_result_fini(&cr);
        if (rc)
            goto out_setup;
    }
    ev->calib_wall_s = sim_wall_s() - t0;

    /* 2. Fast diagnostic at half the nominal cluster capacity. */
    t0 = sim_wall_s();
    ev->diag_rate = 0.5 * ev->n_dest * ev->q_cap;
    exp_stream *st = NULL;
    if ((rc = exp_stream_open(&s, 1, ev->diag_rate, &st)))
        goto out_setup;
    wl_diag_opts dopt = {.max = 200000, .block_size = (uint32_t)cfg.block_size,
                         .n_dest = ev->n_dest, .pool_tokens = s.pool_tokens,
                         .warmup_s = cfg.warmup_s};
    rc = wl_diag_stream_opts(exp_stream_source(st), &dopt, &ev->diag);
    exp_stream_close(st);
    if (rc)
        goto out_setup;
    ev->diag_wall_s = sim_wall_s() - t0;

    /* 3. Conditions from the key shares. */
    double *share = NULL;
    size_t nk = 0;
    if ((rc = key_shares(&s, &share, &nk)))
        goto out_setup;
    ev->n_keys = nk;
    ev->hot_share = nk ? share[0] : 0;
    size_t C = (size_t)(ev->n_dest * (uint64_t)ev->slots);
    double acc = 0;
    for (size_t i = 0; i < nk && i < C; i++)
        acc += share[i];
    ev->admitted_share = acc;
    /* Traffic-weighted median revisit time of a key on one destination
     * under spreading: R / λ_b with λ_b = share · rate. */
    acc = 0;
    ev->revisit_s = INFINITY;
    for (size_t i = 0; i < nk; i++) {
        acc += share[i];
        if (acc >= 0.5) {
            ev->revisit_s = ev->n_dest / (share[i] * ev->diag_rate);
            break;
        }
    }
    free(share);

    /* 4. Paired simulations, unless there is nothing to recover.  The grid
     * spans 0.1-1.1 x R·q_cap; while a seed of either router passes at the
     * top (or fails at the bottom), its capacity is not resolved and the
     * grid moves up (down) by 3x, at most REGIME_GRID_MOVES times. */
    const double fr[7] = {0.1, 0.2, 0.35, 0.5, 0.7, 0.9, 1.1};
    double scale = 1.0;
    bool nothing = ev->diag.affinity_hit < 0.005;
    for (int attempt = 0; attempt <= REGIME_GRID_MOVES && !o->fast && !nothing; attempt++) {
        for (int i = 0; i < 7; i++) {
            ev->loads[i] = exp_regime_round_load(fr[i] * scale * ev->n_dest * ev->q_cap);
        }
        ev->n_pol = 0;
        if ((rc = simulate(o, all, n_all, db, log, ev)))
            goto out_setup;
        const size_t ns = ev->n_seeds;
        ev->simulated = true;
        ev->verdict = exp_regime_verdict(ev->cap_cr, ev->cap_fl, ns, o->tie, &ev->ratio,
                                         &ev->ratio_lo, &ev->ratio_hi);
        /* Both routers must be resolved (issue 39 items 4 and 7): a seed of
         * either above the grid moves it up, one below moves it down; both
         * at once, or the move limit, stop it (the output says which). */
        bool any_right = false, any_left = false;
        for (size_t i = 0; i < ns; i++) {
            any_right |= isinf(ev->cap_cr[i].hi) || isinf(ev->cap_fl[i].hi);
            any_left |= ev->cap_cr[i].lo == 0 || ev->cap_fl[i].lo == 0;
        }
        ev->grid_stop = NULL;
        if (!any_right && !any_left)
            break;
        if (any_right && any_left) {
            ev->grid_stop = "one router passes the top of the grid while another fails at its "
                            "bottom: no single 11x grid resolves both";
            break;
        }
        if (attempt == REGIME_GRID_MOVES) {
            ev->grid_stop = "the grid reached its move limit (REGIME_GRID_MOVES, 3x each) "
                            "without resolving both routers";
            break;
        }
        scale *= any_right ? 3.0 : 1.0 / 3.0;
        ev->grid_moves++;
        if (log)
            fprintf(log, "regime: capacities not resolved on the grid; moving it %s\n",
                    any_right ? "up" : "down");
        free(ev->cap_cr);
        free(ev->cap_fl);
        ev->cap_cr = ev->cap_fl = NULL;
    }
    if (!ev->simulated) {
        ev->verdict = EXP_TIE; /* not simulated: reported as tie/lose */
        ev->ratio = NAN;
    }

    /* 5. The deciding condition. */
    const double recov = ev->diag.recoverable;
    if (nothing)
        ev->reason = nothing_reason(ev);
    else if (ev->verdict != EXP_WIN && recov < 0.05)
        ev->reason = "little recoverable prefix work: spreading already finds almost every "
                     "prefix affinity would";
    else if (ev->verdict != EXP_WIN && ev->admitted_share < 0.5)
        ev->reason = "active set beyond the warm-slot budget: the C = R x W admitted keys carry "
                     "under half the requests";
    else if (ev->verdict != EXP_WIN && ev->hot_share * ev->diag_rate > ev->q_cap)
        ev->reason = "a key too hot for one destination: replicas dilute its affinity";
    else if (ev->verdict == EXP_WIN && ev->revisit_s > ev->diag.spread_window_s)
        ev->reason = "cluster too large for revisits: under spreading a key comes back to a "
                     "destination less often than its prefix survives there";
    else if (ev->verdict == EXP_WIN)
        ev->reason = "recoverable prefix work: affinity keeps prefixes that spreading evicts";
    else
        ev->reason = "recoverable work too small against the cost of concentrating load";
    /* The conditions above compare affinity with cache-blind spreading (the
     * diagnostic); a baseline that is not cache-blind is judged by its own
     * mechanism and its measured hits (issue 39 item 7). */
    if (ev->simulated && !nothing && !is_cache_blind(o->baseline)) {
        snprintf(ev->reason_buf, sizeof ev->reason_buf,
                 "%s against %s (%s): it keeps %.1f %% prefix hits at the middle load to "
                 "cacheroute's %.1f %%%s", ev->verdict == EXP_WIN ? "cacheroute wins"
                 : ev->verdict == EXP_LOSE ? "cacheroute loses" : "no decisive difference",
                 o->baseline, mechanism(o->baseline), 100 * ev->hit_fl, 100 * ev->hit_cr,
                 ev->verdict == EXP_WIN ? ", and cacheroute's replicas and admission carry "
                                          "more load within the SLO"
                 : ev->hit_fl >= ev->hit_cr ? ": the baseline already recovers the prefix work "
                                              "affinity would, so planned placement adds no "
                                              "capacity"
                                            : ": the extra hits do not buy capacity beyond the "
                                              "tie band");
        ev->reason = ev->reason_buf;
    }
out_setup:
    exp_setup_fini(&s);
out_cfg:
    exp_config_fini(&cfg);
    free(all);
    return rc;
}

static void eval_fini(regime_eval *ev)
{
    free(ev->cap_cr);
    free(ev->cap_fl);
    ev->cap_cr = ev->cap_fl = NULL;
}

static void fmt_cap(char *b, size_t n, const exp_cap_interval *c)
{
    if (isinf(c->hi))
        snprintf(b, n, ">=%.3g", c->lo);
    else if (c->lo == 0 && c->hi > 0)
        snprintf(b, n, "<%.3g", c->hi);
    else
        snprintf(b, n, "%.3g", c->lo);
}

/* The simulated router with the highest mean capacity when it beats
 * cacheroute's by more than the tie band (ties: the first in simulation
 * order); n_pol when none does or nothing was simulated. */
static size_t best_router(const regime_eval *ev, double tie)
{
    size_t b = ev->n_pol, cr = ev->n_pol;
    for (size_t k = 0; k < ev->n_pol; k++) {
        if (strcmp(ev->pol[k], "cacheroute") == 0)
            cr = k;
        if (b == ev->n_pol || ev->pol_cap[k] > ev->pol_cap[b])
            b = k;
    }
    if (b < ev->n_pol && cr < ev->n_pol && !(ev->pol_cap[b] > (1 + tie) * ev->pol_cap[cr]))
        return ev->n_pol;
    return b;
}

/* Whether a seed's capacity is censored above (passes the top of the
 * grid) or below (fails at its bottom). */
static bool cens_hi(const exp_cap_interval *c) { return isinf(c->hi); }
static bool cens_lo(const exp_cap_interval *c) { return c->lo == 0 && c->hi > 0; }

/* The verdict rule, stated, and the numbers that apply it (issue 39
 * items 3 and 4): the ratio of means as a bound when a capacity is
 * censored, the band, and the two routers' seed ranges. */
static void print_rule(const regime_opts *o, const regime_eval *ev, FILE *out)
{
    const size_t n = ev->n_seeds;
    bool up = false, down = false; /* the true ratio may be higher / lower */
    double c_lo = INFINITY, c_hi = 0, b_lo = INFINITY, b_hi = 0;
    for (size_t i = 0; i < n; i++) {
        up |= cens_hi(&ev->cap_cr[i]) || cens_lo(&ev->cap_fl[i]);
        down |= cens_hi(&ev->cap_fl[i]) || cens_lo(&ev->cap_cr[i]);
        c_lo = fmin(c_lo, ev->cap_cr[i].lo);
        c_hi = fmax(c_hi, ev->cap_cr[i].hi);
        b_lo = fmin(b_lo, ev->cap_fl[i].lo);
        b_hi = fmax(b_hi, ev->cap_fl[i].hi);
    }
    const double lo = 1 - o->tie, hi = 1 + o->tie;
    char ratio[96];
    if (up && down)
        snprintf(ratio, sizeof ratio, "undetermined (both routers censored; %.2f with the "
                 "bounds as values)", ev->ratio);
    else
        snprintf(ratio, sizeof ratio, "%s%.2f", up ? ">= " : down ? "<= " : "", ev->ratio);
    fprintf(out, "  rule: win if the capacity ratio (mean over seeds) > %.2f and every "
            "cacheroute seed lies above every %s seed; lose if < %.2f and every one below; "
            "else tie\n", hi, o->baseline, lo);
    fprintf(out, "  capacity ratio cacheroute/%s %s%s (per-seed bounds %.2f .. %.2f); band "
            "%.2f .. %.2f (+-%.0f %%)\n", o->baseline, ratio,
            up || down ? ", a bound: a censored capacity counts at its grid end" : "",
            ev->ratio_lo, ev->ratio_hi, lo, hi, 100 * o->tie);
    char cr[48], bl[48];
    snprintf(cr, sizeof cr, c_hi < INFINITY ? "%.3g .. %.3g" : "%.3g .. inf", c_lo, c_hi);
    snprintf(bl, sizeof bl, b_hi < INFINITY ? "%.3g .. %.3g" : "%.3g .. inf", b_lo, b_hi);
    const bool above = c_lo > b_hi, below = c_hi < b_lo;
    const char *band = (up && down) ? "undetermined"
                       : ev->ratio > hi ? (down ? "above the band as a bound only" : "above the band")
                       : ev->ratio < lo ? (up ? "below the band as a bound only" : "below the band")
                                        : "inside the band";
    fprintf(out, "  applied: ratio %s; seed ranges cacheroute %s, %s %s: %s -> %s\n", band, cr,
            o->baseline, bl, above ? "cacheroute above" : below ? "cacheroute below"
                                                            : "they overlap",
            exp_verdict_name(ev->verdict));
    if (ev->grid_moves || ev->grid_stop)
        fprintf(out, "  load grid moved %d time%s (3x each) to resolve censored capacities%s%s\n",
                ev->grid_moves, ev->grid_moves == 1 ? "" : "s", ev->grid_stop ? "; stopped: " : "",
                ev->grid_stop ? ev->grid_stop : "");
}

static void print_eval(const regime_opts *o, const regime_eval *ev, FILE *out)
{
    fprintf(out, "cluster: %u destinations, KV pool %llu tokens each; SLO %s p99 <= %g s\n",
            ev->n_dest, (unsigned long long)ev->pool_tokens, "TTFT", ev->slo_s);
    fputs(ev->trace_rule, out);
    if (isnan(ev->q_cap)) {
        fprintf(out, "diagnostic at %.3g requests/s (one per destination: this check replays "
                "the stream only to find reuse, so its rate needs no calibration): hit rate "
                "under affinity %.1f %%, under spreading %.1f %% [%.2f s]\n\nverdict: "
                "tie/lose\nreason: %s\n", ev->diag_rate, 100 * ev->diag.affinity_hit,
                100 * ev->diag.spread_hit, ev->diag_wall_s, ev->reason);
        return;
    }
    fprintf(out, "calibration: q_cap %.3g requests/s per destination, W = %lld warm slots "
            "(C = %llu keys) [%.1f s]\n", ev->q_cap, (long long)ev->slots,
            (unsigned long long)ev->n_dest * (unsigned long long)ev->slots, ev->calib_wall_s);
    if (ev->trace_rule[0])
        fprintf(out, "calibration: a trace is replayed whole on the one destination (its keys "
                "cannot be narrowed to the top W), so this q_cap is pessimistic for a "
                "destination under affinity; the simulation grid below moves until both "
                "routers are resolved (docs/qcap.md)\n");
    if (ev->n_ext)
        fprintf(out, "calibration: the SLO failed at the lowest grid load; the grid was "
                "extended down to %.4g requests/s (%zu probes)\n", ev->ext_low, ev->n_ext);
    fprintf(out, "diagnostic at %.3g requests/s: hit rate under affinity %.1f %%, under "
            "spreading %.1f %%, recoverable %.1f points [%.2f s]\n", ev->diag_rate,
            100 * ev->diag.affinity_hit, 100 * ev->diag.spread_hit, 100 * ev->diag.recoverable,
            ev->diag_wall_s);
    fprintf(out, "conditions:\n");
    fprintf(out, "  recoverable prefix work      %5.1f points %s\n", 100 * ev->diag.recoverable,
            ev->diag.recoverable < 0.05 ? "(little)" : "");
    fprintf(out, "  admitted share of requests   %5.1f %% of %zu keys fit in C %s\n",
            100 * ev->admitted_share, ev->n_keys, ev->admitted_share < 0.5 ? "(beyond budget)" : "");
    fprintf(out, "  hottest key                  %5.2f requests/s vs q_cap %.3g %s\n",
            ev->hot_share * ev->diag_rate, ev->q_cap,
            ev->hot_share * ev->diag_rate > ev->q_cap ? "(needs replicas)" : "");
    fprintf(out, "  revisit time under spreading %7.3g s vs eviction window %.3g s %s\n",
            ev->revisit_s, ev->diag.spread_window_s,
            ev->revisit_s > ev->diag.spread_window_s ? "(too large for revisits)" : "");
    if (ev->simulated) {
        fprintf(out, "simulation (%zu seeds, loads", ev->n_seeds);
        for (int i = 0; i < 7; i++)
            fprintf(out, " %g", ev->loads[i]);
        fprintf(out, " requests/s) [%.1f s]:\n", ev->sim_wall_s);
        fprintf(out, "  %-10s %10s  capacity per seed (requests/s)\n", "policy", "hit@mid");
        const exp_cap_interval *caps[2] = {ev->cap_fl, ev->cap_cr};
        const char *names[2] = {o->baseline, "cacheroute"};
        const double hits[2] = {ev->hit_fl, ev->hit_cr};
        for (int p = 0; p < 2; p++) {
            fprintf(out, "  %-10s %9.1f%% ", names[p], 100 * hits[p]);
            for (size_t i = 0; i < ev->n_seeds; i++) {
                char b[32];
                fmt_cap(b, sizeof b, &caps[p][i]);
                fprintf(out, " %s", b);
            }
            fputc('\n', out);
        }
        print_rule(o, ev, out);
        size_t b = best_router(ev, o->tie);
        if (ev->n_pol > 2) {
            fprintf(out, "  every simulated router, mean capacity (censored at its bound):");
            for (size_t k = 0; k < ev->n_pol; k++)
                fprintf(out, " %s %.3g", ev->pol[k], ev->pol_cap[k]);
            fputc('\n', out);
        }
        if (b < ev->n_pol && strcmp(ev->pol[b], "cacheroute"))
            fprintf(out, "  best router overall by mean capacity alone: %s (%.3g requests/s, "
                    "above 1 + %.0f %% of cacheroute's mean; seed ranges not compared, so this "
                    "is not a verdict)\n",
                    ev->pol[b], ev->pol_cap[b], 100 * o->tie);
    }
    fprintf(out, "\nverdict: %s%s\nreason: %s\n",
            ev->simulated ? exp_verdict_name(ev->verdict) : "tie/lose",
            ev->simulated ? "" : (o->fast ? " (fast mode: diagnostic only, no simulation)" : ""),
            ev->reason);
}

/* ---- region map ---- */

typedef struct map_axis {
    char key[256];
    char **vals;
    size_t n;
} map_axis;

static const sim_cfg_key vals_schema[] = {
    {.path = "v", .type = SIM_CFG_STRING_LIST, .offset = offsetof(map_axis, vals),
     .count_offset = offsetof(map_axis, n), .min_len = 1, .help = "axis values"},
    {0},
};

static int parse_map_axis(const char *spec, map_axis *ax)
{
    memset(ax, 0, sizeof *ax);
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof ax->key)
        return SIM_ERROR(SIM_EINVAL, "--map axis '%s'; expected \"KEY=[v1, v2, ...]\"", spec);
    memcpy(ax->key, spec, (size_t)(eq - spec));
    size_t len = strlen(eq + 1) + 8;
    char *text = sim_xmalloc(len);
    snprintf(text, len, "v: %s\n", eq + 1);
    sim_cfgdoc *d = NULL;
    int rc = sim_cfgdoc_parse_string(text, "--map", &d);
    free(text);
    if (rc == SIM_OK)
        rc = sim_cfg_bind(d, vals_schema, ax);
    sim_cfgdoc_destroy(d);
    return rc;
}

static int run_map(const regime_opts *o, const char *db, FILE *out)
{
    map_axis ax[2];
    int rc = parse_map_axis(o->map[0], &ax[0]);
    if (rc == SIM_OK)
        rc = parse_map_axis(o->map[1], &ax[1]);
    if (rc)
        return rc;
    /* Where the map goes is checked before any work (issue 38 C12). */
    const char *outdir = o->outdir ? o->outdir : "results/regime-map";
    if (!o->outdir)
        mkdir("results", 0777);
    mkdir(outdir, 0777);
    char tsv[1024];
    snprintf(tsv, sizeof tsv, "%s/map.tsv", outdir);
    FILE *f = fopen(tsv, "w");
    if (!f) {
        rc = SIM_ERROR(SIM_EIO, "%s: cannot write the map data: %s; expected --out a folder "
                       "that exists or can be created", tsv, strerror(errno));
        goto done;
    }
    /* One calibration at the base workload, reused across the map. */
    regime_eval base;
    regime_opts fast = *o;
    fast.fast = true;
    fprintf(out, "calibrating q_cap and W at the base workload...\n");
    rc = evaluate(&fast, NULL, 0, NULL, db, NULL, &base);
    if (rc) {
        fclose(f);
        goto done;
    }
    fprintf(out, "base: q_cap %.3g requests/s, W = %lld\n", base.q_cap, (long long)base.slots);
    fprintf(f, "# x\ty\tx_label\ty_label\tratio\tverdict\taffinity_hit\tspread_hit\n");
    FILE *devnull = fopen("/dev/null", "w");
    for (size_t i = 0; i < ax[0].n && rc == SIM_OK; i++)
        for (size_t j = 0; j < ax[1].n && rc == SIM_OK; j++) {
            char s1[512], s2[512];
            snprintf(s1, sizeof s1, "%s=%s", ax[0].key, ax[0].vals[i]);
            snprintf(s2, sizeof s2, "%s=%s", ax[1].key, ax[1].vals[j]);
            const char *extra[2] = {s1, s2};
            regime_eval ev;
            rc = evaluate(o, extra, 2, &base, db, devnull, &ev);
            if (rc)
                break;
            fprintf(out, "  %-40s %-40s ratio %5.2f  %s\n", s1, s2, ev.ratio,
                    exp_verdict_name(ev.verdict));
            fprintf(f, "%zu\t%zu\t%s\t%s\t%.6g\t%s\t%.4f\t%.4f\n", i, j, ax[0].vals[i],
                    ax[1].vals[j], ev.ratio, exp_verdict_name(ev.verdict), ev.diag.affinity_hit,
                    ev.diag.spread_hit);
            eval_fini(&ev);
        }
    if (devnull)
        fclose(devnull);
    fclose(f);
    eval_fini(&base);
    if (rc)
        goto done;
    /* The figure. */
    char script[1024];
    char outbase[sizeof tsv + 8];
    snprintf(outbase, sizeof outbase, "%s/map", outdir);
    char *sdir = NULL;
    if (exp_plot_script_dir(&sdir)) {
        fprintf(stderr, "crsim: warning: %s; the map data is in %s\n", sim_errmsg(), tsv);
        goto done;
    }
    snprintf(script, sizeof script, "%s/plot-regime-map.gp", sdir);
    free(sdir);
    char *q_data = exp_plot_gpstr(tsv), *q_out = exp_plot_gpstr(outbase),
         *q_x = exp_plot_gpstr(ax[0].key), *q_y = exp_plot_gpstr(ax[1].key);
    const size_t n_vars = strlen(q_data) + strlen(q_out) + strlen(q_x) + strlen(q_y) + 128;
    char *vars = sim_xmalloc(n_vars);
    snprintf(vars, n_vars, "datafile=%s; outbase=%s; xname=%s; yname=%s; nx=%zu; ny=%zu",
             q_data, q_out, q_x, q_y, ax[0].n, ax[1].n);
    free(q_data);
    free(q_out);
    free(q_x);
    free(q_y);
    char *gp = exp_plot_find_gnuplot();
    const int gp_st = gp ? exp_plot_run_gnuplot(gp, vars, script) : -1;
    free(gp);
    free(vars);
    if (gp_st != 0)
        fprintf(stderr, "crsim: warning: gnuplot failed; the map data is in %s\n", tsv);
    else
        fprintf(out, "wrote %s/map.png, %s/map.svg and %s\n", outdir, outdir, tsv);
done:
    sim_cfg_free(vals_schema, &ax[0]);
    sim_cfg_free(vals_schema, &ax[1]);
    return rc;
}

/* ---- the verdict over an identified set (--targets) ---- */

/*
 * Fit the base config to the targets (sim/exp/fit.h), then evaluate the
 * verdict for the best point of every structural alternative within
 * tolerance (the identified set; when none is, for the overall best point,
 * labelled as not consistent), and print the verdict's range.  The fit's
 * database and fitted configs go beside `db` (DB without .db + "-fit.db").
 */
static int run_targets(const regime_opts *o, const char *db, FILE *out)
{
    char fitdb[1200], fitout[1200];
    size_t l = strlen(db);
    int cut = l > 3 && strcmp(db + l - 3, ".db") == 0 ? 3 : 0;
    snprintf(fitdb, sizeof fitdb, "%.*s-fit.db", (int)(l - (size_t)cut), db);
    snprintf(fitout, sizeof fitout, "%.*s-fitted.yaml", (int)(l - (size_t)cut), db);
    exp_fit_result fr = {0};
    exp_fit_opts fo = {.config_path = o->config, .sets = o->sets, .n_set = o->n_set,
                       .targets_path = o->targets, .jobs = o->jobs, .db = fitdb,
                       .out_path = fitout, .quiet = false, .result = &fr};
    FILE *devnull = fopen("/dev/null", "w");
    fprintf(out, "fitting %s to %s (crsim fit; progress on stderr)...\n", o->config, o->targets);
    int rc = exp_fit_run(&fo, devnull ? devnull : out);
    if (rc) {
        if (devnull)
            fclose(devnull);
        exp_fit_result_fini(&fr);
        return rc;
    }
    size_t n_id = 0;
    for (size_t a = 0; a < fr.n_alt; a++)
        n_id += fr.alt[a].identified && fr.alt[a].n_sets;
    fprintf(out, "fit: %zu structural alternatives, %zu consistent with the targets (best point "
            "within tolerance); fit database %s\n", fr.n_alt, n_id, fitdb);
    for (size_t a = 0; a < fr.n_alt; a++)
        fprintf(out, "  %-28s %-12s max |residual| %6.2f  {%s}\n", fr.alt[a].name,
                fr.alt[a].identified ? "consistent" : "rejected", fr.alt[a].best_maxabs,
                fr.alt[a].point ? fr.alt[a].point : "");
    enum exp_verdict v[64];
    const char *vname[64];
    char reason[64][512]; /* copies: ev.reason may point into ev, gone after the loop */
    size_t which[64], n_ev = 0, best_ov[64];
    char best_name[64][64];
    bool none = n_id == 0;
    if (none)
        fprintf(out, "no alternative is consistent with the targets: the verdict below is for "
                "the best point (%s), which is NOT within tolerance\n", fr.alt[fr.best].name);
    for (size_t a = 0; rc == SIM_OK && a < fr.n_alt && n_ev < 64; a++) {
        if (none ? a != fr.best : !(fr.alt[a].identified && fr.alt[a].n_sets))
            continue;
        fprintf(out, "\n== %s {%s}\n", fr.alt[a].name, fr.alt[a].point);
        regime_eval ev;
        rc = evaluate(o, (const char *const *)fr.alt[a].sets, fr.alt[a].n_sets, NULL, db,
                      devnull, &ev);
        if (rc == SIM_OK) {
            print_eval(o, &ev, out);
            which[n_ev] = a;
            v[n_ev] = ev.simulated ? ev.verdict : EXP_TIE;
            snprintf(reason[n_ev], sizeof reason[n_ev], "%s", ev.reason ? ev.reason : "");
            vname[n_ev] = ev.simulated ? exp_verdict_name(ev.verdict) : "tie/lose";
            best_ov[n_ev] = best_router(&ev, o->tie);
            snprintf(best_name[n_ev], sizeof best_name[n_ev], "%s",
                     best_ov[n_ev] < ev.n_pol ? ev.pol[best_ov[n_ev]] : "");
            n_ev++;
        }
        eval_fini(&ev);
    }
    if (rc == SIM_OK && n_ev) {
        size_t n_win = 0, n_lose = 0;
        for (size_t i = 0; i < n_ev; i++) {
            n_win += v[i] == EXP_WIN;
            n_lose += v[i] == EXP_LOSE;
        }
        fprintf(out, "\nverdict range over the identified set: win under %zu of %zu consistent "
                "workload%s, lose under %zu, tie under %zu%s\n", n_win, n_ev,
                n_ev == 1 ? "" : "s", n_lose, n_ev - n_win - n_lose,
                none ? " (no consistent workload: best point only)" : "");
        bool same = n_win == n_ev || n_lose == n_ev || n_win + n_lose == 0;
        if (same)
            fprintf(out, "robust: the same verdict under every consistent workload\n");
        else {
            fprintf(out, "decided by the unidentified structural alternative:");
            for (size_t i = 0; i < n_ev; i++)
                fprintf(out, "%s %s -> %s", i ? ";" : "", fr.alt[which[i]].name, vname[i]);
            fprintf(out, "\n");
        }
        for (size_t i = 0; i < n_ev; i++)
            fprintf(out, "  %s: %s\n", fr.alt[which[i]].name, reason[i]);
        for (size_t i = 0; i < n_ev; i++)
            if (best_name[i][0] && strcmp(best_name[i], "cacheroute"))
                fprintf(out, "best router overall under %s: %s (not cacheroute)\n",
                        fr.alt[which[i]].name, best_name[i]);
    }
    if (devnull)
        fclose(devnull);
    exp_fit_result_fini(&fr);
    return rc;
}

/* ---- command line ---- */

int exp_regime_main(const exp_cli_args *a, FILE *out)
{
    regime_opts o = {.config = a->pos[0], .tie = exp_cli_real(a, "tie", 0.10)};
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o.jobs = (unsigned)exp_cli_int(a, "jobs", ncpu > 0 ? ncpu : 1);
    o.n_seeds = (size_t)exp_cli_int(a, "seeds", 0);
    o.slo = exp_cli_real(a, "slo", 0);
    o.fast = exp_cli_has(a, "fast");
    o.db = exp_cli_str(a, "db", NULL);
    o.outdir = exp_cli_str(a, "out", NULL);
    o.baseline = exp_cli_str(a, "baseline", "flat_lb");
    if (!route_find(o.baseline) || strcmp(o.baseline, "cacheroute") == 0) {
        char names[1024];
        size_t u = 0;
        names[0] = 0;
        for (size_t i = 0; route_names[i] && u + 40 < sizeof names; i++)
            if (strcmp(route_names[i], "cacheroute") != 0)
                u += (size_t)snprintf(names + u, sizeof names - u, "%s%s", u ? ", " : "",
                                      route_names[i]);
        return SIM_ERROR(SIM_EINVAL, "--baseline '%s': %s; expected a registered router other "
                         "than cacheroute (one of: %s)", o.baseline,
                         route_find(o.baseline) ? "cacheroute is what it is compared with"
                                                : "unknown router", names);
    }
    /* A trace carries its own arrival times: --iat would be ignored. */
    if (exp_cli_has(a, "iat") && exp_cli_has(a, "trace"))
        return SIM_ERROR(SIM_EINVAL, "--iat '%s' with --trace '%s': a trace replays its own "
                         "recorded arrival times, so inter-arrival gaps do not apply; expected "
                         "--iat with --rates, --servegen or a synthetic base config only",
                         exp_cli_str(a, "iat", ""), exp_cli_str(a, "trace", ""));
    if (exp_cli_has(a, "grid")) {
        int grc = exp_calib_parse_grid("regime: --grid", exp_cli_str(a, "grid", NULL), &o.grid,
                                       &o.n_grid);
        if (grc)
            return grc;
    }
    const exp_cli_val *map = exp_cli_get(a, "map");
    if (map->count) {
        o.map[0] = map->str;
        o.map[1] = map->str2;
    }
    o.targets = exp_cli_str(a, "targets", NULL);
    if (o.targets && o.map[0])
        return SIM_ERROR(SIM_EINVAL, "--targets '%s' with --map: a map varies the workload the "
                         "fit identifies; expected one of them", o.targets);
    /* The routers the targets observe are simulated too (--targets), so
     * the best router overall can be named; the baseline defaults to the
     * first of them (the router the user runs today) unless --baseline. */
    const char *tpols[16];
    size_t n_tpols = 0;
    if (o.targets) {
        int trc = exp_fit_target_policies(o.targets, tpols, 16, &n_tpols);
        if (trc)
            return trc;
        if (!exp_cli_has(a, "baseline"))
            for (size_t i = 0; i < n_tpols; i++)
                if (strcmp(tpols[i], "cacheroute")) {
                    o.baseline = tpols[i];
                    break;
                }
        o.others = tpols;
        o.n_others = n_tpols;
    }
    /* --set and the workload shorthands become --set lines, in command-line
     * order (a later one overrides an earlier one). */
    const char **sets = sim_xcalloc(a->n_seq * 4 + 8, sizeof *sets);
    char **owned = sim_xcalloc(a->n_seq * 4 + 8, sizeof *owned);
    size_t n_set = 0, n_owned = 0;
    int rc = SIM_OK;
#define OWN(...)                                                             \
    do {                                                                     \
        char b_[2048];                                                       \
        snprintf(b_, sizeof b_, __VA_ARGS__);                                \
        owned[n_owned] = sim_xstrdup(b_);                                    \
        sets[n_set++] = owned[n_owned++];                                    \
    } while (0)
    /* A trace brings its own keys, arrivals and lengths: the base config's
     * (synthetic) workload section is replaced, not merged (its keys would
     * not apply to a trace), before any --set, so none is lost. */
    if (exp_cli_has(a, "trace"))
        OWN("workload={type: trace}");
    for (size_t i = 0; i < a->n_seq; i++) {
        const char *nm = a->seq[i].opt->name, *v = a->seq[i].arg;
        if (strcmp(nm, "set") == 0)
            sets[n_set++] = v;
        else if (strcmp(nm, "rates") == 0 || strcmp(nm, "servegen") == 0) {
            /* The population is the file's: the parametric family's keys
             * go back to their defaults (they would not apply). */
            static const char *const param[] = {"keys.n", "keys.sigma", "keys.fit_gini",
                                                "keys.zipf_s", "keys.zipf_q"};
            OWN("workload.type=synthetic");
            OWN("workload.keys.distribution=%s", nm[0] == 'r' ? "file" : "servegen");
            OWN("workload.keys.file=%s", v);
            OWN("workload.keys.cap=0");
            for (size_t k = 0; k < sizeof param / sizeof *param; k++)
                OWN("workload.%s=%s", param[k], wl_config_default(param[k]));
        } else if (strcmp(nm, "trace") == 0) {
            OWN("workload.trace=%s", v);
        } else if (strcmp(nm, "iat") == 0) {
            OWN("workload.arrival.process=bootstrap");
            OWN("workload.arrival.iat_file=%s", v);
        } else if (strcmp(nm, "prefix-tokens") == 0 || strcmp(nm, "input-tokens") == 0 ||
                   strcmp(nm, "output-tokens") == 0) {
            long n = (long)a->seq[i].i;
            const char *grp = nm[0] == 'p' ? "prefix" : nm[0] == 'i' ? "input" : "output";
            OWN("workload.%s.dist=const", grp);
            OWN("workload.%s.mean=%ld", grp, n);
            OWN("workload.%s.min=1", grp);
            OWN("workload.%s.max=%ld", grp, n);
        }
    }
#undef OWN
    o.sets = sets;
    o.n_set = n_set;
    char dbtmp[256] = "";
    const char *db = o.db;
    if (rc == SIM_OK && !db) {
        snprintf(dbtmp, sizeof dbtmp, "%s/crsim-regime-XXXXXX",
                 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dbtmp))
            rc = SIM_ERROR(SIM_EIO, "cannot create a temporary folder for the run database");
        else
            strcat(dbtmp, "/regime.db");
        db = dbtmp;
    }
    if (rc == SIM_OK && o.map[0]) {
        rc = run_map(&o, db, out);
    } else if (rc == SIM_OK && o.targets) {
        rc = run_targets(&o, db, out);
        if (rc == SIM_OK && o.db)
            fprintf(out, "runs stored in %s\n", o.db);
    } else if (rc == SIM_OK) {
        regime_eval ev;
        FILE *devnull = fopen("/dev/null", "w");
        rc = evaluate(&o, NULL, 0, NULL, db, devnull, &ev);
        if (devnull)
            fclose(devnull);
        if (rc == SIM_OK)
            print_eval(&o, &ev, out);
        eval_fini(&ev);
        if (rc == SIM_OK && o.db)
            fprintf(out, "runs stored in %s\n", o.db);
    }
    if (dbtmp[0]) { /* remove the temporary folder: run and fit databases, fitted configs */
        *strrchr(dbtmp, '/') = '\0';
        DIR *dir = opendir(dbtmp);
        for (struct dirent *e = dir ? readdir(dir) : NULL; e; e = readdir(dir)) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char fp[600];
            snprintf(fp, sizeof fp, "%s/%s", dbtmp, e->d_name);
            unlink(fp);
        }
        if (dir)
            closedir(dir);
        rmdir(dbtmp);
    }
    for (size_t i = 0; i < n_owned; i++)
        free(owned[i]);
    free(owned);
    free(sets);
    free(o.grid);
    return rc;
}
