/*
 * `crsim plot DB`: figures of one experiment of a result database.  It
 * writes tab-separated data files (capacity per policy and SLO threshold,
 * the SLO metric against load, the KV hit rate) and renders each with a
 * gnuplot script from scripts/ into PNG and SVG (docs/report.md).
 */
#ifndef CRSIM_SIM_PLOT_H
#define CRSIM_SIM_PLOT_H

#include "sim/exp/cli.h"

/*
 * `crsim plot DB [--experiment ID] [--rate R] [--out DIR]`, on the
 * arguments parsed by sim/exp/cli.c (DB is a->pos[0]).  DIR defaults to
 * results/<experiment name>/ (relative to the current directory) and is
 * created if missing.  Per sweep point (suffix -p<point> when the
 * experiment has several) it writes capacity.tsv, p99.tsv and hit.tsv,
 * then runs gnuplot on scripts/plot-capacity.gp, plot-p99.gp and
 * plot-hit.gp to produce capacity.png/.svg, p99.png/.svg and hit.png/.svg.
 * The scripts are looked up as exp_plot_script_dir says; the gnuplot binary is
 * $CRSIM_GNUPLOT, else "gnuplot" in PATH.  Prints the files written to
 * stdout and errors as one line "crsim: <message>" on stderr.
 * Returns the process exit status: 0 success; 2 bad input (as
 * `crsim report`, or an output folder that cannot be created); 1 when
 * gnuplot is missing or fails, or the scripts are not found (the data
 * files are still written), or on database errors.
 */
int exp_plot_main(const exp_cli_args *a);

/*
 * The one way crsim launches gnuplot (`crsim plot` and the regime map of
 * `crsim regime`).
 */

/* The folder of the gnuplot scripts into *out (a new string the caller
 * frees): $CRSIM_SCRIPT_DIR if set, else the first existing "scripts"
 * folder beside the binary, in the installed data folder
 * (<prefix>/share/crsim/scripts, found relative to the binary) or in the
 * source tree it was built from (sim/core/datadir.h).  Returns SIM_OK, or
 * SIM_EIO naming every place looked at (*out NULL). */
int exp_plot_script_dir(char **out);

/* The path of the gnuplot binary: $CRSIM_GNUPLOT (a path, or a name looked
 * up in PATH), else "gnuplot" in PATH.  Returns a malloc'd string the
 * caller frees, or NULL if no executable is found (aborts if out of
 * memory). */
char *exp_plot_find_gnuplot(void);

/* `s` as a gnuplot single-quoted string literal, quotes included: a quote
 * doubled, a control byte replaced by '_'; gnuplot expands no backquote
 * (shell command), `@` macro or escape inside it.  Every string from a
 * database, a config or the command line reaches gnuplot this way.
 * Returns a malloc'd string the caller frees (aborts if out of memory). */
char *exp_plot_gpstr(const char *s);

/* Run `gnuplot -e VARS SCRIPT` (no shell: VARS is one argument) with the
 * binary `gnuplot` from exp_plot_find_gnuplot, and wait for it.  Returns
 * its exit status, or -1 if it could not be started or was killed. */
int exp_plot_run_gnuplot(const char *gnuplot, const char *vars, const char *script);

#endif
