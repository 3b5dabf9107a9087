/*
 * Shard merging.  Each input is ATTACHed in turn and its runs copied with
 * INSERT ... SELECT, so rows move inside SQLite without passing through C.
 */
#include "sim/exp/merge.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/core/error.h"
#include "sim/exp/store.h"

/* Identity of an input's latest experiment. */
typedef struct src_exp {
    int64_t id;
    char *config_hash;
    int64_t n_planned;
    int complete;
} src_exp;

static int read_src(sqlite3 *db, const char *path, src_exp *out)
{
    sqlite3_stmt *st = NULL;
    int rc = SIM_OK;
    if (sqlite3_prepare_v2(db, "SELECT id, config_hash, n_runs_planned, status FROM "
                           "src.experiments ORDER BY id DESC LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return SIM_ERROR(SIM_EINVAL, "%s: not a crsim result database (%s); expected the output "
                         "of crsim run", path, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW) {
        out->id = sqlite3_column_int64(st, 0);
        out->config_hash = strdup((const char *)sqlite3_column_text(st, 1));
        out->n_planned = sqlite3_column_int64(st, 2);
        out->complete = strcmp((const char *)sqlite3_column_text(st, 3), "complete") == 0;
    } else {
        rc = SIM_ERROR(SIM_EINVAL, "%s: holds no experiment; expected the output of crsim run",
                       path);
    }
    sqlite3_finalize(st);
    return rc;
}

static int exec_sql(sqlite3 *db, const char *sql, const char *what)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        int rc = SIM_ERROR(SIM_EDB, "%s: %s", what, err ? err : "?");
        sqlite3_free(err);
        return rc;
    }
    return SIM_OK;
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
    exp_store *store = NULL;
    int rc = exp_store_open(outp, &store);
    if (rc)
        return rc;
    sqlite3 *db = exp_store_db(store);
    char *first_hash = NULL;
    int64_t n_planned = 0, exp_id = 0;
    int all_complete = 1;
    for (int i = 1; i < argc && rc == SIM_OK; i++) {
        char *sql = sqlite3_mprintf("ATTACH DATABASE %Q AS src", argv[i]);
        rc = exec_sql(db, sql, argv[i]);
        sqlite3_free(sql);
        if (rc)
            break;
        src_exp se = {0};
        rc = read_src(db, argv[i], &se);
        if (rc == SIM_OK && i == 1) {
            first_hash = strdup(se.config_hash);
            n_planned = se.n_planned;
            /* The merged experiment: the first shard's row, unsharded. */
            sql = sqlite3_mprintf(
                "INSERT INTO experiments(name, config_path, config_text, config_hash,"
                " build_version, host, started_at, finished_at, n_runs_planned, n_points, shard,"
                " slo_metric, slos, report_rate_rps, status)"
                " SELECT name, config_path, config_text, config_hash, build_version, host,"
                " started_at, NULL, n_runs_planned, n_points, NULL, slo_metric, slos,"
                " report_rate_rps, 'running' FROM src.experiments WHERE id = %lld",
                (long long)se.id);
            rc = exec_sql(db, sql, outp);
            sqlite3_free(sql);
            exp_id = sqlite3_last_insert_rowid(db);
        } else if (rc == SIM_OK && strcmp(se.config_hash, first_hash) != 0) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: experiment config hash %s differs from %s's %s; "
                           "expected shards of one sweep (same config and overrides)",
                           argv[i], se.config_hash, argv[1], first_hash);
        }
        all_complete &= se.complete;
        if (rc == SIM_OK) {
            /* A run index may come from one shard only. */
            sqlite3_stmt *st = NULL;
            sql = sqlite3_mprintf("SELECT count(*) FROM src.runs s JOIN main.runs m"
                                  " ON m.run_index = s.run_index AND m.experiment_id = %lld"
                                  " WHERE s.experiment_id = %lld",
                                  (long long)exp_id, (long long)se.id);
            sqlite3_prepare_v2(db, sql, -1, &st, NULL);
            sqlite3_free(sql);
            if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
                rc = SIM_ERROR(SIM_EINVAL, "%s: %lld run(s) already merged from another input; "
                               "expected disjoint shards", argv[i],
                               (long long)sqlite3_column_int64(st, 0));
            sqlite3_finalize(st);
        }
        if (rc == SIM_OK) {
            rc = exec_sql(db, "BEGIN IMMEDIATE", outp);
            /* Copy runs, then their metrics through the old->new id map. */
            if (rc == SIM_OK) {
                sql = sqlite3_mprintf(
                    "CREATE TEMP TABLE idmap(old INTEGER PRIMARY KEY, new INTEGER);"
                    "INSERT INTO main.runs(experiment_id, run_index, point, point_label,"
                    " resumed_from, policy, seed, rate_rps, config_text, config_hash,"
                    " build_version, started_at, wall_s, status)"
                    " SELECT %lld, run_index, point, point_label, resumed_from, policy, seed,"
                    " rate_rps, config_text, config_hash, build_version, started_at, wall_s,"
                    " status FROM src.runs WHERE experiment_id = %lld ORDER BY run_index;"
                    "INSERT INTO idmap SELECT s.id, m.id FROM src.runs s JOIN main.runs m"
                    " ON m.experiment_id = %lld AND m.run_index = s.run_index"
                    " WHERE s.experiment_id = %lld;"
                    "INSERT INTO main.run_metrics SELECT i.new, n_arrived, n_completed,"
                    " n_unfinished, n_rejected, n_measured, measured_completed, prompt_tokens,"
                    " hit_tokens, hit_rate, ttft_p50, ttft_p90, ttft_p99, ttft_mean, tpot_p50,"
                    " tpot_p90, tpot_p99, e2e_p50, e2e_p90, e2e_p99, imbalance_work,"
                    " imbalance_requests, first_arrival_s, last_arrival_s, sim_end_s,"
                    " throughput_rps, steps, events, preemptions, kv_pool_blocks, kv_pool_tokens"
                    " FROM src.run_metrics r JOIN idmap i ON i.old = r.run_id;"
                    "INSERT INTO main.dest_metrics SELECT i.new, dest, routed, routed_measured,"
                    " prompt_tokens, hit_tokens, prefill_tokens, decode_tokens,"
                    " win_prefill_tokens, win_decode_tokens, busy_s, steps, preemptions,"
                    " rejected, kv_pool_blocks, kv_pool_tokens, ctx_read_tokens"
                    " FROM src.dest_metrics d JOIN idmap i ON i.old = d.run_id;"
                    "INSERT INTO main.router_intervals SELECT i.new, idx, t_s, keys, admitted,"
                    " sum_k, admitted_share, plan_imbalance, build_wall_s, churn_dest, churn_k"
                    " FROM src.router_intervals r JOIN idmap i ON i.old = r.run_id;"
                    "INSERT INTO main.plan_keys SELECT i.new, rank, routing_key, rate_rps, k_b,"
                    " destinations FROM src.plan_keys p JOIN idmap i ON i.old = p.run_id;"
                    "INSERT INTO main.timeline SELECT i.new, idx, t0_s, arrivals, hit_rate,"
                    " ttft_p99 FROM src.timeline t JOIN idmap i ON i.old = t.run_id;"
                    "DROP TABLE idmap;",
                    (long long)exp_id, (long long)se.id, (long long)exp_id, (long long)se.id);
                rc = exec_sql(db, sql, outp);
                sqlite3_free(sql);
            }
            if (rc == SIM_OK)
                rc = exec_sql(db, "COMMIT", outp);
            else
                sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        }
        free(se.config_hash);
        sqlite3_exec(db, "DETACH DATABASE src", NULL, NULL, NULL);
    }
    int64_t have = 0;
    if (rc == SIM_OK) {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, "SELECT count(DISTINCT run_index) FROM runs WHERE experiment_id = ?",
                           -1, &st, NULL);
        sqlite3_bind_int64(st, 1, exp_id);
        if (sqlite3_step(st) == SQLITE_ROW)
            have = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    int complete = rc == SIM_OK && all_complete && have == n_planned;
    if (rc == SIM_OK && complete)
        rc = exp_store_capacities(store, exp_id);
    if (exp_id) {
        int rc2 = exp_store_end(store, exp_id, complete ? "complete" : "incomplete");
        if (rc == SIM_OK)
            rc = rc2;
    }
    if (rc == SIM_OK)
        printf("merged %d shard database(s) into %s (experiment %lld): %lld of %lld runs%s\n",
               argc - 1, outp, (long long)exp_id, (long long)have, (long long)n_planned,
               complete ? "" : " -- INCOMPLETE: some shards are missing or unfinished");
    free(first_hash);
    exp_store_close(store);
    return rc;
}
