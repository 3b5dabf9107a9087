/*
 * The reads behind `crsim report`'s regime statement (sim/exp/report_regime.c,
 * docs/report.md "Which regime limits capacity"): which runs of a
 * (point, policy, load) carry per-request records, and the sizes and TTFT
 * of a run's measured requests.  Only fetches; the arithmetic is the
 * report's.  Never writes.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "sim/core/error.h"
#include "sim/exp/store_int.h"

int exp_store_has_requests(exp_store *s, int64_t exp_id, bool *any)
{
    sqlite3_stmt *st = NULL;
    *any = false;
    /* A database without the requests table has no records: not an error. */
    if (sqlite3_prepare_v2(s->db,
                           "SELECT 1 FROM runs r WHERE r.experiment_id = ? AND EXISTS "
                           "(SELECT 1 FROM requests q WHERE q.run_id = r.id) LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return SIM_OK;
    sqlite3_bind_int64(st, 1, exp_id);
    const int rc = sqlite3_step(st);
    *any = rc == SQLITE_ROW;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return exp__store_dberr(s, "reading requests");
    return SIM_OK;
}

int exp_store_request_runs(exp_store *s, int64_t exp_id, int64_t point, const char *policy,
                           double rate_rps, int64_t **run_id, double **imbalance, size_t *n)
{
    sqlite3_stmt *st = NULL;
    *run_id = NULL;
    *imbalance = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT r.id, m.imbalance_work FROM runs r JOIN run_metrics m ON "
                           "m.run_id = r.id WHERE r.experiment_id = ? AND r.point = ? AND "
                           "r.policy = ? AND r.rate_rps = ? AND r.status = 'complete' AND "
                           "EXISTS (SELECT 1 FROM requests q WHERE q.run_id = r.id) "
                           "ORDER BY r.seed",
                           -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "reading runs with requests");
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_int64(st, 2, point);
    sqlite3_bind_text(st, 3, policy, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, rate_rps);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            *run_id = sim_xrealloc(*run_id, cap * sizeof **run_id);
            *imbalance = sim_xrealloc(*imbalance, cap * sizeof **imbalance);
        }
        (*run_id)[*n] = sqlite3_column_int64(st, 0);
        (*imbalance)[*n] = sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN
                                                                       : sqlite3_column_double(st, 1);
        (*n)++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(*run_id), free(*imbalance);
        *run_id = NULL, *imbalance = NULL, *n = 0;
        return exp__store_dberr(s, "reading runs with requests");
    }
    return SIM_OK;
}

int exp_store_request_sizes(exp_store *s, int64_t run_id, double **prompt, double **uncached,
                            double **ttft, size_t *n)
{
    sqlite3_stmt *st = NULL;
    *n = 0;
    *prompt = *uncached = *ttft = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT prompt_tokens, hit_tokens, ttft_s FROM requests WHERE run_id = ?"
                           " AND measured = 1 AND status <> 'too_long' ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "reading requests");
    sqlite3_bind_int64(st, 1, run_id);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            *prompt = sim_xrealloc(*prompt, cap * sizeof **prompt);
            *uncached = sim_xrealloc(*uncached, cap * sizeof **uncached);
            *ttft = sim_xrealloc(*ttft, cap * sizeof **ttft);
        }
        const double p = (double)sqlite3_column_int64(st, 0),
                     h = (double)sqlite3_column_int64(st, 1);
        (*prompt)[*n] = p;
        (*uncached)[*n] = p - h;
        (*ttft)[*n] = sqlite3_column_type(st, 2) == SQLITE_NULL ? INFINITY
                                                                 : sqlite3_column_double(st, 2);
        (*n)++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(*prompt), free(*uncached), free(*ttft);
        *prompt = *uncached = *ttft = NULL;
        *n = 0;
        return exp__store_dberr(s, "reading requests");
    }
    return SIM_OK;
}
