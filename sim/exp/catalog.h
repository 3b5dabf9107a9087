/*
 * `crsim spec import-hf CONFIG.json --name NAME [--out FILE]`: a model spec
 * file from a Hugging Face config.json (models/spec_hf.h), the one-command
 * way to add a model to the catalogue (docs/calibration.md, "Adding a
 * model").
 */
#ifndef CRSIM_SIM_EXP_CATALOG_H
#define CRSIM_SIM_EXP_CATALOG_H

#include <stdio.h>

#include "sim/exp/cli.h"

/* Run the subcommand on the parsed arguments: read a->pos[0], write the
 * spec to --out (created or replaced) or to `out`, and check it loads
 * back as a spec (spec_model_load).  Returns SIM_OK, or SIM_EIO/SIM_EINVAL
 * with the message naming the file and key (nothing is written then). */
int exp_spec_import_main(const exp_cli_args *a, FILE *out);

#endif
