/*
 * `crsim plan`: build a CacheRoute table from an operator's per-key rates
 * without running a simulation.
 */
#ifndef CRSIM_SIM_PLAN_CLI_H
#define CRSIM_SIM_PLAN_CLI_H

#include <stdio.h>

#include "sim/exp/cli.h"

/*
 * crsim plan --rates FILE --destinations R --q-cap Q --slots W
 *            [--placement lpt|hash] [--no-replicate] [--out TABLE.csv]
 * on the arguments parsed by sim/exp/cli.c (the options of its "plan"
 * table entry).  FILE is a CSV of key,rate (requests/s).  Prints the admitted keys, Σ k_b,
 * the expected load per destination (max/mean) and the build time to
 * `out`; with --out writes the table as CSV "key,rate_rps,k_b,destinations"
 * (destinations separated by ';', in placement order), admitted keys in
 * descending rate.  Returns SIM_OK, SIM_EINVAL/SIM_EIO (bad arguments or
 * rate file, naming the file and line), SIM_ENOMEM.
 */
int exp_plan_main(const exp_cli_args *args, FILE *out);

#endif
