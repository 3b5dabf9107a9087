/*
 * `crsim fit-cost` (costfit.h): a deployment's cost profile fitted to the
 * user's measurements.  The roofline fit follows tests/calibrate.c (log
 * residuals, logistic mfu and mbu, exponential overhead, GSL trust-region
 * least squares, all-reduce latency a fixed prior); the linear fit is
 * plain weighted least squares, since a measured step's time is linear in
 * a..e.  Bad measurement files are rejected before any fit with one line
 * naming the file, line and column.
 */
#include "sim/exp/costfit.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/cost_profile.h"
#include "models/spec_load.h"
#include "sim/core/error.h"
#include "workloads/csv.h"
#include "workloads/request.h"
#include "sim/exp/exp.h"

/* Fixed prior of the all-reduce latency (as tests/calibrate.c: at fixed TP
 * it is one more constant per step, not separable from the overhead). */
#define PRIOR_AR_LATENCY_S 1e-5

enum { N_LIN = 5, N_ROOF = 3 };

static const char *const lin_names[N_LIN] = {"a_s", "b_s_per_token", "c_s_per_attn",
                                             "d_s_per_decode", "e_s_per_ctx"};

/* ---- reading the measurements ------------------------------------------ */

static int parse_num(const char *path, long line, const char *col, const char *s, bool pos,
                     double *out)
{
    char *end = NULL;
    errno = 0;
    double v = s && *s ? strtod(s, &end) : NAN;
    if (!s || !*s || *end || errno || !isfinite(v) || v < 0 || (pos && v == 0))
        return SIM_ERROR(SIM_EINVAL, "%s:%ld: column '%s' is '%s'; expected a number %s", path,
                         line, col, s ? s : "", pos ? "> 0" : ">= 0");
    *out = v;
    return SIM_OK;
}

int exp_costfit_read_steps(const char *path, size_t min_rows, exp_costfit_step **out,
                           size_t *n)
{
    *out = NULL;
    *n = 0;
    wl_csv *r = NULL;
    int rc = wl_csv_open(path, "steps file", WL_CSV_COMMENTS, &r);
    if (rc)
        return rc;
    static const char *const cols[] = {"prefill_tokens", "decode_tokens", "context", "seconds",
                                       "prefill_context", "sampled"};
    enum { N_COLS = 6, N_REQ = 4 };
    long at[N_COLS];
    size_t nf = 0;
    if ((rc = wl_csv_next(r, &nf)))
        goto done;
    if (nf == 0) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: empty; expected a header prefill_tokens, decode_tokens, "
                       "context, seconds and one row per measured step", path);
        goto done;
    }
    for (size_t c = 0; c < N_COLS; c++) {
        at[c] = -1;
        for (size_t i = 0; i < nf; i++)
            if (strcmp(wl_csv_field(r, i), cols[c]) == 0)
                at[c] = (long)i;
        if (at[c] < 0 && c < N_REQ) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: no column '%s'; expected a header with "
                           "prefill_tokens, decode_tokens, context, seconds (optional "
                           "prefill_context, sampled)", path, wl_csv_line(r), cols[c]);
            goto done;
        }
    }
    size_t cap = 0;
    while ((rc = wl_csv_next(r, &nf)) == SIM_OK && nf) {
        double v[N_COLS] = {0};
        const long line = wl_csv_line(r);
        for (size_t c = 0; c < N_COLS && rc == SIM_OK; c++)
            if (at[c] >= 0)
                rc = parse_num(path, line, cols[c], wl_csv_field(r, (size_t)at[c]), c == 3,
                               &v[c]);
        if (rc)
            goto done;
        if (v[0] == 0 && v[1] == 0) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: a step with no prefill and no decode tokens; "
                           "expected prefill_tokens or decode_tokens > 0", path, line);
            goto done;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            *out = sim_xrealloc(*out, cap * sizeof **out);
        }
        const double P = v[0], pc = v[4];
        (*out)[(*n)++] = (exp_costfit_step){
            .b = {.prefill_tokens = (uint64_t)P, .decode_tokens = (uint64_t)v[1],
                  .decode_ctx = (uint64_t)v[2], .prefill_ctx = (uint64_t)pc,
                  .prefill_attn = P * (pc + P / 2.0),
                  .sampled = at[5] >= 0 ? (uint64_t)v[5] : (uint64_t)v[1] + (P > 0)},
            .seconds = v[3], .line = line};
    }
    if (rc == SIM_OK && *n < min_rows)
        rc = SIM_ERROR(SIM_EINVAL, "%s: %zu measured step%s; expected at least %zu (more steps "
                       "than the %d parameters of the linear model)", path, *n,
                       *n == 1 ? "" : "s", min_rows, N_LIN);
done:
    wl_csv_close(r);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

static const json_t *need_list(const char *path, const json_t *o, const char *key, size_t n,
                               int *rc)
{
    const json_t *x = json_object_get(o, key);
    if (*rc)
        return NULL;
    if (!json_is_array(x))
        *rc = SIM_ERROR(SIM_EINVAL, "%s: key '%s' is missing or not a list; expected a vllm "
                        "bench serve result saved with --save-result --save-detailed", path,
                        key);
    else if (n != (size_t)-1 && json_array_size(x) != n)
        *rc = SIM_ERROR(SIM_EINVAL, "%s: key '%s' has %zu entries, input_lens %zu; expected "
                        "one per request", path, key, json_array_size(x), n);
    return x;
}

int exp_costfit_read_vllm(const char *path, size_t min_rows, exp_costfit_req **out, size_t *n,
                          uint32_t *conc)
{
    *out = NULL;
    *n = 0;
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        if (access(path, R_OK) != 0)
            return SIM_ERROR(SIM_EIO, "%s: cannot open vllm bench result: %s", path,
                             strerror(errno));
        return SIM_ERROR(SIM_EINVAL, "%s:%d: invalid JSON (%s); expected a vllm bench serve "
                         "result file", path, je.line, je.text);
    }
    int rc = SIM_OK;
    const json_t *in = need_list(path, root, "input_lens", (size_t)-1, &rc);
    const size_t m = in ? json_array_size(in) : 0;
    const json_t *outl = need_list(path, root, "output_lens", m, &rc);
    const json_t *tt = need_list(path, root, "ttfts", m, &rc);
    const json_t *it = need_list(path, root, "itls", m, &rc);
    if (rc)
        goto done;
    const json_t *mc = json_object_get(root, "max_concurrency");
    const json_t *rate = json_object_get(root, "request_rate");
    bool inf_rate = !rate || (json_is_string(rate) && strcmp(json_string_value(rate), "inf") == 0);
    if (json_is_integer(mc) && json_integer_value(mc) > 0) {
        *conc = (uint32_t)json_integer_value(mc);
    } else if (mc && !json_is_null(mc)) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: key 'max_concurrency' is not a positive integer; "
                       "expected the --max-concurrency of the run", path);
        goto done;
    } else if (inf_rate) {
        *conc = (uint32_t)(m ? m : 1);
    } else {
        rc = SIM_ERROR(SIM_EINVAL, "%s: a run at a finite request_rate without max_concurrency; "
                       "expected a run with --max-concurrency (or --request-rate inf): the file "
                       "has no arrival times to replay", path);
        goto done;
    }
    *out = sim_xcalloc(m ? m : 1, sizeof **out);
    for (size_t i = 0; i < m; i++) {
        const json_t *a = json_array_get(in, i), *b = json_array_get(outl, i),
                     *t = json_array_get(tt, i), *l = json_array_get(it, i);
        if (!json_is_integer(a) || json_integer_value(a) <= 0 || !json_is_integer(b) ||
            json_integer_value(b) <= 0 || json_integer_value(a) > UINT32_MAX ||
            json_integer_value(b) > UINT32_MAX) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: request %zu: input_lens/output_lens are not "
                           "positive integers; expected token counts", path, i);
            goto done;
        }
        if (!json_is_number(t) || json_number_value(t) <= 0) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: request %zu: ttfts entry is not a number > 0 s; "
                           "expected a measured time to first token (failed requests are "
                           "not measurements: drop them)", path, i);
            goto done;
        }
        if (!json_is_array(l)) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: request %zu: itls entry is not a list; expected "
                           "the request's inter-token latencies in s", path, i);
            goto done;
        }
        double sum = 0;
        for (size_t k = 0; k < json_array_size(l); k++) {
            const json_t *v = json_array_get(l, k);
            if (!json_is_number(v) || json_number_value(v) < 0) {
                rc = SIM_ERROR(SIM_EINVAL, "%s: request %zu: itls[%zu] is not a number >= 0; "
                               "expected inter-token latencies in s", path, i, k);
                goto done;
            }
            sum += json_number_value(v);
        }
        (*out)[i] = (exp_costfit_req){
            .input_tokens = (uint32_t)json_integer_value(a),
            .output_tokens = (uint32_t)json_integer_value(b), .ttft_s = json_number_value(t),
            /* Σ ITL / (output − 1), vLLM's TPOT: the same per token whether
             * the server streamed one token per chunk or several (multi-step
             * scheduling sends 10 at a time, one ITL entry each). */
            .itl_s = json_integer_value(b) > 1 ? sum / (double)(json_integer_value(b) - 1) : 0};
    }
    *n = m;
    if (m < min_rows)
        rc = SIM_ERROR(SIM_EINVAL, "%s: %zu request%s; expected at least %zu (more "
                       "measurements than the %d fitted factors)", path, m, m == 1 ? "" : "s",
                       min_rows, N_ROOF);
done:
    json_decref(root);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* ---- fitting ------------------------------------------------------------ */

static double lin_col(const cost_batch *b, int k)
{
    switch (k) {
    case 0: return 1.0;
    case 1: return (double)b->prefill_tokens;
    case 2: return b->prefill_attn;
    case 3: return (double)b->decode_tokens;
    default: return (double)b->decode_ctx;
    }
}

static double *lin_ptr(cost_linear *c, int k)
{
    double *v[N_LIN] = {&c->a_s, &c->b_s_per_token, &c->c_s_per_attn, &c->d_s_per_decode,
                        &c->e_s_per_ctx};
    return v[k];
}

/* Weighted least squares of the active coefficients (relative errors:
 * weight 1/t²); a coefficient that comes out negative is pinned at 0 and
 * the fit repeated (as tests/calibrate.c does). */
static int fit_linear(const exp_costfit_step *s, size_t n, cost_linear *out, double *rms)
{
    bool active[N_LIN];
    for (int k = 0; k < N_LIN; k++) {
        active[k] = false;
        for (size_t i = 0; i < n; i++)
            active[k] |= lin_col(&s[i].b, k) != 0;
    }
    memset(out, 0, sizeof *out);
    for (int round = 0; round < N_LIN; round++) {
        int idx[N_LIN], p = 0;
        for (int k = 0; k < N_LIN; k++)
            if (active[k])
                idx[p++] = k;
        gsl_matrix *X = gsl_matrix_alloc(n, (size_t)p), *cov = gsl_matrix_alloc((size_t)p,
                                                                              (size_t)p);
        gsl_vector *y = gsl_vector_alloc(n), *w = gsl_vector_alloc(n),
                   *c = gsl_vector_alloc((size_t)p);
        for (size_t i = 0; i < n; i++) {
            for (int j = 0; j < p; j++)
                gsl_matrix_set(X, i, (size_t)j, lin_col(&s[i].b, idx[j]));
            gsl_vector_set(y, i, s[i].seconds);
            gsl_vector_set(w, i, 1.0 / (s[i].seconds * s[i].seconds));
        }
        gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, (size_t)p);
        double chisq;
        size_t rank = 0;
        int st = gsl_multifit_wlinear_tsvd(X, w, y, 1e-12, c, cov, &chisq, &rank, ws);
        int bad = -1;
        if (st == GSL_SUCCESS && rank == (size_t)p) {
            memset(out, 0, sizeof *out);
            for (int j = 0; j < p; j++) {
                *lin_ptr(out, idx[j]) = gsl_vector_get(c, (size_t)j);
                if (gsl_vector_get(c, (size_t)j) < 0 && idx[j] > 0 &&
                    (bad < 0 || gsl_vector_get(c, (size_t)j) < *lin_ptr(out, bad)))
                    bad = idx[j];
            }
        }
        gsl_multifit_linear_free(ws);
        gsl_matrix_free(X);
        gsl_matrix_free(cov);
        gsl_vector_free(y);
        gsl_vector_free(w);
        gsl_vector_free(c);
        if (st != GSL_SUCCESS || rank < (size_t)p)
            return SIM_ERROR(SIM_EINVAL, "fit-cost: the measured steps do not determine the "
                             "linear model (rank %zu of %d: steps whose prefill tokens, prefill "
                             "attention, decodes and decode context are proportional); expected "
                             "steps of varied composition", rank, p);
        if (bad < 0)
            break;
        active[bad] = false;
    }
    if (out->a_s <= 0)
        return SIM_ERROR(SIM_EINVAL, "fit-cost: the fitted fixed time per step a_s is %g s; "
                         "expected > 0 (are the step times per step, in seconds?)", out->a_s);
    double ss = 0;
    for (size_t i = 0; i < n; i++) {
        cost_model m;
        cost_linear_init(&m, out);
        const double r = log(cost_step_time(&m, &s[i].b) / s[i].seconds);
        ss += r * r;
    }
    *rms = sqrt(ss / (double)n);
    return SIM_OK;
}

/* What one residual evaluation needs. */
typedef struct rfit {
    const spec_deploy *d;
    cost_params prior;  /* the values of the factors not freed */
    unsigned free;      /* EXP_COSTFIT_MFU | _MBU | _OVERHEAD */
    unsigned targets;   /* vllm bench: EXP_COSTFIT_TTFT | _ITL */
    /* steps */
    const exp_costfit_step *s;
    /* vllm bench */
    const exp_costfit_req *r;
    size_t n;
    uint32_t conc, n_blocks;
    const engine_params *ep;
    exp_costfit_req *pred;
    int err;
} rfit;

static double logistic(double v) { return 1.0 / (1.0 + exp(-v)); }

/* The free variables x (logit mfu, logit mbu, log overhead, in that order,
 * only the freed ones) over the prior. */
static cost_params params_of(const rfit *c, const gsl_vector *x)
{
    cost_params p = c->prior;
    size_t k = 0;
    if (c->free & EXP_COSTFIT_MFU)
        p.mfu = logistic(gsl_vector_get(x, k++));
    if (c->free & EXP_COSTFIT_MBU)
        p.mbu = logistic(gsl_vector_get(x, k++));
    if (c->free & EXP_COSTFIT_OVERHEAD)
        p.step_overhead_s = exp(gsl_vector_get(x, k++));
    return p;
}

static size_t n_free(unsigned free_f)
{
    return (size_t)(!!(free_f & EXP_COSTFIT_MFU) + !!(free_f & EXP_COSTFIT_MBU) +
                    !!(free_f & EXP_COSTFIT_OVERHEAD));
}

static int steps_f(const gsl_vector *x, void *params, gsl_vector *f)
{
    const rfit *c = params;
    cost_params p = params_of(c, x);
    cost_model m;
    cost_roofline_init(&m, c->d, &p);
    for (size_t i = 0; i < c->n; i++)
        gsl_vector_set(f, i, log(cost_step_time(&m, &c->s[i].b) / c->s[i].seconds));
    return GSL_SUCCESS;
}

static int uses_itl(const rfit *c, const exp_costfit_req *r)
{
    return (c->targets & EXP_COSTFIT_ITL) && r->output_tokens > 1 && r->itl_s > 0;
}

static int vllm_f(const gsl_vector *x, void *params, gsl_vector *f)
{
    rfit *c = params;
    cost_params p = params_of(c, x);
    cost_model m;
    cost_roofline_init(&m, c->d, &p);
    if (exp_costfit_simulate(&m, c->n_blocks, c->ep, c->r, c->n, c->conc, c->pred)) {
        c->err = 1;
        return GSL_EDOM;
    }
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->targets & EXP_COSTFIT_TTFT)
            gsl_vector_set(f, k++, log(c->pred[i].ttft_s / c->r[i].ttft_s));
        if (uses_itl(c, &c->r[i]))
            gsl_vector_set(f, k++, log(c->pred[i].itl_s / c->r[i].itl_s));
    }
    return GSL_SUCCESS;
}

/* Trust-region least squares from a few starting points (the max() of the
 * roofline has a kink, so one start can stop on the wrong side of it);
 * the best end point wins. */
static int fit_roofline(rfit *c, size_t n_res,
                        int (*fn)(const gsl_vector *, void *, gsl_vector *), cost_params *out,
                        double *rms)
{
    static const double starts[][N_ROOF] = {
        {0.5, 0.8, 2e-3}, {0.3, 0.6, 5e-3}, {0.7, 0.9, 1e-3}};
    const size_t np = n_free(c->free);
    if (np == 0 || n_res <= np)
        return SIM_ERROR(SIM_EINVAL, "fit-cost: %zu measurement%s for %zu free factor%s; "
                         "expected more measurements than free factors", n_res,
                         n_res == 1 ? "" : "s", np, np == 1 ? "" : "s");
    double best = INFINITY;
    gsl_multifit_nlinear_fdf fdf = {.f = fn, .n = n_res, .p = np, .params = c};
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, n_res, np);
    gsl_vector *x0 = gsl_vector_alloc(np);
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        size_t k = 0;
        if (c->free & EXP_COSTFIT_MFU)
            gsl_vector_set(x0, k++, log(starts[s][0] / (1 - starts[s][0])));
        if (c->free & EXP_COSTFIT_MBU)
            gsl_vector_set(x0, k++, log(starts[s][1] / (1 - starts[s][1])));
        if (c->free & EXP_COSTFIT_OVERHEAD)
            gsl_vector_set(x0, k++, log(starts[s][2]));
        c->err = 0;
        if (gsl_multifit_nlinear_init(x0, &fdf, w) != GSL_SUCCESS || c->err)
            continue;
        int info = 0;
        int st = gsl_multifit_nlinear_driver(300, 1e-12, 1e-12, 1e-12, NULL, NULL, &info, w);
        if ((st != GSL_SUCCESS && st != GSL_EMAXITER && st != GSL_ENOPROG) || c->err)
            continue;
        const double r = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w)) /
                         sqrt((double)n_res);
        if (r < best) {
            best = r;
            *out = params_of(c, gsl_multifit_nlinear_position(w));
        }
    }
    gsl_vector_free(x0);
    gsl_multifit_nlinear_free(w);
    if (!isfinite(best))
        return SIM_ERROR(SIM_EINVAL, "fit-cost: the roofline fit did not converge from any "
                         "starting point; expected measurements of this deployment");
    *rms = best;
    return SIM_OK;
}

int exp_costfit_steps(const spec_deploy *d, const cost_params *prior, unsigned free_f,
                      const exp_costfit_step *s, size_t n, exp_costfit_result *out)
{
    memset(out, 0, sizeof *out);
    int rc = fit_linear(s, n, &out->linear, &out->rms_linear);
    if (rc)
        return rc;
    out->linear_fitted = 1;
    rfit c = {.d = d, .prior = *prior, .free = free_f, .s = s, .n = n};
    return fit_roofline(&c, n, steps_f, &out->roofline, &out->rms_roofline);
}

/* The fitted roofline's linearisation (tests/calibrate.c, linear_prior). */
static cost_linear linearise(const spec_deploy *d, const cost_params *p)
{
    cost_model r;
    cost_roofline_init(&r, d, p);
    return (cost_linear){
        .a_s = r.weight_s + r.ar_fixed_s + r.overhead_s,
        .b_s_per_token = r.lin_s_per_token + r.ar_s_per_token,
        .c_s_per_attn = r.attn_s_per_unit,
        .d_s_per_decode = r.lin_s_per_token + r.head_s_per_sample + r.ar_s_per_token,
        .e_s_per_ctx = r.kv_s_per_token + r.attn_s_per_unit,
    };
}

int exp_costfit_vllm(const spec_deploy *d, uint32_t n_blocks, const engine_params *p,
                     const cost_params *prior, unsigned free_f, unsigned targets,
                     const exp_costfit_req *r, size_t n, uint32_t conc,
                     exp_costfit_result *out)
{
    memset(out, 0, sizeof *out);
    exp_costfit_req *pred = sim_xcalloc(n ? n : 1, sizeof *pred);
    rfit c = {.d = d, .prior = *prior, .free = free_f, .targets = targets, .r = r, .n = n,
              .conc = conc, .n_blocks = n_blocks, .ep = p, .pred = pred};
    size_t n_res = 0;
    for (size_t i = 0; i < n; i++)
        n_res += !!(targets & EXP_COSTFIT_TTFT) + (size_t)uses_itl(&c, &r[i]);
    /* A request that cannot fit is an input error, found before the fit. */
    cost_model m;
    cost_roofline_init(&m, d, prior);
    int rc = exp_costfit_simulate(&m, n_blocks, p, r, n, conc, pred);
    if (rc == SIM_OK)
        rc = fit_roofline(&c, n_res, vllm_f, &out->roofline, &out->rms_roofline);
    free(pred);
    out->linear = linearise(d, &out->roofline);
    out->rms_linear = -1;
    return rc;
}

/* ---- closed-loop engine run --------------------------------------------- */

typedef struct sim_ctx {
    uint32_t *done;  /* indexes of requests finished in the last step */
    size_t n_done;
    uint32_t rejected;
} sim_ctx;

/* The engine records the first-token time in er->first_token_s itself. */
static void on_first(void *ctx, uint32_t dest, engine_req *er, double t)
{
    (void)ctx;
    (void)dest;
    (void)er;
    (void)t;
}

static void on_finish(void *ctx, uint32_t dest, engine_req *er, double t)
{
    sim_ctx *c = ctx;
    (void)dest;
    (void)t;
    if (er->rejected)
        c->rejected++;
    c->done[c->n_done++] = (uint32_t)er->r->id;
}

int exp_costfit_simulate(const cost_model *m, uint32_t n_blocks, const engine_params *p,
                         const exp_costfit_req *r, size_t n, uint32_t conc,
                         exp_costfit_req *pred)
{
    for (size_t i = 0; i < n; i++)
        if (((uint64_t)r[i].input_tokens + r[i].output_tokens + p->block_size - 1) /
                p->block_size > n_blocks)
            return SIM_ERROR(SIM_EINVAL, "fit-cost: request %zu (%u + %u tokens) does not fit "
                             "in the deployment's KV pool of %u blocks of %u tokens; expected "
                             "the deployment the benchmark ran on", i, r[i].input_tokens,
                             r[i].output_tokens, n_blocks, p->block_size);
    sim_ctx c = {.done = sim_xcalloc(n ? n : 1, sizeof *c.done)};
    engine_hooks hooks = {.ctx = &c, .first_token = on_first, .finish = on_finish};
    engine *e = engine_create(0, n_blocks, p, m, &hooks);
    if (!e)
        sim_panic(__FILE__, __LINE__, "out of memory creating the fit-cost engine");
    wl_request *rq = sim_xcalloc(n ? n : 1, sizeof *rq);
    engine_req *er = sim_xcalloc(n ? n : 1, sizeof *er);
    for (size_t i = 0; i < n; i++) {
        const uint32_t nb = r[i].input_tokens / p->block_size;
        rq[i] = (wl_request){.id = i, .key = i, .prompt_tokens = r[i].input_tokens,
                             .output_tokens = r[i].output_tokens, .n_blocks = nb};
        rq[i].blocks = sim_xmalloc((nb ? nb : 1) * sizeof *rq[i].blocks);
        uint64_t parent = 0;
        for (uint32_t j = 0; j < nb; j++) /* distinct contents: no prefix hits */
            parent = rq[i].blocks[j] = wl_block_hash(parent, ((uint64_t)i << 32) | j);
        er[i] = (engine_req){.r = &rq[i], .first_token_s = -1.0, .finish_s = -1.0};
    }
    size_t next = 0;
    double t = 0.0, dt;
    for (; next < n && next < conc; next++) {
        rq[next].arrival_s = 0.0;
        engine_submit(e, &er[next], 0.0);
    }
    while ((dt = engine_try_start(e, t)) > 0) {
        t += dt;
        c.n_done = 0;
        engine_step_done(e, t);
        /* The benchmark client sends its next request when one finishes. */
        for (size_t k = 0; k < c.n_done && next < n; k++, next++) {
            rq[next].arrival_s = t;
            engine_submit(e, &er[next], t);
        }
    }
    for (size_t i = 0; i < n; i++) {
        pred[i] = r[i];
        pred[i].ttft_s = er[i].first_token_s - rq[i].arrival_s;
        pred[i].itl_s = r[i].output_tokens > 1 ? (er[i].finish_s - er[i].first_token_s) /
                                                     (double)(r[i].output_tokens - 1)
                                               : 0;
    }
    engine_destroy(e);
    for (size_t i = 0; i < n; i++)
        wl_request_fini(&rq[i]);
    free(rq);
    free(er);
    free(c.done);
    SIM_ALWAYS(c.rejected == 0);
    return SIM_OK;
}

/* ---- the command -------------------------------------------------------- */

static void lower(char *dst, size_t n, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
}

static void write_profile(FILE *f, const char *name, const spec_deploy *d, const char *what,
                          const char *file, const exp_costfit_result *res, const char *table,
                          const char *transferred, unsigned free_f)
{
    char model[128], hw[128];
    lower(model, sizeof model, d->model->name);
    lower(hw, sizeof hw, d->hw->name);
    const char *wd = d->weight_dtype == SPEC_FP8 ? "fp8" : "bf16";
    const char *kd = d->kv_dtype == SPEC_FP8 ? "fp8" : "bf16";
    fprintf(f, "# Cost profile: %s %s weights, %s KV, TP=%lld %s.\n"
            "# Written by crsim fit-cost (docs/calibration.md, \"Fitting your own "
            "deployment\").\n# Fitted to: %s %s.\n"
            "# Residuals (model/measured - 1), roofline rms of log ratio %.1f %%%s:\n%s",
            d->model->name, wd, kd, (long long)d->tp, d->hw->name, what, file,
            100 * res->rms_roofline, res->rms_linear >= 0 ? ", linear likewise below" : "",
            table);
    fprintf(f, "name: %s\nmodel: %s\nhardware: %s\ntp: %lld\nweight_dtype: %s\nkv_dtype: %s\n"
            "roofline:\n  mfu: %.6g   # %s\n  mbu: %.6g   # %s\n"
            "  step_overhead_s: %.6g   # %s\n"
            "  allreduce_latency_s: %g   # prior: assumed NVLink all-reduce latency\nlinear:\n",
            name, model, hw, (long long)d->tp, wd, kd, res->roofline.mfu,
            free_f & EXP_COSTFIT_MFU ? "fitted" : "transferred", res->roofline.mbu,
            free_f & EXP_COSTFIT_MBU ? "fitted" : "transferred", res->roofline.step_overhead_s,
            free_f & EXP_COSTFIT_OVERHEAD ? "fitted" : "transferred",
            res->roofline.allreduce_latency_s);
    cost_linear l = res->linear;
    for (int k = 0; k < N_LIN; k++)
        fprintf(f, "  %s: %.6g   # %s\n", lin_names[k], *lin_ptr(&l, k),
                res->linear_fitted ? "fitted" : "linearisation of the fitted roofline");
    if (*transferred)
        fprintf(f, "transferred: \"%s\"\n", transferred);
    fprintf(f, "source: \"fitted by crsim fit-cost to %s\"\n", file);
}

/* Append to a growing comment table. */
static void tbl(char **s, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tbl(char **s, size_t *len, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    size_t k = strlen(line);
    *s = sim_xrealloc(*s, *len + k + 1);
    memcpy(*s + *len, line, k + 1);
    *len += k;
}

/* A comma-separated subset of `names` into bits (name i = bit i). */
static int parse_set(const char *v, const char *opt, const char *const *names, unsigned *out)
{
    *out = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (names[i] && strcmp(names[i], t) != 0)
            i++;
        if (!names[i])
            return SIM_ERROR(SIM_EINVAL, "fit-cost: %s '%s': unknown '%s'; expected a "
                             "comma-separated list of %s%s%s%s%s", opt, v, t, names[0],
                             names[1] ? ", " : "", names[1] ? names[1] : "",
                             names[1] && names[2] ? ", " : "", names[1] && names[2] ? names[2]
                                                                                  : "");
        *out |= 1u << i;
    }
    if (!*out)
        return SIM_ERROR(SIM_EINVAL, "fit-cost: %s is empty; expected at least one of %s, ...",
                         opt, names[0]);
    return SIM_OK;
}

int exp_costfit_main(const exp_cli_args *a, FILE *out)
{
    const char *steps = exp_cli_str(a, "steps", NULL), *vb = exp_cli_str(a, "vllm-bench", NULL);
    if (!steps == !vb)
        return SIM_ERROR(SIM_EINVAL, "fit-cost: %s; expected exactly one of --steps CSV and "
                         "--vllm-bench JSON", steps ? "both --steps and --vllm-bench given"
                                                    : "no measurements given");
    size_t n_set = 0;
    const char *const *sets = exp_cli_list(a, "set", &n_set);
    const exp_config_src src = {.path = a->pos[0], .sets = sets, .n_set = n_set,
                                .unchecked = true};
    exp_config cfg;
    int rc = exp_config_derive(&src, NULL, 0, &cfg);
    if (rc)
        return rc;
    spec_hw hw = {0};
    spec_model md = {0};
    exp_costfit_step *st = NULL;
    exp_costfit_req *rq = NULL;
    char *table = NULL, *name = NULL;
    size_t n = 0, tlen = 0;
    if (cfg.n_groups) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: fit-cost fits one deployment; expected a config "
                       "without cluster.groups (set cluster.* to the measured deployment)",
                       a->pos[0]);
        goto done;
    }
    if ((rc = spec_hw_load(cfg.hardware, &hw)) || (rc = spec_model_load(cfg.model, &md)))
        goto done;
    spec_deploy d = {.hw = &hw, .model = &md, .tp = cfg.tp, .mem_util = cfg.mem_util,
                     .block_size = cfg.block_size};
    spec_dtype_parse(cfg.weight_dtype, &d.weight_dtype);
    spec_dtype_parse(cfg.kv_dtype, &d.kv_dtype);
    uint64_t pool_tokens;
    uint32_t pool_blocks;
    if ((rc = spec_kv_pool(&d, &pool_tokens, &pool_blocks)))
        goto done;
    cost_params prior = {.mfu = 0.5, .mbu = 0.8, .step_overhead_s = 2e-3,
                         .allreduce_latency_s = PRIOR_AR_LATENCY_S};
    char prior_name[256] = "";
    const char *pp = exp_cli_str(a, "prior", NULL);
    if (pp) {
        cost_profile pr;
        if ((rc = cost_profile_load(pp, &pr)))
            goto done;
        prior = pr.roofline;
        snprintf(prior_name, sizeof prior_name, "%s", pr.name);
        cost_profile_fini(&pr);
    }
    unsigned free_f = 0, targets = 0;
    if ((rc = parse_set(exp_cli_str(a, "free", "mfu,mbu,overhead"), "--free",
                        (const char *const[]){"mfu", "mbu", "overhead", NULL}, &free_f)) ||
        (rc = parse_set(exp_cli_str(a, "targets", "ttft,itl"), "--targets",
                        (const char *const[]){"ttft", "itl", NULL}, &targets)))
        goto done;
    char transferred[512] = "";
    if (free_f != EXP_COSTFIT_ALL) {
        static const char *const fn[] = {"mfu", "mbu", "step_overhead_s"};
        size_t k = 0;
        for (unsigned i = 0; i < 3; i++)
            if (!(free_f & (1u << i)))
                k += (size_t)snprintf(transferred + k, sizeof transferred - k, "%s%s",
                                      k ? ", " : "", fn[i]);
        snprintf(transferred + k, sizeof transferred - k, " of %s (not fitted here)",
                 *prior_name ? prior_name
                             : "crsim's defaults (mfu 0.5, mbu 0.8, overhead 2 ms)");
    }
    exp_costfit_result res;
    char what[128];
    if (steps) {
        if ((rc = exp_costfit_read_steps(steps, N_LIN + 1, &st, &n)) ||
            (rc = exp_costfit_steps(&d, &prior, free_f, st, n, &res)))
            goto done;
        snprintf(what, sizeof what, "%zu measured steps of", n);
        cost_model mr, ml;
        cost_roofline_init(&mr, &d, &res.roofline);
        cost_linear_init(&ml, &res.linear);
        tbl(&table, &tlen, "#   line | measured | roofline (err) | linear (err)\n");
        for (size_t i = 0; i < n; i++) {
            const double tr = cost_step_time(&mr, &st[i].b), tl = cost_step_time(&ml, &st[i].b);
            if (i < 40)
                tbl(&table, &tlen, "#   %ld | %.4g ms | %.4g ms (%+.1f %%) | %.4g ms (%+.1f %%)\n",
                    st[i].line, 1e3 * st[i].seconds, 1e3 * tr,
                    100 * (tr / st[i].seconds - 1), 1e3 * tl, 100 * (tl / st[i].seconds - 1));
        }
        if (n > 40)
            tbl(&table, &tlen, "#   (%zu more steps not listed)\n", n - 40);
        tbl(&table, &tlen, "#   rms of log(model/measured): roofline %.2f %%, linear %.2f %%\n",
            100 * res.rms_roofline, 100 * res.rms_linear);
    } else {
        uint32_t conc = 0;
        if ((rc = exp_costfit_read_vllm(vb, N_ROOF + 1, &rq, &n, &conc)))
            goto done;
        const engine_params ep = {.block_size = (uint32_t)cfg.block_size,
                                  .max_num_batched_tokens = (uint32_t)cfg.max_num_batched_tokens,
                                  .max_num_seqs = (uint32_t)cfg.max_num_seqs,
                                  .prefix_caching = false};
        if ((rc = exp_costfit_vllm(&d, pool_blocks, &ep, &prior, free_f, targets, rq, n, conc,
                                   &res)))
            goto done;
        snprintf(what, sizeof what, "a vllm bench serve run of %zu requests at concurrency %u,",
                 n, conc);
        exp_costfit_req *pred = sim_xcalloc(n, sizeof *pred);
        cost_model mr;
        cost_roofline_init(&mr, &d, &res.roofline);
        exp_costfit_simulate(&mr, pool_blocks, &ep, rq, n, conc, pred);
        double mt = 0, pt = 0, mi = 0, pi = 0;
        size_t ni = 0;
        for (size_t i = 0; i < n; i++) {
            mt += rq[i].ttft_s;
            pt += pred[i].ttft_s;
            if (rq[i].output_tokens > 1 && rq[i].itl_s > 0) {
                mi += rq[i].itl_s;
                pi += pred[i].itl_s;
                ni++;
            }
        }
        tbl(&table, &tlen, "#   mean TTFT: measured %.4g ms, roofline %.4g ms (%+.1f %%)\n",
            1e3 * mt / (double)n, 1e3 * pt / (double)n, 100 * (pt / mt - 1));
        if (ni)
            tbl(&table, &tlen, "#   mean ITL: measured %.4g ms, roofline %.4g ms (%+.1f %%)\n",
                1e3 * mi / (double)ni, 1e3 * pi / (double)ni, 100 * (pi / mi - 1));
        tbl(&table, &tlen, "#   The linear coefficients are the fitted roofline's "
            "linearisation, not fitted.\n");
        free(pred);
    }
    const char *nm = exp_cli_str(a, "name", NULL);
    name = nm ? sim_xstrdup(nm) : cost_profile_default_name(&d);
    const char *path = exp_cli_str(a, "out", NULL);
    if (!path) {
        write_profile(out, name, &d, what, steps ? steps : vb, &res, table, transferred,
                      free_f);
        goto done;
    }
    size_t pl = strlen(path) + 40;
    char *tmp = sim_xmalloc(pl);
    snprintf(tmp, pl, "%s%s.tmp%ld.yaml", strchr(path, '/') ? "" : "./", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        rc = SIM_ERROR(SIM_EIO, "fit-cost: cannot create %s: %s", tmp, strerror(errno));
    } else {
        write_profile(f, name, &d, what, steps ? steps : vb, &res, table, transferred,
                      free_f);
        if (fclose(f) != 0)
            rc = SIM_ERROR(SIM_EIO, "fit-cost: cannot write %s: %s", tmp, strerror(errno));
        cost_profile back;
        if (rc == SIM_OK && (rc = cost_profile_load(tmp, &back)) == SIM_OK)
            cost_profile_fini(&back);
        if (rc == SIM_OK && rename(tmp, path) != 0)
            rc = SIM_ERROR(SIM_EIO, "fit-cost: cannot rename %s to %s: %s", tmp, path,
                           strerror(errno));
        if (rc)
            remove(tmp);
    }
    free(tmp);
    if (rc == SIM_OK)
        fprintf(out, "wrote %s: mfu %.4g, mbu %.4g, step overhead %.4g ms (roofline rms %.2f %%)"
                "\n%s", path, res.roofline.mfu, res.roofline.mbu,
                1e3 * res.roofline.step_overhead_s, 100 * res.rms_roofline, table);
done:
    free(table);
    free(name);
    free(st);
    free(rq);
    spec_hw_fini(&hw);
    spec_model_fini(&md);
    exp_config_fini(&cfg);
    return rc;
}
