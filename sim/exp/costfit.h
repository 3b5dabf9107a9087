/*
 * `crsim fit-cost CONFIG (--steps CSV | --vllm-bench JSON)`: fit the cost
 * profile of CONFIG's deployment (cluster.model, hardware, tp, dtypes and
 * the engine.* limits) to the user's own measurements, and write the
 * profile with its residuals (docs/calibration.md, "Fitting your own
 * deployment").
 *
 * Two kinds of measurement:
 *
 *   steps CSV   one engine step per row: prefill_tokens (Σ prompt tokens
 *               computed in the step), decode_tokens (decoding sequences),
 *               context (Σ context tokens of those decodes), seconds, and
 *               optionally prefill_context (tokens before the step's
 *               prefill chunks; default 0).  The linear model is fitted by
 *               weighted linear least squares (gsl_multifit_wlinear,
 *               relative errors), the roofline's mfu, mbu and step
 *               overhead by nonlinear least squares on log(model/measured)
 *               (gsl_multifit_nlinear).
 *   vllm bench  the result file of `vllm bench serve --save-result
 *               --save-detailed` (vLLM benchmarks/serve.py: input_lens,
 *               output_lens, ttfts and itls in seconds, max_concurrency,
 *               request_rate) at a fixed concurrency (or an infinite
 *               rate): crsim's engine is run on the same requests with
 *               the same concurrency (a new request when one finishes, in
 *               file order), and the roofline factors are fitted to the
 *               requests' TTFT and mean ITL; the linear coefficients are
 *               then the fitted roofline's linearisation.
 */
#ifndef CRSIM_SIM_EXP_COSTFIT_H
#define CRSIM_SIM_EXP_COSTFIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "models/cost.h"
#include "models/engine.h"
#include "models/spec.h"
#include "sim/exp/cli.h"

/* The roofline factors a fit frees (bits); the others keep the prior's
 * values (a profile given with --prior, or the defaults). */
enum { EXP_COSTFIT_MFU = 1, EXP_COSTFIT_MBU = 2, EXP_COSTFIT_OVERHEAD = 4,
       EXP_COSTFIT_ALL = 7 };

/* The quantities of a vllm bench result fitted (bits). */
enum { EXP_COSTFIT_TTFT = 1, EXP_COSTFIT_ITL = 2 };

/* One measured step (steps CSV row). */
typedef struct exp_costfit_step {
    cost_batch b;     /* its composition (prefill_attn as one chunk per row) */
    double seconds;   /* measured duration, s (> 0) */
    long line;        /* line in the file */
} exp_costfit_step;

/* One request of a vllm bench result. */
typedef struct exp_costfit_req {
    uint32_t input_tokens, output_tokens;
    double ttft_s;    /* measured time to first token, s */
    double itl_s;     /* measured time per output token after the first:
                         Σ itls / (output tokens − 1), s (0 if one token) */
} exp_costfit_req;

/* What a fit produced. */
typedef struct exp_costfit_result {
    cost_params roofline;  /* fitted mfu, mbu, step_overhead_s (AR latency fixed) */
    cost_linear linear;    /* fitted (steps) or linearised (vllm bench) */
    double rms_roofline;   /* root mean square of log(model/measured) */
    double rms_linear;     /* ... of the linear model (steps only; else -1) */
    int linear_fitted;     /* 1: fitted to the data; 0: linearised roofline */
} exp_costfit_result;

/* Read a steps CSV (columns by header name, any order).  *out is a new
 * array the caller frees.  SIM_EINVAL "PATH:LINE: ..." for a missing
 * column, a value that is not a number >= 0 (seconds > 0), or fewer rows
 * than `min_rows`; SIM_EIO if unreadable. */
int exp_costfit_read_steps(const char *path, size_t min_rows, exp_costfit_step **out,
                           size_t *n);

/* Read a vllm bench serve result (see above) into *out (a new array) and
 * its concurrency into *conc (the number of requests for an infinite rate
 * without max_concurrency).  SIM_EINVAL naming the file and key for a
 * missing list, lists of different lengths, a negative time, fewer
 * requests than `min_rows`, or a finite request rate without
 * max_concurrency (arrival times are not in the file). */
int exp_costfit_read_vllm(const char *path, size_t min_rows, exp_costfit_req **out, size_t *n,
                          uint32_t *conc);

/* Fit both models to steps of deployment `d`: the linear model's a..e,
 * and the roofline factors of `free_f` (EXP_COSTFIT_* bits), the others and
 * the all-reduce latency kept at `prior`'s values.  Returns SIM_OK, or
 * SIM_EINVAL when the measurements cannot determine the linear model
 * (collinear columns) or the fit does not converge. */
int exp_costfit_steps(const spec_deploy *d, const cost_params *prior, unsigned free_f,
                      const exp_costfit_step *s, size_t n, exp_costfit_result *out);

/* Run crsim's engine (pool `n_blocks`, settings `p`, model `m`) on the
 * requests `r` (only their token counts are read) at concurrency `conc`
 * in closed loop, writing each request's TTFT and mean ITL into
 * pred[i].ttft_s / itl_s (pred has n entries; token counts copied).
 * Returns SIM_OK or SIM_EINVAL when a request cannot fit in the pool. */
int exp_costfit_simulate(const cost_model *m, uint32_t n_blocks, const engine_params *p,
                         const exp_costfit_req *r, size_t n, uint32_t conc,
                         exp_costfit_req *pred);

/* Fit the roofline factors of `free_f` (the others at `prior`'s values) to
 * a vllm bench result: log residuals of every request's TTFT and/or time
 * per output token (`targets`, EXP_COSTFIT_TTFT | EXP_COSTFIT_ITL).  The
 * linear coefficients are the fitted roofline's linearisation.  Returns
 * SIM_OK, SIM_EINVAL (no more residuals than free factors, no
 * convergence) or the errors of exp_costfit_simulate. */
int exp_costfit_vllm(const spec_deploy *d, uint32_t n_blocks, const engine_params *p,
                     const cost_params *prior, unsigned free_f, unsigned targets,
                     const exp_costfit_req *r, size_t n, uint32_t conc,
                     exp_costfit_result *out);

/* The subcommand on parsed arguments; prints to `out`. */
int exp_costfit_main(const exp_cli_args *a, FILE *out);

#endif
