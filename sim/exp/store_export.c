/*
 * `crsim export`: any table of a result database as CSV or JSON Lines
 * (sim/exp/store.h, exp_store_export).  The store is the only module that
 * speaks SQL; this file holds the export's statements.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/exp/store_int.h"

/* Whether `table` is a table of the database (sqlite_master), and whether
 * it has a column run_id (*has_run) or is the runs table itself. */
static int find_table(exp_store *s, const char *table, bool *found, bool *has_run)
{
    sqlite3_stmt *st = NULL;
    *has_run = false;
    int rc = exp__store_has_table(s, table, found);
    if (rc != SIM_OK)
        return rc;
    if (!*found)
        return SIM_OK;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = "
                           "'run_id'", -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the table's columns");
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return exp__store_dberr(s, "cannot read the table's columns");
    }
    *has_run = sqlite3_column_int64(st, 0) > 0;
    sqlite3_finalize(st);
    return SIM_OK;
}

/* The table names, comma-separated, into a new string (for messages). */
static char *table_list(exp_store *s)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 256, n = 0;
    char *b = sim_xmalloc(cap);
    b[0] = '\0';
    if (sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                           "name NOT LIKE 'sqlite_%' ORDER BY name", -1, &st, NULL) != SQLITE_OK)
        return b;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        size_t need = n + strlen(t) + 3;
        if (need > cap) {
            cap = 2 * need;
            b = sim_xrealloc(b, cap);
        }
        n += (size_t)sprintf(b + n, "%s%s", n ? ", " : "", t);
    }
    sqlite3_finalize(st);
    return b;
}

/* A text field of CSV (RFC 4180): quoted when it holds , " CR or LF, with
 * inner quotes doubled. */
static void csv_text(FILE *f, const char *t)
{
    if (!strpbrk(t, ",\"\r\n")) {
        fputs(t, f);
        return;
    }
    fputc('"', f);
    for (; *t; t++) {
        if (*t == '"')
            fputc('"', f);
        fputc(*t, f);
    }
    fputc('"', f);
}

/* A JSON string (RFC 8259): quotes, backslashes and control characters
 * escaped; other bytes (UTF-8 as stored) as they are. */
static void json_text(FILE *f, const char *t)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)t; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* One value: integers in full, reals with 17 significant digits (they
 * read back to the same double), NULL as an empty CSV field or null. */
static void put_value(FILE *f, sqlite3_stmt *st, int i, int format)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL:
        if (format == EXP_EXPORT_JSONL)
            fputs("null", f);
        break;
    case SQLITE_INTEGER:
        fprintf(f, "%lld", (long long)sqlite3_column_int64(st, i));
        break;
    case SQLITE_FLOAT: {
        const double x = sqlite3_column_double(st, i);
        if (isfinite(x))
            fprintf(f, "%.17g", x);
        else if (format == EXP_EXPORT_JSONL) /* JSON has no infinities */
            fputs("null", f);
        else
            fputs(x > 0 ? "inf" : "-inf", f);
        break;
    }
    default: {
        const char *t = (const char *)sqlite3_column_text(st, i);
        if (format == EXP_EXPORT_JSONL)
            json_text(f, t ? t : "");
        else
            csv_text(f, t ? t : "");
    }
    }
}

/* Whether run `run_id` exists (*count 1 or 0), and the lowest and highest
 * run ids stored (0 when none). */
static int count_runs(exp_store *s, int64_t run_id, int64_t *count, int64_t *lo, int64_t *hi)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT (SELECT count(*) FROM runs WHERE id = ?1), "
                           "coalesce(min(id), 0), coalesce(max(id), 0) FROM runs", -1, &st,
                           NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the runs");
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return exp__store_dberr(s, "cannot read the runs");
    }
    *count = sqlite3_column_int64(st, 0);
    *lo = sqlite3_column_int64(st, 1);
    *hi = sqlite3_column_int64(st, 2);
    sqlite3_finalize(st);
    return SIM_OK;
}

/* Rows the export would write. */
static int count_rows(exp_store *s, const char *table, int64_t run_id, bool is_runs,
                      int64_t *n)
{
    char *sql = sqlite3_mprintf("SELECT count(*) FROM \"%w\"%s", table,
                                run_id > 0 ? (is_runs ? " WHERE id = ?1" : " WHERE run_id = ?1")
                                           : "");
    if (!sql)
        return SIM_ERROR(SIM_ENOMEM, "export: out of memory");
    sqlite3_stmt *st = NULL;
    int prc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    sqlite3_free(sql);
    if (prc != SQLITE_OK)
        return exp__store_dberr(s, "cannot read the table");
    if (run_id > 0)
        sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return exp__store_dberr(s, "cannot read the table");
    }
    *n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return SIM_OK;
}

int exp_store_export(exp_store *s, const char *table, int64_t run_id, int format, FILE *out,
                     uint64_t *rows)
{
    *rows = 0;
    bool found, has_run;
    int rc = find_table(s, table, &found, &has_run);
    if (rc)
        return rc;
    if (!found) {
        char *list = table_list(s);
        rc = SIM_ERROR(SIM_EINVAL, "export: %s has no table '%s'; expected one of %s",
                       exp_store_path(s), table, list);
        free(list);
        return rc;
    }
    const bool is_runs = strcmp(table, "runs") == 0;
    if (run_id > 0 && !has_run && !is_runs)
        return SIM_ERROR(SIM_EINVAL, "export: --run %lld with table '%s', which has no run_id "
                         "column; expected a per-run table (requests, run_metrics, "
                         "dest_metrics, key_metrics, timeline, ...) or no --run",
                         (long long)run_id, table);
    /* --run N must name a stored run. */
    if (run_id > 0) {
        int64_t lo = 0, hi = 0, count = 0;
        if ((rc = count_runs(s, run_id, &count, &lo, &hi)))
            return rc;
        if (count == 0)
            return lo ? SIM_ERROR(SIM_EINVAL, "export: %s has no run %lld; expected a run id "
                                  "from %lld to %lld (crsim export %s --table runs lists them)",
                                  exp_store_path(s), (long long)run_id, (long long)lo,
                                  (long long)hi, exp_store_path(s))
                      : SIM_ERROR(SIM_EINVAL, "export: %s has no run %lld: it holds no runs",
                                  exp_store_path(s), (long long)run_id);
    }
    const bool is_requests = strcmp(table, "requests") == 0;
    /* An export with nothing to write says why instead of a bare header. */
    int64_t n_rows = 0;
    if ((rc = count_rows(s, table, run_id, is_runs, &n_rows)))
        return rc;
    if (n_rows == 0) {
        if (is_requests)
            return SIM_ERROR(SIM_EINVAL, "export: %s has no per-request records%s: its runs were "
                             "made without experiment.requests (rerun with `crsim run CONFIG "
                             "--requests` to store them)", exp_store_path(s),
                             run_id > 0 ? " for this run" : "");
        return SIM_ERROR(SIM_EINVAL, "export: table '%s' of %s has no rows%s; nothing to write",
                         table, exp_store_path(s), run_id > 0 ? " for this run" : "");
    }
    /* The name is a checked table name; quoted as an identifier anyway.
     * Per-request rows carry their run's policy, load and seed (and the
     * sweep point), so a row names the condition it was measured under. */
    char *sql = is_requests
                    ? sqlite3_mprintf("SELECT q.run_id, r.policy, r.rate_rps, r.seed, r.point, "
                                      "q.id, q.arrival_s, q.routing_key, q.measured, q.status, "
                                      "q.dest, q.replica, q.prompt_tokens, q.hit_tokens, "
                                      "q.output_tokens, q.queue_s, q.ttft_s, q.e2e_s, "
                                      "q.preemptions, q.retries, q.stage, q.client "
                                      "FROM requests q JOIN runs r ON r.id = q.run_id%s "
                                      "ORDER BY q.rowid",
                                      run_id > 0 ? " WHERE q.run_id = ?1" : "")
                    : sqlite3_mprintf("SELECT * FROM \"%w\"%s ORDER BY rowid", table,
                                      run_id > 0 ? (is_runs ? " WHERE id = ?1"
                                                            : " WHERE run_id = ?1")
                                                 : "");
    if (!sql)
        return SIM_ERROR(SIM_ENOMEM, "export: out of memory");
    sqlite3_stmt *st = NULL;
    int prc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    sqlite3_free(sql);
    if (prc != SQLITE_OK) /* a WITHOUT ROWID table: no rowid order */
        return exp__store_dberr(s, "cannot read the table");
    if (run_id > 0)
        sqlite3_bind_int64(st, 1, run_id);
    const int nc = sqlite3_column_count(st);
    if (format == EXP_EXPORT_CSV) {
        for (int i = 0; i < nc; i++) {
            if (i)
                fputc(',', out);
            csv_text(out, sqlite3_column_name(st, i));
        }
        fputs("\r\n", out);
    }
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (format == EXP_EXPORT_JSONL)
            fputc('{', out);
        for (int i = 0; i < nc; i++) {
            if (i)
                fputc(',', out);
            if (format == EXP_EXPORT_JSONL) {
                json_text(out, sqlite3_column_name(st, i));
                fputc(':', out);
            }
            put_value(out, st, i, format);
        }
        fputs(format == EXP_EXPORT_JSONL ? "}\n" : "\r\n", out);
        (*rows)++;
    }
    rc = step == SQLITE_DONE ? SIM_OK : exp__store_dberr(s, "cannot read the table");
    sqlite3_finalize(st);
    if (rc == SIM_OK && ferror(out))
        rc = SIM_ERROR(SIM_EIO, "export: cannot write the output");
    return rc;
}
