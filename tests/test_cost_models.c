/*
 * Cost models and cost profiles: the linear model on hand-computed
 * batches, every profile file in <spec dir>/cost loading and giving
 * positive step times under both models, the calibration acceptance of the
 * Llama-3.3-70B fp8 TP=2 profile (issue "Engine fidelity": decode time per
 * token and saturated prompt throughput within 20 % of the public
 * measurements, driving the engine as tests/calibrate.c does), and bad
 * profile files rejected with file, line and key.
 *
 * usage: test_cost_models SPEC_DIR
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/cost.h"
#include "models/cost_bench.h"
#include "models/cost_profile.h"
#include "models/spec.h"
#include "models/spec_load.h"
#include "sim/core/error.h"
#include "check.h"

static const char *spec_dir_arg;

static void test_kind_names(void)
{
    enum cost_kind k = COST_LINEAR;
    CHECK_INT_EQ(cost_kind_parse("roofline", &k), 0);
    CHECK_INT_EQ(k, COST_ROOFLINE);
    CHECK_INT_EQ(cost_kind_parse("linear", &k), 0);
    CHECK_INT_EQ(k, COST_LINEAR);
    CHECK_INT_EQ(cost_kind_parse("Linear", &k), -1);
    CHECK_INT_EQ(k, COST_LINEAR);
    for (int i = 0; cost_kind_names[i]; i++)
        CHECK(strcmp(cost_kind_name((enum cost_kind)i), cost_kind_names[i]) == 0);
    /* A zeroed model is a roofline model (tests build them by hand). */
    cost_model z = {0};
    z.overhead_s = 1e-3;
    cost_batch b = {.decode_tokens = 1, .decode_ctx = 10, .sampled = 1};
    CHECK_NEAR(cost_step_time(&z, &b), 1e-3, 1e-15);
}

/* t = a + b·P + c·A + d·D + e·C, by hand. */
static void test_linear_known_answer(void)
{
    const cost_linear c = {.a_s = 0.01, .b_s_per_token = 1e-4, .c_s_per_attn = 1e-9,
                           .d_s_per_decode = 2e-4, .e_s_per_ctx = 1e-8};
    cost_model m;
    cost_linear_init(&m, &c);
    CHECK_INT_EQ(m.kind, COST_LINEAR);
    /* One 1000-token prompt from scratch: A = 1000·(0 + 500) = 5e5.
     * t = 0.01 + 1000·1e-4 + 5e5·1e-9 = 0.01 + 0.1 + 0.0005 = 0.1105 s. */
    cost_batch b1 = {.prefill_tokens = 1000, .prefill_attn = 500000.0, .sampled = 1};
    CHECK_NEAR(cost_step_time(&m, &b1), 0.1105, 1e-12);
    /* Ten decodes over 5000 context tokens plus a 512-token chunk after
     * 1024 computed tokens: A = 512·(1024 + 256) = 655,360.
     * t = 0.01 + 512·1e-4 + 655360·1e-9 + 10·2e-4 + 5000·1e-8
     *   = 0.01 + 0.0512 + 0.00065536 + 0.002 + 0.00005 = 0.06390536 s.
     * prefill_ctx and sampled do not enter the linear model. */
    cost_batch b2 = {.prefill_tokens = 512, .prefill_attn = 655360.0, .prefill_ctx = 1024,
                     .decode_tokens = 10, .decode_ctx = 5000, .sampled = 11};
    CHECK_NEAR(cost_step_time(&m, &b2), 0.06390536, 1e-12);
}

/* Deployment described by a profile; specs loaded into *hw and *model. */
static spec_deploy deploy_of(const cost_profile *p, spec_hw *hw, spec_model *model)
{
    CHECK_INT_EQ(spec_hw_load(p->hardware, hw), SIM_OK);
    CHECK_INT_EQ(spec_model_load(p->model, model), SIM_OK);
    spec_deploy d = {.hw = hw, .model = model, .tp = p->tp, .weight_dtype = p->weight_dtype,
                     .kv_dtype = p->kv_dtype, .mem_util = 0.9, .block_size = 16};
    return d;
}

static void test_every_profile(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/cost", spec_dir_arg);
    DIR *dh = opendir(dir);
    CHECK(dh != NULL);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dh))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        cost_profile p;
        if (cost_profile_load(path, &p) != SIM_OK) {
            fprintf(stderr, "%s\n", sim_errmsg());
            CHECK(!"profile loads");
        }
        /* The file is named after the profile, and the profile is the
         * default of the deployment it describes. */
        CHECK(strncmp(de->d_name, p.name, len - 5) == 0 && strlen(p.name) == len - 5);
        spec_hw hw;
        spec_model model;
        spec_deploy d = deploy_of(&p, &hw, &model);
        char *def = cost_profile_default_name(&d);
        CHECK(strcmp(def, p.name) == 0);
        free(def);
        uint64_t toks;
        uint32_t blocks;
        CHECK_INT_EQ(spec_kv_pool(&d, &toks, &blocks), SIM_OK);
        /* Loading by name finds the same file. */
        cost_profile q;
        CHECK_INT_EQ(cost_profile_load(p.name, &q), SIM_OK);
        CHECK(q.roofline.mfu == p.roofline.mfu && q.linear.a_s == p.linear.a_s);
        cost_profile_fini(&q);
        const cost_batch batches[] = {
            {.decode_tokens = 1, .decode_ctx = 100, .sampled = 1},
            {.prefill_tokens = 8192, .prefill_attn = 8192.0 * 4096.0, .sampled = 1},
            {.prefill_tokens = 2048, .prefill_attn = 2048.0 * 3072.0, .prefill_ctx = 2048,
             .decode_tokens = 200, .decode_ctx = 400000, .sampled = 201},
        };
        for (int k = 0; cost_kind_names[k]; k++) {
            cost_model m;
            CHECK_INT_EQ(cost_model_from_profile(&m, (enum cost_kind)k, &d, &p), SIM_OK);
            CHECK_INT_EQ(m.kind, k);
            double prev = 0;
            for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
                double t = cost_step_time(&m, &batches[i]);
                CHECK(t > 0 && t < 10);
                if (i == 1)
                    CHECK(t > prev); /* a full prefill step costs more than a decode */
                prev = t;
            }
        }
        /* A profile does not bind to another deployment. */
        spec_deploy other = d;
        other.tp = d.tp + 1;
        cost_model m;
        CHECK_INT_EQ(cost_model_from_profile(&m, COST_ROOFLINE, &other, &p), SIM_EINVAL);
        CHECK_STR_CONTAINS(sim_errmsg(), p.name);
        spec_model_fini(&model);
        spec_hw_fini(&hw);
        cost_profile_fini(&p);
        n++;
    }
    closedir(dh);
    CHECK(n >= 5);
}

/* The acceptance of issue "Engine fidelity", as tests/calibrate.c drives
 * the engine: Llama-3.3-70B fp8 weights and KV, TP=2 on H100-SXM. */
static void test_acceptance_70b_fp8(void)
{
    spec_hw hw;
    spec_model model;
    CHECK_INT_EQ(spec_hw_load("h100-sxm", &hw), SIM_OK);
    CHECK_INT_EQ(spec_model_load("llama-3.3-70b", &model), SIM_OK);
    spec_deploy d = {.hw = &hw, .model = &model, .tp = 2, .weight_dtype = SPEC_FP8,
                     .kv_dtype = SPEC_FP8, .mem_util = 0.9, .block_size = 16};
    char *name = cost_profile_default_name(&d);
    CHECK(strcmp(name, "llama-3.3-70b_h100-sxm_tp2_fp8-fp8") == 0);
    cost_profile p;
    CHECK_INT_EQ(cost_profile_load(name, &p), SIM_OK);
    free(name);
    uint64_t toks;
    uint32_t blocks;
    CHECK_INT_EQ(spec_kv_pool(&d, &toks, &blocks), SIM_OK);
    for (int k = 0; cost_kind_names[k]; k++) {
        cost_model m;
        CHECK_INT_EQ(cost_model_from_profile(&m, (enum cost_kind)k, &d, &p), SIM_OK);
        /* Decode time per token at 10 concurrent requests: 19.3 ms,
         * LambdaLabsML/vllm-benchmark, 2xH100 Llama-3.1-70B-Instruct-FP8 tp2
         * (docs/calibration.md, sources): 10 prompts of 137 tokens (1,369 total). */
        engine_params ep = {.block_size = 16, .max_num_batched_tokens = 8192,
                            .max_num_seqs = 256, .prefix_caching = false};
        cost_bench_result r;
        CHECK_INT_EQ(cost_bench_run(&m, blocks, &ep, 10, 137, 400, &r), SIM_OK);
        printf("%s: decode time/token at 10 concurrent %.2f ms (measured 19.3)\n",
               cost_kind_names[k], r.tpot_mean_s * 1e3);
        CHECK_REL(r.tpot_mean_s, 0.0193, 0.20);
        /* Saturated prompt throughput at 2048/128: 762 output tok/s ×
         * 2048/128 = 12,192 prompt tok/s, TensorRT-LLM perf-overview,
         * Llama-3.3-70B-Instruct-FP8 on H100 TP2, infinite request rate. */
        ep.max_num_seqs = 2048;
        CHECK_INT_EQ(cost_bench_run(&m, blocks, &ep, 1000, 2048, 128, &r), SIM_OK);
        double tps = 1000.0 * 2048.0 / r.makespan_s;
        printf("%s: saturated prompt throughput 2048/128 %.0f tok/s (measured 12192)\n",
               cost_kind_names[k], tps);
        CHECK_REL(tps, 12192.0, 0.20);
    }
    cost_profile_fini(&p);
    spec_model_fini(&model);
    spec_hw_fini(&hw);
}

static const char *good_profile =
    "name: t\n"
    "model: llama-3.3-70b\n"
    "hardware: h100-sxm\n"
    "tp: 2\n"
    "weight_dtype: fp8\n"
    "kv_dtype: fp8\n"
    "roofline:\n"
    "  mfu: 0.5\n"
    "  mbu: 0.8\n"
    "  step_overhead_s: 0.004\n"
    "  allreduce_latency_s: 1e-5\n"
    "linear:\n"
    "  a_s: 0.019\n"
    "  b_s_per_token: 6.7e-5\n"
    "  c_s_per_attn: 2e-9\n"
    "  d_s_per_decode: 6e-5\n"
    "  e_s_per_ctx: 3e-8\n"
    "source: test\n";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    CHECK(fclose(f) == 0);
}

/* Replace the first occurrence of `from` in good_profile by `to`. */
static char *variant(const char *from, const char *to)
{
    const char *at = strstr(good_profile, from);
    CHECK(at != NULL);
    size_t len = strlen(good_profile) - strlen(from) + strlen(to) + 1;
    char *s = malloc(len);
    CHECK(s != NULL);
    snprintf(s, len, "%.*s%s%s", (int)(at - good_profile), good_profile, to, at + strlen(from));
    return s;
}

static void expect_bad(const char *dir, const char *file, const char *text, const char *line,
                       const char *key)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    write_file(path, text);
    cost_profile p;
    CHECK_INT_EQ(cost_profile_load(path, &p), SIM_EINVAL);
    printf("bad profile: %s\n", sim_errmsg());
    char where[1100];
    snprintf(where, sizeof where, "%s:%s:", path, line);
    CHECK_STR_CONTAINS(sim_errmsg(), where);
    CHECK_STR_CONTAINS(sim_errmsg(), key);
    CHECK(p.name == NULL && p.source == NULL);
    cost_profile_fini(&p);
    unlink(path);
}

static void test_bad_profiles(void)
{
    char dir[] = "/tmp/crsim_cost_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[1024];
    snprintf(path, sizeof path, "%s/good.yaml", dir);
    write_file(path, good_profile);
    cost_profile p;
    CHECK_INT_EQ(cost_profile_load(path, &p), SIM_OK);
    CHECK_NEAR(p.roofline.mfu, 0.5, 0);
    CHECK_INT_EQ(p.weight_dtype, SPEC_FP8);
    cost_profile_fini(&p);
    cost_profile_fini(&p); /* twice is harmless */
    unlink(path);

    char *s = variant("  mbu: 0.8\n", "  mbu: 0.8\n  mfuu: 0.5\n");
    expect_bad(dir, "unknown.yaml", s, "10", "roofline.mfuu");
    free(s);
    s = variant("  mfu: 0.5\n", "  mfu: -0.5\n");
    expect_bad(dir, "negative.yaml", s, "8", "roofline.mfu");
    free(s);
    s = variant("  a_s: 0.019\n", "  a_s: 0\n");
    expect_bad(dir, "zero_a.yaml", s, "13", "linear.a_s");
    free(s);
    s = variant("kv_dtype: fp8\n", "kv_dtype: int4\n");
    expect_bad(dir, "dtype.yaml", s, "6", "kv_dtype");
    free(s);
    /* A missing key has no line; the message names the file and key. */
    s = variant("  e_s_per_ctx: 3e-8\n", "");
    snprintf(path, sizeof path, "%s/missing.yaml", dir);
    write_file(path, s);
    CHECK_INT_EQ(cost_profile_load(path, &p), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), path);
    CHECK_STR_CONTAINS(sim_errmsg(), "linear.e_s_per_ctx");
    unlink(path);
    free(s);
    /* No such file, by name. */
    CHECK_INT_EQ(cost_profile_load("no-such-profile", &p), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "cost/no-such-profile.yaml");
    CHECK(rmdir(dir) == 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_cost_models SPEC_DIR\n");
        return 99;
    }
    spec_dir_arg = argv[1];
    setenv("CRSIM_SPEC_DIR", argv[1], 1);
    test_kind_names();
    test_linear_known_answer();
    test_every_profile();
    test_acceptance_70b_fp8();
    test_bad_profiles();
    printf("cost models: all tests passed\n");
    return 0;
}
