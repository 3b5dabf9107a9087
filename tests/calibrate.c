/*
 * Calibration of the cost models against public measurements
 * (docs/calibration.md lists the sources and explains
 * every choice made here).
 *
 * For each deployment the program drives one real engine (models/engine.h,
 * through models/cost_bench.h) with the synthetic batches each measurement
 * describes, fits
 *   1. the roofline model's free efficiency factors (mfu and the per-step
 *      overhead; mbu and the all-reduce latency are fixed priors, see
 *      below) by nonlinear least squares on log(predicted / measured) over
 *      the measurements marked FIT (gsl_multifit_nlinear, trust region with
 *      finite-difference Jacobian; mfu is fitted as a logistic and the
 *      overhead as an exponential so both stay in range);
 *   2. the linear model's five coefficients by weighted linear least
 *      squares (gsl_multifit_wlinear) on the same FIT measurements plus one
 *      weak prior row per coefficient centred on the linearisation of the
 *      fitted roofline.  With all requests at t = 0 the engine's schedule
 *      does not depend on step times, so every predicted time is exactly
 *      linear in the coefficients; the design matrix comes from one engine
 *      run per coefficient.  Coefficients that come out negative are pinned
 *      at 0 and the fit repeated (an active-set loop);
 * then evaluates both fitted models on every measurement, FIT and HELD-OUT
 * alike, and prints a Markdown table.  Deployments without any measurement
 * of their own (Qwen2.5-32B) take the roofline factors of the nearest
 * fitted deployment of the same dtype and TP class and are only validated.
 *
 * usage: calibrate [--write DIR]
 *   --write DIR  also write one cost profile per deployment to
 *                DIR/<profile>.yaml (models/specs/cost/ in the tree).
 * The spec directory is $CRSIM_SPEC_DIR or the build-time default.
 * Exit 0 on success, 1 on any error.
 */
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cost.h"
#include "models/cost_bench.h"
#include "models/cost_profile.h"
#include "models/spec.h"
#include "models/spec_load.h"
#include "sim/core/error.h"

/* Priors that the public data cannot separate (docs/calibration.md):
 * with one decode point per deployment only weight_bytes/(bw·mbu) +
 * overhead is identified, so mbu is fixed at AIConfigurator's empirical
 * 0.8 (docs/calibration.md, sources); the all-reduce latency is folded into the
 * per-step overhead for a fixed TP and fixed at an assumed 10 µs. */
#define PRIOR_MBU 0.8
#define PRIOR_AR_LATENCY_S 10e-6
/* Relative standard deviations of the linear fit: measurements 2 %, prior
 * rows 100 % (a prior only decides what the data leave open). */
#define SIGMA_MEAS 0.02
#define SIGMA_PRIOR 1.0

enum mkind {
    M_TPOT,        /* mean time per output token after the first, s */
    M_TTFT,        /* mean time to first token, s */
    M_PROMPT_TPS,  /* n·isl / makespan, prompt tokens/s */
    M_OUT_TPS,     /* n·osl / makespan, output tokens/s */
    M_TOTAL_TPS,   /* n·(isl + osl) / makespan, tokens/s */
    M_LAYERSUM     /* one prefill step of isl tokens without all-reduce and
                      per-step overhead (layer-profile sums), s */
};

enum role { FIT, HELD, INFO };
static const char *const role_name[] = {"fit", "held out", "info"};

typedef struct meas {
    int dep;              /* index into deps[] */
    const char *what;
    enum mkind kind;
    enum role role;
    uint32_t n, isl, osl;
    uint32_t mbt, seqs;   /* engine max_num_batched_tokens, max_num_seqs */
    bool big_pool;        /* step-level profile: memory never binds */
    double value;         /* measured, in the unit of `kind` (s or tok/s) */
    const char *source;
    const char *cond;
} meas;

typedef struct dep_def {
    const char *profile;
    const char *model;
    int tp;
    enum spec_dtype w, kv;
    int transfer_from; /* -1: mfu and overhead fitted; else index of the
                          deployment whose roofline factors are reused */
    bool fit_mfu;      /* with transfer_from >= 0: fit mfu only, reuse the
                          overhead */
    const char *note;
    const char *hw;    /* GPU spec; NULL = h100-sxm */
    bool fit_overhead; /* with transfer_from >= 0: fit the overhead only,
                          reuse mfu (one decode point per deployment) */
} dep_def;

enum { D70_FP8, D70_BF16, D8_BF16, DQ_BF16, DQ_FP8,
       D8_A100, D8_TP2, D8_TP4, D8_TP8, D70_FP8_TP4, D70_FP8_TP8, D70_FP8_A100, DM7_BF16,
       N_DEPS };

static const dep_def deps[N_DEPS] = {
    [D70_FP8] = {"llama-3.3-70b_h100-sxm_tp2_fp8-fp8", "llama-3.3-70b", 2, SPEC_FP8, SPEC_FP8, -1, false,
                 "Llama-3.3-70B fp8 weights and KV, TP=2 H100-SXM"},
    [D70_BF16] = {"llama-3.3-70b_h100-sxm_tp2_bf16-bf16", "llama-3.3-70b", 2, SPEC_BF16, SPEC_BF16,
                  -1, false, "Llama-3.3-70B bf16/fp16 weights and KV, TP=2 H100-SXM"},
    [D8_BF16] = {"llama-3.1-8b_h100-sxm_tp1_bf16-bf16", "llama-3.1-8b", 1, SPEC_BF16, SPEC_BF16,
                 -1, false, "Llama-3.1-8B bf16 weights and KV, TP=1 H100-SXM"},
    [DQ_BF16] = {"qwen2.5-32b_h100-sxm_tp1_bf16-bf16", "qwen2.5-32b", 1, SPEC_BF16, SPEC_BF16,
                 D8_BF16, true, "Qwen2.5-32B bf16 weights and KV, TP=1 H100-SXM"},
    [DQ_FP8] = {"qwen2.5-32b_h100-sxm_tp1_fp8-fp8", "qwen2.5-32b", 1, SPEC_FP8, SPEC_FP8, D70_FP8,
                false, "Qwen2.5-32B fp8 weights and KV, TP=1 H100-SXM"},
    /* One decode point each (LambdaLabs, 10 concurrent): the overhead is
     * fitted, mfu taken from the H100 fit of the same model and dtypes. */
    [D8_A100] = {"llama-3.1-8b_a100-sxm-80gb_tp1_bf16-bf16", "llama-3.1-8b", 1, SPEC_BF16,
                 SPEC_BF16, D8_BF16, false, "Llama-3.1-8B bf16 weights and KV, TP=1 A100-SXM-80GB",
                 "a100-sxm-80gb", true},
    [D8_TP2] = {"llama-3.1-8b_h100-sxm_tp2_bf16-bf16", "llama-3.1-8b", 2, SPEC_BF16, SPEC_BF16,
                D8_BF16, false, "Llama-3.1-8B bf16 weights and KV, TP=2 H100-SXM", NULL, true},
    [D8_TP4] = {"llama-3.1-8b_h100-sxm_tp4_bf16-bf16", "llama-3.1-8b", 4, SPEC_BF16, SPEC_BF16,
                D8_BF16, false, "Llama-3.1-8B bf16 weights and KV, TP=4 H100-SXM", NULL, true},
    [D8_TP8] = {"llama-3.1-8b_h100-sxm_tp8_bf16-bf16", "llama-3.1-8b", 8, SPEC_BF16, SPEC_BF16,
                D8_BF16, false, "Llama-3.1-8B bf16 weights and KV, TP=8 H100-SXM", NULL, true},
    [D70_FP8_TP4] = {"llama-3.3-70b_h100-sxm_tp4_fp8-fp8", "llama-3.3-70b", 4, SPEC_FP8, SPEC_FP8,
                     D70_FP8, false, "Llama-3.3-70B fp8 weights and KV, TP=4 H100-SXM", NULL,
                     true},
    [D70_FP8_TP8] = {"llama-3.3-70b_h100-sxm_tp8_fp8-fp8", "llama-3.3-70b", 8, SPEC_FP8, SPEC_FP8,
                     D70_FP8, false, "Llama-3.3-70B fp8 weights and KV, TP=8 H100-SXM", NULL,
                     true},
    [D70_FP8_A100] = {"llama-3.3-70b_a100-sxm-80gb_tp2_fp8-fp8", "llama-3.3-70b", 2, SPEC_FP8,
                      SPEC_FP8, D70_FP8, false,
                      "Llama-3.3-70B fp8 weights (W8A16 on Ampere) and KV, TP=2 A100-SXM-80GB",
                      "a100-sxm-80gb", true},
    [DM7_BF16] = {"mistral-7b_h100-sxm_tp1_bf16-bf16", "mistral-7b", 1, SPEC_BF16, SPEC_BF16,
                  D8_BF16, false, "Mistral-7B (v0.3) bf16 weights and KV, TP=1 H100-SXM", NULL,
                  true},
};

#define LAMBDA "LambdaLabsML/vllm-benchmark"
#define TRT "TensorRT-LLM perf-overview.md"
#define SPLIT "splitwise-sim data/perf_model.csv"
#define LSS "LLMServingSim layers.csv"
#define GPUSTACK "gpustack performance-lab qwen3-32b/h100.md"

/* TRT-LLM runs: 1000 requests at t = 0; token budget 8192 (TRT-LLM's
 * default max_num_tokens), max_num_seqs 2048 so that the KV pool and the
 * token budget bind, as at infinite request rate (assumed; the published
 * page does not list the runtime batch size).  vLLM online runs: 8192 and
 * 256 (Sept 2024) or 1024 (v0.11 on an 80 GB GPU) sequences.  splitwise
 * (vLLM 2023, no chunked prefill): a budget of 65536 so that a batch of
 * prompts runs in one step, and a pool large enough never to bind. */
static const meas ms[] = {
    /* ---- Llama-3.3-70B fp8 TP2 ---- */
    {D70_FP8, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256, false,
     0.0193, LAMBDA " 2xH100 Llama-3.1-70B-FP8 tp2",
     "vLLM (Sept 2024); 10 prompts, 1369 tokens total; 400 output tokens assumed"},
    {D70_FP8, "saturated prompt throughput 2048/128", M_PROMPT_TPS, FIT, 1000, 2048, 128, 8192,
     2048, false, 12192, TRT " Llama-3.3-70B-FP8 TP2",
     "trtllm-bench, infinite rate; 762 out tok/s x 2048/128"},
    {D70_FP8, "saturated prompt throughput 5000/500", M_PROMPT_TPS, FIT, 1000, 5000, 500, 8192,
     2048, false, 8980, TRT " Llama-3.3-70B-FP8 TP2",
     "trtllm-bench, infinite rate; 898 out tok/s x 5000/500"},
    {D70_FP8, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false, 0.179,
     LAMBDA " 2xH100 Llama-3.1-70B-FP8 tp2", "as above; includes HTTP and tokenisation"},
    {D70_FP8, "saturated output throughput 1000/1000", M_OUT_TPS, HELD, 1000, 1000, 1000, 8192,
     2048, false, 4205, TRT " Llama-3.3-70B-FP8 TP2", "trtllm-bench, infinite rate"},
    {D70_FP8, "saturated output throughput 128/2048", M_OUT_TPS, HELD, 1000, 128, 2048, 8192,
     2048, false, 6651, TRT " Llama-3.3-70B-FP8 TP2", "trtllm-bench, infinite rate"},
    /* ---- Llama-3.3-70B bf16 TP2 (measured on Llama-2-70B fp16) ---- */
    {D70_BF16, "prompt time, 1 x 2048 tokens", M_TTFT, FIT, 1, 2048, 2, 65536, 256, true, 0.3082,
     SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16; mean of 5 runs"},
    {D70_BF16, "prompt time, 1 x 8192 tokens", M_TTFT, FIT, 1, 8192, 2, 65536, 256, true, 1.3391,
     SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16; mean of 5 runs"},
    {D70_BF16, "decode time/token, batch 1 (prompt 512)", M_TPOT, FIT, 1, 512, 128, 65536, 256,
     true, 0.03700, SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16; 128 output tokens"},
    {D70_BF16, "decode time/token, batch 16 (prompt 512)", M_TPOT, FIT, 16, 512, 128, 65536, 256,
     true, 0.04197, SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16; 128 output tokens"},
    {D70_BF16, "prompt time, 1 x 128 tokens", M_TTFT, HELD, 1, 128, 2, 65536, 256, true, 0.0492,
     SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16; mean of 5 runs"},
    {D70_BF16, "prompt time, 1 x 512 tokens", M_TTFT, HELD, 1, 512, 2, 65536, 256, true, 0.0839,
     SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16; mean of 5 runs"},
    {D70_BF16, "prompt time, 16 x 512 tokens", M_TTFT, HELD, 16, 512, 2, 65536, 256, true, 1.1916,
     SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16; one batch of 8192 tokens"},
    {D70_BF16, "decode time/token, batch 4 (prompt 512)", M_TPOT, HELD, 4, 512, 128, 65536, 256,
     true, 0.03995, SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16"},
    {D70_BF16, "decode time/token, batch 32 (prompt 512)", M_TPOT, HELD, 32, 512, 128, 65536, 256,
     true, 0.05226, SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16"},
    {D70_BF16, "decode time/token, batch 1 (prompt 8192)", M_TPOT, HELD, 1, 8192, 128, 65536, 256,
     true, 0.03781, SPLIT " llama2-70b h100 tp2", "vLLM 2023-24 fp16"},
    {D70_BF16, "layer-sum step, 2048 tokens", M_LAYERSUM, HELD, 1, 2048, 1, 0, 0, true,
     2048.0 / 7900.0, LSS " H100 Llama-3.1-70B tp2",
     "profiled layers, bf16, no all-reduce or overhead"},
    {D70_BF16, "layer-sum step, 512 tokens", M_LAYERSUM, HELD, 1, 512, 1, 0, 0, true,
     512.0 / 7500.0, LSS " H100 Llama-3.1-70B tp2",
     "profiled layers, bf16, no all-reduce or overhead"},
    /* ---- Llama-3.1-8B bf16 TP1 ---- */
    {D8_BF16, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256, false,
     0.0072, LAMBDA " 1xH100 Llama-3-8B-Instruct tp1",
     "vLLM (Sept 2024) bf16; 400 output tokens assumed"},
    {D8_BF16, "layer-sum step, 1024 tokens", M_LAYERSUM, FIT, 1, 1024, 1, 0, 0, true, 0.0302,
     LSS " H100 Llama-3.1-8B tp1", "profiled layers, bf16, no overhead"},
    {D8_BF16, "layer-sum step, 2048 tokens", M_LAYERSUM, FIT, 1, 2048, 1, 0, 0, true,
     2048.0 / 31600.0, LSS " H100 Llama-3.1-8B tp1", "profiled layers, bf16, no overhead"},
    {D8_BF16, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false, 0.063,
     LAMBDA " 1xH100 Llama-3-8B-Instruct tp1", "as above; includes HTTP and tokenisation"},
    {D8_BF16, "layer-sum step, 1 token", M_LAYERSUM, HELD, 1, 1, 1, 0, 0, true, 0.0082,
     LSS " H100 Llama-3.1-8B tp1", "eager mode (no CUDA graphs), no overhead"},
    {D8_BF16, "saturated prompt throughput 2048/128", M_PROMPT_TPS, INFO, 1000, 2048, 128, 8192,
     2048, false, 55200, TRT " Llama-3.1-8B-FP8 TP1",
     "FP8 engine vs bf16 deployment: dtype mismatch, not a target"},
    {D8_BF16, "saturated prompt throughput 5000/500", M_PROMPT_TPS, INFO, 1000, 5000, 500, 8192,
     2048, false, 34600, TRT " Llama-3.1-8B-FP8 TP1",
     "FP8 engine vs bf16 deployment: dtype mismatch, not a target"},
    {D8_BF16, "saturated output throughput 128/128", M_OUT_TPS, INFO, 1000, 128, 128, 8192, 2048,
     false, 28312, TRT " Llama-3.1-8B-FP8 TP1",
     "FP8 engine vs bf16 deployment: dtype mismatch, not a target"},
    /* ---- Qwen2.5-32B bf16 TP1 (proxy: Qwen3-32B, vLLM 0.11) ---- */
    {DQ_BF16, "total throughput, random 2000/100 x 500", M_TOTAL_TPS, FIT, 500, 2000, 100, 8192,
     1024, false, 3195.3, GPUSTACK " (Qwen3-32B proxy)", "vLLM 0.11 bf16, burst of 500"},
    {DQ_BF16, "total throughput, random 4000/200 x 500", M_TOTAL_TPS, HELD, 500, 4000, 200, 8192,
     1024, false, 2148.7, GPUSTACK " (Qwen3-32B proxy)", "vLLM 0.11 bf16, burst of 500"},
    {DQ_BF16, "total throughput, ShareGPT x 1000", M_TOTAL_TPS, INFO, 1000, 217, 201, 8192, 1024,
     false, 2352.8, GPUSTACK " (Qwen3-32B proxy)",
     "vLLM 0.11 bf16, burst; fixed mean lengths 217/201 cannot reproduce a burst's tail"},
    /* ---- Qwen2.5-32B fp8 TP1 (proxy: Qwen3-32B-FP8) ---- */
    {DQ_FP8, "total throughput, ShareGPT x 1000", M_TOTAL_TPS, INFO, 1000, 217, 201, 8192, 1024,
     false, 4284.7, GPUSTACK " (Qwen3-32B-FP8 proxy)",
     "TRT-LLM 1.2 fp8, chunked prefill, burst; fixed mean lengths; KV dtype not stated"},
    {DQ_FP8, "total throughput, ShareGPT x 1000 (SGLang)", M_TOTAL_TPS, INFO, 1000, 217, 201,
     8192, 1024, false, 4005.3, GPUSTACK " (Qwen3-32B-FP8 proxy)",
     "SGLang 0.5.5 fp8, burst; fixed mean lengths; KV dtype not stated"},
    /* ---- LambdaLabs vLLM (Sept 2024) runs of other GPUs and TP degrees:
     * the same 10 ShareGPT prompts (1369 tokens), request rate inf; decode
     * time/token = median ITL / 10 (the server streamed 10 tokens per
     * chunk: one ITL entry per 10 output tokens in each file); TTFT =
     * median over requests (two requests of the 70B runs returned no
     * output and report TTFT 0, which the mean would count). ---- */
    {D8_A100, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256, false,
     0.011438, LAMBDA " 1xA100 Llama-3-8B-Instruct tp1 len4096",
     "vLLM (Sept 2024) bf16; median ITL 114.38 ms / 10 tokens"},
    {D8_A100, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false,
     0.12455, LAMBDA " 1xA100 Llama-3-8B-Instruct tp1 len4096",
     "as above; includes HTTP and tokenisation"},
    {D8_TP2, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256, false,
     0.0051706, LAMBDA " 2xH100 Llama-3-8B-Instruct tp2 len4096",
     "vLLM (Sept 2024) bf16; median ITL 51.71 ms / 10 tokens"},
    {D8_TP2, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false,
     0.052893, LAMBDA " 2xH100 Llama-3-8B-Instruct tp2 len4096",
     "as above; includes HTTP and tokenisation"},
    {D8_TP4, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256, false,
     0.0038838, LAMBDA " 4xH100 Llama-3-8B-Instruct tp4 len4096",
     "vLLM (Sept 2024) bf16; median ITL 38.84 ms / 10 tokens"},
    {D8_TP4, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false,
     0.052913, LAMBDA " 4xH100 Llama-3-8B-Instruct tp4 len4096",
     "as above; includes HTTP and tokenisation"},
    {D8_TP8, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256, false,
     0.0032647, LAMBDA " 8xH100 Llama-3-8B-Instruct tp8 len4096",
     "vLLM (Sept 2024) bf16; median ITL 32.65 ms / 10 tokens"},
    {D8_TP8, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false,
     0.071743, LAMBDA " 8xH100 Llama-3-8B-Instruct tp8 len4096",
     "as above; includes HTTP and tokenisation"},
    {D70_FP8_TP4, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256,
     false, 0.012762, LAMBDA " 4xH100 Llama-3.1-70B-FP8 tp4 len4096",
     "vLLM (Sept 2024) fp8; median ITL 127.62 ms / 10 tokens"},
    {D70_FP8_TP4, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false,
     0.12474, LAMBDA " 4xH100 Llama-3.1-70B-FP8 tp4 len4096",
     "median; includes HTTP and tokenisation"},
    {D70_FP8_TP8, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256,
     false, 0.0099026, LAMBDA " 8xH100 Llama-3.1-70B-FP8 tp8 len4096",
     "vLLM (Sept 2024) fp8; median ITL 99.03 ms / 10 tokens"},
    {D70_FP8_TP8, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false,
     0.10508, LAMBDA " 8xH100 Llama-3.1-70B-FP8 tp8 len4096",
     "median; includes HTTP and tokenisation"},
    {D70_FP8_A100, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 137, 400, 8192, 256,
     false, 0.028020, LAMBDA " 2xA100 Llama-3.1-70B-FP8 tp2 len4096",
     "vLLM (Sept 2024) fp8 (W8A16 on Ampere); median ITL 280.20 ms / 10 tokens"},
    {D70_FP8_A100, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 137, 400, 8192, 256, false,
     0.62909, LAMBDA " 2xA100 Llama-3.1-70B-FP8 tp2 len4096",
     "median; includes HTTP and tokenisation"},
    {DM7_BF16, "decode time/token, 10 concurrent", M_TPOT, FIT, 10, 159, 400, 8192, 256, false,
     0.0069001, LAMBDA " 1xH100 Mistral-7B-Instruct-v0.3 tp1 len4096",
     "vLLM (Sept 2024) bf16; 10 prompts, 1585 tokens total; median ITL 69.00 ms / 10 tokens"},
    {DM7_BF16, "TTFT of the 10-prompt batch", M_TTFT, HELD, 10, 159, 400, 8192, 256, false,
     0.069055, LAMBDA " 1xH100 Mistral-7B-Instruct-v0.3 tp1 len4096",
     "median; includes HTTP and tokenisation"},
};
#define N_MEAS (sizeof ms / sizeof ms[0])

/* Loaded specs and derived pool of one deployment. */
typedef struct dep_state {
    spec_hw hw;
    spec_model model;
    spec_deploy d;
    uint32_t pool_blocks;
    cost_params rp;   /* fitted roofline factors */
    cost_linear lc;   /* fitted linear coefficients */
    cost_linear prior;
    double fit_rms_roof, fit_rms_lin;
} dep_state;

static dep_state ds[N_DEPS];

static bool is_throughput(enum mkind k)
{
    return k == M_PROMPT_TPS || k == M_OUT_TPS || k == M_TOTAL_TPS;
}

/* Tokens over which a throughput is measured. */
static double tokens_of(const meas *m)
{
    switch (m->kind) {
    case M_PROMPT_TPS: return (double)m->n * m->isl;
    case M_OUT_TPS: return (double)m->n * m->osl;
    case M_TOTAL_TPS: return (double)m->n * (m->isl + m->osl);
    default: return 0;
    }
}

/* Per-step time the layer profiles leave out: the roofline's overhead and
 * all-reduce for a step of `tokens` tokens. */
static double layersum_offset(const dep_state *s, uint32_t tokens)
{
    cost_model r;
    cost_roofline_init(&r, &s->d, &s->rp);
    return r.overhead_s + r.ar_fixed_s + r.ar_s_per_token * tokens;
}

/* The time quantity behind measurement `m` under model `cm`: TPOT, TTFT,
 * makespan (throughputs) or a raw step time (layer sums).  Linear in the
 * step times.  Exits on error. */
static double time_quantity(const meas *m, const cost_model *cm)
{
    const dep_state *s = &ds[m->dep];
    if (m->kind == M_LAYERSUM) {
        cost_batch b = {.prefill_tokens = m->isl, .sampled = 1,
                        .prefill_attn = (double)m->isl * m->isl / 2.0};
        return cost_step_time(cm, &b);
    }
    engine_params p = {.block_size = 16, .max_num_batched_tokens = m->mbt,
                       .max_num_seqs = m->seqs, .prefix_caching = false};
    uint32_t blocks = m->big_pool ? (uint32_t)(m->n * ((m->isl + m->osl) / 16 + 2) + 16)
                                  : s->pool_blocks;
    cost_bench_result r;
    if (cost_bench_run(cm, blocks, &p, m->n, m->isl, m->osl, &r) != SIM_OK) {
        fprintf(stderr, "calibrate: %s: %s\n", m->what, sim_errmsg());
        exit(1);
    }
    switch (m->kind) {
    case M_TPOT: return r.tpot_mean_s;
    case M_TTFT: return r.ttft_mean_s;
    default: return r.makespan_s;
    }
}

/* The measured quantity predicted by `cm`, in the unit of m->value. */
static double predict(const meas *m, const cost_model *cm)
{
    double t = time_quantity(m, cm);
    if (is_throughput(m->kind))
        return tokens_of(m) / t;
    if (m->kind == M_LAYERSUM)
        return t - layersum_offset(&ds[m->dep], m->isl);
    return t;
}

/* Target of the time quantity for the linear fit. */
static double time_target(const meas *m)
{
    if (is_throughput(m->kind))
        return tokens_of(m) / m->value;
    if (m->kind == M_LAYERSUM)
        return m->value + layersum_offset(&ds[m->dep], m->isl);
    return m->value;
}

/* ---------------- roofline fit ---------------- */

typedef struct rfit_ctx {
    int dep;
    size_t idx[16];
    size_t n;
    double fixed_overhead_s; /* < 0: the overhead is fitted (x[1]) */
    double fixed_mfu;        /* > 0: mfu transferred, x[0] is log overhead */
} rfit_ctx;

static cost_params params_of(const rfit_ctx *c, const gsl_vector *x)
{
    if (c->fixed_mfu > 0)
        return (cost_params){.mfu = c->fixed_mfu, .mbu = PRIOR_MBU,
                             .step_overhead_s = exp(gsl_vector_get(x, 0)),
                             .allreduce_latency_s = PRIOR_AR_LATENCY_S};
    cost_params p = {.mfu = 1.0 / (1.0 + exp(-gsl_vector_get(x, 0))),
                     .mbu = PRIOR_MBU,
                     .step_overhead_s = c->fixed_overhead_s < 0 ? exp(gsl_vector_get(x, 1))
                                                                : c->fixed_overhead_s,
                     .allreduce_latency_s = PRIOR_AR_LATENCY_S};
    return p;
}

static int rfit_f(const gsl_vector *x, void *params, gsl_vector *f)
{
    const rfit_ctx *c = params;
    cost_params p = params_of(c, x);
    ds[c->dep].rp = p; /* layersum_offset reads it */
    cost_model cm;
    cost_roofline_init(&cm, &ds[c->dep].d, &p);
    for (size_t i = 0; i < c->n; i++) {
        const meas *m = &ms[c->idx[i]];
        gsl_vector_set(f, i, log(predict(m, &cm) / m->value));
    }
    return GSL_SUCCESS;
}

static void fit_roofline(int dep)
{
    rfit_ctx c = {.dep = dep, .fixed_overhead_s = -1};
    if (deps[dep].transfer_from >= 0 && deps[dep].fit_overhead)
        c.fixed_mfu = ds[deps[dep].transfer_from].rp.mfu;
    else if (deps[dep].transfer_from >= 0)
        c.fixed_overhead_s = ds[deps[dep].transfer_from].rp.step_overhead_s;
    for (size_t i = 0; i < N_MEAS; i++)
        if (ms[i].dep == dep && ms[i].role == FIT)
            c.idx[c.n++] = i;
    const size_t np = c.fixed_mfu > 0 || c.fixed_overhead_s >= 0 ? 1 : 2;
    gsl_multifit_nlinear_fdf fdf = {.f = rfit_f, .df = NULL, .fvv = NULL, .n = c.n, .p = np,
                                    .params = &c};
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, c.n, np);
    gsl_vector *x0 = gsl_vector_alloc(np);
    gsl_vector_set(x0, 0, c.fixed_mfu > 0 ? log(0.004) : 0.0); /* 4 ms or mfu 0.5 */
    if (np > 1)
        gsl_vector_set(x0, 1, log(0.004)); /* 4 ms */
    gsl_multifit_nlinear_init(x0, &fdf, w);
    int info = 0;
    int st = gsl_multifit_nlinear_driver(200, 1e-10, 1e-10, 1e-10, NULL, NULL, &info, w);
    if (st != GSL_SUCCESS && st != GSL_EMAXITER) {
        fprintf(stderr, "calibrate: roofline fit of %s failed: %s\n", deps[dep].profile,
                gsl_strerror(st));
        exit(1);
    }
    ds[dep].rp = params_of(&c, gsl_multifit_nlinear_position(w));
    const gsl_vector *f = gsl_multifit_nlinear_residual(w);
    ds[dep].fit_rms_roof = gsl_blas_dnrm2(f) / sqrt((double)c.n);
    gsl_vector_free(x0);
    gsl_multifit_nlinear_free(w);
}

/* ---------------- linear fit ---------------- */

/* Linearisation of the fitted roofline: a = the memory-bound floor of a
 * step (weights once, all-reduce latency, overhead), b = compute and
 * all-reduce per prefill token, c = attention per token², d = compute,
 * LM head and all-reduce per decode, e = KV read and attention per context
 * token. */
static cost_linear linear_prior(const dep_state *s)
{
    cost_model r;
    cost_roofline_init(&r, &s->d, &s->rp);
    cost_linear c = {
        .a_s = r.weight_s + r.ar_fixed_s + r.overhead_s,
        .b_s_per_token = r.lin_s_per_token + r.ar_s_per_token,
        .c_s_per_attn = r.attn_s_per_unit,
        .d_s_per_decode = r.lin_s_per_token + r.head_s_per_sample + r.ar_s_per_token,
        .e_s_per_ctx = r.kv_s_per_token + r.attn_s_per_unit,
    };
    return c;
}

static double *coef_ptr(cost_linear *c, int k)
{
    double *v[5] = {&c->a_s, &c->b_s_per_token, &c->c_s_per_attn, &c->d_s_per_decode,
                    &c->e_s_per_ctx};
    return v[k];
}

static void fit_linear(int dep)
{
    dep_state *s = &ds[dep];
    s->prior = linear_prior(s);
    s->lc = s->prior;
    size_t idx[16], n = 0;
    for (size_t i = 0; i < N_MEAS; i++)
        if (ms[i].dep == dep && ms[i].role == FIT)
            idx[n++] = i;
    if (n == 0)
        return;
    /* Design: F[i][k] = d(time quantity i)/d(coefficient k), from one run
     * with only a = a0 and one run per other coefficient at its prior. */
    double F[16][5];
    for (size_t i = 0; i < n; i++) {
        cost_model cm;
        cost_linear base = {.a_s = s->prior.a_s};
        cost_linear_init(&cm, &base);
        double t0 = time_quantity(&ms[idx[i]], &cm);
        F[i][0] = t0 / s->prior.a_s;
        for (int k = 1; k < 5; k++) {
            cost_linear c = base;
            *coef_ptr(&c, k) = *coef_ptr(&s->prior, k);
            cost_linear_init(&cm, &c);
            F[i][k] = (time_quantity(&ms[idx[i]], &cm) - t0) / *coef_ptr(&s->prior, k);
        }
    }
    bool pinned[5] = {false};
    for (int iter = 0; iter < 5; iter++) {
        int cols[5], nc = 0;
        for (int k = 0; k < 5; k++)
            if (!pinned[k])
                cols[nc++] = k;
        size_t rows = n + (size_t)nc;
        gsl_matrix *X = gsl_matrix_calloc(rows, (size_t)nc);
        gsl_vector *y = gsl_vector_alloc(rows), *wt = gsl_vector_alloc(rows);
        gsl_vector *cf = gsl_vector_alloc((size_t)nc);
        gsl_matrix *cov = gsl_matrix_alloc((size_t)nc, (size_t)nc);
        /* Rows in relative units: measurement (F·x)/T* = 1, prior x_k/x0_k = 1. */
        for (size_t i = 0; i < n; i++) {
            double tt = time_target(&ms[idx[i]]);
            for (int j = 0; j < nc; j++)
                gsl_matrix_set(X, i, (size_t)j, F[i][cols[j]] / tt);
            gsl_vector_set(y, i, 1.0);
            gsl_vector_set(wt, i, 1.0 / (SIGMA_MEAS * SIGMA_MEAS));
        }
        for (int j = 0; j < nc; j++) {
            gsl_matrix_set(X, n + (size_t)j, (size_t)j, 1.0 / *coef_ptr(&s->prior, cols[j]));
            gsl_vector_set(y, n + (size_t)j, 1.0);
            gsl_vector_set(wt, n + (size_t)j, 1.0 / (SIGMA_PRIOR * SIGMA_PRIOR));
        }
        gsl_multifit_linear_workspace *lw = gsl_multifit_linear_alloc(rows, (size_t)nc);
        double chisq;
        gsl_multifit_wlinear(X, wt, y, cf, cov, &chisq, lw);
        gsl_multifit_linear_free(lw);
        bool neg = false;
        cost_linear c = {0};
        for (int j = 0; j < nc; j++) {
            double v = gsl_vector_get(cf, (size_t)j);
            if (v < 0 && cols[j] != 0) {
                pinned[cols[j]] = true;
                neg = true;
            }
            *coef_ptr(&c, cols[j]) = v;
        }
        gsl_matrix_free(X);
        gsl_vector_free(y);
        gsl_vector_free(wt);
        gsl_vector_free(cf);
        gsl_matrix_free(cov);
        if (!neg) {
            s->lc = c;
            break;
        }
    }
    if (s->lc.a_s <= 0) {
        fprintf(stderr, "calibrate: linear fit of %s gave a <= 0\n", deps[dep].profile);
        exit(1);
    }
    double ss = 0;
    cost_model cm;
    cost_linear_init(&cm, &s->lc);
    for (size_t i = 0; i < n; i++) {
        double r = log(predict(&ms[idx[i]], &cm) / ms[idx[i]].value);
        ss += r * r;
    }
    s->fit_rms_lin = sqrt(ss / (double)n);
}

/* ---------------- output ---------------- */

static void fmt_value(char *buf, size_t len, enum mkind k, double v)
{
    if (is_throughput(k))
        snprintf(buf, len, "%.0f tok/s", v);
    else
        snprintf(buf, len, "%.1f ms", v * 1e3);
}

typedef struct row {
    double roof, lin;
} row;

static row rows[N_MEAS];

static void evaluate(void)
{
    for (size_t i = 0; i < N_MEAS; i++) {
        const dep_state *s = &ds[ms[i].dep];
        cost_model r, l;
        cost_roofline_init(&r, &s->d, &s->rp);
        cost_linear_init(&l, &s->lc);
        rows[i].roof = predict(&ms[i], &r);
        rows[i].lin = predict(&ms[i], &l);
    }
}

static void print_table(FILE *f)
{
    fprintf(f, "| deployment | measurement | source | conditions | use | measured | roofline | "
               "err | linear | err |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < N_MEAS; i++) {
        const meas *m = &ms[i];
        char a[32], b[32], c[32];
        fmt_value(a, sizeof a, m->kind, m->value);
        fmt_value(b, sizeof b, m->kind, rows[i].roof);
        fmt_value(c, sizeof c, m->kind, rows[i].lin);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %+.1f %% | %s | %+.1f %% |\n",
                deps[m->dep].profile, m->what, m->source, m->cond, role_name[m->role], a, b,
                100.0 * (rows[i].roof / m->value - 1.0), c,
                100.0 * (rows[i].lin / m->value - 1.0));
    }
    fprintf(f, "\n| profile | mfu | mbu | overhead | AR latency | fit rms (roofline) | a | b | c "
               "| d | e | fit rms (linear) |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int d = 0; d < N_DEPS; d++) {
        const dep_state *s = &ds[d];
        char rr[32], lr[32];
        if (deps[d].transfer_from >= 0 && !deps[d].fit_mfu && !deps[d].fit_overhead) {
            snprintf(rr, sizeof rr, "from %s", deps[deps[d].transfer_from].model);
            snprintf(lr, sizeof lr, "prior only");
        } else {
            snprintf(rr, sizeof rr, "%.1f %%", 100 * s->fit_rms_roof);
            snprintf(lr, sizeof lr, "%.1f %%", 100 * s->fit_rms_lin);
        }
        fprintf(f, "| %s | %.3f | %.2f | %.2f ms | %.0f µs | %s | %.2f ms | %.2f µs | %.3g ns "
                   "| %.2f µs | %.3g ns | %s |\n",
                deps[d].profile, s->rp.mfu, s->rp.mbu, s->rp.step_overhead_s * 1e3,
                s->rp.allreduce_latency_s * 1e6, rr, s->lc.a_s * 1e3, s->lc.b_s_per_token * 1e6,
                s->lc.c_s_per_attn * 1e9, s->lc.d_s_per_decode * 1e6, s->lc.e_s_per_ctx * 1e9,
                lr);
    }
}

static int write_profile(const char *dir, int d)
{
    const dep_state *s = &ds[d];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.yaml", dir, deps[d].profile);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "# Cost profile: %s.\n", deps[d].note);
    fprintf(f, "# Written by tests/calibrate.c (--write); docs/calibration.md explains the fit.\n");
    fprintf(f, "# Do not edit by hand: change the measurements or the method and re-run.\n#\n");
    const bool xfer = deps[d].transfer_from >= 0;
    const bool fit_oh = deps[d].fit_overhead;
    const char *xname = xfer ? deps[deps[d].transfer_from].profile : "";
    if (fit_oh)
        fprintf(f, "# Step overhead fitted to the 'fit' row below (one decode point); mfu\n"
                   "# transferred from %s (same model and dtypes),\n"
                   "# mbu the 0.8 prior.  Residuals (model/measured - 1):\n",
                xname);
    else if (xfer && !deps[d].fit_mfu)
        fprintf(f, "# No measurement of this deployment was fitted.  Roofline factors are those\n"
                   "# of %s (same dtype class); the linear\n"
                   "# coefficients are the linearisation of this roofline.  Validation only:\n",
                xname);
    else if (xfer)
        fprintf(f, "# mfu fitted to the 'fit' row below (a proxy model); step overhead taken\n"
                   "# from %s.  Residuals (model/measured - 1):\n",
                xname);
    else
        fprintf(f, "# Fitted to the measurements marked 'fit'; residuals (model/measured - 1):\n");
    fprintf(f, "#   use      | measured | roofline (err) | linear (err) | measurement; source\n");
    for (size_t i = 0; i < N_MEAS; i++) {
        const meas *m = &ms[i];
        if (m->dep != d)
            continue;
        char a[32], b[32], c[32];
        fmt_value(a, sizeof a, m->kind, m->value);
        fmt_value(b, sizeof b, m->kind, rows[i].roof);
        fmt_value(c, sizeof c, m->kind, rows[i].lin);
        fprintf(f, "#   %-8s | %s | %s (%+.1f %%) | %s (%+.1f %%) | %s; %s\n", role_name[m->role], a,
                b, 100.0 * (rows[i].roof / m->value - 1.0), c,
                100.0 * (rows[i].lin / m->value - 1.0), m->what, m->source);
    }
    fprintf(f, "name: %s\nmodel: %s\nhardware: %s\ntp: %d\nweight_dtype: %s\n"
               "kv_dtype: %s\n",
            deps[d].profile, deps[d].model, deps[d].hw ? deps[d].hw : "h100-sxm", deps[d].tp,
            spec_dtype_name(deps[d].w), spec_dtype_name(deps[d].kv));
    fprintf(f, "roofline:\n");
    fprintf(f, "  mfu: %.6g   # %s\n", s->rp.mfu,
            xfer && !deps[d].fit_mfu ? "transferred" : "fitted");
    fprintf(f, "  mbu: %.6g   # prior: AIConfigurator's empirical x0.8 (calibration.md 5.1)\n",
            s->rp.mbu);
    fprintf(f, "  step_overhead_s: %.6g   # %s\n", s->rp.step_overhead_s,
            xfer && !fit_oh ? "transferred" : "fitted");
    fprintf(f, "  allreduce_latency_s: %.6g   # prior: assumed NVLink all-reduce latency%s\n",
            s->rp.allreduce_latency_s, deps[d].tp > 1 ? "" : " (unused at TP=1)");
    const char *how = xfer && !deps[d].fit_mfu && !fit_oh ? "linearised roofline"
                                                          : "fitted (MAP)";
    fprintf(f, "linear:\n");
    fprintf(f, "  a_s: %.6g   # %s; prior %.4g\n", s->lc.a_s, how, s->prior.a_s);
    fprintf(f, "  b_s_per_token: %.6g   # %s; prior %.4g\n", s->lc.b_s_per_token, how,
            s->prior.b_s_per_token);
    fprintf(f, "  c_s_per_attn: %.6g   # %s; prior %.4g\n", s->lc.c_s_per_attn, how,
            s->prior.c_s_per_attn);
    fprintf(f, "  d_s_per_decode: %.6g   # %s; prior %.4g\n", s->lc.d_s_per_decode, how,
            s->prior.d_s_per_decode);
    fprintf(f, "  e_s_per_ctx: %.6g   # %s; prior %.4g\n", s->lc.e_s_per_ctx, how,
            s->prior.e_s_per_ctx);
    if (fit_oh)
        fprintf(f, "transferred: \"mfu of %s (%s); only the step overhead is fitted to this "
                   "deployment\"\n", xname,
                deps[d].hw ? "an H100 fit applied to another GPU"
                : strcmp(deps[d].model, deps[deps[d].transfer_from].model) != 0
                    ? "another model of the same size class on this GPU"
                    : "the TP=1/2 fit of this GPU");
    else if (xfer && !deps[d].fit_mfu)
        fprintf(f, "transferred: \"mfu and step overhead of %s (no measurement of this "
                   "deployment fitted)\"\n", xname);
    else if (xfer)
        fprintf(f, "transferred: \"step overhead of %s; mfu fitted to a proxy model "
                   "(Qwen3-32B)\"\n", xname);
    if (fit_oh)
        fprintf(f, "source: \"step overhead fitted by tests/calibrate.c to the 'fit' row above; "
                   "mfu from %s (docs/calibration.md)\"\n", xname);
    else if (xfer && !deps[d].fit_mfu)
        fprintf(f, "source: \"roofline factors transferred from %s; compared with %s "
                   "(docs/calibration.md)\"\n",
                xname, GPUSTACK);
    else if (xfer)
        fprintf(f, "source: \"mfu and linear model fitted to %s (Qwen3-32B proxy); overhead from "
                   "%s (docs/calibration.md)\"\n",
                GPUSTACK, xname);
    else
        fprintf(f, "source: \"fitted by tests/calibrate.c to the 'fit' rows above "
                   "(docs/calibration.md)\"\n");
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    const char *out_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--write") == 0 && i + 1 < argc)
            out_dir = argv[++i];
        else {
            fprintf(stderr, "usage: calibrate [--write DIR]\n");
            return 1;
        }
    }
    gsl_set_error_handler_off();
    for (int d = 0; d < N_DEPS; d++) {
        dep_state *s = &ds[d];
        if (spec_hw_load(deps[d].hw ? deps[d].hw : "h100-sxm", &s->hw) ||
            spec_model_load(deps[d].model, &s->model)) {
            fprintf(stderr, "calibrate: %s\n", sim_errmsg());
            return 1;
        }
        s->d = (spec_deploy){.hw = &s->hw, .model = &s->model, .tp = deps[d].tp,
                             .weight_dtype = deps[d].w, .kv_dtype = deps[d].kv,
                             .mem_util = 0.9, .block_size = 16};
        uint64_t toks;
        if (spec_kv_pool(&s->d, &toks, &s->pool_blocks)) {
            fprintf(stderr, "calibrate: %s\n", sim_errmsg());
            return 1;
        }
        fprintf(stderr, "%s: KV pool %llu tokens\n", deps[d].profile, (unsigned long long)toks);
    }
    /* Sources of transferred factors come first in deps[]. */
    for (int d = 0; d < N_DEPS; d++) {
        if (deps[d].transfer_from >= 0 && !deps[d].fit_mfu && !deps[d].fit_overhead)
            ds[d].rp = ds[deps[d].transfer_from].rp;
        else
            fit_roofline(d);
        fit_linear(d); /* no FIT rows: the prior */
    }
    evaluate();
    print_table(stdout);
    int rc = 0;
    if (out_dir)
        for (int d = 0; d < N_DEPS; d++)
            rc |= write_profile(out_dir, d);
    for (int d = 0; d < N_DEPS; d++) {
        spec_model_fini(&ds[d].model);
        spec_hw_fini(&ds[d].hw);
    }
    return rc;
}
