/*
 * Where crsim's data files are: the folders of spec files, workload
 * presets, gnuplot scripts and shipped experiments, found at run time so
 * that a moved or installed binary works (docs/install.md).
 *
 * A data folder is named by its path relative to a data root laid out as
 * the source tree ("models/specs", "scripts").  The places tried, in order:
 *
 *   1. the environment variable the caller names (e.g. CRSIM_SPEC_DIR),
 *      used as is when set and non-empty (nothing else is tried);
 *   2. beside the binary: <binary's folder>/../<rel>, the source tree's
 *      layout seen from a build folder inside it (build/crsim);
 *   3. the installed data folder relative to the binary:
 *      <binary's folder>/<bindir-to-datadir>/crsim/<rel>, i.e.
 *      bin/../share/crsim/<rel> for the default meson layout, so that an
 *      installation moved as a whole (or installed with --destdir and run
 *      from there) finds its own data;
 *   4. the installed data folder as configured, when meson's datadir is an
 *      absolute path outside the prefix;
 *   5. the source tree the binary was built from (a build folder outside
 *      the source tree).
 *
 * The binary's folder comes from /proc/self/exe (Linux), which resolves
 * symbolic links, so a link to the binary in another folder still finds
 * the data of the real one.  Places 3 to 5 are fixed at build time
 * (meson.build: CRSIM_BIN_TO_DATA, CRSIM_INSTALL_DATA, CRSIM_SOURCE_ROOT).
 */
#ifndef CRSIM_SIM_DATADIR_H
#define CRSIM_SIM_DATADIR_H

/*
 * Find the data folder `rel` ("models/specs"): $`env` when set and
 * non-empty, else the first of places 2-5 above that is an existing
 * folder.  On success *out is a new string the caller frees and SIM_OK is
 * returned.  SIM_EIO when no place has the folder, with a message naming
 * every place looked at and how to point crsim at the folder ("set
 * `env` or install crsim with meson install"); *out is then NULL.  Aborts
 * on out-of-memory.  Failure class: see codes.
 */
int sim_datadir_find(const char *env, const char *rel, char **out);

#endif
