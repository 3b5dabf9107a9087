/*
 * Spec files are YAML documents bound through the config module's schema
 * machinery, so a typo in a spec gets the same file/line/key error as a
 * typo in an experiment config.
 */
#include "models/spec_load.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/config.h"
#include "sim/core/datadir.h"
#include "sim/core/error.h"

int spec_dir(char **out)
{
    return sim_datadir_find("CRSIM_SPEC_DIR", "models/specs", out);
}

int spec_path(const char *name, char **out)
{
    *out = NULL;
    size_t n = strlen(name);
    if (strchr(name, '/') || (n > 5 && strcmp(name + n - 5, ".yaml") == 0)) {
        *out = sim_xstrdup(name);
        return SIM_OK;
    }
    char *dir;
    int rc = spec_dir(&dir);
    if (rc)
        return rc;
    size_t len = strlen(dir) + n + 8;
    *out = sim_xmalloc(len);
    snprintf(*out, len, "%s/%s.yaml", dir, name);
    free(dir);
    return SIM_OK;
}

/* File layout of a GPU spec, in the units of the key names. */
typedef struct hw_file {
    char *name, *source;
    double bf16_tflops, fp8_tflops, hbm_tb_s, memory_gib, nvlink_gb_s, reserve_gb;
} hw_file;

static const sim_cfg_key hw_schema[] = {
    {.path = "name", .type = SIM_CFG_STRING, .offset = offsetof(hw_file, name),
     .help = "GPU name"},
    {.path = "peak_bf16_tflops", .type = SIM_CFG_DOUBLE, .offset = offsetof(hw_file, bf16_tflops),
     .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN, .unit = "TFLOP/s",
     .help = "dense BF16 tensor peak"},
    {.path = "peak_fp8_tflops", .type = SIM_CFG_DOUBLE, .offset = offsetof(hw_file, fp8_tflops),
     .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN, .unit = "TFLOP/s",
     .help = "dense FP8 tensor peak"},
    {.path = "hbm_tb_s", .type = SIM_CFG_DOUBLE, .offset = offsetof(hw_file, hbm_tb_s),
     .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN, .unit = "TB/s",
     .help = "HBM bandwidth (10^12 bytes/s)"},
    {.path = "memory_gib", .type = SIM_CFG_DOUBLE, .offset = offsetof(hw_file, memory_gib),
     .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN, .unit = "GiB",
     .help = "HBM capacity (2^30 bytes)"},
    {.path = "nvlink_gb_s", .type = SIM_CFG_DOUBLE, .offset = offsetof(hw_file, nvlink_gb_s),
     .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN, .unit = "GB/s",
     .help = "intra-node bandwidth per GPU per direction (10^9 bytes/s)"},
    {.path = "reserve_gb", .type = SIM_CFG_DOUBLE, .offset = offsetof(hw_file, reserve_gb),
     .min = 0, .max = INFINITY, .unit = "GB",
     .help = "memory per GPU unavailable to weights and KV (10^9 bytes)"},
    {.path = "source", .type = SIM_CFG_STRING, .offset = offsetof(hw_file, source),
     .help = "where the figures come from"},
    {0},
};

int spec_hw_load(const char *name, spec_hw *out)
{
    memset(out, 0, sizeof *out);
    char *path;
    int rc = spec_path(name, &path);
    if (rc)
        return rc;
    sim_cfgdoc *d = NULL;
    rc = sim_cfgdoc_load(path, &d);
    free(path);
    if (rc)
        return rc;
    hw_file f = {0};
    rc = sim_cfg_bind(d, hw_schema, &f);
    sim_cfgdoc_destroy(d);
    if (rc) {
        sim_cfg_free(hw_schema, &f);
        return rc;
    }
    *out = (spec_hw){
        .name = f.name,
        .source = f.source,
        .peak_bf16_flops = f.bf16_tflops * 1e12,
        .peak_fp8_flops = f.fp8_tflops * 1e12,
        .hbm_bw = f.hbm_tb_s * 1e12,
        .mem_bytes = f.memory_gib * 1073741824.0,
        .link_bw = f.nvlink_gb_s * 1e9,
        .reserve_bytes = f.reserve_gb * 1e9,
    };
    return SIM_OK;
}

static const sim_cfg_key model_schema[] = {
    {.path = "name", .type = SIM_CFG_STRING, .offset = offsetof(spec_model, name),
     .help = "model name"},
    {.path = "layers", .type = SIM_CFG_INT, .offset = offsetof(spec_model, layers), .min = 1,
     .max = 1000, .help = "decoder layers"},
    {.path = "hidden", .type = SIM_CFG_INT, .offset = offsetof(spec_model, hidden), .min = 1,
     .max = 1e6, .help = "model width d"},
    {.path = "q_heads", .type = SIM_CFG_INT, .offset = offsetof(spec_model, q_heads), .min = 1,
     .max = 1e4, .help = "query heads"},
    {.path = "kv_heads", .type = SIM_CFG_INT, .offset = offsetof(spec_model, kv_heads), .min = 1,
     .max = 1e4, .help = "key/value heads (GQA)"},
    {.path = "head_dim", .type = SIM_CFG_INT, .offset = offsetof(spec_model, head_dim), .min = 1,
     .max = 1e4, .help = "dimension per head"},
    {.path = "ffn", .type = SIM_CFG_INT, .offset = offsetof(spec_model, ffn), .min = 1,
     .max = 1e7, .help = "MLP intermediate size"},
    {.path = "vocab", .type = SIM_CFG_INT, .offset = offsetof(spec_model, vocab), .min = 1,
     .max = 1e8, .help = "vocabulary size"},
    {.path = "params", .type = SIM_CFG_DOUBLE, .offset = offsetof(spec_model, params), .min = 0,
     .max = 1e14, .flags = SIM_CFG_EXCL_MIN, .help = "total parameter count"},
    {.path = "tied_embeddings", .type = SIM_CFG_BOOL,
     .offset = offsetof(spec_model, tied_embeddings), .def = "false",
     .help = "input embedding shared with the LM head"},
    {.path = "source", .type = SIM_CFG_STRING, .offset = offsetof(spec_model, source),
     .help = "where the figures come from"},
    {0},
};

int spec_model_load(const char *name, spec_model *out)
{
    memset(out, 0, sizeof *out);
    char *path;
    int rc = spec_path(name, &path);
    if (rc)
        return rc;
    sim_cfgdoc *d = NULL;
    rc = sim_cfgdoc_load(path, &d);
    if (rc) {
        free(path);
        return rc;
    }
    rc = sim_cfg_bind(d, model_schema, out);
    sim_cfgdoc_destroy(d);
    if (rc == SIM_OK && out->q_heads % out->kv_heads != 0)
        rc = SIM_ERROR(SIM_EINVAL, "%s: kv_heads %lld does not divide q_heads %lld; expected "
                       "grouped-query attention with whole groups", path,
                       (long long)out->kv_heads, (long long)out->q_heads);
    if (rc == SIM_OK && out->params <= spec_embedding_params(out))
        rc = SIM_ERROR(SIM_EINVAL, "%s: params %.4g is not larger than the embedding "
                       "parameters vocab x hidden (%.4g); expected the total parameter count",
                       path, out->params, spec_embedding_params(out));
    free(path);
    if (rc)
        spec_model_fini(out);
    return rc;
}

void spec_hw_fini(spec_hw *hw)
{
    free(hw->name);
    free(hw->source);
    hw->name = hw->source = NULL;
}

void spec_model_fini(spec_model *m)
{
    sim_cfg_free(model_schema, m);
}
