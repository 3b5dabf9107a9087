/*
 * Internal to the result store (sim/exp/store.c, sim/exp/store_read.c):
 * the connection behind an exp_store and the one SQLite error helper.  The
 * only header of the tree that includes <sqlite3.h>; nothing outside the
 * store module includes it (tests/layers.sh checks both).
 */
#ifndef CRSIM_SIM_EXP_STORE_INT_H
#define CRSIM_SIM_EXP_STORE_INT_H

#include <sqlite3.h>
#include <stdbool.h>

#include "sim/exp/store.h"

struct exp_store {
    sqlite3 *db;
    char *path;     /* as opened, for messages */
};

/*
 * The one report of a failing SQLite call: records an error of `code`
 * "FILE: WHAT: <sqlite message>" (sim/core/error.h) and returns `code`.
 * FILE is `file`, or the store's path when `file` is NULL (an attached
 * shard names its own file).  `s` may not be NULL; its connection may be
 * (then the message is "out of memory", SQLite's answer for a failed open
 * without a handle).
 */
int exp__store_fail(const exp_store *s, int code, const char *file, const char *what);

/* exp__store_fail with SIM_EDB on the store's own file: a database that
 * cannot be read or written. */
#define exp__store_dberr(s, what) exp__store_fail((s), SIM_EDB, NULL, (what))

/* Whether the database has a table called `table` (sqlite_master; names
 * starting with "sqlite_" never count).  Sets *found; returns SIM_OK, or
 * the store's error (exp__store_dberr) when the catalogue cannot be read.
 * A database made by hand or by an older tool may lack optional tables
 * (timeline, group_metrics): their readers then return no rows. */
int exp__store_has_table(exp_store *s, const char *table, bool *found);

/* Column i of the current row as a double, NAN for NULL. */
double exp__store_col_real(sqlite3_stmt *st, int i);

/* Column i as a new string (caller frees), "" for NULL. */
char *exp__store_col_dup(sqlite3_stmt *st, int i);

/* Column i as text owned by the statement, "" for NULL. */
const char *exp__store_col_str(sqlite3_stmt *st, int i);

/* The SLO settings of experiment `id`: new strings *metric (the
 * slo_metric column) and *slos (the slos text), caller frees.  Returns
 * SIM_OK; SIM_EINVAL "experiment ID does not exist"; SIM_EDB.  On error
 * both are NULL. */
int exp__store_slo_settings(exp_store *s, int64_t id, char **metric, char **slos);

#endif
