/*
 * `crsim fit` (fit.h, docs/fit.md): the targets file, the candidate
 * evaluation through exp_run, the Latin-hypercube design, the GSL
 * Nelder-Mead refinement, the identified set and the outputs.
 */
#include "sim/core/number.h"
#include "sim/exp/fit.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "models/routers/route.h"
#include "sim/core/config.h"
#include "sim/core/error.h"
#include "sim/core/fileio.h"
#include "sim/core/wall.h"
#include "sim/exp/calib.h"
#include "sim/exp/exp.h"
#include "sim/exp/setup.h"
#include "sim/exp/store.h"
#include "workloads/client.h"
#include "workloads/describe.h"

/* ---- smoothing ---------------------------------------------------------- */

static bool holds(double m, double slo) { return m <= slo; } /* NaN and +Inf fail */

double exp_fit_capacity_smooth(const double *x, const double *m, size_t n, double slo)
{
    if (n == 0 || !(slo > 0))
        return NAN;
    const double ls = log(slo);
    size_t j = 0;
    while (j < n && holds(m[j], slo))
        j++;
    if (j == n) { /* right-censored */
        double cap = 2 * x[n - 1];
        if (n >= 2 && m[n - 2] > 0 && m[n - 1] > m[n - 2]) {
            double y0 = log(m[n - 2]), y1 = log(m[n - 1]);
            double c = x[n - 1] + (ls - y1) * (x[n - 1] - x[n - 2]) / (y1 - y0);
            cap = c < cap ? c : cap;
        }
        return cap;
    }
    if (j == 0) { /* left-censored */
        if (n >= 2 && isfinite(m[0]) && isfinite(m[1]) && m[0] > 0 && m[1] > m[0]) {
            double y0 = log(m[0]), y1 = log(m[1]);
            double c = x[0] - (y0 - ls) * (x[1] - x[0]) / (y1 - y0);
            return c > 0 ? c : 0;
        }
        return x[0] / 2;
    }
    if (!isfinite(m[j]) || !(m[j - 1] > 0))
        return (x[j - 1] + x[j]) / 2;
    double ya = log(m[j - 1]), yb = log(m[j]);
    return x[j - 1] + (ls - ya) / (yb - ya) * (x[j] - x[j - 1]);
}

/* ---- the targets file --------------------------------------------------- */

/* How a value is compared with its target (docs/fit.md, "Bounds"): equal
 * (residual (sim - target) / tol), at_least (0 when sim >= target, else
 * the same negative residual), at_most (0 when sim <= target). */
enum { SIDE_EQUAL, SIDE_AT_LEAST, SIDE_AT_MOST };
static const char *const side_names[] = {"equal", "at_least", "at_most", NULL};

typedef struct fit_series {
    double *loads;
    size_t n_loads;
    double *values;
    size_t n_values;
    double tol;
    int side;   /* SIDE_* */
} fit_series;

typedef struct fit_captgt {
    double *slos;
    size_t n_slos;
    double *values;
    size_t n_values;
    double tol;
    int metric; /* index into cap_metrics */
    int side;   /* SIDE_* */
} fit_captgt;

/* Targets of one policy (targets.<policy>). */
typedef struct fit_ptargets {
    fit_series hit, ttft, e2e;
    fit_series ach; /* achieved_ratio: achieved requests/s over the offered load */
    fit_captgt cap;
} fit_ptargets;

static const char *const cap_metrics[] = {"ttft_p99", "e2e_p99", NULL};

#define SIDE_KEY(name, OFF, fld)                                                             \
    {.path = name ".side", .type = SIM_CFG_ENUM, .offset = OFF(fld.side),                    \
     .choices = side_names, .def = "equal",                                                  \
     .help = "equal: two-sided; at_least / at_most: a bound, residual 0 on its side"}
#define SERIES_OF(OFF, name, fld, vmin, vmax, vflags, vunit, what)                            \
    {.path = name ".loads", .type = SIM_CFG_DOUBLE_LIST, .offset = OFF(fld.loads),            \
     .count_offset = OFF(fld.n_loads), .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN, \
     .def = "[]", .unit = "requests/s", .help = "offered loads of the observed " what},      \
    {.path = name ".values", .type = SIM_CFG_DOUBLE_LIST, .offset = OFF(fld.values),         \
     .count_offset = OFF(fld.n_values), .min = vmin, .max = vmax, .flags = vflags,           \
     .def = "[]", .unit = vunit, .help = "observed " what ", one per load"},                 \
    {.path = name ".tol", .type = SIM_CFG_DOUBLE, .offset = OFF(fld.tol), .min = 0,           \
     .max = INFINITY, .def = "0", .unit = vunit,                                             \
     .help = "tolerance of every " what " value (> 0 when values are given)"},               \
    SIDE_KEY(name, OFF, fld)
#define PT(f) offsetof(fit_ptargets, f)
#define SERIES(...) SERIES_OF(PT, __VA_ARGS__)

static const sim_cfg_key policy_schema[] = {
    SERIES("hit", hit, 0, 1, 0, "", "served KV hit rate (hit tokens / prompt tokens)"),
    SERIES("ttft_p99", ttft, 0, INFINITY, SIM_CFG_EXCL_MIN, "s", "p99 TTFT"),
    SERIES("e2e_p99", e2e, 0, INFINITY, SIM_CFG_EXCL_MIN, "s", "p99 end-to-end latency"),
    SERIES("achieved_ratio", ach, 0, INFINITY, 0, "",
           "achieved request rate over the offered load (measured completions / measured "
           "send window / load)"),
    {.path = "capacity.slos", .type = SIM_CFG_DOUBLE_LIST, .offset = PT(cap.slos),
     .count_offset = PT(cap.n_slos), .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN,
     .def = "[]", .unit = "s", .help = "SLO thresholds of the observed capacities"},
    {.path = "capacity.values", .type = SIM_CFG_DOUBLE_LIST, .offset = PT(cap.values),
     .count_offset = PT(cap.n_values), .min = 0, .max = INFINITY, .def = "[]",
     .unit = "requests/s", .help = "observed SLO capacities, one per threshold"},
    {.path = "capacity.tol", .type = SIM_CFG_DOUBLE, .offset = PT(cap.tol), .min = 0,
     .max = INFINITY, .def = "0", .unit = "requests/s",
     .help = "tolerance of every capacity (> 0 when values are given)"},
    {.path = "capacity.metric", .type = SIM_CFG_ENUM, .offset = PT(cap.metric),
     .choices = cap_metrics, .def = "ttft_p99", .help = "latency the SLO applies to"},
    SIDE_KEY("capacity", PT, cap),
    {0},
};

/* Router-independent targets (section `workload`): properties of the
 * candidate's request stream, computed without a run (docs/fit.md,
 * "Workload targets"). */
typedef struct fit_wtargets {
    fit_series inf_hit;   /* measured-window infinite-cache hit at loads */
    fit_series adm;       /* admission scale C = R * W (values: 0 or 1 entry; no loads) */
} fit_wtargets;

#define WT(f) offsetof(fit_wtargets, f)
static const sim_cfg_key workload_schema[] = {
    SERIES_OF(WT, "inf_hit", inf_hit, 0, 1, 0, "",
              "measured-window infinite-cache hit rate (the bound on any router's hit)"),
    {.path = "admission_scale.values", .type = SIM_CFG_DOUBLE_LIST, .offset = WT(adm.values),
     .count_offset = WT(adm.n_values), .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN,
     .def = "[]", .unit = "keys",
     .help = "observed admission scale C = R * W (destinations x warm slots from the "
             "footprint of crsim calibrate), one value"},
    {.path = "admission_scale.tol", .type = SIM_CFG_DOUBLE, .offset = WT(adm.tol), .min = 0,
     .max = INFINITY, .def = "0", .unit = "keys",
     .help = "tolerance of the admission scale (> 0 when a value is given)"},
    SIDE_KEY("admission_scale", WT, adm),
    {0},
};

/* The top level of the targets file. */
typedef struct fit_top {
    double *loads;
    size_t n_loads;
    int64_t *seeds;
    size_t n_seeds;
    char **set;
    size_t n_set;
    char **free;
    size_t n_free;
    char **alts;
    size_t n_alts;
    int64_t budget;
    int64_t refine;
    bool prune;
    double screen_max;     /* screen.max_residual (0: no screening) */
    int64_t *screen_seeds; /* screen.seeds ([]: the fit's seeds) */
    size_t n_screen_seeds;
    char **screen_set;     /* screen.set */
    size_t n_screen_set;
    int64_t screen_nearest; /* screen.refine_nearest */
} fit_top;

#define TP(f) offsetof(fit_top, f)
static const sim_cfg_key top_schema[] = {
    {.path = "loads", .type = SIM_CFG_DOUBLE_LIST, .offset = TP(loads),
     .count_offset = TP(n_loads), .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN,
     .def = "[]", .unit = "requests/s",
     .help = "load grid of every candidate (with every target load added); capacity "
             "targets need 2 or more"},
    {.path = "seeds", .type = SIM_CFG_INT_LIST, .offset = TP(seeds), .count_offset = TP(n_seeds),
     .min = 0, .max = 9007199254740992.0, .min_len = 1, .def = "[1]",
     .help = "run seeds of every candidate (common random numbers)"},
    {.path = "set", .type = SIM_CFG_STRING_LIST, .offset = TP(set), .count_offset = TP(n_set),
     .def = "[]", .help = "KEY=VALUE overrides of the base config for every candidate"},
    {.path = "free", .type = SIM_CFG_STRING_LIST, .offset = TP(free),
     .count_offset = TP(n_free), .def = "[]",
     .help = "free parameters: KEY=[LO, HI], KEY=log[LO, HI] or KEY=in[V1, V2, ...]"},
    {.path = "alternatives", .type = SIM_CFG_STRING_LIST, .offset = TP(alts),
     .count_offset = TP(n_alts), .def = "[]",
     .help = "structural alternatives: \"NAME KEY=VALUE KEY=VALUE ...\" (none: the base)"},
    {.path = "budget", .type = SIM_CFG_INT, .offset = TP(budget), .min = 1, .max = 100000,
     .def = "16", .unit = "candidates",
     .help = "coarse design size (Latin hypercube points x discrete cells, at least one per "
             "cell)"},
    {.path = "refine", .type = SIM_CFG_INT, .offset = TP(refine), .min = 0, .max = 100000,
     .def = "24", .unit = "candidates",
     .help = "Nelder-Mead evaluations per structural alternative (0: coarse design only)"},
    {.path = "prune", .type = SIM_CFG_BOOL, .offset = TP(prune), .def = "true",
     .help = "skip a candidate's runs that no target reads: loads above a series' first "
             "failure of the largest SLO, but the targets' loads and the two lowest (the "
             "objective is unchanged; false: every load of every series is run and stored)"},
    {.path = "screen.max_residual", .type = SIM_CFG_DOUBLE, .offset = TP(screen_max), .min = 0,
     .max = INFINITY, .def = "0",
     .help = "screening (0: none): a coarse candidate whose workload targets miss by more "
             "than this many tolerances is not run; an alternative whose best coarse "
             "candidate misses any target by more is not refined"},
    {.path = "screen.refine_nearest", .type = SIM_CFG_INT, .offset = TP(screen_nearest),
     .min = 0, .max = 1000, .def = "0", .unit = "alternatives",
     .help = "also refine this many alternatives nearest the targets (lowest largest "
             "|residual| of their best screening candidate, then objective) when they miss "
             "by more than screen.max_residual (0: none)"},
    {.path = "screen.seeds", .type = SIM_CFG_INT_LIST, .offset = TP(screen_seeds),
     .count_offset = TP(n_screen_seeds), .min = 0, .max = 9007199254740992.0, .def = "[]",
     .help = "run seeds of the coarse (screening) candidates ([]: `seeds`)"},
    {.path = "screen.set", .type = SIM_CFG_STRING_LIST, .offset = TP(screen_set),
     .count_offset = TP(n_screen_set), .def = "[]",
     .help = "KEY=VALUE overrides of the coarse (screening) candidates only, after `set` "
             "(e.g. a shorter workload.duration_s)"},
    {0},
};

enum { PAR_LIN, PAR_LOG, PAR_DISC };

typedef struct fit_param {
    char *key;
    int kind;
    double lo, hi;  /* continuous */
    bool integer;   /* an integer key: values are rounded */
    char **vals;    /* discrete */
    size_t n_vals;
    size_t owner;   /* the alternative it belongs to, or SIZE_MAX: every one */
    char loc[256];
} fit_param;

typedef struct fit_alt {
    char *name;
    char **sets;
    size_t n_sets;
    char **free;    /* its own free parameters, "KEY=RANGE" (parsed into fit.par) */
    size_t n_free;
    bool screened;  /* rejected at screening: not refined */
    bool nearest;   /* beyond screen.max_residual but refined (screen.refine_nearest) */
    char loc[256];
} fit_alt;

/* One evaluated candidate. */
typedef struct fit_cand {
    size_t alt;
    char *point;     /* the free parameters' overrides, "; "-joined */
    const char *stage;
    double obj, maxabs;
    bool identified;
    int64_t exp_id;
    int64_t cand_id; /* its fit_candidates row */
    bool screened_out; /* screening: its workload targets missed, nothing run */
    exp_store_fit_residual *res; /* n_res entries; policy/metric strings static or fit-owned */
    size_t n_res;
    char **sets;     /* alt + param overrides (owned) */
    size_t n_sets;
} fit_cand;

typedef struct fit {
    const exp_fit_opts *o;
    sim_cfgdoc *doc;
    fit_top top;
    fit_ptargets pt[64];
    fit_wtargets wt;       /* targets.workload */
    size_t n_wt;           /* workload target values */
    size_t n_ach;          /* achieved_ratio target values, all policies */
    const char *pol[64];   /* policies with targets, registry order */
    size_t pol_of[64];     /* their index into pt */
    size_t n_pol;
    double *grid;
    size_t n_grid;
    double *slos;
    size_t n_slos;
    fit_param *par;
    size_t n_par, n_cont;
    fit_alt *alt;
    size_t n_alt;
    char db[1024];
    char out_path[1100];
    char name[160];
    char **fixed;          /* the fit's experiment overrides (owned) */
    size_t n_fixed;
    bool prune_on;         /* candidates run with experiment.prune (plan_prune) */
    int prune_metric;      /* the capacity targets' metric (index into cap_metrics) */
    double *keep;          /* loads every series runs under pruning (owned) */
    size_t n_keep;
    int64_t fit_id;
    fit_cand *cand;
    size_t n_cand, cap_cand;
    size_t planned;
    double t0;
    FILE *devnull;
    int err;               /* first evaluation error (Nelder-Mead callback) */
    /* Nelder-Mead state */
    size_t nm_alt;
    const size_t *nm_disc;
    size_t nm_evals;
    size_t nm_map[64];     /* Nelder-Mead coordinate -> continuous parameter */
    size_t nm_d;
} fit;

static void loc_of(const fit *f, const char *path, const char *item, char *buf, size_t n)
{
    if (!sim_cfgdoc_locate(f->doc, path, item, buf, n))
        snprintf(buf, n, "%s", f->o->targets_path);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

static void strs_free(char **s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

/* Parse "[a, b, ...]" (the text after KEY= and an optional word) into
 * new strings. */
static int split_list(const char *text, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t len = strlen(text);
    if (len < 2 || text[0] != '[' || text[len - 1] != ']')
        return -1;
    char *buf = sim_xstrdup(text + 1);
    buf[len - 2] = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *t = trim(tok);
        if (!*t) { /* an empty item: "[1, , 2]", "[1, 2, ]" */
            free(buf);
            strs_free(*out, *n);
            *out = NULL;
            *n = 0;
            return -1;
        }
        *out = sim_xrealloc(*out, (*n + 1) * sizeof **out);
        (*out)[(*n)++] = sim_xstrdup(t);
    }
    free(buf);
    return *n ? 0 : -1;
}

static int parse_real(const char *s, double *v)
{
    return sim_num_real(s, -INFINITY, INFINITY, v) ? 0 : -1; /* decimal only */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void add_unique(double **arr, size_t *n, const double *v, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        bool dup = false;
        for (size_t j = 0; j < *n; j++)
            dup |= (*arr)[j] == v[i];
        if (!dup) {
            *arr = sim_xrealloc(*arr, (*n + 1) * sizeof **arr);
            (*arr)[(*n)++] = v[i];
        }
    }
}

/* Whether candidates can skip runs, and which loads they always run
 * (docs/fit.md, "Runs a candidate skips").  A capacity target reads a
 * series only up to its first failing load (exp_fit_capacity_smooth; the
 * two lowest loads when it fails at the lowest), a hit or p99 target only
 * its own loads; so with experiment.prune (which skips the loads above a
 * series' first failure of the largest SLO, in ascending order, whatever
 * --jobs) and these loads kept, every value the objective reads is the
 * same run as without pruning.  Needs one SLO metric for the whole
 * experiment: every capacity target must use the same one. */
static void plan_prune(fit *f)
{
    f->prune_on = false;
    if (!f->top.prune || f->n_slos == 0)
        return;
    int metric = -1;
    for (size_t p = 0; p < f->n_pol; p++) {
        const fit_ptargets *t = &f->pt[f->pol_of[p]];
        if (t->cap.n_values == 0)
            continue;
        if (metric >= 0 && metric != t->cap.metric)
            return;
        metric = t->cap.metric;
    }
    if (metric < 0)
        return;
    for (size_t p = 0; p < f->n_pol; p++) {
        const fit_ptargets *t = &f->pt[f->pol_of[p]];
        add_unique(&f->keep, &f->n_keep, t->hit.loads, t->hit.n_loads);
        add_unique(&f->keep, &f->n_keep, t->ttft.loads, t->ttft.n_loads);
        add_unique(&f->keep, &f->n_keep, t->e2e.loads, t->e2e.n_loads);
        add_unique(&f->keep, &f->n_keep, t->ach.loads, t->ach.n_loads);
    }
    add_unique(&f->keep, &f->n_keep, f->grid, f->n_grid < 2 ? f->n_grid : 2);
    qsort(f->keep, f->n_keep, sizeof *f->keep, cmp_double);
    f->prune_on = true;
    f->prune_metric = metric;
}

/* The fit's overrides of the candidate's experiment: the targets' policies,
 * load grid, seeds, SLOs, database and name, and pruning (plan_prune). */
static void make_fixed(fit *f)
{
    char buf[8192];
    size_t u;
    plan_prune(f);
    f->fixed = sim_xcalloc(12, sizeof *f->fixed);
    if (f->n_pol == 0) /* workload targets only: nothing is run */
        return;
    u = (size_t)snprintf(buf, sizeof buf, "experiment.policies=[");
    for (size_t i = 0; i < f->n_pol; i++)
        u += (size_t)snprintf(buf + u, sizeof buf - u, "%s%s", i ? ", " : "", f->pol[i]);
    snprintf(buf + u, sizeof buf - u, "]");
    f->fixed[f->n_fixed++] = sim_xstrdup(buf);
    u = (size_t)snprintf(buf, sizeof buf, "experiment.rates=[");
    for (size_t i = 0; i < f->n_grid && u < sizeof buf - 32; i++)
        u += (size_t)snprintf(buf + u, sizeof buf - u, "%s%.17g", i ? ", " : "", f->grid[i]);
    snprintf(buf + u, sizeof buf - u, "]");
    f->fixed[f->n_fixed++] = sim_xstrdup(buf);
    u = (size_t)snprintf(buf, sizeof buf, "experiment.seeds=[");
    for (size_t i = 0; i < f->top.n_seeds && u < sizeof buf - 32; i++)
        u += (size_t)snprintf(buf + u, sizeof buf - u, "%s%lld", i ? ", " : "",
                              (long long)f->top.seeds[i]);
    snprintf(buf + u, sizeof buf - u, "]");
    f->fixed[f->n_fixed++] = sim_xstrdup(buf);
    if (f->n_slos) {
        u = (size_t)snprintf(buf, sizeof buf, "experiment.slos=[");
        for (size_t i = 0; i < f->n_slos && u < sizeof buf - 32; i++)
            u += (size_t)snprintf(buf + u, sizeof buf - u, "%s%.17g", i ? ", " : "", f->slos[i]);
        snprintf(buf + u, sizeof buf - u, "]");
        f->fixed[f->n_fixed++] = sim_xstrdup(buf);
    }
    snprintf(buf, sizeof buf, "experiment.db=%s", f->db);
    f->fixed[f->n_fixed++] = sim_xstrdup(buf);
    snprintf(buf, sizeof buf, "experiment.name=%s", f->name);
    f->fixed[f->n_fixed++] = sim_xstrdup(buf);
    if (f->prune_on) {
        /* The report rate always runs too: make it a kept load. */
        f->fixed[f->n_fixed++] = sim_xstrdup("experiment.prune=true");
        snprintf(buf, sizeof buf, "experiment.slo_metric=%s", cap_metrics[f->prune_metric]);
        f->fixed[f->n_fixed++] = sim_xstrdup(buf);
        snprintf(buf, sizeof buf, "experiment.report_rate=%.17g", f->keep[f->n_keep - 1]);
        f->fixed[f->n_fixed++] = sim_xstrdup(buf);
    } else {
        f->fixed[f->n_fixed++] = sim_xstrdup("experiment.prune=false");
    }
    f->fixed[f->n_fixed++] = sim_xstrdup("experiment.sweep=[]");
}

/* The sets a candidate's config is derived from (after the base's --set):
 * targets' set, `extra`, then the fit's fixed overrides.  Caller frees
 * the array (not the strings). */
static const char **all_sets(const fit *f, char *const *extra, size_t n_extra, size_t *n)
{
    size_t k = f->top.n_set + n_extra + f->n_fixed, u = 0;
    const char **s = sim_xcalloc(k + 1, sizeof *s);
    for (size_t i = 0; i < f->top.n_set; i++)
        s[u++] = f->top.set[i];
    for (size_t i = 0; i < n_extra; i++)
        s[u++] = extra[i];
    for (size_t i = 0; i < f->n_fixed; i++)
        s[u++] = f->fixed[i];
    *n = u;
    return s;
}

/* Check that the overrides `extra` derive a valid config of the fit;
 * otherwise SIM_EINVAL "LOC: WHAT: <the config error>". */
static int check_derive(const fit *f, char *const *extra, size_t n_extra, const char *loc,
                        const char *what)
{
    size_t n = 0;
    const char **s = all_sets(f, extra, n_extra, &n);
    const exp_config_src src = {.path = f->o->config_path, .sets = f->o->sets,
                                .n_set = f->o->n_set};
    exp_config c;
    int rc = exp_config_derive(&src, s, n, &c);
    free(s);
    exp_config_fini(&c);
    if (rc == SIM_OK)
        return SIM_OK;
    char m[2048];
    snprintf(m, sizeof m, "%s", sim_errmsg());
    return SIM_ERROR(SIM_EINVAL, "%s: %s: %s", loc, what, m);
}

/* Check one value of a free parameter; one of an alternative (owner !=
 * SIZE_MAX) with that alternative's overrides applied first, as its
 * candidates are (a client key free under a closed-loop alternative). */
static int check_value(const fit *f, size_t owner, const char *key, const char *val,
                       const char *loc)
{
    char as[1024];
    snprintf(as, sizeof as, "%s=%s", key, val);
    size_t na = owner == SIZE_MAX ? 0 : f->alt[owner].n_sets;
    char **ex = sim_xcalloc(na + 1, sizeof *ex);
    for (size_t i = 0; i < na; i++)
        ex[i] = f->alt[owner].sets[i];
    ex[na] = as;
    char what[600];
    snprintf(what, sizeof what, "free parameter '%s' = %s", key, val);
    int rc = check_derive(f, ex, na + 1, loc, what);
    free(ex);
    return rc;
}

static void fmt_value(const fit_param *p, double v, char *buf, size_t n)
{
    if (p->integer)
        snprintf(buf, n, "%.0f", round(v));
    else
        snprintf(buf, n, "%.6g", v);
}

static int parse_param(fit *f, const char *spec, size_t owner, const char *loc, fit_param *p)
{
    memset(p, 0, sizeof *p);
    p->owner = owner;
    if (loc)
        snprintf(p->loc, sizeof p->loc, "%s", loc);
    else
        loc_of(f, "free", spec, p->loc, sizeof p->loc);
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        return SIM_ERROR(SIM_EINVAL,
                         "%s: free parameter '%s'; expected KEY=[LO, HI], KEY=log[LO, HI] or "
                         "KEY=in[V1, V2, ...]", p->loc, spec);
    char keybuf[512];
    snprintf(keybuf, sizeof keybuf, "%.*s", (int)(eq - spec), spec);
    p->key = sim_xstrdup(trim(keybuf));
    const char *rest = eq + 1;
    while (isspace((unsigned char)*rest))
        rest++;
    char **items = NULL;
    size_t n = 0;
    if (strncmp(rest, "in[", 3) == 0) {
        p->kind = PAR_DISC;
        rest += 2;
    } else if (strncmp(rest, "log[", 4) == 0) {
        p->kind = PAR_LOG;
        rest += 3;
    } else {
        p->kind = PAR_LIN;
    }
    if (split_list(rest, &items, &n))
        return SIM_ERROR(SIM_EINVAL,
                         "%s: free parameter '%s': range '%s'; expected [LO, HI], log[LO, HI] "
                         "or in[V1, V2, ...]", p->loc, p->key, eq + 1);
    if (p->kind == PAR_DISC) {
        p->vals = items;
        p->n_vals = n;
        for (size_t i = 0; i < n; i++) {
            int rc = check_value(f, p->owner, p->key, items[i], p->loc);
            if (rc)
                return rc;
        }
        return SIM_OK;
    }
    int bad = n != 2 || parse_real(items[0], &p->lo) || parse_real(items[1], &p->hi);
    strs_free(items, n);
    if (bad)
        return SIM_ERROR(SIM_EINVAL,
                         "%s: free parameter '%s': range '%s'; expected two finite numbers "
                         "[LO, HI]", p->loc, p->key, eq + 1);
    if (!(p->lo < p->hi))
        return SIM_ERROR(SIM_EINVAL,
                         "%s: free parameter '%s': range lo %g >= hi %g; expected LO < HI",
                         p->loc, p->key, p->lo, p->hi);
    if (p->kind == PAR_LOG && !(p->lo > 0))
        return SIM_ERROR(SIM_EINVAL,
                         "%s: free parameter '%s': log range needs LO > 0 (is %g)", p->loc,
                         p->key, p->lo);
    /* An integer key rejects a fractional value: then the parameter
     * is integer and its values are rounded. */
    char lo[64], hi[64], mid[64];
    snprintf(lo, sizeof lo, "%.17g", p->lo);
    snprintf(hi, sizeof hi, "%.17g", p->hi);
    snprintf(mid, sizeof mid, "%.17g", floor(p->lo) + 0.5);
    int rc = check_value(f, p->owner, p->key, lo, p->loc);
    if (rc == SIM_OK)
        rc = check_value(f, p->owner, p->key, hi, p->loc);
    if (rc)
        return rc;
    if (check_value(f, p->owner, p->key, mid, p->loc) != SIM_OK)
        p->integer = true;
    return SIM_OK;
}

static int parse_alt(fit *f, const char *spec, fit_alt *a)
{
    memset(a, 0, sizeof *a);
    loc_of(f, "alternatives", spec, a->loc, sizeof a->loc);
    /* Tokens are separated by blanks outside brackets, so a range
     * "KEY=log[LO, HI]" is one token. */
    char *buf = sim_xstrdup(spec);
    for (char *c = buf; *c;) {
        while (*c == ' ' || *c == '\t')
            c++;
        if (!*c)
            break;
        char *tok = c;
        int depth = 0;
        for (; *c && (depth > 0 || (*c != ' ' && *c != '\t')); c++)
            depth += *c == '[' ? 1 : *c == ']' ? -1 : 0;
        if (*c)
            *c++ = 0;
        if (!a->name) {
            a->name = sim_xstrdup(tok);
            continue;
        }
        const char *eq = strchr(tok, '=');
        if (!eq || tok[0] == '=') {
            char t[256];
            snprintf(t, sizeof t, "%s", tok);
            free(buf);
            return SIM_ERROR(SIM_EINVAL,
                             "%s: alternative '%s': '%s' is not KEY=VALUE or KEY=RANGE; expected "
                             "\"NAME KEY=VALUE KEY=[LO, HI] ...\"", a->loc, a->name, t);
        }
        /* A range value makes the key a free parameter of this alternative. */
        const char *v = eq + 1;
        bool range = v[0] == '[' || strncmp(v, "log[", 4) == 0 || strncmp(v, "in[", 3) == 0;
        if (range) {
            a->free = sim_xrealloc(a->free, (a->n_free + 1) * sizeof *a->free);
            a->free[a->n_free++] = sim_xstrdup(tok);
        } else {
            a->sets = sim_xrealloc(a->sets, (a->n_sets + 1) * sizeof *a->sets);
            a->sets[a->n_sets++] = sim_xstrdup(tok);
        }
    }
    free(buf);
    if (!a->name)
        return SIM_ERROR(SIM_EINVAL, "%s: empty alternative; expected \"NAME KEY=VALUE ...\"",
                         a->loc);
    for (const char *c = a->name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
            return SIM_ERROR(SIM_EINVAL,
                             "%s: alternative name '%s'; expected letters, digits, _ - .",
                             a->loc, a->name);
    char what[300];
    snprintf(what, sizeof what, "alternative '%s'", a->name);
    return check_derive(f, a->sets, a->n_sets, a->loc, what);
}

/* Check one series of policy `p`: equal lengths and tol > 0. */
static int check_series(fit *f, const char *p, const char *name, size_t n_at, size_t n_val,
                        double tol)
{
    char path[256], loc[300];
    if (n_at != n_val) {
        snprintf(path, sizeof path, "targets.%s.%s.values", p, name);
        loc_of(f, path, NULL, loc, sizeof loc);
        return SIM_ERROR(SIM_EINVAL, "%s: key '%s' has %zu values for %zu %s; expected one "
                         "per entry", loc, path, n_val, n_at,
                         strcmp(name, "capacity") ? "loads" : "thresholds");
    }
    if (n_val && !(tol > 0)) {
        snprintf(path, sizeof path, "targets.%s.%s.tol", p, name);
        if (!sim_cfgdoc_locate(f->doc, path, NULL, loc, sizeof loc)) {
            snprintf(path, sizeof path, "targets.%s.%s", p, name);
            loc_of(f, path, NULL, loc, sizeof loc);
            return SIM_ERROR(SIM_EINVAL, "%s: missing key '%s.tol'; expected a tolerance > 0",
                             loc, path);
        }
        return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is %g; expected a tolerance > 0", loc, path,
                         tol);
    }
    return SIM_OK;
}

static void fit_fini(fit *f)
{
    sim_cfg_free(top_schema, &f->top);
    sim_cfg_free(workload_schema, &f->wt);
    for (size_t i = 0; route_names[i] && i < 64; i++)
        sim_cfg_free(policy_schema, &f->pt[i]);
    sim_cfgdoc_destroy(f->doc);
    free(f->grid);
    free(f->slos);
    free(f->keep);
    for (size_t i = 0; i < f->n_par; i++) {
        free(f->par[i].key);
        strs_free(f->par[i].vals, f->par[i].n_vals);
    }
    free(f->par);
    for (size_t i = 0; i < f->n_alt; i++) {
        free(f->alt[i].name);
        strs_free(f->alt[i].sets, f->alt[i].n_sets);
        strs_free(f->alt[i].free, f->alt[i].n_free);
    }
    free(f->alt);
    strs_free(f->fixed, f->n_fixed);
    for (size_t i = 0; i < f->n_cand; i++) {
        free(f->cand[i].point);
        free(f->cand[i].res);
        strs_free(f->cand[i].sets, f->cand[i].n_sets);
    }
    free(f->cand);
    if (f->devnull)
        fclose(f->devnull);
}

/* sim_cfgdoc_load of a targets file, whose open errors name it as one
 * ("PATH: cannot open targets file: ...; expected a readable YAML targets
 * file (docs/fit.md)"), not as a config. */
static int load_targets_doc(const char *path, sim_cfgdoc **doc)
{
    FILE *t;
    int rc = sim_file_open(path, "targets file", "a readable YAML targets file (docs/fit.md)",
                           &t);
    if (rc)
        return rc;
    fclose(t);
    return sim_cfgdoc_load(path, doc);
}

static int load_targets(fit *f)
{
    const exp_fit_opts *o = f->o;
    int rc = load_targets_doc(o->targets_path, &f->doc);
    if (rc)
        return rc;
    size_t n_route = 0;
    while (route_names[n_route])
        n_route++;
    if (n_route > 64)
        n_route = 64;
    sim_cfg_section *secs = sim_xcalloc(n_route + 2, sizeof *secs);
    char (*pfx)[128] = sim_xcalloc(n_route, sizeof *pfx);
    secs[0] = (sim_cfg_section){.prefix = NULL, .schema = top_schema, .out = &f->top};
    for (size_t i = 0; i < n_route; i++) {
        snprintf(pfx[i], sizeof pfx[i], "targets.%s", route_names[i]);
        secs[i + 1] = (sim_cfg_section){.prefix = pfx[i], .schema = policy_schema,
                                        .out = &f->pt[i]};
    }
    secs[n_route + 1] = (sim_cfg_section){.prefix = "targets.workload",
                                          .schema = workload_schema, .out = &f->wt};
    rc = sim_cfg_bind_sections(f->doc, secs, n_route + 2);
    free(secs);
    free(pfx);
    if (rc)
        return rc;
    /* Policies with targets, and their checks. */
    for (size_t i = 0; i < n_route; i++) {
        const fit_ptargets *t = &f->pt[i];
        const char *p = route_names[i];
        if ((rc = check_series(f, p, "hit", t->hit.n_loads, t->hit.n_values, t->hit.tol)) ||
            (rc = check_series(f, p, "ttft_p99", t->ttft.n_loads, t->ttft.n_values,
                               t->ttft.tol)) ||
            (rc = check_series(f, p, "e2e_p99", t->e2e.n_loads, t->e2e.n_values, t->e2e.tol)) ||
            (rc = check_series(f, p, "achieved_ratio", t->ach.n_loads, t->ach.n_values,
                               t->ach.tol)) ||
            (rc = check_series(f, p, "capacity", t->cap.n_slos, t->cap.n_values, t->cap.tol)))
            return rc;
        if (t->hit.n_values + t->ttft.n_values + t->e2e.n_values + t->ach.n_values +
                t->cap.n_values ==
            0)
            continue;
        f->n_ach += t->ach.n_values;
        f->pol[f->n_pol] = p;
        f->pol_of[f->n_pol++] = i;
        add_unique(&f->grid, &f->n_grid, t->hit.loads, t->hit.n_loads);
        add_unique(&f->grid, &f->n_grid, t->ttft.loads, t->ttft.n_loads);
        add_unique(&f->grid, &f->n_grid, t->e2e.loads, t->e2e.n_loads);
        add_unique(&f->grid, &f->n_grid, t->ach.loads, t->ach.n_loads);
        add_unique(&f->slos, &f->n_slos, t->cap.slos, t->cap.n_slos);
    }
    /* Router-independent targets. */
    {
        const fit_wtargets *w = &f->wt;
        if ((rc = check_series(f, "workload", "inf_hit", w->inf_hit.n_loads,
                               w->inf_hit.n_values, w->inf_hit.tol)) ||
            (rc = check_series(f, "workload", "admission_scale", w->adm.n_values,
                               w->adm.n_values, w->adm.tol)))
            return rc;
        if (w->adm.n_values > 1) {
            char loc[300];
            loc_of(f, "targets.workload.admission_scale.values", NULL, loc, sizeof loc);
            return SIM_ERROR(SIM_EINVAL, "%s: key 'targets.workload.admission_scale.values' has "
                             "%zu values; expected one", loc, w->adm.n_values);
        }
        f->n_wt = w->inf_hit.n_values + w->adm.n_values;
    }
    if (f->n_pol == 0 && f->n_wt == 0)
        return SIM_ERROR(SIM_EINVAL, "%s: no targets; expected targets.POLICY.hit, .ttft_p99, "
                         ".e2e_p99, .achieved_ratio or .capacity, or "
                         "targets.workload.inf_hit or "
                         ".admission_scale, with values", o->targets_path);
    add_unique(&f->grid, &f->n_grid, f->top.loads, f->top.n_loads);
    if (f->n_grid) /* qsort's array may not be NULL, even when empty (UBSan) */
        qsort(f->grid, f->n_grid, sizeof *f->grid, cmp_double);
    if (f->n_slos)
        qsort(f->slos, f->n_slos, sizeof *f->slos, cmp_double);
    if (f->n_slos && f->n_grid < 2) {
        char loc[300];
        loc_of(f, "loads", NULL, loc, sizeof loc);
        return SIM_ERROR(SIM_EINVAL, "%s: capacity targets need a load grid of 2 or more loads "
                         "(key 'loads'); have %zu", loc, f->n_grid);
    }
    /* The base config (with the fit's overrides) must load: names the db. */
    {
        const exp_config_src src = {.path = o->config_path, .sets = o->sets, .n_set = o->n_set};
        exp_config c;
        const char *const *ts = (const char *const *)f->top.set;
        /* The base config's own errors name it (or the command's --set);
         * an error from the targets' `set` names the targets file. */
        if ((rc = exp_config_derive(&src, NULL, 0, &c)))
            return rc;
        exp_config_fini(&c);
        if ((rc = exp_config_derive(&src, ts, f->top.n_set, &c))) {
            char m[2048], loc[300];
            snprintf(m, sizeof m, "%s", sim_errmsg());
            loc_of(f, "set", NULL, loc, sizeof loc);
            return SIM_ERROR(rc, "%s: key 'set': %s", loc, m);
        }
        snprintf(f->name, sizeof f->name, "%.120s-fit", c.name);
        const bool by_count = c.warmup_requests > 0 || c.warmup_share > 0;
        exp_config_fini(&c);
        if (f->n_ach && by_count) /* checked again per candidate (run_warmup) */
            return SIM_ERROR(SIM_EINVAL, "%s: achieved_ratio targets need a warm-up by time "
                             "(experiment.warmup_s); the config sets "
                             "experiment.warmup_requests or warmup_share", o->targets_path);
    }
    if (o->db)
        snprintf(f->db, sizeof f->db, "%s", o->db);
    else
        snprintf(f->db, sizeof f->db, "results/%s.db", f->name);
    if (o->out_path)
        snprintf(f->out_path, sizeof f->out_path, "%s", o->out_path);
    else {
        size_t l = strlen(f->db);
        int cut = l > 3 && strcmp(f->db + l - 3, ".db") == 0 ? 3 : 0;
        snprintf(f->out_path, sizeof f->out_path, "%.*s-fitted.yaml", (int)(l - (size_t)cut),
                 f->db);
    }
    make_fixed(f);
    if ((rc = check_derive(f, NULL, 0, o->targets_path, "the fit's base config")))
        return rc;
    /* Structural alternatives (none: the base config itself). */
    f->alt = sim_xcalloc(f->top.n_alts + 1, sizeof *f->alt);
    if (f->top.n_alts == 0) {
        f->alt[0].name = sim_xstrdup("base");
        f->n_alt = 1;
    }
    for (size_t i = 0; i < f->top.n_alts; i++) {
        fit_alt *a = &f->alt[f->n_alt];
        rc = parse_alt(f, f->top.alts[i], a);
        f->n_alt++;
        if (rc)
            return rc;
        for (size_t j = 0; j + 1 < f->n_alt; j++)
            if (strcmp(f->alt[j].name, a->name) == 0)
                return SIM_ERROR(SIM_EINVAL, "%s: alternative '%s' given twice", a->loc,
                                 a->name);
    }
    /* Free parameters: the global ones (`free`) and each alternative's own
     * (its KEY=RANGE tokens), continuous first (Nelder-Mead coordinates),
     * then discrete, each checked against the config. */
    size_t n_spec = f->top.n_free;
    for (size_t a = 0; a < f->n_alt; a++)
        n_spec += f->alt[a].n_free;
    f->par = sim_xcalloc(n_spec + 1, sizeof *f->par);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n_spec; i++) {
            size_t owner = SIZE_MAX, k = i;
            const char *spec, *loc = NULL;
            if (k < f->top.n_free)
                spec = f->top.free[k];
            else {
                k -= f->top.n_free;
                owner = 0;
                while (k >= f->alt[owner].n_free)
                    k -= f->alt[owner++].n_free;
                spec = f->alt[owner].free[k];
                loc = f->alt[owner].loc;
            }
            fit_param p;
            if ((rc = parse_param(f, spec, owner, loc, &p))) {
                free(p.key);
                strs_free(p.vals, p.n_vals);
                return rc;
            }
            if ((p.kind == PAR_DISC) == (pass == 1)) {
                for (size_t j = 0; j < f->n_par; j++)
                    if (strcmp(f->par[j].key, p.key) == 0 &&
                        (f->par[j].owner == SIZE_MAX || owner == SIZE_MAX ||
                         f->par[j].owner == owner)) {
                        rc = SIM_ERROR(SIM_EINVAL, "%s: free parameter '%s' given twice%s",
                                       p.loc, p.key,
                                       owner == f->par[j].owner ? ""
                                                                : " (in `free` and in an "
                                                                  "alternative)");
                        free(p.key);
                        strs_free(p.vals, p.n_vals);
                        return rc;
                    }
                if (f->n_par >= 64) {
                    rc = SIM_ERROR(SIM_EINVAL, "%s: more than 64 free parameters", p.loc);
                    free(p.key);
                    strs_free(p.vals, p.n_vals);
                    return rc;
                }
                f->par[f->n_par++] = p;
                if (pass == 0)
                    f->n_cont++;
            } else {
                free(p.key);
                strs_free(p.vals, p.n_vals);
            }
        }
    return SIM_OK;
}

/* ---- evaluating a candidate --------------------------------------------- */

static double residual_of(double sim, double target, double tol, int side)
{
    if (!isfinite(sim))
        return EXP_FIT_RESIDUAL_NONFINITE;
    double r = (sim - target) / tol;
    if ((side == SIDE_AT_LEAST && r > 0) || (side == SIDE_AT_MOST && r < 0))
        return 0;
    return r;
}

/* Metric names of a residual row: the metric, or for a bound the metric
 * with ">=" / "<=" (static strings). */
static const char *side_metric(const char *metric, int side)
{
    static const char *const tab[][3] = {
        {"hit", "hit>=", "hit<="},
        {"ttft_p99", "ttft_p99>=", "ttft_p99<="},
        {"e2e_p99", "e2e_p99>=", "e2e_p99<="},
        {"achieved_ratio", "achieved_ratio>=", "achieved_ratio<="},
        {"capacity_ttft_p99", "capacity_ttft_p99>=", "capacity_ttft_p99<="},
        {"capacity_e2e_p99", "capacity_e2e_p99>=", "capacity_e2e_p99<="},
        {"inf_hit", "inf_hit>=", "inf_hit<="},
        {"admission_scale", "admission_scale>=", "admission_scale<="},
    };
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++)
        if (strcmp(tab[i][0], metric) == 0)
            return tab[i][side];
    return metric;
}

static void add_res(fit_cand *c, size_t *cap, const char *pol, const char *met, double at,
                    double tgt, double tol, int side, double sim)
{
    if (c->n_res == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        c->res = sim_xrealloc(c->res, *cap * sizeof *c->res);
    }
    c->res[c->n_res++] = (exp_store_fit_residual){
        .policy = pol, .metric = side_metric(met, side), .at = at, .target = tgt, .tol = tol,
        .sim = sim, .residual = residual_of(sim, tgt, tol, side)};
}

/* Objective, largest |residual| and identified flag of c from c->res. */
static void finish_cand(fit_cand *c)
{
    c->obj = 0;
    c->maxabs = 0;
    for (size_t i = 0; i < c->n_res; i++) {
        double r = c->res[i].residual;
        c->obj += r * r;
        c->maxabs = fabs(r) > c->maxabs ? fabs(r) : c->maxabs;
    }
    c->identified = c->maxabs <= 1;
}

/* The measured-window infinite-cache hit rate of `cfg`'s stream at `rate`
 * requests/s, run seed `seed` (as `crsim workload describe` prints it; a
 * closed-loop client's stream as an infinitely fast server receives it,
 * exp_stream_source_unloaded). */
static int inf_hit_of(const exp_config *cfg, uint64_t seed, double rate, double *out)
{
    exp_setup s;
    int rc = exp_setup_init(cfg, &s);
    if (rc)
        return rc;
    exp_stream *st = NULL;
    exp_window w;
    wl_stream_stats ss;
    if ((rc = exp_setup_window(&s, seed, rate, 0, &w)) == SIM_OK &&
        (rc = exp_stream_open(&s, seed, rate, &st)) == SIM_OK &&
        (rc = wl_stream_describe_from(exp_stream_source_unloaded(st), 0, (uint32_t)cfg->block_size,
                                      w.warmup_s, &ss)) == SIM_OK)
        *out = ss.win_requests ? ss.win_inf_hit_rate : NAN;
    exp_stream_close(st);
    exp_setup_fini(&s);
    return rc;
}

/* The workload targets' residuals of the config derived with `sets` into
 * c->res (docs/fit.md, "Workload targets"). */
static int workload_residuals(fit *f, const char *const *sets, size_t n_sets, fit_cand *c,
                              size_t *cap)
{
    if (f->n_wt == 0)
        return SIM_OK;
    const exp_config_src src = {.path = f->o->config_path, .sets = sets, .n_set = n_sets};
    exp_config cfg;
    int rc = exp_config_derive(&src, NULL, 0, &cfg);
    if (rc)
        return rc;
    const uint64_t seed = (uint64_t)f->top.seeds[0];
    const fit_series *ih = &f->wt.inf_hit;
    for (size_t j = 0; rc == SIM_OK && j < ih->n_values; j++) {
        double h = NAN;
        rc = inf_hit_of(&cfg, seed, ih->loads[j], &h);
        if (rc == SIM_OK)
            add_res(c, cap, "workload", "inf_hit", ih->loads[j], ih->values[j], ih->tol,
                    ih->side, h);
    }
    if (rc == SIM_OK && f->wt.adm.n_values) {
        exp_calib_footprint fp;
        uint64_t pool = 0;
        /* A closed-loop client's footprint depends on the rate (its
         * conversations stay open for their think times): measured at the
         * bound's first load, else the grid's highest. */
        double fr = 0;
        if (wl_client_closed(&cfg.wl)) {
            for (size_t i = 0; i < f->n_grid; i++)
                fr = f->grid[i] > fr ? f->grid[i] : fr;
            if (ih->n_values)
                fr = ih->loads[0];
        }
        rc = exp_calib_footprint_cfg(&cfg, seed, 0, fr, &fp, &pool);
        /* C = R * W with W unrounded (crsim calibrate's W is its floor):
         * the objective moves with the footprint, not in steps of R. */
        double cs = rc == SIM_OK && fp.tokens_per_key > 0
                        ? (double)cfg.destinations * 0.5 * (double)pool / fp.tokens_per_key
                        : NAN;
        if (rc == SIM_EINVAL) /* nothing re-used: no footprint, no admission scale */
            rc = SIM_OK;
        if (rc == SIM_OK)
            add_res(c, cap, "workload", "admission_scale", 0, f->wt.adm.values[0],
                    f->wt.adm.tol, f->wt.adm.side, cs);
    }
    exp_config_fini(&cfg);
    return rc;
}

static size_t grid_index(const fit *f, double load)
{
    for (size_t i = 0; i < f->n_grid; i++)
        if (f->grid[i] == load)
            return i;
    return SIZE_MAX;
}

static const char *const cap_names[] = {"capacity_ttft_p99", "capacity_e2e_p99"};

/* The achieved request rate of a run over its offered load `rate`:
 * measured completions over the measured send window [warm-up, last
 * arrival] (docs/fit.md, "Achieved rate").  Not run_metrics.throughput_rps,
 * whose window runs to the end of the drain.  NaN without a window. */
static double achieved_ratio(double completed, double last_arrival_s, double warmup_s,
                             double rate)
{
    double span = last_arrival_s - warmup_s;
    if (!(span > 0) || !(rate > 0) || !isfinite(completed))
        return NAN;
    return completed / span / rate;
}

/* Residuals of experiment `exp_id` (run with the `ns` seeds `seeds`, its
 * warm-up by time `warmup_s`) against the router targets, appended to
 * c->res. */
static int residuals(fit *f, exp_store *st, int64_t exp_id, const int64_t *seeds, size_t ns,
                     double warmup_s, fit_cand *c, size_t *cap_res)
{
    enum { NCOL = 4 }; /* hit, ttft_p99, e2e_p99, achieved ratio */
    static const char *const cols[] = {"hit_rate", "ttft_p99", "e2e_p99", "measured_completed",
                                       "last_arrival_s"};
    exp_store_run *runs = NULL;
    size_t nr = 0;
    int rc = exp_store_read_runs(st, exp_id, cols, 5, &runs, &nr);
    if (rc)
        return rc;
    const size_t ng = f->n_grid;
    /* v[((p * ns + s) * ng + g) * NCOL + col] */
    double *v = sim_xmalloc(f->n_pol * ns * ng * NCOL * sizeof *v);
    for (size_t i = 0; i < f->n_pol * ns * ng * NCOL; i++)
        v[i] = NAN;
    for (size_t i = 0; i < nr; i++) {
        size_t p = 0, s = 0, g = grid_index(f, runs[i].rate_rps);
        while (p < f->n_pol && strcmp(f->pol[p], runs[i].policy))
            p++;
        while (s < ns && seeds[s] != runs[i].seed)
            s++;
        if (p == f->n_pol || s == ns || g == SIZE_MAX || !runs[i].has_metrics ||
            runs[i].interrupted)
            continue;
        double *row = &v[((p * ns + s) * ng + g) * NCOL];
        for (int k = 0; k < 3; k++)
            row[k] = runs[i].v[k];
        row[3] = achieved_ratio(runs[i].v[3], runs[i].v[4], warmup_s, runs[i].rate_rps);
    }
    exp_store_runs_free(runs, nr);
    for (size_t p = 0; p < f->n_pol; p++) {
        const fit_ptargets *t = &f->pt[f->pol_of[p]];
        const fit_series *ser[NCOL] = {&t->hit, &t->ttft, &t->e2e, &t->ach};
        static const char *const names[NCOL] = {"hit", "ttft_p99", "e2e_p99", "achieved_ratio"};
        for (int k = 0; k < NCOL; k++)
            for (size_t j = 0; j < ser[k]->n_values; j++) {
                size_t g = grid_index(f, ser[k]->loads[j]);
                double sum = 0;
                for (size_t s = 0; s < ns; s++)
                    sum += v[((p * ns + s) * ng + g) * NCOL + (size_t)k];
                add_res(c, cap_res, f->pol[p], names[k], ser[k]->loads[j], ser[k]->values[j],
                        ser[k]->tol, ser[k]->side, sum / (double)ns);
            }
        double *m = sim_xmalloc(ng * sizeof *m);
        for (size_t j = 0; j < t->cap.n_values; j++) {
            double sum = 0;
            for (size_t s = 0; s < ns; s++) {
                for (size_t g = 0; g < ng; g++) {
                    double x = v[((p * ns + s) * ng + g) * NCOL + 1 + (size_t)t->cap.metric];
                    m[g] = isnan(x) ? INFINITY : x;
                }
                sum += exp_fit_capacity_smooth(f->grid, m, ng, t->cap.slos[j]);
            }
            add_res(c, cap_res, f->pol[p], cap_names[t->cap.metric], t->cap.slos[j],
                    t->cap.values[j], t->cap.tol, t->cap.side, sum / (double)ns);
        }
        free(m);
    }
    free(v);
    return SIM_OK;
}

/* Is free parameter i searched under alternative `alt`? */
static bool active(const fit *f, size_t i, size_t alt)
{
    return f->par[i].owner == SIZE_MAX || f->par[i].owner == alt;
}

/* The overrides of a candidate: the alternative's, then one per free
 * parameter active under it (x: continuous values, by parameter index;
 * disc: indices of discrete values, by discrete index i - n_cont). */
static void cand_sets(const fit *f, size_t alt, const size_t *disc, const double *x,
                      fit_cand *c)
{
    const fit_alt *a = &f->alt[alt];
    c->n_sets = 0;
    c->sets = sim_xcalloc(a->n_sets + f->n_par + 1, sizeof *c->sets);
    for (size_t i = 0; i < a->n_sets; i++)
        c->sets[c->n_sets++] = sim_xstrdup(a->sets[i]);
    char pt[4096] = "";
    size_t u = 0;
    for (size_t i = 0; i < f->n_par; i++) {
        const fit_param *p = &f->par[i];
        if (!active(f, i, alt))
            continue;
        char val[64], as[1024];
        if (p->kind == PAR_DISC)
            snprintf(val, sizeof val, "%s", p->vals[disc[i - f->n_cont]]);
        else
            fmt_value(p, x[i], val, sizeof val);
        snprintf(as, sizeof as, "%s=%s", p->key, val);
        c->sets[c->n_sets++] = sim_xstrdup(as);
        if (u < sizeof pt)
            u += (size_t)snprintf(pt + u, sizeof pt - u, "%s%s", u ? "; " : "", as);
    }
    c->point = sim_xstrdup(pt);
}

static void progress(fit *f, const fit_cand *c)
{
    if (f->o->quiet)
        return;
    double el = sim_wall_s() - f->t0;
    size_t done = f->n_cand;
    double best = INFINITY;
    for (size_t i = 0; i < f->n_cand; i++)
        best = f->cand[i].obj < best ? f->cand[i].obj : best;
    double eta = done < f->planned ? el / (double)done * (double)(f->planned - done) : 0;
    fprintf(f->o->progress ? f->o->progress : stderr, "fit: [%zu/%zu] %s %s {%s} objective %.4g (best %.4g)%s  %.0f s, ETA %.0f s\n",
            done, f->planned, c->stage, f->alt[c->alt].name, c->point, c->obj, best,
            c->screened_out ? " screened out (workload targets; not run)"
            : c->identified ? " within tolerance" : "", el, eta);
}

/* Evaluate one candidate: one experiment of exp_run into the fit's
 * database, its residuals stored.  *obj receives its objective. */
/* The warm-up by time of the config derived with `sets` (the start of the
 * measured send window of an achieved_ratio target); SIM_EINVAL naming
 * the targets file when the warm-up is by count (the window would differ
 * per run). */
static int run_warmup(const fit *f, const char *const *sets, size_t n_sets, double *warmup_s)
{
    const exp_config_src src = {.path = f->o->config_path, .sets = sets, .n_set = n_sets};
    exp_config cfg;
    int rc = exp_config_derive(&src, NULL, 0, &cfg);
    if (rc)
        return rc;
    if (cfg.warmup_requests > 0 || cfg.warmup_share > 0)
        rc = SIM_ERROR(SIM_EINVAL, "%s: achieved_ratio targets need a warm-up by time "
                       "(experiment.warmup_s); the config sets experiment.warmup_requests or "
                       "warmup_share", f->o->targets_path);
    *warmup_s = cfg.warmup_s;
    exp_config_fini(&cfg);
    return rc;
}

static int evaluate(fit *f, size_t alt, const size_t *disc, const double *x, const char *stage,
                    double *obj)
{
    if (f->o->stop && *f->o->stop)
        return SIM_ERROR(SIM_EINTR, "fit interrupted");
    if (f->n_cand == f->cap_cand) {
        f->cap_cand = f->cap_cand ? 2 * f->cap_cand : 32;
        f->cand = sim_xrealloc(f->cand, f->cap_cand * sizeof *f->cand);
    }
    fit_cand *c = &f->cand[f->n_cand];
    memset(c, 0, sizeof *c);
    c->alt = alt;
    c->stage = stage;
    cand_sets(f, alt, disc, x, c);
    f->n_cand++;
    size_t n = 0;
    const char **s = all_sets(f, c->sets, c->n_sets, &n);
    const size_t n_scr = f->top.n_screen_set + 1;
    const char **runsets = sim_xcalloc(f->o->n_set + n + n_scr + 1, sizeof *runsets);
    for (size_t i = 0; i < f->o->n_set; i++)
        runsets[i] = f->o->sets[i];
    if (n)
        memcpy(runsets + f->o->n_set, s, n * sizeof *s);
    free(s);
    size_t n_run = f->o->n_set + n, cap = 0;
    /* Router-independent targets first (no run): the candidate's full
     * config, not the screening one. */
    int rc = workload_residuals(f, runsets, n_run, c, &cap);
    finish_cand(c);
    const double wmax = c->maxabs;
    const bool screening = f->top.screen_max > 0 && strcmp(stage, "coarse") == 0;
    const int64_t *seeds = f->top.seeds;
    size_t ns = f->top.n_seeds;
    char seedbuf[4096];
    if (rc == SIM_OK && screening) {
        c->stage = stage = "screen";
        c->screened_out = wmax > f->top.screen_max;
        for (size_t i = 0; i < f->top.n_screen_set; i++)
            runsets[n_run++] = f->top.screen_set[i];
        if (f->top.n_screen_seeds) {
            seeds = f->top.screen_seeds;
            ns = f->top.n_screen_seeds;
            size_t u = (size_t)snprintf(seedbuf, sizeof seedbuf, "experiment.seeds=[");
            for (size_t i = 0; i < ns && u < sizeof seedbuf - 32; i++)
                u += (size_t)snprintf(seedbuf + u, sizeof seedbuf - u, "%s%lld", i ? ", " : "",
                                      (long long)seeds[i]);
            snprintf(seedbuf + u, sizeof seedbuf - u, "]");
            runsets[n_run++] = seedbuf;
        }
    }
    const bool run = rc == SIM_OK && f->n_pol > 0 && !c->screened_out;
    double warmup_s = 0;
    if (run && f->n_ach)
        rc = run_warmup(f, runsets, n_run, &warmup_s);
    if (run && rc == SIM_OK) {
        exp_run_opts ro = {.config_path = f->o->config_path, .sets = runsets, .n_set = n_run,
                           .jobs = f->o->jobs ? f->o->jobs : 1, .quiet = true,
                           .stop = f->o->stop, .prune_keep = f->prune_on ? f->keep : NULL,
                           .n_prune_keep = f->prune_on ? f->n_keep : 0};
        rc = exp_run(&ro, f->devnull);
    }
    free(runsets);
    if (rc)
        return rc;
    exp_store *st = NULL;
    if ((rc = exp_store_open(f->db, &st)))
        return rc;
    if (run && (rc = exp_store_latest_experiment(st, &c->exp_id)) == SIM_OK)
        rc = residuals(f, st, c->exp_id, seeds, ns, warmup_s, c, &cap);
    if (rc == SIM_OK) {
        finish_cand(c);
        /* A screening candidate is never identified (short runs, fewer
         * seeds); one screened out has no router residuals and an
         * objective above every run candidate's. */
        if (screening)
            c->identified = false;
        if (c->screened_out)
            c->obj += EXP_FIT_SCREENED_PENALTY;
        exp_store_fit_candidate row = {
            .fit_id = f->fit_id, .experiment_id = c->exp_id, .seq = (int64_t)(f->n_cand - 1),
            .alternative = f->alt[alt].name, .stage = stage, .overrides = c->point,
            .objective = c->obj, .max_abs_residual = c->maxabs, .identified = c->identified,
            .targets_path = f->o->targets_path};
        rc = exp_store_fit_add(st, &row, c->res, c->n_res, &c->cand_id);
    }
    exp_store_close(st);
    if (rc)
        return rc;
    *obj = c->obj;
    progress(f, c);
    return SIM_OK;
}

/* ---- the search ----------------------------------------------------------- */

static double to_value(const fit_param *p, double t)
{
    if (p->kind == PAR_LOG)
        return exp(log(p->lo) + t * (log(p->hi) - log(p->lo)));
    return p->lo + t * (p->hi - p->lo);
}

static double logistic(double u) { return 1 / (1 + exp(-u)); }

static double nm_f(const gsl_vector *u, void *ctx)
{
    fit *f = ctx;
    if (f->err)
        return 1e300;
    double x[64] = {0};
    for (size_t j = 0; j < f->nm_d; j++)
        x[f->nm_map[j]] = to_value(&f->par[f->nm_map[j]], logistic(gsl_vector_get(u, j)));
    double obj = 0;
    f->nm_evals++;
    int rc = evaluate(f, f->nm_alt, f->nm_disc, x, "refine", &obj);
    if (rc) {
        f->err = rc;
        return 1e300;
    }
    return obj;
}

/* The value of continuous parameter i of candidate c, parsed back from its
 * override (what was run). */
static const char *cand_text(const fit *f, const fit_cand *c, size_t i)
{
    size_t kl = strlen(f->par[i].key);
    for (size_t j = c->n_sets; j-- > f->alt[c->alt].n_sets;)
        if (strncmp(c->sets[j], f->par[i].key, kl) == 0 && c->sets[j][kl] == '=')
            return c->sets[j] + kl + 1;
    return "";
}

static double cand_value(const fit *f, const fit_cand *c, size_t i)
{
    return strtod(cand_text(f, c, i), NULL);
}

static size_t cand_disc(const fit *f, const fit_cand *c, size_t k)
{
    const fit_param *p = &f->par[f->n_cont + k];
    const char *v = cand_text(f, c, f->n_cont + k);
    for (size_t j = 0; j < p->n_vals; j++)
        if (strcmp(p->vals[j], v) == 0)
            return j;
    return 0;
}

/* Number of continuous parameters active under `alt` (its Nelder-Mead
 * dimension); map[j] receives the parameter index of coordinate j. */
static size_t alt_dims(const fit *f, size_t alt, size_t *map)
{
    size_t d = 0;
    for (size_t i = 0; i < f->n_cont; i++)
        if (active(f, i, alt))
            map[d++] = i;
    return d;
}

/* Number of discrete cells of `alt`: the product of its active discrete
 * parameters' value counts. */
static size_t alt_cells(const fit *f, size_t alt)
{
    size_t n = 1;
    for (size_t i = f->n_cont; i < f->n_par; i++)
        if (active(f, i, alt))
            n *= f->par[i].n_vals;
    return n;
}

static int refine(fit *f, size_t alt)
{
    f->nm_d = alt_dims(f, alt, f->nm_map);
    /* Start: the alternative's best candidate so far. */
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < f->n_cand; i++)
        if (f->cand[i].alt == alt && (best == SIZE_MAX || f->cand[i].obj < f->cand[best].obj))
            best = i;
    if (best == SIZE_MAX)
        return SIM_OK;
    /* Screening: an alternative whose best coarse candidate misses a
     * target by more than screen.max_residual is rejected, not refined
     * (also reported with refine: 0). */
    if (f->top.screen_max > 0 && !(f->cand[best].maxabs <= f->top.screen_max) &&
        !f->alt[alt].nearest) {
        f->alt[alt].screened = true;
        return SIM_OK;
    }
    if (f->nm_d == 0 || f->top.refine == 0)
        return SIM_OK;
    size_t disc[64] = {0};
    for (size_t k = 0; k + f->n_cont < f->n_par; k++)
        disc[k] = cand_disc(f, &f->cand[best], k);
    const size_t d = f->nm_d;
    gsl_vector *u = gsl_vector_alloc(d), *step = gsl_vector_alloc(d);
    for (size_t i = 0; i < d; i++) {
        const fit_param *p = &f->par[f->nm_map[i]];
        double v = cand_value(f, &f->cand[best], f->nm_map[i]);
        double t = p->kind == PAR_LOG ? (log(v) - log(p->lo)) / (log(p->hi) - log(p->lo))
                                      : (v - p->lo) / (p->hi - p->lo);
        t = t < 0.02 ? 0.02 : t > 0.98 ? 0.98 : t;
        gsl_vector_set(u, i, log(t / (1 - t)));
        gsl_vector_set(step, i, 0.7);
    }
    gsl_multimin_function fn = {.f = nm_f, .n = d, .params = f};
    gsl_multimin_fminimizer *m =
        gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, d);
    f->nm_alt = alt;
    f->nm_disc = disc;
    f->nm_evals = 0;
    f->err = SIM_OK;
    gsl_multimin_fminimizer_set(m, &fn, u, step);
    while (!f->err && f->nm_evals < (size_t)f->top.refine) {
        if (gsl_multimin_fminimizer_iterate(m))
            break;
        if (gsl_multimin_test_size(gsl_multimin_fminimizer_size(m), 1e-3) == GSL_SUCCESS)
            break;
    }
    gsl_multimin_fminimizer_free(m);
    gsl_vector_free(u);
    gsl_vector_free(step);
    return f->err;
}

static int search(fit *f)
{
    /* Discrete cells: per alternative, its active discrete parameters'
     * values. */
    size_t n_cells = 0, n_disc = f->n_par - f->n_cont, dims[64];
    for (size_t a = 0; a < f->n_alt; a++)
        n_cells += alt_cells(f, a);
    size_t per_cell = 1;
    if (f->n_cont) {
        size_t b = f->o->budget > 0 ? (size_t)f->o->budget : (size_t)f->top.budget;
        per_cell = b / n_cells ? b / n_cells : 1;
    }
    /* A refinement takes at most `refine` evaluations plus the simplex's
     * d + 1 initial points. */
    f->planned = 0;
    for (size_t a = 0; a < f->n_alt; a++) {
        size_t d = alt_dims(f, a, dims);
        f->planned += alt_cells(f, a) * (d ? per_cell : 1) +
                      (d && f->top.refine ? (size_t)f->top.refine + d + 1 : 0);
    }
    /* Latin hypercubes in [0, 1)^n_cont, one per cell, drawn in turn from
     * one stream (fixed seed 1, MT19937): stratum perm[i] of dimension j,
     * uniform within it; a cell uses the dimensions of its active
     * parameters (each still a Latin-hypercube projection).  A hypercube
     * per cell, not one shared by every cell: parameters that every
     * alternative frees get n_cells x per_cell distinct values instead of
     * per_cell. */
    const size_t d = f->n_cont;
    double *t = sim_xcalloc(per_cell * (d ? d : 1), sizeof *t);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 1);
    size_t *perm = sim_xcalloc(per_cell, sizeof *perm);
    int rc = SIM_OK;
    size_t disc[64] = {0};
    for (size_t alt = 0; rc == SIM_OK && alt < f->n_alt; alt++) {
        const size_t n_pts = alt_dims(f, alt, dims) ? per_cell : 1;
        for (size_t cell = 0; rc == SIM_OK && cell < alt_cells(f, alt); cell++) {
            size_t q = cell;
            for (size_t k = 0; k < n_disc; k++) {
                disc[k] = 0;
                if (!active(f, f->n_cont + k, alt))
                    continue;
                size_t nv = f->par[f->n_cont + k].n_vals;
                disc[k] = q % nv;
                q /= nv;
            }
            for (size_t j = 0; j < d; j++) {
                for (size_t i = 0; i < per_cell; i++)
                    perm[i] = i;
                gsl_ran_shuffle(r, perm, per_cell, sizeof *perm);
                for (size_t i = 0; i < per_cell; i++)
                    t[i * d + j] = ((double)perm[i] + gsl_rng_uniform(r)) / (double)per_cell;
            }
            for (size_t i = 0; rc == SIM_OK && i < n_pts; i++) {
                double x[64], obj;
                for (size_t j = 0; j < d; j++)
                    x[j] = to_value(&f->par[j], t[i * d + j]);
                rc = evaluate(f, alt, disc, x, "coarse", &obj);
            }
        }
    }
    gsl_rng_free(r);
    free(perm);
    free(t);
    /* screen.refine_nearest: the alternatives nearest the targets are
     * refined whatever their screening residuals (ranked by the largest
     * |residual| of their best candidate, then its objective). */
    for (int64_t k = 0; rc == SIM_OK && f->top.screen_max > 0 && k < f->top.screen_nearest; k++) {
        size_t pick = SIZE_MAX, pc = SIZE_MAX;
        for (size_t a = 0; a < f->n_alt; a++) {
            if (f->alt[a].nearest)
                continue;
            size_t b = SIZE_MAX;
            for (size_t i = 0; i < f->n_cand; i++)
                if (f->cand[i].alt == a && (b == SIZE_MAX || f->cand[i].obj < f->cand[b].obj))
                    b = i;
            if (b == SIZE_MAX || f->cand[b].screened_out)
                continue;
            if (pick == SIZE_MAX || f->cand[b].maxabs < f->cand[pc].maxabs ||
                (f->cand[b].maxabs == f->cand[pc].maxabs && f->cand[b].obj < f->cand[pc].obj)) {
                pick = a;
                pc = b;
            }
        }
        if (pick != SIZE_MAX)
            f->alt[pick].nearest = true;
    }
    for (size_t a = 0; rc == SIM_OK && a < f->n_alt; a++)
        rc = refine(f, a);
    return rc;
}

/* ---- output --------------------------------------------------------------- */

static void print_residuals(const fit_cand *c, FILE *out)
{
    fprintf(out, "  %-12s %-18s %10s %10s %8s %10s %9s\n", "policy", "metric", "at", "target",
            "tol", "sim", "residual");
    for (size_t i = 0; i < c->n_res; i++) {
        const exp_store_fit_residual *r = &c->res[i];
        fprintf(out, "  %-12s %-18s %10.4g %10.4g %8.3g %10.4g %9.3f%s\n", r->policy, r->metric,
                r->at, r->target, r->tol, r->sim, r->residual,
                fabs(r->residual) <= 1 ? "" : "  *");
    }
}

static int write_fitted(const fit *f, const fit_cand *c, const char *path)
{
    size_t n = f->top.n_set + c->n_sets;
    const char **s = sim_xcalloc(n + 1, sizeof *s);
    for (size_t i = 0; i < f->top.n_set; i++)
        s[i] = f->top.set[i];
    for (size_t i = 0; i < c->n_sets; i++)
        s[f->top.n_set + i] = c->sets[i];
    const exp_config_src src = {.path = f->o->config_path, .sets = f->o->sets,
                                .n_set = f->o->n_set};
    exp_config cfg;
    int rc = exp_config_derive(&src, s, n, &cfg);
    free(s);
    if (rc)
        return rc;
    char *text = exp_config_dump(&cfg);
    exp_config_fini(&cfg);
    FILE *fp = fopen(path, "w");
    if (!fp) {
        rc = SIM_ERROR(SIM_EIO, "%s: cannot write the fitted config: %s", path,
                       strerror(errno));
        free(text);
        return rc;
    }
    fprintf(fp, "# crsim fit: %s with targets %s, alternative %s, objective %.6g, max "
            "|residual| %.3g (%s)\n# %s\n%s",
            f->o->config_path, f->o->targets_path, f->alt[c->alt].name, c->obj, c->maxabs,
            c->identified ? "within tolerance" : "NOT within tolerance", c->point, text);
    free(text);
    if (fclose(fp))
        return SIM_ERROR(SIM_EIO, "%s: cannot write the fitted config", path);
    return SIM_OK;
}

/* Is candidate i a better best point than b (SIZE_MAX: none)?  A
 * screening candidate (short runs) ranks below every refined one. */
static bool better(const fit *f, size_t i, size_t b)
{
    if (b == SIZE_MAX)
        return true;
    bool si = strcmp(f->cand[i].stage, "screen") == 0, sb = strcmp(f->cand[b].stage, "screen") == 0;
    if (si != sb)
        return sb;
    return f->cand[i].obj < f->cand[b].obj;
}

static int report(fit *f, FILE *out)
{
    size_t best = 0;
    for (size_t i = 1; i < f->n_cand; i++)
        if (better(f, i, best))
            best = i;
    fprintf(out, "fit %lld: %zu candidates of %s against %s, stored in %s (%.0f s)\n",
            (long long)f->fit_id, f->n_cand, f->o->config_path, f->o->targets_path, f->db,
            sim_wall_s() - f->t0);
    fprintf(out, "\n%-28s %10s %10s %12s  %s\n", "alternative", "candidates", "identified",
            "best obj", "best point");
    for (size_t a = 0; a < f->n_alt; a++) {
        size_t n = 0, id = 0, b = SIZE_MAX;
        for (size_t i = 0; i < f->n_cand; i++) {
            if (f->cand[i].alt != a)
                continue;
            n++;
            id += f->cand[i].identified;
            if (better(f, i, b))
                b = i;
        }
        fprintf(out, "%-28s %10zu %10zu %12.4g  %s%s\n", f->alt[a].name, n, id,
                b == SIZE_MAX ? NAN : f->cand[b].obj, b == SIZE_MAX ? "" : f->cand[b].point,
                f->alt[a].screened ? "  [rejected at screening]"
                : f->alt[a].nearest ? "  [beyond screen.max_residual; refined as nearest]" : "");
    }
    for (size_t a = 0; a < f->n_alt; a++) {
        size_t b = SIZE_MAX;
        for (size_t i = 0; i < f->n_cand; i++)
            if (f->cand[i].alt == a && better(f, i, b))
                b = i;
        if (b == SIZE_MAX)
            continue;
        fprintf(out, "\nresiduals of the best point of %s (experiment %lld): %s\n",
                f->alt[a].name, (long long)f->cand[b].exp_id, f->cand[b].point);
        print_residuals(&f->cand[b], out);
        fprintf(out, "identified set of %s (every |residual| <= 1):\n", f->alt[a].name);
        size_t k = 0;
        for (size_t i = 0; i < f->n_cand; i++)
            if (f->cand[i].alt == a && f->cand[i].identified) {
                fprintf(out, "  #%zu %-6s objective %8.4g  %s\n", i, f->cand[i].stage,
                        f->cand[i].obj, f->cand[i].point);
                k++;
            }
        if (!k)
            fprintf(out, "  (empty)\n");
    }
    fprintf(out, "\nbest: %s {%s} objective %.6g%s\n", f->alt[f->cand[best].alt].name,
            f->cand[best].point, f->cand[best].obj,
            f->cand[best].identified ? " (within tolerance)" : " (NOT within tolerance)");
    exp_store *st = NULL;
    int rc = exp_store_open(f->db, &st);
    if (rc == SIM_OK)
        rc = exp_store_fit_mark_best(st, f->cand[best].cand_id);
    exp_store_close(st);
    if (rc)
        return rc;
    if ((rc = write_fitted(f, &f->cand[best], f->out_path)))
        return rc;
    fprintf(out, "fitted config: %s (crsim run %s)\n", f->out_path, f->out_path);
    /* With several alternatives, each one's best point as its own fitted
     * config: OUT without ".yaml", "-", the alternative's name, ".yaml". */
    exp_fit_result *res = f->o->result;
    if (res) {
        res->alt = sim_xcalloc(f->n_alt, sizeof *res->alt);
        res->n_alt = f->n_alt;
    }
    for (size_t a = 0; a < f->n_alt; a++) {
        size_t b = SIZE_MAX, n = 0, id = 0;
        for (size_t i = 0; i < f->n_cand; i++)
            if (f->cand[i].alt == a) {
                n++;
                id += f->cand[i].identified;
                if (better(f, i, b))
                    b = i;
            }
        char path[1300] = "";
        if (b != SIZE_MAX && f->top.n_alts > 0) {
            size_t l = strlen(f->out_path);
            int cut = l > 5 && strcmp(f->out_path + l - 5, ".yaml") == 0 ? 5 : 0;
            snprintf(path, sizeof path, "%.*s-%s.yaml", (int)(l - (size_t)cut), f->out_path,
                     f->alt[a].name);
            if ((rc = write_fitted(f, &f->cand[b], path)))
                return rc;
            fprintf(out, "fitted config of %s: %s (%s)\n", f->alt[a].name, path,
                    f->cand[b].identified ? "within tolerance" : "NOT within tolerance");
            /* ... and its overrides alone (the alternative's and the free
             * parameters', not the targets' `set`), one KEY=VALUE a line,
             * to apply to other experiments with --set. */
            char sp[1300];
            snprintf(sp, sizeof sp, "%.*s.set", (int)(strlen(path) - 5), path);
            FILE *fs = fopen(sp, "w");
            if (!fs)
                return SIM_ERROR(SIM_EIO, "%s: cannot write the overrides: %s", sp,
                                 strerror(errno));
            for (size_t i = 0; i < f->cand[b].n_sets; i++)
                fprintf(fs, "%s\n", f->cand[b].sets[i]);
            if (fclose(fs))
                return SIM_ERROR(SIM_EIO, "%s: cannot write the overrides", sp);
        }
        if (!res)
            continue;
        exp_fit_alt_result *r = &res->alt[a];
        r->name = sim_xstrdup(f->alt[a].name);
        r->n_cand = n;
        r->n_identified = id;
        r->fitted_path = sim_xstrdup(path[0] ? path : f->out_path);
        if (b == SIZE_MAX)
            continue;
        if (b == best)
            res->best = a;
        const fit_cand *c = &f->cand[b];
        r->best_obj = c->obj;
        r->best_maxabs = c->maxabs;
        r->identified = c->identified;
        r->point = sim_xstrdup(c->point);
        r->sets = sim_xcalloc(f->top.n_set + c->n_sets + 1, sizeof *r->sets);
        for (size_t i = 0; i < f->top.n_set; i++)
            r->sets[r->n_sets++] = sim_xstrdup(f->top.set[i]);
        for (size_t i = 0; i < c->n_sets; i++)
            r->sets[r->n_sets++] = sim_xstrdup(c->sets[i]);
        r->n_res = c->n_res;
        r->res = sim_xcalloc(c->n_res + 1, sizeof *r->res);
        for (size_t i = 0; i < c->n_res; i++) {
            r->res[i] = c->res[i]; /* policy and metric names are static text */
        }
    }
    return SIM_OK;
}

void exp_fit_result_fini(exp_fit_result *r)
{
    if (!r)
        return;
    for (size_t a = 0; a < r->n_alt; a++) {
        free(r->alt[a].name);
        free(r->alt[a].point);
        free(r->alt[a].fitted_path);
        strs_free(r->alt[a].sets, r->alt[a].n_sets);
        free(r->alt[a].res);
    }
    free(r->alt);
    memset(r, 0, sizeof *r);
}

int exp_fit_target_policies(const char *targets_path, const char **pol, size_t max,
                            size_t *n)
{
    *n = 0;
    sim_cfgdoc *doc = NULL;
    int rc = load_targets_doc(targets_path, &doc);
    if (rc)
        return rc;
    for (size_t i = 0; route_names[i] && *n < max; i++) {
        char path[160], loc[300];
        snprintf(path, sizeof path, "targets.%s", route_names[i]);
        if (sim_cfgdoc_locate(doc, path, NULL, loc, sizeof loc))
            pol[(*n)++] = route_names[i];
    }
    sim_cfgdoc_destroy(doc);
    return SIM_OK;
}

int exp_fit_check(const exp_fit_opts *o)
{
    fit f = {.o = o};
    int rc = load_targets(&f);
    fit_fini(&f);
    return rc;
}

int exp_fit_run(const exp_fit_opts *o, FILE *out)
{
    fit f = {.o = o};
    int rc = load_targets(&f);
    if (rc == SIM_OK) {
        f.devnull = fopen("/dev/null", "w");
        f.t0 = sim_wall_s();
        exp_store *st = NULL;
        /* The database is created by the first candidate's exp_run; the
         * fit id is read from it when it exists. */
        FILE *probe = fopen(f.db, "r");
        f.fit_id = 1;
        if (probe) {
            fclose(probe);
            if ((rc = exp_store_open(f.db, &st)) == SIM_OK)
                rc = exp_store_fit_next_id(st, &f.fit_id);
            exp_store_close(st);
        }
    }
    if (rc == SIM_OK && !o->quiet)
        fprintf(o->progress ? o->progress : stderr, "fit: %zu policies, %zu loads, %zu seeds, %zu free parameters, %zu "
                "alternatives; database %s\n", f.n_pol, f.n_grid, f.top.n_seeds, f.n_par,
                f.n_alt, f.db);
    if (rc == SIM_OK)
        rc = search(&f);
    if ((rc == SIM_OK || rc == SIM_EINTR) && f.n_cand && f.cand[f.n_cand - 1].res) {
        int rc2 = report(&f, out);
        rc = rc ? rc : rc2;
    }
    fit_fini(&f);
    return rc;
}

int exp_fit_main(const exp_cli_args *a, const volatile sig_atomic_t *stop)
{
    exp_fit_opts o = {.config_path = a->pos[0], .stop = stop};
    o.sets = exp_cli_list(a, "set", &o.n_set);
    o.targets_path = exp_cli_str(a, "targets", NULL);
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    o.jobs = (unsigned)exp_cli_int(a, "jobs", nc > 0 ? nc : 1);
    o.db = exp_cli_str(a, "db", NULL);
    o.budget = exp_cli_int(a, "budget", 0);
    o.out_path = exp_cli_str(a, "out", NULL);
    o.quiet = exp_cli_has(a, "quiet");
    return exp_fit_run(&o, stdout);
}
