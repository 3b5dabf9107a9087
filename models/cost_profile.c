/*
 * Cost profile files, bound through the config module's schema machinery
 * so that a typo or an out-of-range constant gets the same file/line/key
 * message as a bad experiment config (docs/design.md §14).
 */
#include "models/cost_profile.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/core/config.h"
#include "sim/core/error.h"
#include "models/spec_load.h"

int cost_profile_path(const char *name_or_path, char **out)
{
    *out = NULL;
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (n > 5 && strcmp(name_or_path + n - 5, ".yaml") == 0)) {
        *out = sim_xstrdup(name_or_path);
        return SIM_OK;
    }
    char *dir;
    int rc = spec_dir(&dir);
    if (rc)
        return rc;
    size_t len = strlen(dir) + n + 16;
    *out = sim_xmalloc(len);
    snprintf(*out, len, "%s/cost/%s.yaml", dir, name_or_path);
    free(dir);
    return SIM_OK;
}

/* File layout: dtypes bind as enum indices into an int first, because a
 * SIM_CFG_ENUM writes an int and enum spec_dtype need not be one. */
typedef struct profile_file {
    char *name, *model, *hardware, *source, *transferred;
    int64_t tp;
    int weight_dtype, kv_dtype;
    double mfu, mbu, step_overhead_s, allreduce_latency_s;
    double a, b, c, d, e;
} profile_file;


#define OFF(f) offsetof(profile_file, f)
static const sim_cfg_key profile_schema[] = {
    {.path = "name", .type = SIM_CFG_STRING, .offset = OFF(name), .help = "profile name"},
    {.path = "model", .type = SIM_CFG_STRING, .offset = OFF(model),
     .help = "model spec name (models/specs/<model>.yaml)"},
    {.path = "hardware", .type = SIM_CFG_STRING, .offset = OFF(hardware),
     .help = "GPU spec name (models/specs/<hardware>.yaml)"},
    {.path = "tp", .type = SIM_CFG_INT, .offset = OFF(tp), .min = 1, .max = 64, .unit = "GPUs",
     .help = "tensor-parallel degree"},
    {.path = "weight_dtype", .type = SIM_CFG_ENUM, .offset = OFF(weight_dtype),
     .choices = spec_dtype_names, .help = "weight format"},
    {.path = "kv_dtype", .type = SIM_CFG_ENUM, .offset = OFF(kv_dtype),
     .choices = spec_dtype_names,
     .help = "KV-cache format"},
    {.path = "roofline.mfu", .type = SIM_CFG_DOUBLE, .offset = OFF(mfu), .min = 0, .max = 1,
     .flags = SIM_CFG_EXCL_MIN, .help = "achieved share of peak tensor FLOP/s"},
    {.path = "roofline.mbu", .type = SIM_CFG_DOUBLE, .offset = OFF(mbu), .min = 0, .max = 1,
     .flags = SIM_CFG_EXCL_MIN, .help = "achieved share of peak HBM bandwidth"},
    {.path = "roofline.step_overhead_s", .type = SIM_CFG_DOUBLE, .offset = OFF(step_overhead_s),
     .min = 0, .max = 10, .unit = "s", .help = "fixed time per step"},
    {.path = "roofline.allreduce_latency_s", .type = SIM_CFG_DOUBLE,
     .offset = OFF(allreduce_latency_s), .min = 0, .max = 1, .unit = "s",
     .help = "latency of one tensor-parallel all-reduce"},
    {.path = "linear.a_s", .type = SIM_CFG_DOUBLE, .offset = OFF(a), .min = 0, .max = 10,
     .flags = SIM_CFG_EXCL_MIN, .unit = "s", .help = "fixed time per step"},
    {.path = "linear.b_s_per_token", .type = SIM_CFG_DOUBLE, .offset = OFF(b), .min = 0, .max = 1,
     .unit = "s/token", .help = "time per prefill token"},
    {.path = "linear.c_s_per_attn", .type = SIM_CFG_DOUBLE, .offset = OFF(c), .min = 0, .max = 1,
     .unit = "s/token^2", .help = "time per unit of prefill attention sum c(p + c/2)"},
    {.path = "linear.d_s_per_decode", .type = SIM_CFG_DOUBLE, .offset = OFF(d), .min = 0, .max = 1,
     .unit = "s/sequence", .help = "time per decoding sequence"},
    {.path = "linear.e_s_per_ctx", .type = SIM_CFG_DOUBLE, .offset = OFF(e), .min = 0, .max = 1,
     .unit = "s/token", .help = "time per context token read by decodes"},
    {.path = "source", .type = SIM_CFG_STRING, .offset = OFF(source),
     .help = "what the constants were fitted to"},
    {.path = "transferred", .type = SIM_CFG_STRING, .offset = OFF(transferred), .def = "\"\"",
     .help = "factors not fitted to this deployment and where they come from (\"\" = every "
             "factor fitted)"},
    {0},
};
#undef OFF

int cost_profile_load(const char *name_or_path, cost_profile *out)
{
    memset(out, 0, sizeof *out);
    char *path;
    int rc = cost_profile_path(name_or_path, &path);
    if (rc)
        return rc;
    sim_cfgdoc *doc = NULL;
    rc = sim_cfgdoc_load(path, &doc);
    free(path);
    if (rc)
        return rc;
    profile_file f = {0};
    rc = sim_cfg_bind(doc, profile_schema, &f);
    sim_cfgdoc_destroy(doc);
    if (rc) {
        sim_cfg_free(profile_schema, &f);
        return rc;
    }
    *out = (cost_profile){
        .name = f.name,
        .model = f.model,
        .hardware = f.hardware,
        .source = f.source,
        .transferred = f.transferred,
        .tp = f.tp,
        .weight_dtype = (enum spec_dtype)f.weight_dtype,
        .kv_dtype = (enum spec_dtype)f.kv_dtype,
        .roofline = {.mfu = f.mfu, .mbu = f.mbu, .step_overhead_s = f.step_overhead_s,
                     .allreduce_latency_s = f.allreduce_latency_s},
        .linear = {.a_s = f.a, .b_s_per_token = f.b, .c_s_per_attn = f.c,
                   .d_s_per_decode = f.d, .e_s_per_ctx = f.e},
    };
    return SIM_OK;
}

void cost_profile_fini(cost_profile *p)
{
    free(p->name);
    free(p->model);
    free(p->hardware);
    free(p->source);
    free(p->transferred);
    p->name = p->model = p->hardware = p->source = p->transferred = NULL;
}

/* fp16 and bf16 share a profile (see the header). */
static const char *dtype_class(enum spec_dtype t)
{
    return t == SPEC_FP8 ? "fp8" : "bf16";
}

static void append_lower(char *dst, const char *src)
{
    dst += strlen(dst);
    while (*src)
        *dst++ = (char)tolower((unsigned char)*src++);
    *dst = '\0';
}

char *cost_profile_default_name(const spec_deploy *d)
{
    size_t len = strlen(d->model->name) + strlen(d->hw->name) + 48;
    char *s = sim_xmalloc(len);
    s[0] = '\0';
    append_lower(s, d->model->name);
    strcat(s, "_");
    append_lower(s, d->hw->name);
    size_t n = strlen(s);
    snprintf(s + n, len - n, "_tp%lld_%s-%s", (long long)d->tp, dtype_class(d->weight_dtype),
             dtype_class(d->kv_dtype));
    return s;
}

int cost_model_from_profile(cost_model *m, enum cost_kind kind, const spec_deploy *d,
                            const cost_profile *p)
{
    if (strcasecmp(p->model, d->model->name) != 0 || strcasecmp(p->hardware, d->hw->name) != 0 ||
        p->tp != d->tp || strcmp(dtype_class(p->weight_dtype), dtype_class(d->weight_dtype)) ||
        strcmp(dtype_class(p->kv_dtype), dtype_class(d->kv_dtype))) {
        char *want = cost_profile_default_name(d);
        int rc = SIM_ERROR(SIM_EINVAL,
                           "cost profile '%s' was fitted for %s on %lld x %s, weights %s, KV %s; "
                           "expected a profile for %s on %lld x %s, weights %s, KV %s "
                           "(default name '%s')",
                           p->name, p->model, (long long)p->tp, p->hardware,
                           dtype_class(p->weight_dtype), dtype_class(p->kv_dtype), d->model->name,
                           (long long)d->tp, d->hw->name, dtype_class(d->weight_dtype),
                           dtype_class(d->kv_dtype), want);
        free(want);
        return rc;
    }
    switch (kind) {
    case COST_LINEAR:
        cost_linear_init(m, &p->linear);
        break;
    case COST_ROOFLINE:
    default:
        cost_roofline_init(m, d, &p->roofline);
        break;
    }
    return SIM_OK;
}
