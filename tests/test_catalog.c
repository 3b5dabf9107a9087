/*
 * The hardware and model catalogue (issue 37 item 1) and `crsim fit-cost`
 * (item 3):
 *   - every spec file in the spec folder is a GPU or a model of the lists
 *     below and loads; every cost profile names specs that exist;
 *   - importing each tests/hf/<name>.config.json (spec_model_from_hf, what
 *     `crsim spec import-hf` runs) reproduces the shipped spec field by
 *     field, and bad config.json files are refused with file and key;
 *   - fit-cost recovers a chosen profile within 2 % from synthetic
 *     measurements produced by crsim's own cost model (steps CSV: roofline
 *     and linear) and engine (a vllm bench serve result at concurrency 8),
 *     and refuses bad measurement files (missing column, negative time,
 *     fewer points than parameters) with a message naming file and line.
 *
 * usage: test_catalog SPEC_DIR HF_FIXTURE_DIR
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/cost_profile.h"
#include "models/spec_hf.h"
#include "models/spec_load.h"
#include "sim/core/error.h"
#include "sim/exp/costfit.h"
#include "check.h"

static const char *const gpus[] = {"a100-sxm-80gb", "a10g", "b200", "h100-sxm", "h200-sxm",
                                   "l40s", NULL};
static const char *const models[] = {"llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b",
                                     "mistral-7b", "qwen2.5-7b", "qwen2.5-32b", "qwen3-8b",
                                     "qwen3-32b", NULL};

static int in(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], s) == 0)
            return 1;
    return 0;
}

static void test_every_spec(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".yaml") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(l - 5), e->d_name);
        if (in(gpus, name)) {
            spec_hw hw;
            int rc = spec_hw_load(name, &hw);
            if (rc)
                fprintf(stderr, "%s: %s\n", name, sim_errmsg());
            CHECK(rc == SIM_OK);
            CHECK(hw.peak_fp8_flops >= hw.peak_bf16_flops && hw.hbm_bw > 0);
            spec_hw_fini(&hw);
        } else {
            if (!in(models, name))
                fprintf(stderr, "%s/%s: not in the catalogue lists of test_catalog.c\n", dir,
                        e->d_name);
            CHECK(in(models, name));
            spec_model m;
            CHECK(spec_model_load(name, &m) == SIM_OK);
            spec_model_fini(&m);
        }
        n++;
    }
    closedir(d);
    CHECK_INT_EQ(n, 14);
    /* Every profile's specs exist. */
    char cdir[1024];
    snprintf(cdir, sizeof cdir, "%s/cost", dir);
    d = opendir(cdir);
    CHECK(d != NULL);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".yaml") != 0)
            continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", cdir, e->d_name);
        cost_profile p;
        CHECK(cost_profile_load(path, &p) == SIM_OK);
        CHECK(in(gpus, p.hardware));
        CHECK(in(models, p.model));
        cost_profile_fini(&p);
    }
    closedir(d);
}

static void test_import(const char *hf)
{
    for (int i = 0; models[i]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.config.json", hf, models[i]);
        spec_model got, want;
        spec_hf_detail dt;
        int rc = spec_model_from_hf(path, "x", &got, &dt);
        if (rc)
            fprintf(stderr, "%s\n", sim_errmsg());
        CHECK(rc == SIM_OK);
        CHECK(spec_model_load(models[i], &want) == SIM_OK);
        CHECK_INT_EQ(got.layers, want.layers);
        CHECK_INT_EQ(got.hidden, want.hidden);
        CHECK_INT_EQ(got.q_heads, want.q_heads);
        CHECK_INT_EQ(got.kv_heads, want.kv_heads);
        CHECK_INT_EQ(got.head_dim, want.head_dim);
        CHECK_INT_EQ(got.ffn, want.ffn);
        CHECK_INT_EQ(got.vocab, want.vocab);
        CHECK_INT_EQ(got.tied_embeddings, want.tied_embeddings);
        CHECK(got.params == want.params);
        spec_model_fini(&got);
        spec_model_fini(&want);
    }
    /* Known answers of the published counts: Qwen2.5-32B with its q/k/v
     * biases 32,763,876,352 (models/specs/qwen2.5-32b.yaml, by hand);
     * Qwen3-8B with q/k norms 8,190,735,360. */
    char path[1024];
    spec_model m;
    snprintf(path, sizeof path, "%s/qwen3-8b.config.json", hf);
    CHECK(spec_model_from_hf(path, "Qwen3-8B", &m, NULL) == SIM_OK);
    CHECK(m.params == 8190735360.0);
    spec_model_fini(&m);
    /* Bad inputs. */
    char tmp[] = "/tmp/test_catalog.XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    close(fd);
    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
         "\"intermediate_size\": 128, \"vocab_size\": 100}", "key 'num_hidden_layers' is missing"},
        {"{\"model_type\": \"mixtral\", \"num_hidden_layers\": 2}", "model_type 'mixtral'"},
        {"{\"model_type\": \"qwen2\", \"num_experts\": 8, \"hidden_size\": 64}", "with experts"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"num_key_value_heads\": 3, \"intermediate_size\": 128, "
         "\"vocab_size\": 100}", "does not divide"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": -2}", "not a positive integer"},
        {"{\"model_type\": ", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(tmp, "w");
        fputs(bad[i].json, f);
        fclose(f);
        CHECK_INT_EQ(spec_model_from_hf(tmp, "x", &m, NULL), SIM_EINVAL);
        CHECK_STR_CONTAINS(sim_errmsg(), bad[i].msg);
        CHECK_STR_CONTAINS(sim_errmsg(), tmp);
    }
    remove(tmp);
}

/* ---- fit-cost ------------------------------------------------------------ */

static spec_hw hw;
static spec_model md;
static spec_deploy dep;

static void load_deploy(void)
{
    CHECK(spec_hw_load("h100-sxm", &hw) == SIM_OK);
    CHECK(spec_model_load("llama-3.1-8b", &md) == SIM_OK);
    dep = (spec_deploy){.hw = &hw, .model = &md, .tp = 1, .weight_dtype = SPEC_BF16,
                        .kv_dtype = SPEC_BF16, .mem_util = 0.9, .block_size = 16};
}

/* Steps of varied composition: prefill-only, decode-only, mixed. */
static size_t make_steps(exp_costfit_step *s)
{
    size_t n = 0;
    for (uint64_t p = 128; p <= 8192; p *= 2)
        s[n++].b = (cost_batch){.prefill_tokens = p, .prefill_attn = (double)p * (double)p / 2,
                                .sampled = 1};
    for (uint64_t d = 1; d <= 256; d *= 2)
        for (uint64_t ctx = 256; ctx <= 16384; ctx *= 8)
            s[n++].b = (cost_batch){.decode_tokens = d, .decode_ctx = d * ctx, .sampled = d};
    for (uint64_t p = 512; p <= 4096; p *= 2)
        for (uint64_t d = 8; d <= 128; d *= 4) {
            const uint64_t pc = p / 2;
            s[n++].b = (cost_batch){.prefill_tokens = p, .prefill_ctx = pc,
                                    .prefill_attn = (double)p * ((double)pc + (double)p / 2),
                                    .decode_tokens = d, .decode_ctx = d * 2000,
                                    .sampled = d + 1};
        }
    return n;
}

static char *write_csv(const exp_costfit_step *s, size_t n)
{
    static char path[] = "/tmp/test_costfit.XXXXXX";
    strcpy(path, "/tmp/test_costfit.XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "seconds,decode_tokens,context,prefill_tokens,prefill_context,sampled\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.17g,%llu,%llu,%llu,%llu,%llu\n", s[i].seconds,
                (unsigned long long)s[i].b.decode_tokens, (unsigned long long)s[i].b.decode_ctx,
                (unsigned long long)s[i].b.prefill_tokens,
                (unsigned long long)s[i].b.prefill_ctx, (unsigned long long)s[i].b.sampled);
    fclose(f);
    return path;
}

static void test_fit_steps(void)
{
    exp_costfit_step s[128];
    const size_t n = make_steps(s);
    const cost_params truth = {.mfu = 0.43, .mbu = 0.72, .step_overhead_s = 3.1e-3,
                               .allreduce_latency_s = 1e-5};
    const cost_params prior = {.mfu = 0.5, .mbu = 0.8, .step_overhead_s = 2e-3,
                               .allreduce_latency_s = 1e-5};
    cost_model m;
    cost_roofline_init(&m, &dep, &truth);
    for (size_t i = 0; i < n; i++)
        s[i].seconds = cost_step_time(&m, &s[i].b);
    char *path = write_csv(s, n);
    exp_costfit_step *rd = NULL;
    size_t nr = 0;
    CHECK(exp_costfit_read_steps(path, 6, &rd, &nr) == SIM_OK);
    CHECK_INT_EQ(nr, n);
    exp_costfit_result res;
    CHECK(exp_costfit_steps(&dep, &prior, EXP_COSTFIT_ALL, rd, nr, &res) == SIM_OK);
    printf("steps from the roofline: mfu %.5f (%.5f), mbu %.5f (%.5f), overhead %.6f (%.6f), "
           "rms %.2e\n", res.roofline.mfu, truth.mfu, res.roofline.mbu, truth.mbu,
           res.roofline.step_overhead_s, truth.step_overhead_s, res.rms_roofline);
    CHECK_REL(res.roofline.mfu, truth.mfu, 0.02);
    CHECK_REL(res.roofline.mbu, truth.mbu, 0.02);
    CHECK_REL(res.roofline.step_overhead_s, truth.step_overhead_s, 0.02);
    free(rd);
    remove(path);
    /* The linear model, from steps its own form produced. */
    const cost_linear lt = {.a_s = 6.4e-3, .b_s_per_token = 2.4e-5, .c_s_per_attn = 3.4e-9,
                            .d_s_per_decode = 5.0e-5, .e_s_per_ctx = 6.5e-8};
    cost_linear_init(&m, &lt);
    for (size_t i = 0; i < n; i++)
        s[i].seconds = cost_step_time(&m, &s[i].b);
    path = write_csv(s, n);
    CHECK(exp_costfit_read_steps(path, 6, &rd, &nr) == SIM_OK);
    CHECK(exp_costfit_steps(&dep, &prior, EXP_COSTFIT_ALL, rd, nr, &res) == SIM_OK);
    printf("steps from the linear model: a %.4g b %.4g c %.4g d %.4g e %.4g, rms %.2e\n",
           res.linear.a_s, res.linear.b_s_per_token, res.linear.c_s_per_attn,
           res.linear.d_s_per_decode, res.linear.e_s_per_ctx, res.rms_linear);
    CHECK_REL(res.linear.a_s, lt.a_s, 0.02);
    CHECK_REL(res.linear.b_s_per_token, lt.b_s_per_token, 0.02);
    CHECK_REL(res.linear.c_s_per_attn, lt.c_s_per_attn, 0.02);
    CHECK_REL(res.linear.d_s_per_decode, lt.d_s_per_decode, 0.02);
    CHECK_REL(res.linear.e_s_per_ctx, lt.e_s_per_ctx, 0.02);
    free(rd);
    remove(path);
}

static void test_fit_vllm(void)
{
    const cost_params truth = {.mfu = 0.52, .mbu = 0.76, .step_overhead_s = 1.7e-3,
                               .allreduce_latency_s = 1e-5};
    const cost_params prior = {.mfu = 0.5, .mbu = 0.8, .step_overhead_s = 2e-3,
                               .allreduce_latency_s = 1e-5};
    const engine_params ep = {.block_size = 16, .max_num_batched_tokens = 8192,
                              .max_num_seqs = 256};
    uint64_t tokens;
    uint32_t blocks;
    CHECK(spec_kv_pool(&dep, &tokens, &blocks) == SIM_OK);
    enum { N = 48 };
    exp_costfit_req r[N], meas[N];
    for (uint32_t i = 0; i < N; i++) /* lengths spread deterministically */
        r[i] = (exp_costfit_req){.input_tokens = 200 + (i * 997) % 3800,
                                 .output_tokens = 20 + (i * 389) % 300};
    cost_model m;
    cost_roofline_init(&m, &dep, &truth);
    CHECK(exp_costfit_simulate(&m, blocks, &ep, r, N, 8, meas) == SIM_OK);
    /* As a vllm bench serve result file: ITL lists of the mean per token. */
    char path[] = "/tmp/test_costfit_vllm.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"backend\": \"vllm\", \"request_rate\": \"inf\", \"max_concurrency\": 8, ");
    const char *keys[] = {"input_lens", "output_lens", "ttfts"};
    for (int k = 0; k < 3; k++) {
        fprintf(f, "\"%s\": [", keys[k]);
        for (int i = 0; i < N; i++) {
            if (k == 0)
                fprintf(f, "%s%u", i ? ", " : "", meas[i].input_tokens);
            else if (k == 1)
                fprintf(f, "%s%u", i ? ", " : "", meas[i].output_tokens);
            else
                fprintf(f, "%s%.17g", i ? ", " : "", meas[i].ttft_s);
        }
        fprintf(f, "], ");
    }
    fprintf(f, "\"itls\": [");
    for (int i = 0; i < N; i++) {
        fprintf(f, "%s[", i ? ", " : "");
        for (uint32_t k = 1; k < meas[i].output_tokens; k++)
            fprintf(f, "%s%.17g", k > 1 ? ", " : "", meas[i].itl_s);
        fprintf(f, "]");
    }
    fprintf(f, "]}\n");
    fclose(f);
    exp_costfit_req *rd = NULL;
    size_t n = 0;
    uint32_t conc = 0;
    CHECK(exp_costfit_read_vllm(path, 4, &rd, &n, &conc) == SIM_OK);
    CHECK_INT_EQ(n, N);
    CHECK_INT_EQ(conc, 8);
    exp_costfit_result res;
    CHECK(exp_costfit_vllm(&dep, blocks, &ep, &prior, EXP_COSTFIT_ALL,
                           EXP_COSTFIT_TTFT | EXP_COSTFIT_ITL, rd, n, conc, &res) == SIM_OK);
    printf("vllm bench from the engine: mfu %.5f (%.5f), mbu %.5f (%.5f), overhead %.6f "
           "(%.6f), rms %.2e\n", res.roofline.mfu, truth.mfu, res.roofline.mbu, truth.mbu,
           res.roofline.step_overhead_s, truth.step_overhead_s, res.rms_roofline);
    CHECK_REL(res.roofline.mfu, truth.mfu, 0.02);
    CHECK_REL(res.roofline.mbu, truth.mbu, 0.02);
    CHECK_REL(res.roofline.step_overhead_s, truth.step_overhead_s, 0.02);
    free(rd);
    remove(path);
}

static void expect_bad_steps(const char *csv, const char *msg)
{
    char path[] = "/tmp/test_costfit_bad.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(csv, f);
    fclose(f);
    exp_costfit_step *s = NULL;
    size_t n = 0;
    CHECK_INT_EQ(exp_costfit_read_steps(path, 6, &s, &n), SIM_EINVAL);
    CHECK(s == NULL && n == 0);
    CHECK_STR_CONTAINS(sim_errmsg(), path);
    CHECK_STR_CONTAINS(sim_errmsg(), msg);
    remove(path);
}

static void test_bad_files(void)
{
    expect_bad_steps("prefill_tokens,decode_tokens,seconds\n100,1,0.01\n", "no column 'context'");
    expect_bad_steps("prefill_tokens,decode_tokens,context,seconds\n100,1,10,0.01\n"
                     "100,1,10,-0.02\n", ":3: column 'seconds' is '-0.02'");
    expect_bad_steps("prefill_tokens,decode_tokens,context,seconds\n100,1,10,0.01\n"
                     "200,2,10,0.02\n", "2 measured steps; expected at least 6");
    expect_bad_steps("prefill_tokens,decode_tokens,context,seconds\n1e3,x,10,0.01\n",
                     "column 'decode_tokens' is 'x'");
    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"{\"input_lens\": [10], \"output_lens\": [5], \"ttfts\": [0.1]}", "key 'itls'"},
        {"{\"input_lens\": [10, 20], \"output_lens\": [5, 5], \"ttfts\": [0.1, -1], "
         "\"itls\": [[0.01], [0.01]]}", "request 1: ttfts"},
        {"{\"input_lens\": [10], \"output_lens\": [5], \"ttfts\": [0.1], \"itls\": [[0.01]]}",
         "1 request; expected at least 4"},
        {"{\"request_rate\": 4.0, \"input_lens\": [10], \"output_lens\": [5], \"ttfts\": [0.1], "
         "\"itls\": [[0.01]]}", "without max_concurrency"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[] = "/tmp/test_costfit_badj.XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fputs(bad[i].json, f);
        fclose(f);
        exp_costfit_req *r = NULL;
        size_t n = 0;
        uint32_t conc = 0;
        CHECK_INT_EQ(exp_costfit_read_vllm(path, 4, &r, &n, &conc), SIM_EINVAL);
        CHECK(r == NULL);
        CHECK_STR_CONTAINS(sim_errmsg(), bad[i].msg);
        remove(path);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_catalog SPEC_DIR HF_FIXTURE_DIR\n");
        return 99;
    }
    setenv("CRSIM_SPEC_DIR", argv[1], 1);
    test_every_spec(argv[1]);
    test_import(argv[2]);
    load_deploy();
    test_fit_steps();
    test_fit_vllm();
    test_bad_files();
    spec_hw_fini(&hw);
    spec_model_fini(&md);
    printf("catalog: all tests passed\n");
    return 0;
}
