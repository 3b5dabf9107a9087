/*
 * `crsim report DB`: the paper-style tables of one experiment of a result
 * database — per sweep point, one row per policy with the KV hit rate,
 * the SLO capacity at each threshold (with censoring), the SLO metric's
 * p99 and the load imbalance — as aligned text, Markdown or CSV
 * (docs/report.md).  The loader behind it (exp__report_*, report_int.h) is
 * shared with `crsim plot` (sim/exp/plot.c) and is not part of the API.
 */
#ifndef CRSIM_SIM_REPORT_H
#define CRSIM_SIM_REPORT_H

#include "sim/exp/cli.h"

/*
 * `crsim report DB [--experiment ID] [--format text|markdown|csv]
 * [--rate R] [--out FILE]`, on the arguments parsed by sim/exp/cli.c
 * (DB is a->pos[0]; the options of its "report" table entry).  Prints the tables to stdout (or FILE), warnings on partial
 * results to stderr, and on error one line "crsim: <message>" to stderr.
 * Returns the process exit status: 0 success; 2 bad input (missing file,
 * not a crsim database, unknown experiment, rate not tested, bad option:
 * SIM_EINVAL/SIM_EIO); 1 other failures (SIM_EDB, SIM_ENOMEM).
 */
int exp_report_main(const exp_cli_args *a);

#endif
