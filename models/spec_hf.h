/*
 * Model specs from a Hugging Face `config.json`: the architecture keys of
 * a dense decoder-only transformer (model_type llama, mistral, qwen2 or
 * qwen3) read with jansson and turned into a spec_model, the parameter
 * count computed from the architecture, and the spec written as a YAML
 * file for models/specs/ (`crsim spec import-hf`, docs/calibration.md,
 * "Adding a model").
 */
#ifndef CRSIM_MODELS_SPEC_HF_H
#define CRSIM_MODELS_SPEC_HF_H

#include <stdbool.h>
#include <stdio.h>

#include "models/spec.h"

/* What the parameter count is made of, for the file's comment. */
typedef struct spec_hf_detail {
    char model_type[32];
    bool qkv_bias;      /* bias on the q, k and v projections (qwen2; attention_bias) */
    bool o_bias;        /* bias on the output projection (attention_bias) */
    bool mlp_bias;      /* biases on the gated MLP (mlp_bias) */
    bool qk_norm;       /* RMSNorm over each head's q and k (qwen3) */
    double per_layer;   /* parameters of one decoder layer */
} spec_hf_detail;

/*
 * Read `path` (a config.json) into *out (zeroed first; name set to `name`,
 * source naming the file).  Keys read (transformers' names; a nested
 * "text_config" is used when the top level has no hidden_size):
 * num_hidden_layers, hidden_size, num_attention_heads, intermediate_size,
 * vocab_size (required, positive integers); num_key_value_heads (default
 * num_attention_heads), head_dim (default hidden_size /
 * num_attention_heads; null = default), tie_word_embeddings (default
 * false, the default of LlamaConfig, MistralConfig, Qwen2Config and
 * Qwen3Config), attention_bias and mlp_bias (default false).  Parameters
 * per layer: q, k, v, o projections (H·h·d, 2·K·h·d, H·h·d) with their
 * biases (qwen2: q, k, v always; attention_bias: q, k, v and o), the
 * gated MLP 3·d·F (+ 2F + d with mlp_bias), two RMSNorms 2d and, for
 * qwen3, q and k norms 2h; plus the embedding V·d (twice if untied) and
 * the final norm d.  These are the module shapes of transformers'
 * modeling_llama.py, modeling_mistral.py, modeling_qwen2.py and
 * modeling_qwen3.py (v4.51).  *detail (may be NULL) receives the pieces.
 * Returns SIM_OK; SIM_EIO if the file cannot be read; SIM_EINVAL naming
 * the file and key for invalid JSON, a missing or non-integer key, an
 * unsupported model_type (mixture-of-experts and other architectures are
 * not modelled) or heads that do not divide.  On error *out holds
 * nothing to free.  Free with spec_model_fini.
 */
int spec_model_from_hf(const char *path, const char *name, spec_model *out,
                       spec_hf_detail *detail);

/* Write `m` as a model spec YAML file (the keys spec_model_load reads),
 * with a comment header citing `m->source` and the parameter arithmetic
 * of `detail` (may be NULL).  Returns SIM_OK or SIM_EIO if writing
 * fails. */
int spec_model_write_yaml(const spec_model *m, const spec_hf_detail *detail, FILE *f);

#endif
