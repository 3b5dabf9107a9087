/*
 * The fit tables of the result store (store.h, "fits"; schema in
 * docs/results-schema.md): fit_candidates and fit_residuals, written by
 * `crsim fit` (sim/exp/fit.c).
 */
#include <math.h>

#include "sim/core/error.h"
#include "sim/exp/store_int.h"

/* A REAL parameter; NaN is stored as NULL (SQLite stores +-Inf as is). */
static void bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

int exp_store_fit_next_id(exp_store *s, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT COALESCE(MAX(fit_id), 0) + 1 FROM fit_candidates", -1,
                           &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the fit ids");
    int rc = SIM_OK;
    if (sqlite3_step(st) == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    else
        rc = exp__store_dberr(s, "cannot read the fit ids");
    sqlite3_finalize(st);
    return rc;
}

int exp_store_fit_add(exp_store *s, const exp_store_fit_candidate *c,
                      const exp_store_fit_residual *r, size_t n, int64_t *cand_id)
{
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot begin storing a fit candidate");
    sqlite3_stmt *st = NULL;
    int rc = SIM_OK;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO fit_candidates(fit_id, experiment_id, seq, alternative,"
                           " stage, overrides, objective, max_abs_residual, identified,"
                           " targets_path) VALUES (?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot prepare the fit candidate insert");
        goto fail;
    }
    sqlite3_bind_int64(st, 1, c->fit_id);
    if (c->experiment_id > 0)
        sqlite3_bind_int64(st, 2, c->experiment_id);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, c->seq);
    sqlite3_bind_text(st, 4, c->alternative, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, c->stage, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, c->overrides, -1, SQLITE_TRANSIENT);
    bind_real(st, 7, c->objective);
    bind_real(st, 8, c->max_abs_residual);
    sqlite3_bind_int(st, 9, c->identified ? 1 : 0);
    sqlite3_bind_text(st, 10, c->targets_path, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = exp__store_dberr(s, "cannot store a fit candidate");
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    const int64_t id = sqlite3_last_insert_rowid(s->db);
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO fit_residuals(candidate_id, idx, policy, metric, at,"
                           " target, tol, sim, residual) VALUES (?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot prepare the fit residual insert");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, (int64_t)i);
        sqlite3_bind_text(st, 3, r[i].policy, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, r[i].metric, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 5, r[i].at);
        sqlite3_bind_double(st, 6, r[i].target);
        sqlite3_bind_double(st, 7, r[i].tol);
        bind_real(st, 8, r[i].sim);
        sqlite3_bind_double(st, 9, r[i].residual);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = exp__store_dberr(s, "cannot store a fit residual");
            goto fail;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot commit a fit candidate");
        goto fail;
    }
    if (cand_id)
        *cand_id = id;
    return SIM_OK;
fail:
    sqlite3_finalize(st);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int exp_store_fit_mark_best(exp_store *s, int64_t cand_id)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "UPDATE fit_candidates SET best = 1 WHERE id = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot prepare the best-candidate update");
    sqlite3_bind_int64(st, 1, cand_id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? SIM_OK
                                            : exp__store_dberr(s, "cannot mark the best candidate");
    sqlite3_finalize(st);
    return rc;
}
