/*
 * Loading hardware and model spec files (YAML, in models/specs/).
 */
#ifndef CRSIM_MODELS_SPEC_LOAD_H
#define CRSIM_MODELS_SPEC_LOAD_H

#include "models/spec.h"

/*
 * Path of spec `name` into *out: if `name` contains '/' or ends in ".yaml"
 * it is a path and copied as is; otherwise "<spec dir>/<name>.yaml" with
 * the spec dir of spec_dir().  *out is a new string the caller frees.
 * Returns SIM_OK, or spec_dir's SIM_EIO (*out NULL).  Aborts on OOM.
 */
int spec_path(const char *name, char **out);

/*
 * The spec directory into *out (a new string the caller frees):
 * $CRSIM_SPEC_DIR if set and non-empty, else the first existing
 * "models/specs" folder beside the binary, in the installed data folder
 * (<prefix>/share/crsim/models/specs, found relative to the binary) or in
 * the source tree it was built from (sim/core/datadir.h).  Returns SIM_OK,
 * or SIM_EIO naming every place looked at (*out NULL).
 */
int spec_dir(char **out);

/*
 * Load a GPU spec file into *out (fields in the file are in the units
 * their key names say — TFLOP/s, TB/s, GiB, GB/s, GB — and are converted
 * to FLOP/s, bytes/s and bytes).  Free with spec_hw_fini.  Returns SIM_OK,
 * SIM_EIO (file missing) or SIM_EINVAL (a key missing, unknown, of the
 * wrong type or out of range; the message names the file, line and key).
 */
int spec_hw_load(const char *name, spec_hw *out);

/* Load a model spec file into *out; free with spec_model_fini.  Errors as
 * spec_hw_load, plus SIM_EINVAL when q_heads·head_dim is inconsistent with
 * the KV heads (kv_heads must divide q_heads). */
int spec_model_load(const char *name, spec_model *out);

/* Free the strings of a spec.  Safe on a zeroed spec and twice. */
void spec_hw_fini(spec_hw *hw);
void spec_model_fini(spec_model *m);

#endif
