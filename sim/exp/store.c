/*
 * SQLite result store.  Prepared statements, one transaction per run, and
 * REAL columns that may hold +Inf (an unfinished request's latency) or
 * NULL (a metric that is undefined, e.g. TPOT with no multi-token output).
 */
#include "sim/exp/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim/exp/capacity.h"
#include "sim/exp/client_metrics.h"
#include "sim/exp/setup.h"
#include "sim/core/error.h"
#include "sim/core/metrics.h"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS experiments(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL,\n"
    "  config_path TEXT,\n"
    "  config_text TEXT NOT NULL,\n"
    "  config_hash TEXT NOT NULL,\n"
    "  build_version TEXT NOT NULL,\n"
    "  host TEXT,\n"
    "  started_at TEXT NOT NULL,\n"
    "  finished_at TEXT,\n"
    "  n_runs_planned INTEGER NOT NULL,\n"
    "  n_points INTEGER NOT NULL,\n"
    "  shard TEXT,\n"
    "  slo_metric TEXT NOT NULL,\n"
    "  slos TEXT NOT NULL,\n"
    "  report_rate_rps REAL NOT NULL,\n"
    "  status TEXT NOT NULL CHECK (status IN ('running','complete','incomplete')),\n"
    "  goodput_ttft_s REAL, goodput_tpot_s REAL, joint_slo TEXT);\n"
    "CREATE TABLE IF NOT EXISTS runs(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  experiment_id INTEGER NOT NULL REFERENCES experiments(id),\n"
    "  run_index INTEGER NOT NULL,\n"
    "  point INTEGER NOT NULL,\n"
    "  point_label TEXT NOT NULL,\n"
    "  resumed_from INTEGER,\n"
    "  policy TEXT NOT NULL,\n"
    "  seed INTEGER NOT NULL,\n"
    "  rate_rps REAL NOT NULL,\n"
    "  config_text TEXT NOT NULL,\n"
    "  config_hash TEXT NOT NULL,\n"
    "  build_version TEXT NOT NULL,\n"
    "  started_at TEXT NOT NULL,\n"
    "  wall_s REAL NOT NULL,\n"
    "  inputs TEXT NOT NULL DEFAULT '',\n"
    "  status TEXT NOT NULL CHECK (status IN ('complete','interrupted')));\n"
    "CREATE TABLE IF NOT EXISTS run_metrics(\n"
    "  run_id INTEGER PRIMARY KEY REFERENCES runs(id),\n"
    "  n_arrived INTEGER NOT NULL, n_completed INTEGER NOT NULL,\n"
    "  n_unfinished INTEGER NOT NULL, n_rejected INTEGER NOT NULL,\n"
    "  n_measured INTEGER NOT NULL, measured_completed INTEGER NOT NULL,\n"
    "  prompt_tokens INTEGER NOT NULL, hit_tokens INTEGER NOT NULL, hit_rate REAL,\n"
    "  ttft_p50 REAL, ttft_p90 REAL, ttft_p99 REAL, ttft_mean REAL,\n"
    "  tpot_p50 REAL, tpot_p90 REAL, tpot_p99 REAL,\n"
    "  e2e_p50 REAL, e2e_p90 REAL, e2e_p99 REAL,\n"
    "  imbalance_work REAL, imbalance_requests REAL,\n"
    "  first_arrival_s REAL, last_arrival_s REAL, sim_end_s REAL, throughput_rps REAL,\n"
    "  steps INTEGER NOT NULL, events INTEGER NOT NULL, preemptions INTEGER NOT NULL,\n"
    "  kv_pool_blocks INTEGER NOT NULL, kv_pool_tokens INTEGER NOT NULL,\n"
    "  n_too_long INTEGER NOT NULL DEFAULT 0, fair_keys INTEGER NOT NULL DEFAULT 0,\n"
    "  fair_worst_p99 REAL, fair_spread_p99 REAL, fair_jain REAL,\n"
    "  n_failed INTEGER NOT NULL DEFAULT 0, n_lost INTEGER NOT NULL DEFAULT 0,\n"
    "  n_refused INTEGER NOT NULL DEFAULT 0, n_retries INTEGER NOT NULL DEFAULT 0,\n"
    "  n_crashes INTEGER NOT NULL DEFAULT 0,\n"
    "  tpot_mean REAL, e2e_mean REAL,\n"
    "  itl_mean REAL, itl_p50 REAL, itl_p90 REAL, itl_p99 REAL,\n"
    "  itl_gaps INTEGER NOT NULL DEFAULT 0,\n"
    "  output_tps REAL, goodput_rps REAL, n_good INTEGER NOT NULL DEFAULT 0);\n"
    "CREATE TABLE IF NOT EXISTS key_metrics(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  routing_key TEXT NOT NULL, requests INTEGER NOT NULL,\n"
    "  hit_rate REAL, ttft_p99 REAL, ttft_mean REAL,\n"
    "  PRIMARY KEY (run_id, routing_key));\n"
    "CREATE TABLE IF NOT EXISTS requests(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  id INTEGER NOT NULL, arrival_s REAL NOT NULL, routing_key TEXT NOT NULL,\n"
    "  measured INTEGER NOT NULL,\n"
    "  status TEXT NOT NULL CHECK (status IN ('completed','unfinished','rejected',"
    "'too_long','failed')),\n"
    "  dest INTEGER, replica INTEGER,\n"
    "  prompt_tokens INTEGER NOT NULL, hit_tokens INTEGER NOT NULL,\n"
    "  output_tokens INTEGER NOT NULL,\n"
    "  queue_s REAL, ttft_s REAL, e2e_s REAL,\n"
    "  preemptions INTEGER NOT NULL, retries INTEGER NOT NULL,\n"
    "  stage INTEGER, client TEXT,\n"
    "  PRIMARY KEY (run_id, id));\n"
    "CREATE TABLE IF NOT EXISTS dest_metrics(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  dest INTEGER NOT NULL,\n"
    "  routed INTEGER NOT NULL, routed_measured INTEGER NOT NULL,\n"
    "  prompt_tokens INTEGER NOT NULL, hit_tokens INTEGER NOT NULL,\n"
    "  prefill_tokens INTEGER NOT NULL, decode_tokens INTEGER NOT NULL,\n"
    "  win_prefill_tokens INTEGER NOT NULL, win_decode_tokens INTEGER NOT NULL,\n"
    "  busy_s REAL NOT NULL, steps INTEGER NOT NULL, preemptions INTEGER NOT NULL,\n"
    "  rejected INTEGER NOT NULL,\n"
    "  kv_pool_blocks INTEGER NOT NULL, kv_pool_tokens INTEGER NOT NULL,\n"
    "  ctx_read_tokens INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, dest));\n"
    "CREATE TABLE IF NOT EXISTS group_metrics(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  grp INTEGER NOT NULL, name TEXT NOT NULL, destinations INTEGER NOT NULL,\n"
    "  requests INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL, hit_tokens INTEGER NOT NULL,\n"
    "  hit_rate REAL, ttft_p50 REAL, ttft_p90 REAL, ttft_p99 REAL, ttft_mean REAL,\n"
    "  win_busy_s REAL NOT NULL, utilization REAL,\n"
    "  PRIMARY KEY (run_id, grp));\n"
    "CREATE TABLE IF NOT EXISTS capacities(\n"
    "  experiment_id INTEGER NOT NULL REFERENCES experiments(id),\n"
    "  point INTEGER NOT NULL,\n"
    "  point_label TEXT NOT NULL,\n"
    "  policy TEXT NOT NULL,\n"
    "  seed INTEGER NOT NULL,\n"
    "  slo_metric TEXT NOT NULL,\n"
    "  slo_s REAL NOT NULL,\n"
    "  capacity_rps REAL,\n"
    "  censoring TEXT NOT NULL CHECK (censoring IN ('none','left','right')),\n"
    "  lowest_rps REAL NOT NULL,\n"
    "  highest_rps REAL NOT NULL,\n"
    "  n_loads INTEGER NOT NULL,\n"
    "  PRIMARY KEY (experiment_id, point, policy, seed, slo_metric, slo_s));\n"
    "CREATE TABLE IF NOT EXISTS router_intervals(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  idx INTEGER NOT NULL,\n"
    "  t_s REAL NOT NULL, keys INTEGER NOT NULL, admitted INTEGER NOT NULL,\n"
    "  sum_k INTEGER NOT NULL, admitted_share REAL, plan_imbalance REAL,\n"
    "  build_wall_s REAL, churn_dest REAL, churn_k REAL,\n"
    "  keys_moved INTEGER NOT NULL, warm_tokens_moved REAL, held_imbalance REAL,\n"
    "  moves INTEGER NOT NULL, skipped INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, idx));\n"
    "CREATE TABLE IF NOT EXISTS plan_keys(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  rank INTEGER NOT NULL,\n"
    "  routing_key TEXT NOT NULL, rate_rps REAL NOT NULL, k_b INTEGER NOT NULL,\n"
    "  destinations TEXT NOT NULL,\n"
    "  PRIMARY KEY (run_id, rank));\n"
    "CREATE TABLE IF NOT EXISTS timeline(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  idx INTEGER NOT NULL,\n"
    "  t0_s REAL NOT NULL, arrivals INTEGER NOT NULL, hit_rate REAL, ttft_p99 REAL,\n"
    "  PRIMARY KEY (run_id, idx));\n"
    "CREATE TABLE IF NOT EXISTS fit_candidates(\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  fit_id INTEGER NOT NULL,\n"
    "  experiment_id INTEGER REFERENCES experiments(id),\n"
    "  seq INTEGER NOT NULL, alternative TEXT NOT NULL, stage TEXT NOT NULL,\n"
    "  overrides TEXT NOT NULL, objective REAL, max_abs_residual REAL,\n"
    "  identified INTEGER NOT NULL, best INTEGER NOT NULL DEFAULT 0,\n"
    "  targets_path TEXT NOT NULL);\n"
    "CREATE TABLE IF NOT EXISTS fit_residuals(\n"
    "  candidate_id INTEGER NOT NULL REFERENCES fit_candidates(id),\n"
    "  idx INTEGER NOT NULL,\n"
    "  policy TEXT NOT NULL, metric TEXT NOT NULL, at REAL NOT NULL,\n"
    "  target REAL NOT NULL, tol REAL NOT NULL, sim REAL, residual REAL NOT NULL,\n"
    "  PRIMARY KEY (candidate_id, idx));\n"
    "CREATE TABLE IF NOT EXISTS client_runs(\n"
    "  run_id INTEGER PRIMARY KEY REFERENCES runs(id),\n"
    "  mode TEXT NOT NULL, latency_from TEXT NOT NULL,\n"
    "  sent INTEGER NOT NULL, conversations INTEGER NOT NULL,\n"
    "  abandoned INTEGER NOT NULL, unsent INTEGER NOT NULL,\n"
    "  ttft_p99_send REAL, ttft_p99_intended REAL, e2e_p99_send REAL, e2e_p99_intended REAL);\n"
    "CREATE TABLE IF NOT EXISTS stage_metrics(\n"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
    "  stage INTEGER NOT NULL, load REAL NOT NULL,\n"
    "  load_kind TEXT NOT NULL CHECK (load_kind IN ('rate','concurrency','batch')),\n"
    "  start_s REAL, end_s REAL,\n"
    "  sent INTEGER NOT NULL, measured INTEGER NOT NULL, completed INTEGER NOT NULL,\n"
    "  ttft_mean REAL, ttft_p50 REAL, ttft_p90 REAL, ttft_p99 REAL,\n"
    "  tpot_mean REAL, tpot_p50 REAL, tpot_p90 REAL, tpot_p99 REAL,\n"
    "  e2e_mean REAL, e2e_p50 REAL, e2e_p90 REAL, e2e_p99 REAL,\n"
    "  ttft_p99_intended REAL, e2e_p99_intended REAL,\n"
    "  throughput_rps REAL, output_tps REAL, hit_rate REAL,\n"
    "  PRIMARY KEY (run_id, stage));\n"
    "CREATE INDEX IF NOT EXISTS runs_by_hash ON runs(config_hash, status);\n"
    "CREATE INDEX IF NOT EXISTS runs_by_experiment ON runs(experiment_id, run_index);\n";

/* Who holds a lock on the SQLite database file `path`: SQLite's unix VFS
 * locks bytes [PENDING_BYTE, PENDING_BYTE + 512) of the file with POSIX
 * advisory locks (PENDING_BYTE = 0x40000000; sqlite.org/lockingv3.html and
 * os_unix.c), so F_GETLK over that range returns one conflicting holder.
 * POSIX locks of this process are never reported (they do not conflict
 * with ourselves).  Writes " (pid N, NAME)" or "" to buf.  Cannot fail. */
static void lock_holder(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0x40000000,
                       .l_len = 512};
    if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0) {
        char comm[64] = "", proc[64];
        snprintf(proc, sizeof proc, "/proc/%ld/comm", (long)fl.l_pid);
        FILE *f = fopen(proc, "r");
        if (f) {
            if (fgets(comm, sizeof comm, f))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(f);
        }
        snprintf(buf, n, " (pid %ld%s%s)", (long)fl.l_pid, comm[0] ? ", " : "", comm);
    }
    close(fd);
}

/* The busy timeout of a connection, ms: CRSIM_DB_BUSY_TIMEOUT_S seconds
 * when set to a number in [0, 86400], else EXP_STORE_BUSY_TIMEOUT_S. */
enum { EXP_STORE_END_WAIT = 3, EXP_STORE_END_MIN_S = 30 };

static int busy_timeout_ms(void)
{
    const char *e = getenv("CRSIM_DB_BUSY_TIMEOUT_S");
    char *end = NULL;
    double v = e ? strtod(e, &end) : NAN;
    if (!e || end == e || *end || !(v >= 0 && v <= 86400))
        v = EXP_STORE_BUSY_TIMEOUT_S;
    return (int)(v * 1000);
}

/* The status of a database that cannot be opened as given: a path that
 * cannot be opened or created, a file that is not a database, a damaged
 * or read-only one are bad input (exit 2), the same for run, report,
 * plot, export and merge (docs/harness.md "Exit status"; issue 38 C7);
 * anything else (a full disk, I/O errors) keeps SIM_EDB (exit 1). */
static int open_status(const exp_store *s)
{
    switch (s->db ? sqlite3_errcode(s->db) : SQLITE_NOMEM) {
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH: return SIM_EIO;
    default: return SIM_EDB;
    }
}

int exp__store_fail(const exp_store *s, int code, const char *file, const char *what)
{
    const int ec = s->db ? sqlite3_errcode(s->db) : SQLITE_NOMEM;
    if (ec == SQLITE_BUSY || ec == SQLITE_LOCKED) {
        /* Another connection holds the database longer than the busy
         * timeout: not a broken file but an unusable one right now
         * (docs/harness.md, "Exit status": 2). */
        char who[128];
        lock_holder(file ? file : s->path, who, sizeof who);
        return SIM_ERROR(SIM_EIO, "%s: %s: database is locked by another process%s for longer "
                         "than the busy timeout of %g s; expected no other writer (wait for it "
                         "to finish, or write to another experiment.db)", file ? file : s->path,
                         what, who[0] ? who : " (unknown pid)", busy_timeout_ms() / 1000.0);
    }
    return SIM_ERROR(code, "%s: %s: %s", file ? file : s->path, what,
                     s->db ? sqlite3_errmsg(s->db) : "out of memory");
}

double exp__store_col_real(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

const char *exp__store_col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

char *exp__store_col_dup(sqlite3_stmt *st, int i)
{
    return sim_xstrdup(exp__store_col_str(st, i));
}

const char *exp_store_path(const exp_store *s) { return s->path; }

/* mkdir -p of the folder part of `path` (one or more levels). */
static int make_parent(const char *path)
{
    char *dir = sim_xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = SIM_OK;
    if (slash && slash != dir) {
        *slash = '\0';
        for (char *p = dir + 1; *p; p++) {
            if (*p != '/')
                continue;
            *p = '\0';
            if (mkdir(dir, 0777) != 0 && errno != EEXIST)
                rc = SIM_ERROR(SIM_EIO, "%s: cannot create folder: %s", dir, strerror(errno));
            *p = '/';
            if (rc)
                break;
        }
        if (!rc && mkdir(dir, 0777) != 0 && errno != EEXIST)
            rc = SIM_ERROR(SIM_EIO, "%s: cannot create folder: %s", dir, strerror(errno));
    }
    free(dir);
    return rc;
}

/* A database crsim may write: a new (empty) file, or one whose meta table
 * carries a schema_version (crsim's stamp).  A non-empty SQLite file
 * without it belongs to someone else and is refused, never adopted
 * (creating crsim's tables in it would change another program's file).
 * Returns SIM_OK, SIM_EINVAL (foreign database) or the store errors. */
static int check_ours(exp_store *s)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_master WHERE type = 'table' "
                           "ORDER BY name", -1, &st, NULL) != SQLITE_OK)
        return exp__store_fail(s, open_status(s), NULL, "cannot read its tables (expected a crsim "
                               "result database or a new file)");
    char names[256] = "";
    size_t n = 0, used = 0;
    bool has_meta = false;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = exp__store_col_str(st, 0);
        has_meta |= strcmp(t, "meta") == 0;
        if (n++ < 4 && used + 1 < sizeof names)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", n > 1 ? ", " : "",
                                     t);
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return exp__store_fail(s, open_status(s), NULL, "cannot read its tables (expected a crsim "
                               "result database or a new file)");
    if (n == 0)
        return SIM_OK; /* a new file */
    bool stamped = false;
    if (has_meta && sqlite3_prepare_v2(s->db, "SELECT 1 FROM meta WHERE key = 'schema_version'",
                                       -1, &st, NULL) == SQLITE_OK) {
        stamped = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    if (stamped)
        return SIM_OK;
    return SIM_ERROR(SIM_EINVAL, "%s: not a crsim result database (it holds %zu table%s: %s%s "
                     "and no crsim schema_version); expected a crsim result database or a new "
                     "file (crsim never adds its tables to another program's database)", s->path,
                     n, n == 1 ? "" : "s", names, n > 4 ? ", ..." : "");
}

int exp_store_open(const char *path, exp_store **out)
{
    int rc = make_parent(path);
    if (rc)
        return rc;
    exp_store *s = sim_xcalloc(1, sizeof *s);
    s->path = sim_xstrdup(path);
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        rc = exp__store_fail(s, open_status(s), NULL, "cannot open or create the database");
        exp_store_close(s);
        return rc;
    }
    sqlite3_busy_timeout(s->db, busy_timeout_ms());
    if ((rc = check_ours(s))) {
        exp_store_close(s);
        return rc;
    }
    if (sqlite3_exec(s->db, "PRAGMA foreign_keys=ON;", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(s->db, schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot create the schema (expected a crsim result database "
                              "or a new file)");
        exp_store_close(s);
        return rc;
    }
    /* Record or check the schema version. */
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key='schema_version'", -1, &st, NULL);
    int have = -1;
    if (st && sqlite3_step(st) == SQLITE_ROW)
        have = atoi((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (have == -1) {
        char sql[128];
        snprintf(sql, sizeof sql,
                 "INSERT INTO meta(key, value) VALUES ('schema_version', '%d')",
                 EXP_STORE_SCHEMA_VERSION);
        if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            rc = exp__store_dberr(s, "cannot write the schema version");
            exp_store_close(s);
            return rc;
        }
    } else if (have != EXP_STORE_SCHEMA_VERSION) {
        rc = SIM_ERROR(SIM_EDB, "%s: result schema version %d; expected version %d (use a new "
                       "database file)", path, have, EXP_STORE_SCHEMA_VERSION);
        exp_store_close(s);
        return rc;
    }
    *out = s;
    return SIM_OK;
}

void exp_store_close(exp_store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s->path);
    free(s);
}

void exp_utc_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Bind a double, storing NaN as NULL (SQLite would store NaN as NULL
 * anyway; being explicit documents it). */
static void bind_real(sqlite3_stmt *st, int i, double x)
{
    if (isnan(x))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, x);
}

int exp_store_begin(exp_store *s, const exp_store_meta *m, int64_t *id)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char now[32];
    exp_utc_now(now, sizeof now);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO experiments(name, config_path, config_text, config_hash,"
                           " build_version, host, started_at, n_runs_planned, n_points, shard,"
                           " slo_metric, slos, report_rate_rps, status, goodput_ttft_s,"
                           " goodput_tpot_s, joint_slo)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,'running',?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot prepare the experiment row");
    sqlite3_bind_text(st, 1, m->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, m->config_path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, m->config_text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, m->config_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, m->build, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, host, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 8, m->n_runs_planned);
    sqlite3_bind_int64(st, 9, m->n_points);
    if (m->shard)
        sqlite3_bind_text(st, 10, m->shard, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 10);
    sqlite3_bind_text(st, 11, m->slo_metric, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 12, m->slos, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 13, m->report_rate);
    bind_real(st, 14, m->goodput_ttft_s > 0 ? m->goodput_ttft_s : NAN);
    bind_real(st, 15, m->goodput_tpot_s > 0 ? m->goodput_tpot_s : NAN);
    if (m->joint_slo && m->joint_slo[0])
        sqlite3_bind_text(st, 16, m->joint_slo, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 16);
    int rc = sqlite3_step(st) == SQLITE_DONE ? SIM_OK : exp__store_dberr(s, "cannot add the experiment");
    sqlite3_finalize(st);
    if (rc == SIM_OK)
        *id = sqlite3_last_insert_rowid(s->db);
    return rc;
}

/* Router telemetry and the timeline of run `rid` (inside the caller's
 * transaction). */
static int add_extras(exp_store *s, int64_t rid, const cluster_result *res)
{
    sqlite3_stmt *st = NULL;
    const route_telemetry *t = &res->tel;
    if (t->n_iv) {
        if (sqlite3_prepare_v2(s->db, "INSERT INTO router_intervals VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               -1, &st, NULL) != SQLITE_OK)
            return exp__store_dberr(s, "cannot prepare router intervals");
        for (size_t i = 0; i < t->n_iv; i++) {
            const route_interval *v = &t->iv[i];
            sqlite3_bind_int64(st, 1, rid);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
            sqlite3_bind_double(st, 3, v->t_s);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)v->keys);
            sqlite3_bind_int64(st, 5, (sqlite3_int64)v->admitted);
            sqlite3_bind_int64(st, 6, (sqlite3_int64)v->sum_k);
            bind_real(st, 7, v->admitted_share);
            bind_real(st, 8, v->plan_imbalance);
            bind_real(st, 9, v->build_wall_s);
            bind_real(st, 10, v->churn_dest);
            bind_real(st, 11, v->churn_k);
            sqlite3_bind_int64(st, 12, (sqlite3_int64)v->keys_moved);
            bind_real(st, 13, v->warm_tokens_moved);
            bind_real(st, 14, v->held_imbalance);
            sqlite3_bind_int64(st, 15, (sqlite3_int64)v->moves);
            sqlite3_bind_int64(st, 16, (sqlite3_int64)v->skipped);
            if (sqlite3_step(st) != SQLITE_DONE) {
                sqlite3_finalize(st);
                return exp__store_dberr(s, "cannot add router intervals");
            }
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
    }
    if (t->n_keys) {
        if (sqlite3_prepare_v2(s->db, "INSERT INTO plan_keys VALUES (?,?,?,?,?,?)", -1, &st,
                               NULL) != SQLITE_OK)
            return exp__store_dberr(s, "cannot prepare plan keys");
        char *dests = sim_xmalloc(12 * (size_t)res->n_dest + 1);
        for (size_t i = 0; i < t->n_keys; i++) {
            char key[17];
            snprintf(key, sizeof key, "%016llx", (unsigned long long)t->key[i]);
            size_t used = 0;
            for (uint32_t j = t->off[i]; j < t->off[i + 1]; j++)
                used += (size_t)sprintf(dests + used, "%s%u", j > t->off[i] ? ";" : "", t->dest[j]);
            dests[used] = '\0';
            sqlite3_bind_int64(st, 1, rid);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
            sqlite3_bind_text(st, 3, key, -1, SQLITE_TRANSIENT);
            sqlite3_bind_double(st, 4, t->rate[i]);
            sqlite3_bind_int64(st, 5, t->kb[i]);
            sqlite3_bind_text(st, 6, dests, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(st) != SQLITE_DONE) {
                free(dests);
                sqlite3_finalize(st);
                return exp__store_dberr(s, "cannot add plan keys");
            }
            sqlite3_reset(st);
        }
        free(dests);
        sqlite3_finalize(st);
    }
    if (res->n_win) {
        if (sqlite3_prepare_v2(s->db, "INSERT INTO timeline VALUES (?,?,?,?,?,?)", -1, &st,
                               NULL) != SQLITE_OK)
            return exp__store_dberr(s, "cannot prepare the timeline");
        for (size_t w = 0; w < res->n_win; w++) {
            sqlite3_bind_int64(st, 1, rid);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)w);
            sqlite3_bind_double(st, 3, res->win_t0[w]);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)res->win_arrivals[w]);
            bind_real(st, 5, res->win_hit_rate[w]);
            bind_real(st, 6, res->win_ttft_p99[w]);
            if (sqlite3_step(st) != SQLITE_DONE) {
                sqlite3_finalize(st);
                return exp__store_dberr(s, "cannot add the timeline");
            }
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
    }
    return SIM_OK;
}

/* The fairness keys of a run (cluster_result.keys) into key_metrics. */
static int add_keys(exp_store *s, int64_t rid, const cluster_result *res)
{
    if (!res->n_keys)
        return SIM_OK;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO key_metrics VALUES (?,?,?,?,?,?)", -1, &st,
                           NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot prepare key metrics");
    for (size_t i = 0; i < res->n_keys; i++) {
        const cluster_key *k = &res->keys[i];
        char key[17];
        snprintf(key, sizeof key, "%016llx", (unsigned long long)k->key);
        sqlite3_bind_int64(st, 1, rid);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)k->requests);
        bind_real(st, 4, k->hit_rate);
        bind_real(st, 5, k->ttft_p99);
        bind_real(st, 6, k->ttft_mean);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return exp__store_dberr(s, "cannot add key metrics");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return SIM_OK;
}

/* One group_metrics row per destination group of a mixed fleet
 * (docs/results-schema.md, docs/mixed-fleets.md "Per-group report"),
 * from the run's records: a measured request (arrival >= warm-up, not
 * too long) belongs to the group of the destination that served it last
 * (cluster_rec.dest); hit tokens over its admitted, not rejected ones;
 * TTFT quantiles (Hyndman-Fan type 7, sim_quantiles) with +Inf for no
 * first token, as run_metrics; utilisation = Σ busy time of the group's
 * destinations in steps ending after warm-up / (destinations × (end −
 * warm-up)).  The groups' requests, prompt and hit tokens add up to the
 * run's n_measured, prompt_tokens and hit_tokens (every measured request
 * has a destination). */
static int add_groups(exp_store *s, int64_t rid, const exp_run_row *row,
                      const cluster_result *res)
{
    const size_t G = row->n_groups;
    if (G == 0 || !row->groups)
        return SIM_OK;
    uint64_t *req = sim_xcalloc(G, sizeof *req);
    uint64_t *pt = sim_xcalloc(G, sizeof *pt), *ht = sim_xcalloc(G, sizeof *ht);
    uint32_t *nd = sim_xcalloc(G, sizeof *nd);
    double *busy = sim_xcalloc(G, sizeof *busy);
    size_t *off = sim_xcalloc(G + 1, sizeof *off);
    for (uint32_t d = 0; d < res->n_dest; d++)
        if (res->dest[d].group < G) {
            nd[res->dest[d].group]++;
            busy[res->dest[d].group] += res->dest[d].st.win_busy_s;
        }
    const double warmup = res->warmup_s;
#define GRP_OF(r) ((r)->dest < res->n_dest ? res->dest[(r)->dest].group : (uint32_t)G)
    for (uint64_t i = 0; i < res->n_arrived; i++) {
        const cluster_rec *r = &res->rec[i];
        const uint32_t g = r->arrival_s >= warmup && !r->too_long ? GRP_OF(r) : (uint32_t)G;
        if (g >= G)
            continue;
        req[g]++;
        if (r->admitted && !r->rejected)
            pt[g] += r->prompt_tokens, ht[g] += r->hit_tokens;
    }
    for (size_t g = 0; g < G; g++)
        off[g + 1] = off[g] + req[g];
    double *ttft = sim_xmalloc((off[G] ? off[G] : 1) * sizeof *ttft);
    size_t *fill = sim_xcalloc(G, sizeof *fill);
    for (uint64_t i = 0; i < res->n_arrived; i++) {
        const cluster_rec *r = &res->rec[i];
        const uint32_t g = r->arrival_s >= warmup && !r->too_long ? GRP_OF(r) : (uint32_t)G;
        if (g < G)
            ttft[off[g] + fill[g]++] = r->ttft_s >= 0 ? r->ttft_s : INFINITY;
    }
#undef GRP_OF
    int rc = SIM_OK;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO group_metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        rc = exp__store_dberr(s, "cannot prepare group metrics");
    const double span = res->sim_end_s - warmup;
    static const double qs[3] = {0.5, 0.9, 0.99};
    for (size_t g = 0; g < G && rc == SIM_OK; g++) {
        double q[3];
        const double mean = sim_finite_mean(ttft + off[g], req[g]);
        sim_quantiles(ttft + off[g], req[g], qs, 3, q);
        int i = 1;
        sqlite3_bind_int64(st, i++, rid);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)g);
        sqlite3_bind_text(st, i++, row->groups[g].g.name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, i++, nd[g]);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)req[g]);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)pt[g]);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)ht[g]);
        bind_real(st, i++, pt[g] ? (double)ht[g] / (double)pt[g] : NAN);
        bind_real(st, i++, q[0]);
        bind_real(st, i++, q[1]);
        bind_real(st, i++, q[2]);
        bind_real(st, i++, mean);
        sqlite3_bind_double(st, i++, busy[g]);
        bind_real(st, i++, nd[g] && span > 0 ? busy[g] / (nd[g] * span) : NAN);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = exp__store_dberr(s, "cannot add group metrics");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    free(req), free(pt), free(ht), free(nd), free(busy), free(off), free(ttft), free(fill);
    return rc;
}

/* One requests row per arrived request (docs/results-schema.md). */
static int add_requests(exp_store *s, int64_t rid, const cluster_result *res)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO requests VALUES "
                           "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL,NULL)", -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot prepare request records");
    const double warmup = res->warmup_s;
    for (uint64_t n = 0; n < res->n_arrived; n++) {
        const cluster_rec *r = &res->rec[n];
        char key[17];
        snprintf(key, sizeof key, "%016llx", (unsigned long long)r->key);
        const char *status = r->too_long ? "too_long"
                             : r->failed   ? "failed"
                             : r->rejected ? "rejected"
                             : r->e2e_s >= 0 ? "completed" : "unfinished";
        int i = 1;
        sqlite3_bind_int64(st, i++, rid);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)n);
        sqlite3_bind_double(st, i++, r->arrival_s);
        sqlite3_bind_text(st, i++, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, i++, r->arrival_s >= warmup && !r->too_long);
        sqlite3_bind_text(st, i++, status, -1, SQLITE_STATIC);
        if (r->too_long) {
            sqlite3_bind_null(st, i++);
            sqlite3_bind_null(st, i++);
        } else {
            sqlite3_bind_int64(st, i++, r->dest);
            sqlite3_bind_int64(st, i++, r->replica);
        }
        sqlite3_bind_int64(st, i++, r->prompt_tokens);
        sqlite3_bind_int64(st, i++, r->hit_tokens);
        sqlite3_bind_int64(st, i++, r->output_tokens);
        bind_real(st, i++, r->queue_s >= 0 ? r->queue_s : NAN);
        bind_real(st, i++, r->ttft_s >= 0 ? r->ttft_s : NAN);
        bind_real(st, i++, r->e2e_s >= 0 ? r->e2e_s : NAN);
        sqlite3_bind_int64(st, i++, r->preemptions);
        sqlite3_bind_int64(st, i++, r->retries);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return exp__store_dberr(s, "cannot add request records");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return SIM_OK;
}

/* The client_runs row and stage_metrics rows of a closed-loop run
 * (sim/exp/client_metrics.h); nothing for an open-loop one. */
static int add_client(exp_store *s, int64_t rid, const exp_client_summary *c)
{
    if (!c)
        return SIM_OK;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "INSERT INTO client_runs VALUES (?,?,?,?,?,?,?,?,?,?,?)", -1,
                           &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot prepare a client row");
    int i = 1;
    sqlite3_bind_int64(st, i++, rid);
    sqlite3_bind_text(st, i++, c->mode, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, i++, c->latency_from, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)c->st.sent);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)c->st.conversations);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)c->st.abandoned);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)c->st.unsent);
    bind_real(st, i++, c->ttft_p99_send);
    bind_real(st, i++, c->ttft_p99_intended);
    bind_real(st, i++, c->e2e_p99_send);
    bind_real(st, i++, c->e2e_p99_intended);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return exp__store_dberr(s, "cannot add the client row");
    if (sqlite3_prepare_v2(s->db, "INSERT INTO stage_metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,"
                           "?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot prepare a stage row");
    for (size_t k = 0; k < c->n_stages; k++) {
        const exp_stage_row *g = &c->stages[k];
        i = 1;
        sqlite3_bind_int64(st, i++, rid);
        sqlite3_bind_int64(st, i++, g->stage);
        sqlite3_bind_double(st, i++, g->load);
        sqlite3_bind_text(st, i++, g->load_kind, -1, SQLITE_STATIC);
        bind_real(st, i++, g->start_s);
        bind_real(st, i++, g->end_s);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)g->sent);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)g->measured);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)g->completed);
        const double v[] = {g->ttft_mean, g->ttft_p50, g->ttft_p90, g->ttft_p99,
                            g->tpot_mean, g->tpot_p50, g->tpot_p90, g->tpot_p99,
                            g->e2e_mean, g->e2e_p50, g->e2e_p90, g->e2e_p99,
                            g->ttft_p99_intended, g->e2e_p99_intended, g->throughput_rps,
                            g->output_tps, g->hit_rate};
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++)
            bind_real(st, i++, v[j]);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return exp__store_dberr(s, "cannot add a stage row");
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return SIM_OK;
}

int exp_store_add_run(exp_store *s, int64_t exp_id, const exp_run_row *row,
                      const cluster_result *res, int64_t *run_id)
{
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot begin a transaction");
    sqlite3_stmt *st = NULL;
    int rc = SIM_OK;
    int64_t rid = 0;

    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO runs(experiment_id, policy, seed, rate_rps, config_text,"
                           " config_hash, build_version, started_at, wall_s, status, run_index,"
                           " point, point_label, inputs)"
                           " SELECT ?,?,?,?,?,?, build_version, ?, ?, ?, ?, ?, ?, ?14 FROM"
                           " experiments WHERE id = ?13",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot prepare a run row");
        goto fail;
    }
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_text(st, 2, row->policy, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, row->seed);
    sqlite3_bind_double(st, 4, row->rate_rps);
    sqlite3_bind_text(st, 5, row->config_text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, row->config_hash, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 7, row->started_at, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 8, row->wall_s);
    sqlite3_bind_text(st, 9, res->interrupted ? "interrupted" : "complete", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 10, row->run_index);
    sqlite3_bind_int64(st, 11, row->point);
    sqlite3_bind_text(st, 12, row->point_label, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 13, exp_id);
    sqlite3_bind_text(st, 14, row->inputs ? row->inputs : "", -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE || sqlite3_changes(s->db) != 1) {
        rc = exp__store_dberr(s, "cannot add a run");
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    rid = sqlite3_last_insert_rowid(s->db);

    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO run_metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                           "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot prepare a metrics row");
        goto fail;
    }
    int i = 1;
    sqlite3_bind_int64(st, i++, rid);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_arrived);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_completed);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_unfinished);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_rejected);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_measured);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->measured_completed);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->prompt_tokens);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->hit_tokens);
    bind_real(st, i++, res->hit_rate);
    bind_real(st, i++, res->ttft_p50);
    bind_real(st, i++, res->ttft_p90);
    bind_real(st, i++, res->ttft_p99);
    bind_real(st, i++, res->ttft_mean);
    bind_real(st, i++, res->tpot_p50);
    bind_real(st, i++, res->tpot_p90);
    bind_real(st, i++, res->tpot_p99);
    bind_real(st, i++, res->e2e_p50);
    bind_real(st, i++, res->e2e_p90);
    bind_real(st, i++, res->e2e_p99);
    bind_real(st, i++, res->imbalance_work);
    bind_real(st, i++, res->imbalance_requests);
    bind_real(st, i++, res->first_arrival_s);
    bind_real(st, i++, res->last_arrival_s);
    bind_real(st, i++, res->sim_end_s);
    bind_real(st, i++, res->throughput_rps);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->steps);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->events);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->preemptions);
    sqlite3_bind_int64(st, i++, res->pool_blocks);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->pool_tokens);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_too_long);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_keys);
    bind_real(st, i++, res->fair_worst_p99);
    bind_real(st, i++, res->fair_spread_p99);
    bind_real(st, i++, res->fair_jain);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_failed);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_lost);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_refused);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_retries);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_crashes);
    bind_real(st, i++, res->tpot_mean);
    bind_real(st, i++, res->e2e_mean);
    bind_real(st, i++, res->itl_mean);
    bind_real(st, i++, res->itl_p50);
    bind_real(st, i++, res->itl_p90);
    bind_real(st, i++, res->itl_p99);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->itl_gaps);
    bind_real(st, i++, res->output_tps);
    bind_real(st, i++, res->goodput_rps);
    sqlite3_bind_int64(st, i++, (sqlite3_int64)res->n_good);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = exp__store_dberr(s, "cannot add run metrics");
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;

    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO dest_metrics VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot prepare a destination row");
        goto fail;
    }
    for (uint32_t d = 0; d < res->n_dest; d++) {
        const cluster_dest *cd = &res->dest[d];
        i = 1;
        sqlite3_bind_int64(st, i++, rid);
        sqlite3_bind_int64(st, i++, d);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->routed);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->routed_measured);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.prompt_tokens);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.hit_tokens);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.prefill_tokens);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.decode_tokens);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.win_prefill_tokens);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.win_decode_tokens);
        sqlite3_bind_double(st, i++, cd->st.busy_s);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.steps);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.preemptions);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.rejected);
        sqlite3_bind_int64(st, i++, cd->pool_blocks); /* its group's (mixed fleets) */
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->pool_tokens);
        sqlite3_bind_int64(st, i++, (sqlite3_int64)cd->st.ctx_read_tokens);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = exp__store_dberr(s, "cannot add destination metrics");
            goto fail;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    st = NULL;
    if ((rc = add_extras(s, rid, res)) || (rc = add_keys(s, rid, res)) ||
        (rc = add_groups(s, rid, row, res)) || (rc = add_client(s, rid, row->client)) ||
        (row->requests && (rc = add_requests(s, rid, res))))
        goto fail;
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot commit a run");
        goto fail;
    }
    if (run_id)
        *run_id = rid;
    return SIM_OK;
fail:
    sqlite3_finalize(st);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int exp_store_end(exp_store *s, int64_t exp_id, const char *status)
{
    char now[32];
    exp_utc_now(now, sizeof now);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE experiments SET finished_at = ?, status = ? WHERE id = ?", -1,
                           &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot prepare the experiment update");
    sqlite3_bind_text(st, 1, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, status, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, exp_id);
    /* The status matters more than the wait: a run that failed on a lock
     * should not leave its experiment 'running', so this last write waits
     * longer, EXP_STORE_END_WAIT busy timeouts and at least
     * EXP_STORE_END_MIN_S. */
    const int t_ms = busy_timeout_ms();
    sqlite3_busy_timeout(s->db, t_ms * EXP_STORE_END_WAIT > EXP_STORE_END_MIN_S * 1000
                                    ? t_ms * EXP_STORE_END_WAIT
                                    : EXP_STORE_END_MIN_S * 1000);
    int r = sqlite3_step(st);
    int rc = r == SQLITE_DONE ? SIM_OK : exp__store_dberr(s, "cannot finish the experiment");
    sqlite3_finalize(st);
    sqlite3_busy_timeout(s->db, t_ms);
    return rc;
}

int exp_store_find_run(exp_store *s, const char *hash, const char *build, int64_t *run_id,
                       char *found_build, size_t n, char **inputs)
{
    sqlite3_stmt *st = NULL;
    *run_id = 0;
    if (found_build && n)
        found_build[0] = '\0';
    if (inputs)
        *inputs = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id, build_version, inputs FROM runs WHERE config_hash = ?1"
                           " AND status = 'complete' AND (?2 IS NULL OR build_version = ?2)"
                           " ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot look up stored runs");
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
    if (build)
        sqlite3_bind_text(st, 2, build, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 2);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        *run_id = sqlite3_column_int64(st, 0);
        if (found_build && n)
            snprintf(found_build, n, "%s", exp__store_col_str(st, 1));
        if (inputs)
            *inputs = sim_xstrdup(exp__store_col_str(st, 2));
    }
    sqlite3_finalize(st);
    return r == SQLITE_ROW || r == SQLITE_DONE ? SIM_OK : exp__store_dberr(s, "cannot look up stored runs");
}

/* Run `sql` with up to three int64 parameters; SIM_OK or SIM_EDB. */
static int exec3(exp_store *s, const char *sql, int64_t a, int64_t b, int64_t c, int n)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot prepare a copy");
    if (n >= 1)
        sqlite3_bind_int64(st, 1, a);
    if (n >= 2)
        sqlite3_bind_int64(st, 2, b);
    if (n >= 3)
        sqlite3_bind_int64(st, 3, c);
    int rc = sqlite3_step(st) == SQLITE_DONE ? SIM_OK : exp__store_dberr(s, "cannot copy a run");
    sqlite3_finalize(st);
    return rc;
}

int exp_store_copy_run(exp_store *s, int64_t exp_id, const exp_run_row *row, int64_t from)
{
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot begin a transaction");
    sqlite3_stmt *st = NULL;
    int rc = SIM_OK;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO runs(experiment_id, run_index, point, point_label,"
                           " resumed_from, policy, seed, rate_rps, config_text, config_hash,"
                           " build_version, started_at, wall_s, inputs, status)"
                           " SELECT ?, ?, ?, ?, id, policy, seed, rate_rps, config_text,"
                           " config_hash, build_version, started_at, wall_s, inputs, status"
                           " FROM runs WHERE id = ?",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot prepare a resumed run");
        goto fail;
    }
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_int64(st, 2, row->run_index);
    sqlite3_bind_int64(st, 3, row->point);
    sqlite3_bind_text(st, 4, row->point_label, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, from);
    if (sqlite3_step(st) != SQLITE_DONE || sqlite3_changes(s->db) != 1) {
        rc = exp__store_dberr(s, "cannot copy a resumed run");
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    int64_t rid = sqlite3_last_insert_rowid(s->db);
    if ((rc = exec3(s, "INSERT INTO run_metrics SELECT ?1, n_arrived, n_completed, n_unfinished,"
                       " n_rejected, n_measured, measured_completed, prompt_tokens, hit_tokens,"
                       " hit_rate, ttft_p50, ttft_p90, ttft_p99, ttft_mean, tpot_p50, tpot_p90,"
                       " tpot_p99, e2e_p50, e2e_p90, e2e_p99, imbalance_work, imbalance_requests,"
                       " first_arrival_s, last_arrival_s, sim_end_s, throughput_rps, steps,"
                       " events, preemptions, kv_pool_blocks, kv_pool_tokens, n_too_long,"
                       " fair_keys, fair_worst_p99, fair_spread_p99, fair_jain, n_failed, n_lost,"
                       " n_refused, n_retries, n_crashes, tpot_mean, e2e_mean, itl_mean, itl_p50,"
                       " itl_p90, itl_p99, itl_gaps, output_tps, goodput_rps, n_good"
                       " FROM run_metrics WHERE run_id = ?2", rid, from, 0, 2)))
        goto fail;
    if ((rc = exec3(s, "INSERT INTO key_metrics SELECT ?1, routing_key, requests, hit_rate,"
                       " ttft_p99, ttft_mean FROM key_metrics WHERE run_id = ?2", rid, from, 0,
                    2)) ||
        (rc = exec3(s, "INSERT INTO requests SELECT ?1, id, arrival_s, routing_key, measured,"
                       " status, dest, replica, prompt_tokens, hit_tokens, output_tokens,"
                       " queue_s, ttft_s, e2e_s, preemptions, retries, stage, client FROM requests"
                       " WHERE run_id = ?2", rid, from, 0, 2)))
        goto fail;
    if ((rc = exec3(s, "INSERT INTO dest_metrics SELECT ?1, dest, routed, routed_measured,"
                       " prompt_tokens, hit_tokens, prefill_tokens, decode_tokens,"
                       " win_prefill_tokens, win_decode_tokens, busy_s, steps, preemptions,"
                       " rejected, kv_pool_blocks, kv_pool_tokens, ctx_read_tokens"
                       " FROM dest_metrics WHERE run_id = ?2", rid, from, 0, 2)) ||
        (rc = exec3(s, "INSERT INTO group_metrics SELECT ?1, grp, name, destinations, requests,"
                       " prompt_tokens, hit_tokens, hit_rate, ttft_p50, ttft_p90, ttft_p99,"
                       " ttft_mean, win_busy_s, utilization FROM group_metrics"
                       " WHERE run_id = ?2", rid, from, 0, 2)))
        goto fail;
    if ((rc = exec3(s, "INSERT INTO router_intervals SELECT ?1, idx, t_s, keys, admitted, sum_k,"
                       " admitted_share, plan_imbalance, build_wall_s, churn_dest, churn_k,"
                       " keys_moved, warm_tokens_moved, held_imbalance, moves, skipped"
                       " FROM router_intervals WHERE run_id = ?2", rid, from, 0, 2)) ||
        (rc = exec3(s, "INSERT INTO plan_keys SELECT ?1, rank, routing_key, rate_rps, k_b,"
                       " destinations FROM plan_keys WHERE run_id = ?2", rid, from, 0, 2)) ||
        (rc = exec3(s, "INSERT INTO timeline SELECT ?1, idx, t0_s, arrivals, hit_rate, ttft_p99"
                       " FROM timeline WHERE run_id = ?2", rid, from, 0, 2)) ||
        (rc = exec3(s, "INSERT INTO client_runs SELECT ?1, mode, latency_from, sent,"
                       " conversations, abandoned, unsent, ttft_p99_send, ttft_p99_intended,"
                       " e2e_p99_send, e2e_p99_intended FROM client_runs WHERE run_id = ?2",
                    rid, from, 0, 2)) ||
        (rc = exec3(s, "INSERT INTO stage_metrics SELECT ?1, stage, load, load_kind, start_s,"
                       " end_s, sent, measured, completed, ttft_mean, ttft_p50, ttft_p90,"
                       " ttft_p99, tpot_mean, tpot_p50, tpot_p90, tpot_p99, e2e_mean, e2e_p50,"
                       " e2e_p90, e2e_p99, ttft_p99_intended, e2e_p99_intended, throughput_rps,"
                       " output_tps, hit_rate FROM stage_metrics WHERE run_id = ?2",
                    rid, from, 0, 2)))
        goto fail;
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot commit a resumed run");
        goto fail;
    }
    return SIM_OK;
fail:
    sqlite3_finalize(st);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}


int exp_store_run_metric(exp_store *s, int64_t run_id, const char *column, double *value)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM run_metrics WHERE run_id = ?", column);
    sqlite3_stmt *st = NULL;
    *value = NAN;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot read a stored metric");
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *value = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return SIM_OK;
}

int exp_store_capacities(exp_store *s, int64_t exp_id)
{
    exp_capacity_row *rows = NULL;
    size_t n = 0;
    exp_store_experiment e = {0};
    sqlite3_stmt *st = NULL;
    /* Read the runs inside the write transaction, so the rows written match
     * the runs committed at that moment even with a concurrent writer. */
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot begin a transaction");
    exp_capacity_row *jrows = NULL;
    size_t jn = 0;
    char *joint = NULL;
    int rc = exp_store_capacity_rows(s, exp_id, &rows, &n);
    if (rc == SIM_OK)
        rc = exp_store_joint_capacity_rows(s, exp_id, &joint, &jrows, &jn);
    if (rc == SIM_OK && jn) { /* one list: the joint rows after, named by their text */
        rows = sim_xrealloc(rows, (n + jn) * sizeof *rows);
        memcpy(rows + n, jrows, jn * sizeof *rows);
        free(jrows);
        jrows = NULL;
    }
    const size_t n_main = n;
    n += jn;
    jn = 0;
    if (rc == SIM_OK)
        rc = exp_store_read_experiment(s, exp_id, &e);
    if (rc)
        goto fail;
    if (sqlite3_prepare_v2(s->db, "DELETE FROM capacities WHERE experiment_id = ?", -1, &st,
                           NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot prepare the capacities update");
        goto fail;
    }
    sqlite3_bind_int64(st, 1, exp_id);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = exp__store_dberr(s, "cannot delete old capacities");
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO capacities(experiment_id, point, point_label, policy,"
                           " seed, slo_metric, slo_s, capacity_rps, censoring, lowest_rps,"
                           " highest_rps, n_loads) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot prepare a capacities row");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const exp_capacity_row *r = &rows[i];
        sqlite3_bind_int64(st, 1, exp_id);
        sqlite3_bind_int64(st, 2, r->point);
        sqlite3_bind_text(st, 3, r->point_label, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, r->policy, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, r->seed);
        sqlite3_bind_text(st, 6, i < n_main ? e.slo_metric : joint, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 7, r->slo_s);
        if (r->cap.censoring == EXP_CENS_LEFT)
            sqlite3_bind_null(st, 8);
        else
            sqlite3_bind_double(st, 8, r->cap.capacity_rps);
        sqlite3_bind_text(st, 9, exp_censoring_name(r->cap.censoring), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 10, r->cap.lowest_rps);
        sqlite3_bind_double(st, 11, r->cap.highest_rps);
        sqlite3_bind_int64(st, 12, (sqlite3_int64)r->cap.n_loads);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = exp__store_dberr(s, "cannot add a capacities row");
            goto fail;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        rc = exp__store_dberr(s, "cannot commit the capacities");
        goto fail;
    }
    exp_store_experiment_fini(&e);
    exp_capacity_rows_free(rows, n);
    free(joint);
    return SIM_OK;
fail:
    sqlite3_finalize(st);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    exp_store_experiment_fini(&e);
    exp_capacity_rows_free(rows, n);
    exp_capacity_rows_free(jrows, jn);
    free(joint);
    return rc;
}

/* ---- merging shards ------------------------------------------------------ */

/* Run one or more statements of `sql` (an sqlite3_mprintf result, freed
 * here); SIM_OK or the store's error naming `what`. */
static int exec_owned(exp_store *s, char *sql, const char *what)
{
    int ok = sql && sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_free(sql);
    return ok ? SIM_OK : exp__store_dberr(s, what);
}

int exp_store_shard_attach(exp_store *s, const char *path, exp_store_shard *out)
{
    *out = (exp_store_shard){.path = path};
    int rc = exec_owned(s, sqlite3_mprintf("ATTACH DATABASE %Q AS src", path),
                        "cannot attach a shard database");
    if (rc)
        return rc;
    sqlite3_stmt *st = NULL;
    /* The shard's schema version first, as run and report check theirs
     * (issue 38 D6). */
    int have = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM src.meta WHERE key = 'schema_version'", -1,
                           &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        have = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (have < 0) {
        exp_store_shard_detach(s);
        return SIM_ERROR(SIM_EINVAL, "%s: not a crsim result database (no meta.schema_version); "
                         "expected the output of crsim run --shard", path);
    }
    if (have != EXP_STORE_SCHEMA_VERSION) {
        exp_store_shard_detach(s);
        return SIM_ERROR(SIM_EINVAL, "%s: result schema version %d; this crsim merges version "
                         "%d (re-run the shard with this build)", path, have,
                         EXP_STORE_SCHEMA_VERSION);
    }
    if (sqlite3_prepare_v2(s->db, "SELECT id, config_hash, n_runs_planned, status FROM "
                           "src.experiments ORDER BY id DESC LIMIT 1", -1, &st, NULL) !=
        SQLITE_OK) {
        rc = exp__store_fail(s, SIM_EINVAL, path, "not a crsim result database (expected the "
                             "output of crsim run)");
    } else if (sqlite3_step(st) == SQLITE_ROW) {
        out->id = sqlite3_column_int64(st, 0);
        snprintf(out->config_hash, sizeof out->config_hash, "%s", exp__store_col_str(st, 1));
        out->n_runs_planned = sqlite3_column_int64(st, 2);
        out->complete = strcmp(exp__store_col_str(st, 3), "complete") == 0;
    } else {
        rc = SIM_ERROR(SIM_EINVAL, "%s: holds no experiment; expected the output of crsim run",
                       path);
    }
    sqlite3_finalize(st);
    if (rc)
        exp_store_shard_detach(s);
    return rc;
}

void exp_store_shard_detach(exp_store *s)
{
    sqlite3_exec(s->db, "DETACH DATABASE src", NULL, NULL, NULL);
}

int exp_store_shard_adopt(exp_store *s, const exp_store_shard *sh, int64_t *exp_id)
{
    int rc = exec_owned(s, sqlite3_mprintf(
        "INSERT INTO experiments(name, config_path, config_text, config_hash,"
        " build_version, host, started_at, finished_at, n_runs_planned, n_points, shard,"
        " slo_metric, slos, report_rate_rps, status, goodput_ttft_s, goodput_tpot_s,"
        " joint_slo)"
        " SELECT name, config_path, config_text, config_hash, build_version, host,"
        " started_at, NULL, n_runs_planned, n_points, NULL, slo_metric, slos,"
        " report_rate_rps, 'running', goodput_ttft_s, goodput_tpot_s, joint_slo"
        " FROM src.experiments WHERE id = %lld",
        (long long)sh->id), "cannot add the merged experiment");
    if (rc == SIM_OK)
        *exp_id = sqlite3_last_insert_rowid(s->db);
    return rc;
}

int exp_store_shard_inputs(exp_store *s, const exp_store_shard *sh, int64_t exp_id,
                           int64_t *point, char **was, char **now)
{
    *was = *now = NULL;
    *point = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT s.point, m.inputs, s.inputs FROM src.runs s"
                           " JOIN main.runs m ON m.experiment_id = ?1 AND m.point = s.point"
                           " AND m.inputs <> s.inputs WHERE s.experiment_id = ?2"
                           " ORDER BY s.run_index LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot compare the shard's input files");
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_int64(st, 2, sh->id);
    int rc = SIM_OK, r = sqlite3_step(st);
    if (r == SQLITE_ROW) {
        *point = sqlite3_column_int64(st, 0);
        *was = sim_xstrdup(exp__store_col_str(st, 1));
        *now = sim_xstrdup(exp__store_col_str(st, 2));
    } else if (r != SQLITE_DONE) {
        rc = exp__store_dberr(s, "cannot compare the shard's input files");
    }
    sqlite3_finalize(st);
    return rc;
}

int exp_store_shard_copy(exp_store *s, const exp_store_shard *sh, int64_t exp_id)
{
    /* A run index may come from one shard only. */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM src.runs s JOIN main.runs m"
                           " ON m.run_index = s.run_index AND m.experiment_id = ?1"
                           " WHERE s.experiment_id = ?2", -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot compare the shard's runs");
    sqlite3_bind_int64(st, 1, exp_id);
    sqlite3_bind_int64(st, 2, sh->id);
    int rc = SIM_OK;
    if (sqlite3_step(st) != SQLITE_ROW)
        rc = exp__store_dberr(s, "cannot compare the shard's runs");
    else if (sqlite3_column_int64(st, 0) > 0)
        rc = SIM_ERROR(SIM_EINVAL, "%s: %lld run(s) already merged from another input; "
                       "expected disjoint shards", sh->path,
                       (long long)sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    if (rc)
        return rc;
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot begin a transaction");
    /* Copy runs, then their metrics through the old->new id map. */
    rc = exec_owned(s, sqlite3_mprintf(
        "CREATE TEMP TABLE idmap(old INTEGER PRIMARY KEY, new INTEGER);"
        "INSERT INTO main.runs(experiment_id, run_index, point, point_label,"
        " resumed_from, policy, seed, rate_rps, config_text, config_hash,"
        " build_version, started_at, wall_s, inputs, status)"
        " SELECT %lld, run_index, point, point_label, resumed_from, policy, seed,"
        " rate_rps, config_text, config_hash, build_version, started_at, wall_s,"
        " inputs, status FROM src.runs WHERE experiment_id = %lld ORDER BY run_index;"
        "INSERT INTO idmap SELECT s.id, m.id FROM src.runs s JOIN main.runs m"
        " ON m.experiment_id = %lld AND m.run_index = s.run_index"
        " WHERE s.experiment_id = %lld;"
        "INSERT INTO main.run_metrics SELECT i.new, n_arrived, n_completed,"
        " n_unfinished, n_rejected, n_measured, measured_completed, prompt_tokens,"
        " hit_tokens, hit_rate, ttft_p50, ttft_p90, ttft_p99, ttft_mean, tpot_p50,"
        " tpot_p90, tpot_p99, e2e_p50, e2e_p90, e2e_p99, imbalance_work,"
        " imbalance_requests, first_arrival_s, last_arrival_s, sim_end_s,"
        " throughput_rps, steps, events, preemptions, kv_pool_blocks, kv_pool_tokens,"
        " n_too_long, fair_keys, fair_worst_p99, fair_spread_p99, fair_jain, n_failed,"
        " n_lost, n_refused, n_retries, n_crashes, tpot_mean, e2e_mean, itl_mean, itl_p50,"
        " itl_p90, itl_p99, itl_gaps, output_tps, goodput_rps, n_good"
        " FROM src.run_metrics r JOIN idmap i ON i.old = r.run_id;"
        "INSERT INTO main.key_metrics SELECT i.new, routing_key, requests, hit_rate,"
        " ttft_p99, ttft_mean FROM src.key_metrics k JOIN idmap i ON i.old = k.run_id;"
        "INSERT INTO main.requests SELECT i.new, id, arrival_s, routing_key, measured,"
        " status, dest, replica, prompt_tokens, hit_tokens, output_tokens, queue_s,"
        " ttft_s, e2e_s, preemptions, retries, stage, client"
        " FROM src.requests q JOIN idmap i ON i.old = q.run_id;"
        "INSERT INTO main.dest_metrics SELECT i.new, dest, routed, routed_measured,"
        " prompt_tokens, hit_tokens, prefill_tokens, decode_tokens,"
        " win_prefill_tokens, win_decode_tokens, busy_s, steps, preemptions,"
        " rejected, kv_pool_blocks, kv_pool_tokens, ctx_read_tokens"
        " FROM src.dest_metrics d JOIN idmap i ON i.old = d.run_id;"
        "INSERT INTO main.group_metrics SELECT i.new, grp, name, destinations, requests,"
        " prompt_tokens, hit_tokens, hit_rate, ttft_p50, ttft_p90, ttft_p99, ttft_mean,"
        " win_busy_s, utilization FROM src.group_metrics g JOIN idmap i ON i.old = g.run_id;"
        "INSERT INTO main.router_intervals SELECT i.new, idx, t_s, keys, admitted,"
        " sum_k, admitted_share, plan_imbalance, build_wall_s, churn_dest, churn_k,"
        " keys_moved, warm_tokens_moved, held_imbalance, moves, skipped"
        " FROM src.router_intervals r JOIN idmap i ON i.old = r.run_id;"
        "INSERT INTO main.plan_keys SELECT i.new, rank, routing_key, rate_rps, k_b,"
        " destinations FROM src.plan_keys p JOIN idmap i ON i.old = p.run_id;"
        "INSERT INTO main.timeline SELECT i.new, idx, t0_s, arrivals, hit_rate,"
        " ttft_p99 FROM src.timeline t JOIN idmap i ON i.old = t.run_id;"
        "INSERT INTO main.client_runs SELECT i.new, mode, latency_from, sent, conversations,"
        " abandoned, unsent, ttft_p99_send, ttft_p99_intended, e2e_p99_send, e2e_p99_intended"
        " FROM src.client_runs c JOIN idmap i ON i.old = c.run_id;"
        "INSERT INTO main.stage_metrics SELECT i.new, stage, load, load_kind, start_s, end_s,"
        " sent, measured, completed, ttft_mean, ttft_p50, ttft_p90, ttft_p99, tpot_mean,"
        " tpot_p50, tpot_p90, tpot_p99, e2e_mean, e2e_p50, e2e_p90, e2e_p99,"
        " ttft_p99_intended, e2e_p99_intended, throughput_rps, output_tps, hit_rate"
        " FROM src.stage_metrics g JOIN idmap i ON i.old = g.run_id;"
        "DROP TABLE idmap;",
        (long long)exp_id, (long long)sh->id, (long long)exp_id, (long long)sh->id),
        "cannot copy the shard's runs");
    if (rc) {
        /* The shard passed the version check: a table or column it lacks
         * makes it an altered or damaged file, i.e. bad input. */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sim_errmsg());
        rc = SIM_ERROR(SIM_EINVAL, "%s: cannot copy its runs (%s); expected an unaltered crsim "
                       "result database of schema version %d", sh->path, msg,
                       EXP_STORE_SCHEMA_VERSION);
    }
    if (rc == SIM_OK && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = exp__store_dberr(s, "cannot commit the shard's runs");
    if (rc)
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int exp_store_count_run_indexes(exp_store *s, int64_t exp_id, int64_t *n)
{
    sqlite3_stmt *st = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT count(DISTINCT run_index) FROM runs WHERE "
                           "experiment_id = ?", -1, &st, NULL) != SQLITE_OK)
        return exp__store_dberr(s, "cannot count the merged runs");
    sqlite3_bind_int64(st, 1, exp_id);
    int rc = SIM_OK;
    if (sqlite3_step(st) == SQLITE_ROW)
        *n = sqlite3_column_int64(st, 0);
    else
        rc = exp__store_dberr(s, "cannot count the merged runs");
    sqlite3_finalize(st);
    return rc;
}

int exp_store_copy_to(const char *path, const char *dest)
{
    sqlite3 *db = NULL;
    int rc = SIM_OK;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        rc = SIM_ERROR(SIM_EDB, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "");
    } else {
        sqlite3_busy_timeout(db, busy_timeout_ms());
        char *sql = sqlite3_mprintf("VACUUM INTO %Q", dest);
        if (!sql || sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            rc = SIM_ERROR(SIM_EDB, "%s: cannot copy to %s: %s", path, dest, sqlite3_errmsg(db));
        sqlite3_free(sql);
    }
    sqlite3_close(db);
    return rc;
}
