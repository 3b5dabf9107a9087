/*
 * Synthetic benchmarks on one engine: n identical requests submitted at
 * t = 0, run to completion, the way the public measurements the cost
 * models are calibrated against were taken (vLLM's benchmark at fixed
 * concurrency, trtllm-bench at infinite request rate).  Used by the
 * calibration program (tests/calibrate.c) and the cost-model tests.
 *
 * With every arrival at t = 0 the engine's schedule (which tokens run in
 * which step) does not depend on step durations, so every quantity
 * reported here is a linear function of the step times.  The calibration
 * uses this to fit the linear model by linear least squares.
 */
#ifndef CRSIM_MODELS_COST_BENCH_H
#define CRSIM_MODELS_COST_BENCH_H

#include <stdint.h>

#include "models/cost.h"
#include "models/engine.h"

/* What one benchmark run measured.  Times in seconds from t = 0. */
typedef struct cost_bench_result {
    double makespan_s;  /* when the last request finished */
    double ttft_mean_s; /* mean time to first token over requests */
    double tpot_mean_s; /* mean over requests of (finish − first token) /
                           (output tokens − 1); 0 if output tokens == 1 */
    uint64_t steps;
    uint64_t preemptions;
} cost_bench_result;

/*
 * Run `n` requests of `isl` prompt and `osl` output tokens, all submitted
 * at t = 0 with distinct (never shared) prompt contents, on one engine with
 * `n_blocks` KV blocks, scheduler settings `p` (prefix caching is
 * irrelevant: nothing is shared) and cost model `m`, until all finish.
 * Writes the result to *out.  Returns SIM_OK, or SIM_EINVAL when n, isl or
 * osl is 0 or a request cannot fit in the pool (the engine would reject
 * it).  Aborts on out-of-memory.  Cost: O(steps × running requests).
 */
int cost_bench_run(const cost_model *m, uint32_t n_blocks, const engine_params *p, uint32_t n,
                   uint32_t isl, uint32_t osl, cost_bench_result *out);

#endif
