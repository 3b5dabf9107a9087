/*
 * Shard merging: the result store attaches each input in turn and copies
 * its runs inside SQLite (exp_store_shard_*), so rows never pass through C.
 */
#include "sim/exp/merge.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "sim/exp/exp.h"
#include "sim/exp/store.h"

/* mkdir -p of the folder holding `path`. */
static int make_parent(const char *path)
{
    char *d = sim_xstrdup(path);
    int rc = SIM_OK;
    for (char *p = d + 1; *p && rc == SIM_OK; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(d, 0777) != 0 && errno != EEXIST)
            rc = SIM_ERROR(SIM_EIO, "%s: cannot create folder: %s", d, strerror(errno));
        *p = '/';
    }
    free(d);
    return rc;
}

int exp_merge_main(int argc, const char *const *argv)
{
    if (argc < 2)
        return SIM_ERROR(SIM_EINVAL, "usage: crsim merge OUT.db IN.db [IN.db ...]; expected an "
                         "output database and at least one shard database");
    const char *outp = argv[0];
    for (int i = 1; i < argc; i++) {
        if (access(argv[i], R_OK) != 0)
            return SIM_ERROR(SIM_EIO, "%s: cannot read the shard database; expected a file "
                             "written by crsim run --shard", argv[i]);
        if (strcmp(argv[i], outp) == 0)
            return SIM_ERROR(SIM_EINVAL, "%s is both output and input; expected a new output "
                             "database", outp);
    }
    /* Atomic: the merge is built in a new file beside OUT (a copy of OUT
     * if it exists) and renamed over OUT only when it succeeded, so an
     * interrupted or failed merge leaves OUT as it was and never a
     * partial experiment in it (issue 38 D6). */
    exp_store *store = NULL;
    struct stat sb;
    const bool had_out = stat(outp, &sb) == 0 && sb.st_size > 0;
    if (had_out) { /* refuses a foreign or other-version OUT, unchanged */
        int rc = exp_store_open(outp, &store);
        exp_store_close(store);
        store = NULL;
        if (rc)
            return rc;
    }
    char *tmp = sim_xmalloc(strlen(outp) + 16);
    sprintf(tmp, "%s.merge-XXXXXX", outp);
    int rc = make_parent(outp);
    int fd = rc == SIM_OK ? mkstemp(tmp) : -1;
    if (rc == SIM_OK && fd < 0)
        rc = SIM_ERROR(SIM_EIO, "%s: cannot create a file beside it: %s", outp, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (rc == SIM_OK && had_out)
        rc = exp_store_copy_to(outp, tmp);
    if (rc == SIM_OK)
        rc = exp_store_open(tmp, &store);
    if (rc) {
        if (fd >= 0)
            unlink(tmp);
        free(tmp);
        return rc;
    }
    char first_hash[17] = "";
    int64_t n_planned = 0, exp_id = 0;
    int all_complete = 1;
    for (int i = 1; i < argc && rc == SIM_OK; i++) {
        exp_store_shard sh;
        if ((rc = exp_store_shard_attach(store, argv[i], &sh)))
            break;
        if (i == 1) {
            memcpy(first_hash, sh.config_hash, sizeof first_hash);
            n_planned = sh.n_runs_planned;
            /* The merged experiment: the first shard's row, unsharded. */
            rc = exp_store_shard_adopt(store, &sh, &exp_id);
        } else if (strcmp(sh.config_hash, first_hash) != 0) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: experiment config hash %s differs from %s's %s; "
                           "expected shards of one sweep (same config and overrides)",
                           argv[i], sh.config_hash, argv[1], first_hash);
        }
        all_complete &= sh.complete;
        if (rc == SIM_OK && i > 1) {
            /* Same config text is not enough: the files it names must
             * hold the same bytes (issue 38 D5). */
            int64_t point = -1;
            char *was = NULL, *now = NULL, fpath[512], why[160];
            rc = exp_store_shard_inputs(store, &sh, exp_id, &point, &was, &now);
            if (rc == SIM_OK && was &&
                exp_inputs_diff(was, now, fpath, sizeof fpath, why, sizeof why))
                rc = SIM_ERROR(SIM_EINVAL, "%s: input file %s of sweep point %lld differs from "
                               "the shards merged before (%s); expected shards run on the same "
                               "input files", argv[i], fpath, (long long)point, why);
            free(was);
            free(now);
        }
        if (rc == SIM_OK)
            rc = exp_store_shard_copy(store, &sh, exp_id);
        exp_store_shard_detach(store);
    }
    int64_t have = 0;
    if (rc == SIM_OK)
        rc = exp_store_count_run_indexes(store, exp_id, &have);
    int complete = rc == SIM_OK && all_complete && have == n_planned;
    if (rc == SIM_OK && complete)
        rc = exp_store_capacities(store, exp_id);
    if (exp_id) {
        int rc2 = exp_store_end(store, exp_id, complete ? "complete" : "incomplete");
        if (rc == SIM_OK)
            rc = rc2;
    }
    exp_store_close(store);
    if (rc == SIM_OK && rename(tmp, outp) != 0)
        rc = SIM_ERROR(SIM_EIO, "%s: cannot rename the merged database over it: %s", outp,
                       strerror(errno));
    if (rc)
        unlink(tmp);
    free(tmp);
    if (rc == SIM_OK)
        printf("merged %d shard database(s) into %s (experiment %lld): %lld of %lld runs%s\n",
               argc - 1, outp, (long long)exp_id, (long long)have, (long long)n_planned,
               complete ? "" : " -- INCOMPLETE: some shards are missing or unfinished");
    return rc;
}
