/*
 * `crsim merge OUT IN...`: combine the shard databases of one sweep
 * (`crsim run --shard I/N`) into one database equal to the unsharded run.
 */
#ifndef CRSIM_SIM_MERGE_H
#define CRSIM_SIM_MERGE_H

/*
 * Merge the latest experiment of every input database into a new
 * experiment of OUT (created if missing): the inputs must share the
 * experiment config hash (the same config, overrides and build inputs);
 * their runs (with metrics and destination rows) are copied in run-index
 * order; a run index present twice is an error.  The merged experiment is
 * 'complete' when every run of the sweep is present and every input
 * completed, else 'incomplete'; capacities are computed when complete.
 * argv holds OUT then the inputs (the positional arguments parsed by
 * sim/exp/cli.c).  Returns SIM_OK; SIM_EINVAL/SIM_EIO for
 * bad input (a missing file, not a crsim database, mismatched configs,
 * duplicate runs); SIM_EDB.
 */
int exp_merge_main(int argc, const char *const *argv);

#endif
