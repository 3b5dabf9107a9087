/*
 * Hugging Face config.json -> model spec (spec_hf.h).  Only facts of the
 * architecture are read; nothing of the checkpoint (dtype, quantisation)
 * is, since the deployment's dtypes are experiment keys.
 */
#include "models/spec_hf.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"

static const char *const supported[] = {"llama", "mistral", "qwen2", "qwen3", NULL};

/* A positive integer key of `o` into *v; `req` says whether it may be
 * absent (then *v is unchanged). */
static int get_int(const char *path, const json_t *o, const char *key, bool req, int64_t *v)
{
    const json_t *x = json_object_get(o, key);
    if (!x || json_is_null(x)) {
        if (req)
            return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is missing; expected a positive integer "
                             "(a Hugging Face config.json of a dense decoder)", path, key);
        return SIM_OK;
    }
    if (!json_is_integer(x) || json_integer_value(x) <= 0)
        return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is not a positive integer; expected a "
                         "positive integer", path, key);
    *v = (int64_t)json_integer_value(x);
    return SIM_OK;
}

static int get_bool(const char *path, const json_t *o, const char *key, bool *v)
{
    const json_t *x = json_object_get(o, key);
    if (!x || json_is_null(x))
        return SIM_OK;
    if (!json_is_boolean(x))
        return SIM_ERROR(SIM_EINVAL, "%s: key '%s' is not true or false; expected a boolean",
                         path, key);
    *v = json_is_true(x);
    return SIM_OK;
}

int spec_model_from_hf(const char *path, const char *name, spec_model *out,
                       spec_hf_detail *detail)
{
    memset(out, 0, sizeof *out);
    spec_hf_detail dt = {0};
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        FILE *f = fopen(path, "r");
        if (!f)
            return SIM_ERROR(SIM_EIO, "%s: cannot open config.json; expected a readable "
                             "Hugging Face config.json", path);
        fclose(f);
        return SIM_ERROR(SIM_EINVAL, "%s:%d: invalid JSON (%s); expected a Hugging Face "
                         "config.json", path, je.line, je.text);
    }
    int rc = SIM_OK;
    const json_t *o = root;
    if (!json_is_object(o)) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: not a JSON object; expected a Hugging Face config.json",
                       path);
        goto done;
    }
    if (!json_object_get(o, "hidden_size") && json_is_object(json_object_get(o, "text_config")))
        o = json_object_get(o, "text_config");
    const json_t *mt = json_object_get(o, "model_type");
    if (!mt)
        mt = json_object_get(root, "model_type");
    if (!json_is_string(mt)) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: key 'model_type' is missing; expected one of llama, "
                       "mistral, qwen2, qwen3", path);
        goto done;
    }
    bool known = false;
    for (int i = 0; supported[i]; i++)
        known |= strcmp(json_string_value(mt), supported[i]) == 0;
    if (!known || json_object_get(o, "num_experts") || json_object_get(o, "num_local_experts")) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: model_type '%s'%s is not supported; expected a dense "
                       "decoder of model_type llama, mistral, qwen2 or qwen3 (crsim's cost "
                       "model has no mixture-of-experts or other layer types)", path,
                       json_string_value(mt), known ? " with experts" : "");
        goto done;
    }
    snprintf(dt.model_type, sizeof dt.model_type, "%s", json_string_value(mt));
    int64_t L = 0, d = 0, H = 0, F = 0, V = 0, K = 0, h = 0;
    if ((rc = get_int(path, o, "num_hidden_layers", true, &L)) ||
        (rc = get_int(path, o, "hidden_size", true, &d)) ||
        (rc = get_int(path, o, "num_attention_heads", true, &H)) ||
        (rc = get_int(path, o, "intermediate_size", true, &F)) ||
        (rc = get_int(path, o, "vocab_size", true, &V)))
        goto done;
    K = H;
    if ((rc = get_int(path, o, "num_key_value_heads", false, &K)))
        goto done;
    if (d % H != 0 && !json_integer_value(json_object_get(o, "head_dim"))) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: hidden_size %lld is not a multiple of "
                       "num_attention_heads %lld and head_dim is missing; expected head_dim",
                       path, (long long)d, (long long)H);
        goto done;
    }
    h = d / H;
    if ((rc = get_int(path, o, "head_dim", false, &h)))
        goto done;
    if (H % K != 0) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: num_key_value_heads %lld does not divide "
                       "num_attention_heads %lld; expected grouped-query attention", path,
                       (long long)K, (long long)H);
        goto done;
    }
    bool tied = false, attn_bias = false, mlp_bias = false;
    if ((rc = get_bool(path, o, "tie_word_embeddings", &tied)) ||
        (rc = get_bool(path, root, "tie_word_embeddings", &tied)) ||
        (rc = get_bool(path, o, "attention_bias", &attn_bias)) ||
        (rc = get_bool(path, o, "mlp_bias", &mlp_bias)))
        goto done;
    if (o != root) /* a nested text_config's own key wins */
        get_bool(path, o, "tie_word_embeddings", &tied);
    dt.qkv_bias = attn_bias || strcmp(dt.model_type, "qwen2") == 0;
    dt.o_bias = attn_bias;
    dt.mlp_bias = mlp_bias;
    dt.qk_norm = strcmp(dt.model_type, "qwen3") == 0;
    const double Dd = (double)d, Hh = (double)(H * h), Kh = (double)(K * h), Ff = (double)F;
    double layer = Dd * Hh + 2.0 * Dd * Kh + Hh * Dd + 3.0 * Dd * Ff + 2.0 * Dd;
    if (dt.qkv_bias)
        layer += Hh + 2.0 * Kh;
    if (dt.o_bias)
        layer += Dd;
    if (dt.mlp_bias)
        layer += 2.0 * Ff + Dd;
    if (dt.qk_norm)
        layer += 2.0 * (double)h;
    dt.per_layer = layer;
    *out = (spec_model){
        .layers = L, .hidden = d, .q_heads = H, .kv_heads = K, .head_dim = h, .ffn = F,
        .vocab = V, .tied_embeddings = tied,
        .params = (double)L * layer + (tied ? 1.0 : 2.0) * (double)V * Dd + Dd,
    };
    out->name = sim_xstrdup(name);
    size_t n = strlen(path) + 128;
    out->source = sim_xmalloc(n);
    snprintf(out->source, n, "%s (Hugging Face config.json, imported by crsim spec import-hf; "
             "params computed from the architecture)", path);
    if (detail)
        *detail = dt;
done:
    json_decref(root);
    return rc;
}

int spec_model_write_yaml(const spec_model *m, const spec_hf_detail *dt, FILE *f)
{
    fprintf(f, "# %s.  Written by crsim spec import-hf (docs/calibration.md, \"Adding a "
            "model\").\n# Source: %s.\n", m->name, m->source);
    if (dt) {
        fprintf(f, "#\n# Parameter count from the architecture (model_type %s):\n"
                "#   per layer: q %lld·%lld + k,v 2·%lld·%lld + o %lld·%lld + gated MLP "
                "3·%lld·%lld + 2 RMSNorms 2·%lld", dt->model_type, (long long)m->hidden,
                (long long)(m->q_heads * m->head_dim), (long long)m->hidden,
                (long long)(m->kv_heads * m->head_dim), (long long)(m->q_heads * m->head_dim),
                (long long)m->hidden, (long long)m->hidden, (long long)m->ffn,
                (long long)m->hidden);
        if (dt->qkv_bias)
            fprintf(f, "\n#              + q,k,v biases %lld", (long long)((m->q_heads +
                    2 * m->kv_heads) * m->head_dim));
        if (dt->o_bias)
            fprintf(f, " + o bias %lld", (long long)m->hidden);
        if (dt->mlp_bias)
            fprintf(f, " + MLP biases %lld", (long long)(2 * m->ffn + m->hidden));
        if (dt->qk_norm)
            fprintf(f, "\n#              + q,k norms 2·%lld", (long long)m->head_dim);
        fprintf(f, "\n#            = %.0f\n#   %lld layers = %.0f\n"
                "#   embedding + LM head (%s) %s%lld·%lld = %.0f\n#   final norm = %lld\n"
                "#   total = %.0f\n", dt->per_layer, (long long)m->layers,
                dt->per_layer * (double)m->layers, m->tied_embeddings ? "tied" : "untied",
                m->tied_embeddings ? "" : "2·", (long long)m->vocab, (long long)m->hidden,
                spec_embedding_params(m), (long long)m->hidden, m->params);
    }
    fprintf(f, "# KV per token: 2 x %lld x %lld x %lld x bytes = %.0f B at bf16, %.0f B at "
            "fp8.\n", (long long)m->layers, (long long)m->kv_heads, (long long)m->head_dim,
            spec_kv_bytes_per_token(m, SPEC_BF16), spec_kv_bytes_per_token(m, SPEC_FP8));
    fprintf(f, "name: %s\nlayers: %lld\nhidden: %lld\nq_heads: %lld\nkv_heads: %lld\n"
            "head_dim: %lld\nffn: %lld\nvocab: %lld\nparams: %.0f\ntied_embeddings: %s\n"
            "source: \"", m->name, (long long)m->layers, (long long)m->hidden,
            (long long)m->q_heads, (long long)m->kv_heads, (long long)m->head_dim,
            (long long)m->ffn, (long long)m->vocab, m->params,
            m->tied_embeddings ? "true" : "false");
    for (const char *p = m->source; *p; p++)
        fprintf(f, "%s%c", *p == '"' || *p == '\\' ? "\\" : "", *p);
    fprintf(f, "\"\n");
    return ferror(f) ? SIM_ERROR(SIM_EIO, "cannot write the spec file") : SIM_OK;
}
