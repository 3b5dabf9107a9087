/*
 * The crsim command line (cli.h): the table of subcommands, the parser
 * over it, the help printer, the exit-status mapping, and the small
 * subcommands that are only glue (run, workload describe, help, version).
 * The bigger subcommands live in their modules (report.c, plot.c,
 * calib.c, regime.c, plan_cli.c, merge.c) and read the parsed arguments.
 */
#include "sim/core/number.h"
#include "sim/exp/cli.h"

#include <errno.h>
#include <getopt.h>
#if defined(__GLIBC__)
#include <malloc.h> /* mallopt (exp_tune_malloc) */
#endif
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/routers/route.h"
#include "sim/core/config.h"
#include "sim/core/error.h"
#include "workloads/wl_config.h"
#include "sim/exp/calib.h"
#include "sim/exp/catalog.h"
#include "sim/exp/costfit.h"
#include "sim/exp/exp.h"
#include "sim/exp/fit.h"
#include "sim/exp/merge.h"
#include "sim/exp/plan_cli.h"
#include "sim/exp/plot.h"
#include "sim/exp/regime.h"
#include "sim/exp/report.h"
#include "sim/exp/store.h"
#include "version.h"

/* ---- exit statuses ------------------------------------------------------ */

int exp_cli_status(int rc)
{
    switch (rc) {
    case SIM_OK: return 0;
    case SIM_EINVAL:
    case SIM_EIO: return SIM_EXIT_BADINPUT;
    case SIM_EINTR: return 130;
    default: return 1;
    }
}

int exp_cli_fail(int rc)
{
    if (rc == SIM_OK)
        return 0;
    fprintf(stderr, "crsim: %s\n", sim_errmsg());
    if (getenv("CRSIM_DEBUG"))
        fprintf(stderr, "crsim: (%s at %s)\n", sim_strstatus(rc), sim_errsrc());
    return exp_cli_status(rc);
}

/* ---- the subcommands that are glue -------------------------------------- */

/* The one piece of mutable global state of the tool: set by SIGINT/SIGTERM
 * (a signal handler can reach nothing else), polled by the sweep. */
static volatile sig_atomic_t stop_flag;
/* Nonzero while `crsim run` sets up (specs, traces, key populations,
 * stream checks): nothing is stored yet, and the loops of set-up do not
 * poll stop_flag (a large key population takes minutes), so a signal
 * then ends the process at once, from the handler (write and _exit are
 * async-signal-safe). */
static volatile sig_atomic_t setup_flag;

static void on_signal(int sig)
{
    if (setup_flag) {
        static const char msg[] = "crsim: interrupted during set-up; nothing was stored\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(128 + sig);
    }
    stop_flag = sig;
}

/* SIGINT and SIGTERM (what Slurm sends at a time limit) set stop_flag;
 * SA_RESTART keeps them from failing a write or a database call.
 * SIGPIPE is ignored: a closed standard output (`crsim run ... | head`)
 * must not kill the process between storing the runs and marking the
 * experiment complete; the write fails instead, and the end-of-command
 * check of standard output reports it (exit 2). */
static void catch_signals(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* The exit status of an interrupted command: 128 + the signal's number
 * (130 for SIGINT, 143 for SIGTERM), as a shell reports a process the
 * signal ended. */
static int interrupted_status(int status)
{
    return status == 130 && stop_flag ? 128 + stop_flag : status;
}

static unsigned all_cores(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return ncpu > 0 ? (unsigned)ncpu : 1;
}

/* Parse "I/N" with 0 <= I < N. */
static int parse_shard(const char *v, unsigned *i, unsigned *n)
{
    char *end = NULL;
    unsigned long a = strtoul(v, &end, 10);
    if (end == v || *end != '/')
        goto bad;
    const char *q = end + 1;
    unsigned long b = strtoul(q, &end, 10);
    if (end == q || *end || b == 0 || a >= b || b > 1000000)
        goto bad;
    *i = (unsigned)a;
    *n = (unsigned)b;
    return SIM_OK;
bad:
    return SIM_ERROR(SIM_EINVAL, "run: --shard '%s'; expected I/N with 0 <= I < N (e.g. "
                     "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with a 0-based array)", v);
}

static int cmd_run(const exp_cli_args *a)
{
    exp_run_opts o = {.stop = &stop_flag, .setup_phase = &setup_flag,
                      .config_path = a->pos[0]};
    o.jobs = (unsigned)exp_cli_int(a, "jobs", all_cores());
    o.sets = exp_cli_list(a, "set", &o.n_set);
    o.quiet = exp_cli_has(a, "quiet");
    o.resume = exp_cli_has(a, "resume") || exp_cli_has(a, "resume-any-build");
    o.resume_any_build = exp_cli_has(a, "resume-any-build");
    o.force = exp_cli_has(a, "force");
    o.dry_run = exp_cli_has(a, "dry-run");
    const char **sets = NULL;
    if (exp_cli_has(a, "requests")) { /* the flag is the config key: same hash */
        sets = sim_xmalloc((o.n_set + 1) * sizeof *sets);
        for (size_t i = 0; i < o.n_set; i++)
            sets[i] = o.sets[i];
        sets[o.n_set++] = "experiment.requests=true";
        o.sets = sets;
    }
    const char *shard = exp_cli_str(a, "shard", NULL);
    int rc = shard ? parse_shard(shard, &o.shard_i, &o.shard_n) : SIM_OK;
    if (rc)
        return exp_cli_fail(rc);
    catch_signals();
    setup_flag = 1;
    rc = exp_run(&o, stdout);
    setup_flag = 0;
    free(sets);
    return interrupted_status(exp_cli_fail(rc));
}

static int cmd_export(const exp_cli_args *a)
{
    const char *table = exp_cli_str(a, "table", "requests");
    const int format = (int)exp_cli_int(a, "format", EXP_EXPORT_CSV);
    const int64_t run = exp_cli_int(a, "run", 0);
    const char *path = exp_cli_str(a, "out", NULL);
    exp_store *db = NULL;
    int rc = exp_store_open_read(a->pos[0], &db);
    if (rc)
        return exp_cli_fail(rc);
    FILE *out = stdout;
    if (path && !(out = fopen(path, "w"))) {
        rc = SIM_ERROR(SIM_EIO, "export: cannot create %s: %s", path, strerror(errno));
        exp_store_close(db);
        return exp_cli_fail(rc);
    }
    uint64_t rows = 0;
    rc = exp_store_export(db, table, run, format, out, &rows);
    if (path && fclose(out) != 0 && rc == SIM_OK)
        rc = SIM_ERROR(SIM_EIO, "export: cannot write %s: %s", path, strerror(errno));
    if (rc && path) /* no half-written file that looks like an export */
        remove(path);
    if (rc == SIM_OK && path)
        fprintf(stderr, "crsim: export: %llu rows of %s to %s\n", (unsigned long long)rows,
                table, path);
    exp_store_close(db);
    return exp_cli_fail(rc);
}

static int cmd_workload_describe(const exp_cli_args *a)
{
    /* The described config is derived the one way configs are
     * (exp_config_derive): the file, the --set overrides, then the
     * describe options, so a workload preset without an experiment
     * section can be described too. */
    size_t n_set = 0;
    const char *const *sets = exp_cli_list(a, "set", &n_set);
    char bs[64];
    snprintf(bs, sizeof bs, "engine.block_size=%lld", (long long)exp_cli_int(a, "block-size", 16));
    const char *extra[] = {"experiment.name=describe", "experiment.rates=[1]", bs};
    const exp_config_src src = {.path = a->pos[0], .sets = sets, .n_set = n_set,
                                .unchecked = true};
    exp_config cfg;
    int rc = exp_config_derive(&src, extra, 3, &cfg);
    if (rc == SIM_OK &&
        (rc = exp_workload_describe_check(&cfg, exp_cli_real(a, "rate", 10),
                                          (uint64_t)exp_cli_int(a, "requests", 100000),
                                          exp_cli_has(a, "force"))))
        exp_config_fini(&cfg);
    else if (rc == SIM_OK) {
        rc = exp_workload_describe(&cfg, (uint64_t)exp_cli_int(a, "seed", 1),
                                   exp_cli_real(a, "rate", 10),
                                   (uint64_t)exp_cli_int(a, "requests", 100000), stdout);
        exp_config_fini(&cfg);
    }
    return exp_cli_fail(rc);
}

static int cmd_report(const exp_cli_args *a) { return exp_report_main(a); }
static int cmd_plot(const exp_cli_args *a) { return exp_plot_main(a); }
static int cmd_fit(const exp_cli_args *a)
{
    catch_signals();
    return interrupted_status(exp_cli_fail(exp_fit_main(a, &stop_flag)));
}
static int cmd_calibrate(const exp_cli_args *a) { return exp_cli_fail(exp_calib_main(a)); }
static int cmd_fit_cost(const exp_cli_args *a) { return exp_cli_fail(exp_costfit_main(a, stdout)); }
static int cmd_spec_import(const exp_cli_args *a)
{
    return exp_cli_fail(exp_spec_import_main(a, stdout));
}
static int cmd_regime(const exp_cli_args *a) { return exp_cli_fail(exp_regime_main(a, stdout)); }
static int cmd_plan(const exp_cli_args *a) { return exp_cli_fail(exp_plan_main(a, stdout)); }

static int cmd_merge(const exp_cli_args *a)
{
    return exp_cli_fail(exp_merge_main((int)a->n_pos, a->pos));
}

static int cmd_version(const exp_cli_args *a)
{
    (void)a;
    printf("crsim %s\n", CRSIM_VERSION);
    return 0;
}

static int cmd_help(const exp_cli_args *a);

/* ---- the table ---------------------------------------------------------- */

#define SET_OPT(what)                                                                  \
    {.name = "set", .kind = EXP_CLI_LIST, .metavar = "KEY=VALUE",                      \
     .help = "override any config key, e.g. --set " what " (repeatable, applied in "   \
             "order)"}

static const exp_cli_opt run_opts[] = {
    SET_OPT("experiment.rates=[10,20] --set cluster.destinations=8"),
    {.name = "jobs", .short_name = 'j', .kind = EXP_CLI_INT, .metavar = "N", .lo = 1,
     .hi = 4096, .help = "parallel runs (default: all cores; results do not depend on N)"},
    {.name = "shard", .kind = EXP_CLI_STR, .metavar = "I/N",
     .help = "run only the runs with index % N == I (0 <= I < N), for job arrays; "
             "combine the shards with crsim merge"},
    {.name = "resume", .kind = EXP_CLI_FLAG,
     .help = "reuse the runs stored (in the same database) with the same run config hash "
             "by this build (crsim version)"},
    {.name = "resume-any-build", .kind = EXP_CLI_FLAG,
     .help = "as --resume, also reusing runs stored by other builds (their numbers may "
             "differ from this build's)"},
    {.name = "force", .kind = EXP_CLI_FLAG,
     .help = "run even when the estimated memory of the runs exceeds the available memory "
             "(MemAvailable)"},
    {.name = "dry-run", .kind = EXP_CLI_FLAG,
     .help = "check everything, print the experiment's and every run's config hash and run "
             "nothing (no database is opened)"},
    {.name = "quiet", .kind = EXP_CLI_FLAG, .help = "no progress output"},
    {.name = "requests", .kind = EXP_CLI_FLAG,
     .help = "store per-request records (as --set experiment.requests=true; crsim export)"},
    {0},
};

static const exp_cli_opt export_opts[] = {
    {.name = "run", .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = INFINITY,
     .help = "only run N's rows (runs.id; default: every run)"},
    {.name = "table", .kind = EXP_CLI_STR, .metavar = "T",
     .help = "table to write (default requests; any table: runs, run_metrics, key_metrics, "
             "timeline, ...)"},
    {.name = "format", .kind = EXP_CLI_CHOICE, .metavar = "csv|jsonl", .choices = "csv|jsonl",
     .help = "CSV (RFC 4180, header row) or JSON Lines (default csv)"},
    {.name = "out", .kind = EXP_CLI_STR, .metavar = "FILE",
     .help = "write to FILE (default: standard output)"},
    {0},
};

static const exp_cli_opt report_opts[] = {
    {.name = "experiment", .kind = EXP_CLI_INT, .metavar = "ID", .lo = 1, .hi = INFINITY,
     .help = "experiment id (default: the latest)"},
    {.name = "format", .kind = EXP_CLI_CHOICE, .metavar = "text|markdown|csv",
     .choices = "text|markdown|csv|md", .help = "output format (default text)"},
    {.name = "rate", .kind = EXP_CLI_REAL, .metavar = "R", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT, .unit = "in the experiment's load unit",
     .help = "report rate, a tested load (default: the experiment's report_rate_rps)"},
    {.name = "out", .kind = EXP_CLI_STR, .metavar = "FILE",
     .help = "write the tables to FILE (default: stdout)"},
    {.name = "table", .kind = EXP_CLI_CHOICE, .metavar = "policies|stages|capacities",
     .choices = "policies|stages|capacities",
     .help = "CSV rows: one per (point, policy) (default); for closed-loop clients one per "
             "stage of every run, or one per (policy, seed, SLO) with the requests/s "
             "achieved at its capacity (needs --format csv)"},
    {0},
};

static const exp_cli_opt plot_opts[] = {
    {.name = "experiment", .kind = EXP_CLI_INT, .metavar = "ID", .lo = 1, .hi = INFINITY,
     .help = "experiment id (default: the latest)"},
    {.name = "rate", .kind = EXP_CLI_REAL, .metavar = "R", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT, .unit = "in the experiment's load unit",
     .help = "report rate of the hit-rate figure, a tested load (default: the "
             "experiment's report_rate_rps)"},
    {.name = "out", .kind = EXP_CLI_STR, .metavar = "DIR",
     .help = "folder of the data and figures (default: the database path without .db, "
             "plus -NAME when the experiment is not named as the database: "
             "results/x.db -> results/x/)"},
    {0},
};

static const exp_cli_opt no_opts[] = {{0}};

static const exp_cli_opt regime_opts[] = {
    {.name = "rates", .kind = EXP_CLI_STR, .metavar = "CSV",
     .help = "per-key rates, a CSV of key,rate (requests/s), as the key population"},
    {.name = "servegen", .kind = EXP_CLI_STR, .metavar = "DIR",
     .help = "a ServeGen model folder: its clients' rates as the key population"},
    {.name = "trace", .kind = EXP_CLI_STR, .metavar = "FILE",
     .help = "replay a trace instead (workload.type trace: Mooncake JSONL, Azure or BurstGPT "
             "CSV, format detected; .gz/.xz read directly)"},
    {.name = "iat", .kind = EXP_CLI_STR, .metavar = "CSV",
     .help = "bootstrap arrivals from a file of inter-arrival times"},
    {.name = "prefix-tokens", .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 1000000,
     .unit = "tokens", .help = "constant shared-prefix length"},
    {.name = "input-tokens", .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 1000000,
     .unit = "tokens", .help = "constant unique input length"},
    {.name = "output-tokens", .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 1000000,
     .unit = "tokens", .help = "constant output length"},
    SET_OPT("cluster.destinations=16"),
    {.name = "seeds", .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 16,
     .help = "run seeds 1..N (default: 2 for the calibration, 3 for the simulations)"},
    {.name = "slo", .kind = EXP_CLI_REAL, .metavar = "S", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT, .unit = "s",
     .help = "SLO threshold on experiment.slo_metric (default: the median of experiment.slos)"},
    {.name = "tie", .kind = EXP_CLI_REAL, .metavar = "X", .lo = 0, .hi = 1,
     .flags = EXP_CLI_LT, .help = "tie band, a fraction of the capacity ratio (default 0.1)"},
    {.name = "jobs", .short_name = 'j', .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 4096,
     .help = "parallel runs (default: all cores)"},
    {.name = "fast", .kind = EXP_CLI_FLAG,
     .help = "stop after the diagnostic: no paired simulations"},
    {.name = "db", .kind = EXP_CLI_STR, .metavar = "PATH",
     .help = "keep the simulation database for crsim report/plot (default: a temporary "
             "one)"},
    {.name = "map", .kind = EXP_CLI_PAIR, .metavar = "\"KEY=[v...]\" \"KEY=[v...]\"",
     .help = "a verdict map over two config axes, with a figure"},
    {.name = "out", .kind = EXP_CLI_STR, .metavar = "DIR",
     .help = "folder of the map (default: results/regime-map)"},
    {.name = "baseline", .kind = EXP_CLI_STR, .metavar = "POLICY",
     .help = "the router cacheroute is compared with: any registered policy but cacheroute "
             "(default flat_lb)"},
    {.name = "grid", .kind = EXP_CLI_STR, .metavar = "L1,L2,...",
     .help = "ascending load grid of the q_cap calibration, requests/s, as crsim calibrate "
             "--grid (default 0.25,0.5,1,...,512; extended down when the SLO fails at the "
             "lowest)"},
    {.name = "targets", .kind = EXP_CLI_STR, .metavar = "TARGETS.yaml",
     .help = "observed metrics of the router run today (crsim fit's targets file): fit "
             "first, then the verdict per consistent alternative and its range; the baseline "
             "defaults to the targets' first router"},
    {0},
};

static const exp_cli_opt fit_opts[] = {
    {.name = "targets", .kind = EXP_CLI_STR, .metavar = "TARGETS.yaml",
     .flags = EXP_CLI_REQUIRED,
     .help = "observed metrics, free parameters and structural alternatives (docs/fit.md)"},
    SET_OPT("workload.duration_s=300"),
    {.name = "jobs", .short_name = 'j', .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 4096,
     .help = "parallel runs of each candidate (default: all cores)"},
    {.name = "db", .kind = EXP_CLI_STR, .metavar = "PATH",
     .help = "fit database, one experiment per candidate (default results/NAME-fit.db)"},
    {.name = "budget", .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 100000,
     .help = "coarse design size (default: the targets' budget, 16)"},
    {.name = "out", .kind = EXP_CLI_STR, .metavar = "FITTED.yaml",
     .help = "fitted config (default: the database path with -fitted.yaml)"},
    {.name = "quiet", .kind = EXP_CLI_FLAG, .help = "no progress lines on stderr"},
    {0},
};

static const exp_cli_opt calib_opts[] = {
    SET_OPT("workload.keys.active_set=256"),
    {.name = "seeds", .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 1e6,
     .help = "run seeds 1..N (default: experiment.seeds)"},
    {.name = "slo", .kind = EXP_CLI_REAL, .metavar = "S", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT, .unit = "s",
     .help = "SLO threshold on experiment.slo_metric (default: the median of experiment.slos)"},
    {.name = "grid", .kind = EXP_CLI_STR, .metavar = "L1,L2,...",
     .help = "ascending load grid, requests/s (default 0.25,0.5,1,...,512; halved down to "
             "max(1/64 of the lowest, 0.01) when the SLO fails at the lowest)"},
    {.name = "tol", .kind = EXP_CLI_REAL, .metavar = "T", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT, .help = "bisection relative tolerance (default 0.02)"},
    {.name = "safety", .kind = EXP_CLI_REAL, .metavar = "X", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT, .help = "share of the KV pool for warm prefixes (default 0.5)"},
    {.name = "keys", .kind = EXP_CLI_INT, .metavar = "K", .lo = -1, .hi = 1e9,
     .help = "top keys on the destination (default W; -1 = as configured)"},
    {.name = "duration", .kind = EXP_CLI_REAL, .metavar = "S", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT, .unit = "s",
     .help = "arrivals per probe (default workload.duration_s)"},
    {.name = "jobs", .short_name = 'j', .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = 4096,
     .help = "seeds in parallel (default: all cores)"},
    {.name = "quiet", .kind = EXP_CLI_FLAG, .help = "no progress lines on stderr"},
    {0},
};

static const exp_cli_opt plan_opts[] = {
    {.name = "rates", .kind = EXP_CLI_STR, .metavar = "FILE", .flags = EXP_CLI_REQUIRED,
     .help = "CSV of key,rate (requests/s)"},
    {.name = "destinations", .kind = EXP_CLI_INT, .metavar = "R", .lo = 1, .hi = 1e6,
     .flags = EXP_CLI_REQUIRED, .help = "destinations"},
    {.name = "q-cap", .kind = EXP_CLI_REAL, .metavar = "Q", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT | EXP_CLI_REQUIRED, .unit = "requests/s",
     .help = "capacity of one destination"},
    {.name = "slots", .kind = EXP_CLI_REAL, .metavar = "W", .lo = 0, .hi = INFINITY,
     .flags = EXP_CLI_GT | EXP_CLI_REQUIRED, .help = "warm slots per destination"},
    {.name = "placement", .kind = EXP_CLI_CHOICE, .metavar = "lpt|hash", .choices = "lpt|hash",
     .help = "replica placement (default lpt)"},
    {.name = "no-replicate", .kind = EXP_CLI_FLAG, .help = "one destination per key"},
    {.name = "out", .kind = EXP_CLI_STR, .metavar = "TABLE.csv",
     .help = "write the table as CSV key,rate_rps,k_b,destinations"},
    {0},
};

static const exp_cli_opt fit_cost_opts[] = {
    SET_OPT("cluster.tp=4"),
    {.name = "steps", .kind = EXP_CLI_STR, .metavar = "CSV",
     .help = "measured step times: columns prefill_tokens, decode_tokens, context, seconds "
             "(optional prefill_context)"},
    {.name = "vllm-bench", .kind = EXP_CLI_STR, .metavar = "JSON",
     .help = "a vllm bench serve result saved with --save-result --save-detailed at a "
             "max_concurrency (input_lens, output_lens, ttfts, itls)"},
    {.name = "out", .short_name = 'o', .kind = EXP_CLI_STR, .metavar = "FILE",
     .help = "write the fitted profile there (default: print it)"},
    {.name = "name", .kind = EXP_CLI_STR, .metavar = "NAME",
     .help = "profile name (default: the deployment's default profile name)"},
    {.name = "free", .kind = EXP_CLI_STR, .metavar = "LIST",
     .help = "roofline factors to fit, of mfu,mbu,overhead (default all); the others keep "
             "--prior's values and the profile says they are transferred"},
    {.name = "prior", .kind = EXP_CLI_STR, .metavar = "PROFILE",
     .help = "profile (name or file) whose roofline factors the fit starts from and keeps "
             "where not --free (default mfu 0.5, mbu 0.8, overhead 2 ms)"},
    {.name = "targets", .kind = EXP_CLI_STR, .metavar = "LIST",
     .help = "--vllm-bench quantities fitted, of ttft,itl (default both; TTFT includes the "
             "server's HTTP and tokenisation time, which the model has not)"},
    {0},
};

static const exp_cli_opt spec_import_opts[] = {
    {.name = "name", .kind = EXP_CLI_STR, .metavar = "NAME", .flags = EXP_CLI_REQUIRED,
     .help = "the model's name (e.g. Qwen3-8B); its file is models/specs/<lower-case "
             "name>.yaml"},
    {.name = "out", .short_name = 'o', .kind = EXP_CLI_STR, .metavar = "FILE",
     .help = "write the spec there (default: print it)"},
    {0},
};

static const exp_cli_opt describe_opts[] = {
    SET_OPT("workload.keys.n=1000"),
    {.name = "rate", .kind = EXP_CLI_REAL, .metavar = "R", .lo = 0, .hi = 1e9,
     .flags = EXP_CLI_GT, .unit = "requests/s", .help = "rate of the stream (default 10)"},
    {.name = "seed", .kind = EXP_CLI_INT, .metavar = "S", .lo = 0, .hi = INFINITY,
     .help = "run seed (default 1)"},
    {.name = "requests", .kind = EXP_CLI_INT, .metavar = "N", .lo = 1, .hi = INFINITY,
     .help = "requests of the stream to measure (default 100000)"},
    {.name = "block-size", .kind = EXP_CLI_INT, .metavar = "B", .lo = 1, .hi = 4096,
     .unit = "tokens", .help = "KV block of the infinite-cache hit rate (default 16)"},
    {.name = "force", .kind = EXP_CLI_FLAG,
     .help = "describe even when the estimated memory exceeds the available memory"},
    {0},
};

static const exp_cli_cmd commands[] = {
    {.name = "run", .summary = "run an experiment: every sweep point x load x seed x policy",
     .args = "CONFIG", .min_pos = 1, .max_pos = 1, .needs = "an experiment config",
     .details = "Run every sweep point x rate x seed x policy of the experiment config on N\n"
                "parallel jobs, print a table and store all runs and SLO capacities in SQLite\n"
                "(experiment.db, default results/<experiment.name>.db).  Sweeps, shards,\n"
                "resume and pruning: docs/harness.md.\n",
     .opts = run_opts, .main = cmd_run},
    {.name = "report", .summary = "paper-style tables of one experiment of a result database",
     .args = "DB", .min_pos = 1, .max_pos = 1, .needs = "a result database",
     .details = "Tables of one experiment (default: the latest) of a result database: per sweep\n"
                "point and policy, KV hit rate, SLO capacity per threshold with censoring, the\n"
                "SLO metric's p99 and load imbalance at the report rate R; with per-request\n"
                "records (crsim run --requests), per policy the regime that limits its\n"
                "capacity (throughput-bound or tail-bound).  --format csv: the same with\n"
                "the serving metrics (TTFT/TPOT/ITL/E2E mean, p50, p90, p99, requests/s,\n"
                "output tokens/s, goodput, joint SLO capacity); --table stages: one CSV row\n"
                "per stage of closed-loop client runs; --table capacities: their SLO\n"
                "capacity per seed with the requests/s achieved there.  See docs/report.md.\n",
     .opts = report_opts, .main = cmd_report},
    {.name = "export", .summary = "write a table of a result database as CSV or JSON Lines",
     .args = "DB", .min_pos = 1, .max_pos = 1, .needs = "a result database",
     .details = "Write one table of a result database (default: requests, the per-request\n"
                "records of runs with experiment.requests or crsim run --requests) as CSV or\n"
                "JSON Lines for pandas, duckdb or a spreadsheet; --run N keeps one run's rows.\n"
                "Request rows carry their run's policy, load (rate_rps), seed and sweep point,\n"
                "and under a closed-loop client their stage and client.\n"
                "A run that does not exist, or nothing to write (a database made without\n"
                "per-request records), is an error (exit 2). See docs/results-schema.md.\n",
     .opts = export_opts, .main = cmd_export},
    {.name = "plot", .summary = "capacity, p99-vs-load, throughput/goodput, hit-rate and "
                                "timeline figures (gnuplot)",
     .args = "DB", .min_pos = 1, .max_pos = 1, .needs = "a result database",
     .details = "Figures of one experiment (default: the latest): SLO capacity per policy and\n"
                "threshold, the SLO metric against load, KV hit rate at the report rate R,\n"
                "achieved requests/s, goodput and p99 TTFT against load (serving-load.*; per\n"
                "stage for a stage ladder, stages.*), the serving metrics at R (serving.tsv),\n"
                "and,\n"
                "when the runs stored a timeline (experiment.timeline_s), hit rate and p99 TTFT\n"
                "per window with the scheduled faults marked (timeline.*); data (.tsv) and\n"
                "figures (.png, .svg) go to DIR.  Needs gnuplot.  See docs/report.md.\n",
     .opts = plot_opts, .main = cmd_plot},
    {.name = "merge", .summary = "combine the shard databases of one sweep into one",
     .args = "OUT.db SHARD.db...", .min_pos = 2, .max_pos = SIZE_MAX,
     .needs = "an output database and at least one shard database",
     .details = "Merge the latest experiment of every shard database (crsim run --shard I/N)\n"
                "into a new experiment of OUT.db equal to the unsharded run; the shards must\n"
                "share the experiment config hash.  See docs/harness.md.\n",
     .opts = no_opts, .main = cmd_merge},
    {.name = "regime", .summary = "will cacheroute win, tie or lose against today's router here?",
     .args = "CONFIG", .min_pos = 1, .max_pos = 1,
     .needs = "a base config (e.g. experiments/regime.yaml)",
     .details = "Calibrate q_cap and W, compute the fast hit-rate diagnostic, run paired\n"
                "simulations of cacheroute and flat_lb over a load grid and several seeds, and\n"
                "print a verdict with the capacity ratio.  --rates, --servegen and --trace\n"
                "choose the traffic; --baseline the router compared with; --targets fits the\n"
                "workload to observed telemetry first and gives the verdict's range over every\n"
                "consistent alternative.  See docs/regime.md.\n",
     .opts = regime_opts, .main = cmd_regime},
    {.name = "calibrate", .summary = "measure CacheRoute's q_cap and W for a config's workload",
     .args = "CONFIG", .min_pos = 1, .max_pos = 1, .needs = "an experiment config",
     .details = "Measure CacheRoute's q_cap (the single-destination latency/load knee of the\n"
                "affinity workload with warm caches) and W (warm slots per destination from the\n"
                "KV pool and the workload's warm footprint per key).  See docs/qcap.md.\n",
     .opts = calib_opts, .main = cmd_calibrate},
    {.name = "fit-cost", .summary = "fit a deployment's cost profile to measured step times or "
                                    "a vllm bench serve result",
     .args = "CONFIG", .min_pos = 1, .max_pos = 1,
     .needs = "an experiment config naming the deployment (cluster.* and engine.* keys)",
     .details = "Fit the roofline factors (mfu, mbu, step overhead) and the linear model's\n"
                "a..e of CONFIG's deployment to the user's measurements: per-step times\n"
                "(--steps CSV; least squares, GSL) or a vllm bench serve result at a fixed\n"
                "concurrency (--vllm-bench JSON; the engine is run on the same requests and\n"
                "the factors fitted to every request's TTFT and time per output token).\n"
                "Prints or writes the profile with its residuals.  See docs/calibration.md.\n",
     .opts = fit_cost_opts, .main = cmd_fit_cost},
    {.name = "spec import-hf", .summary = "a model spec from a Hugging Face config.json",
     .args = "CONFIG.json", .min_pos = 1, .max_pos = 1,
     .needs = "a Hugging Face config.json",
     .details = "Read the architecture of a dense decoder (model_type llama, mistral, qwen2,\n"
                "qwen3) from CONFIG.json and print or write the model spec file, its\n"
                "parameter count computed from the architecture.  See docs/calibration.md,\n"
                "\"Adding a model\".\n",
     .opts = spec_import_opts, .main = cmd_spec_import},
    {.name = "fit", .summary = "fit free config parameters to observed hit rates, p99s, capacities",
     .args = "CONFIG", .min_pos = 1, .max_pos = 1, .needs = "a base experiment config",
     .details = "Identify the workload: run candidates of CONFIG (a Latin hypercube over the\n"
                "continuous free parameters crossed with the discrete ones and the structural\n"
                "alternatives, then Nelder-Mead per alternative) with common random numbers,\n"
                "compare each with the observed metrics of TARGETS.yaml in tolerance units,\n"
                "store every candidate as one experiment with its residuals, print the best\n"
                "point and the identified set (every residual within tolerance) per\n"
                "alternative, and write the best point's config for crsim run.  Targets may\n"
                "be bounds (side: at_least / at_most), a policy's achieved request rate\n"
                "over the offered load (achieved_ratio: completions over the measured send\n"
                "window), and router-independent workload\n"
                "targets (targets.workload: the infinite-cache hit bound, the admission\n"
                "scale R x W), computed without a run (a closed-loop client's stream as an\n"
                "infinitely fast server receives it); `screen` makes the coarse design a\n"
                "screening stage (candidates far from the workload targets not run, short\n"
                "runs, alternatives far from the targets not refined).  Runs no\n"
                "target reads (loads above a series' first SLO failure, but the targets'\n"
                "loads and the two lowest) are skipped; `prune: false` in TARGETS.yaml runs\n"
                "them all.  See docs/fit.md.\n",
     .opts = fit_opts, .main = cmd_fit},
    {.name = "plan", .summary = "build a CacheRoute table from a CSV of key,rate",
     .args = "", .min_pos = 0, .max_pos = 0, .needs = "",
     .details = "Build a CacheRoute table from an operator's per-key rates without running a\n"
                "simulation; print the admitted keys, sum k_b and the expected load per\n"
                "destination.\n",
     .opts = plan_opts, .main = cmd_plan},
    {.name = "workload describe", .summary = "statistics of a workload and its request stream",
     .args = "CONFIG", .min_pos = 1, .max_pos = 1,
     .needs = "a workload config (a preset in workloads/specs/ or any config)",
     .details = "Statistics of a workload (a preset in workloads/specs/ or any config): keys,\n"
                "Gini, top 1/4/10 % shares, largest share; and of its request stream at rate R\n"
                "(first N requests): rate, inter-arrival CV, lengths, infinite-cache hit rate,\n"
                "and that hit rate over the measured window (after the config's warm-up): the\n"
                "bound on a run's measured hit rate.  See docs/workloads.md.\n",
     .opts = describe_opts, .main = cmd_workload_describe},
    {.name = "help", .summary = "this list, or: help config | policies | commands | COMMAND",
     .args = "[TOPIC]", .min_pos = 0, .max_pos = 2, .needs = "",
     .details = "  crsim help            the list of commands\n"
                "  crsim help config     every config key with type, default, range, unit\n"
                "  crsim help policies   the routers\n"
                "  crsim help commands   the command names, one per line\n"
                "  crsim help COMMAND    the usage of COMMAND (as crsim COMMAND --help)\n",
     .opts = no_opts, .main = cmd_help},
    {.name = "version", .summary = "print the build version", .args = "", .min_pos = 0,
     .max_pos = 0, .needs = "", .details = "Print the build version (git describe).\n",
     .opts = no_opts, .main = cmd_version},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* ---- help --------------------------------------------------------------- */

#define NBSP '\x1f'

static size_t n_opts(const exp_cli_opt *o)
{
    size_t n = 0;
    while (o[n].name)
        n++;
    return n;
}

/* Print `text` from column *col, breaking lines at spaces so they stay
 * within 80 columns; continuation lines start at column `indent`.  A word
 * never breaks; NBSP ('\x1f') is a space that does not break either. */
static void put_wrapped(FILE *f, const char *text, size_t *col, size_t indent)
{
    const char *p = text;
    while (*p) {
        size_t w = strcspn(p, " ");
        if (*col > indent && *col + 1 + w > 80) {
            fprintf(f, "\n%*s", (int)indent, "");
            *col = indent;
        } else if (*col > indent) {
            fputc(' ', f);
            (*col)++;
        }
        for (size_t i = 0; i < w; i++)
            fputc(p[i] == NBSP ? ' ' : p[i], f);
        *col += w;
        p += w;
        while (*p == ' ')
            p++;
    }
}

/* The synopsis word of one option: "[--jobs N]", "[--set KEY=VALUE]...". */
static void opt_word(const exp_cli_opt *o, char *b, size_t n)
{
    bool req = o->flags & EXP_CLI_REQUIRED;
    snprintf(b, n, "%s--%s%s%s%s%s", req ? "" : "[", o->name, o->metavar ? " " : "",
             o->metavar ? o->metavar : "", req ? "" : "]", o->kind == EXP_CLI_LIST ? "..." : "");
}

/* "usage: crsim NAME ARGS [--opt X]..." wrapped under the first argument. */
static void print_synopsis(FILE *f, const exp_cli_cmd *c)
{
    size_t col = (size_t)fprintf(f, "usage: crsim %s", c->name);
    size_t indent = col + 1;
    char w[256];
    if (c->args[0]) {
        fputc(' ', f);
        col++;
        col += (size_t)fprintf(f, "%s", c->args);
    }
    for (const exp_cli_opt *o = c->opts; o->name; o++) {
        opt_word(o, w, sizeof w);
        /* an option's word ("[--jobs N]") never breaks */
        if (col + 1 + strlen(w) > 80) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
        } else {
            fputc(' ', f);
            col++;
        }
        col += (size_t)fprintf(f, "%s", w);
    }
    fputc('\n', f);
}

/* The range of a number as text: "in 1..4096", "> 0", "in [0, 1)", "" if
 * none. */
static void range_text(const exp_cli_opt *o, char *b, size_t n)
{
    b[0] = '\0';
    if (o->kind == EXP_CLI_INT) {
        if (isfinite(o->hi))
            snprintf(b, n, "in %.15g..%.15g", o->lo, o->hi);
        else
            snprintf(b, n, ">= %.15g", o->lo);
    } else if (o->kind == EXP_CLI_REAL) {
        if (isfinite(o->lo) && isfinite(o->hi))
            snprintf(b, n, "in %c%.15g, %.15g%c", o->flags & EXP_CLI_GT ? '(' : '[', o->lo,
                     o->hi, o->flags & EXP_CLI_LT ? ')' : ']');
        else if (isfinite(o->lo))
            snprintf(b, n, "%s %.15g", o->flags & EXP_CLI_GT ? ">" : ">=", o->lo);
        else if (isfinite(o->hi))
            snprintf(b, n, "%s %.15g", o->flags & EXP_CLI_LT ? "<" : "<=", o->hi);
    }
}

/* What an option's argument must be: "an integer 1..4096 (tokens)". */
static void expected_text(const exp_cli_opt *o, char *b, size_t n)
{
    char r[96];
    range_text(o, r, sizeof r);
    const char *u = o->unit ? o->unit : "";
    switch (o->kind) {
    case EXP_CLI_INT:
        snprintf(b, n, "an integer %s%s%s%s", r + (r[0] == 'i' ? 3 : 0), *u ? " (" : "", u,
                 *u ? ")" : "");
        break;
    case EXP_CLI_REAL:
        snprintf(b, n, "a number %s%s%s%s", r, *u ? " (" : "", u, *u ? ")" : "");
        break;
    case EXP_CLI_CHOICE: {
        size_t k = (size_t)snprintf(b, n, "one of ");
        for (const char *p = o->choices; *p && k < n; p++)
            k += (size_t)snprintf(b + k, n - k, *p == '|' ? ", " : "%c", *p);
        break;
    }
    default:
        snprintf(b, n, "%s", o->metavar ? o->metavar : "a value");
    }
}

static void print_usage(FILE *f, const exp_cli_cmd *c)
{
    print_synopsis(f, c);
    fprintf(f, "\n%s\noptions:\n", c->details);
    for (const exp_cli_opt *o = c->opts;; o++) {
        char left[160], r[96];
        if (!o->name) {
            fprintf(f, "  %-26sprint this help and exit\n", "-h, --help");
            break;
        }
        const char *mv = o->metavar ? o->metavar : "";
        if (o->short_name)
            snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name, *mv ? " " : "",
                     mv);
        else
            snprintf(left, sizeof left, "    --%s%s%s", o->name, *mv ? " " : "", mv);
        size_t col = 2 + strlen(left);
        fprintf(f, "  %s", left);
        if (col + 2 > 28)
            fprintf(f, "\n%*s", 28, "");
        else
            fprintf(f, "%*s", (int)(28 - col), "");
        col = 28;
        char help[512];
        range_text(o, r, sizeof r);
        const char *u = o->unit ? o->unit : "";
        if (r[0]) /* "; N in 1..4096 tokens", kept on one line */
            snprintf(help, sizeof help, "%s; %s %s%s%s", o->help, mv, r, *u ? " " : "", u);
        else
            snprintf(help, sizeof help, "%s", o->help);
        for (char *p = r[0] ? help + strlen(o->help) + 2 : help + strlen(help); *p; p++)
            if (*p == ' ')
                *p = NBSP;
        put_wrapped(f, help, &col, 28);
        fputc('\n', f);
    }
}

static void print_commands_usage(FILE *f)
{
    fputs("usage: crsim <command> [arguments] [options]\n\ncommands:\n", f);
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char left[96];
        snprintf(left, sizeof left, "%s%s%s", commands[i].name, commands[i].args[0] ? " " : "",
                 commands[i].args);
        fprintf(f, "  %-26s %s\n", left, commands[i].summary);
    }
    fputs("\ncrsim <command> --help (or -h) prints the usage and options of a command.\n"
          "exit status: 0 ok, 2 bad input, 1 other error, 130/143 interrupted (SIGINT/SIGTERM)\n"
          "environment: CRSIM_HUGEPAGES=0 runs without malloc's transparent huge pages\n"
          "(docs/harness.md, \"Huge pages\"); CRSIM_SPEC_DIR, CRSIM_SCRIPT_DIR, CRSIM_GNUPLOT\n"
          "(docs/install.md, docs/config.md, docs/report.md)\n"
          "docs: README.md, docs/config.md, docs/harness.md, docs/results-schema.md\n",
          f);
}

static const exp_cli_cmd *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int cmd_help(const exp_cli_args *a)
{
    if (a->n_pos == 0) {
        print_commands_usage(stdout);
        return 0;
    }
    char topic[128];
    snprintf(topic, sizeof topic, "%s%s%s", a->pos[0], a->n_pos > 1 ? " " : "",
             a->n_pos > 1 ? a->pos[1] : "");
    if (strcmp(topic, "config") == 0) {
        exp_config_help(stdout);
        return 0;
    }
    if (strcmp(topic, "policies") == 0) {
        route_list(stdout);
        return 0;
    }
    if (strcmp(topic, "commands") == 0) {
        for (size_t i = 0; i < N_COMMANDS; i++)
            printf("%s\n", commands[i].name);
        return 0;
    }
    const exp_cli_cmd *c = find_command(topic);
    if (c) {
        print_usage(stdout, c);
        return 0;
    }
    return exp_cli_fail(SIM_ERROR(SIM_EINVAL, "help: unknown topic '%s'; expected config, "
                                  "policies, commands or a command (crsim help commands)",
                                  topic));
}

/* ---- the parser --------------------------------------------------------- */

void exp_cli_args_fini(exp_cli_args *a)
{
    if (a->vals && a->cmd)
        for (size_t i = 0; a->cmd->opts[i].name; i++)
            free(a->vals[i].list);
    free(a->vals);
    free(a->pos);
    free(a->seq);
    memset(a, 0, sizeof *a);
}

/* "--set, --jobs, ... or --help" into b. */
static void option_list(const exp_cli_cmd *c, char *b, size_t n)
{
    size_t k = 0;
    b[0] = '\0';
    for (const exp_cli_opt *o = c->opts; o->name && k < n; o++)
        k += (size_t)snprintf(b + k, n - k, "--%s%s", o->name, o[1].name ? ", " : " ");
    if (k < n)
        snprintf(b + k, n - k, "%s--help", k ? "or " : "");
}

/* Check and store one occurrence of option `o` with argument `arg`. */
static int store(exp_cli_args *a, const exp_cli_opt *o, const char *arg, const char *arg2)
{
    const char *sub = a->cmd->name;
    exp_cli_val *v = &a->vals[o - a->cmd->opts];
    exp_cli_item *it = &a->seq[a->n_seq];
    *it = (exp_cli_item){.opt = o, .arg = arg};
    char want[160];
    expected_text(o, want, sizeof want);
    switch (o->kind) {
    case EXP_CLI_FLAG:
    case EXP_CLI_STR:
        break;
    case EXP_CLI_INT: {
        int64_t x = 0; /* decimal, range-checked as int64 (sim/core/number.h) */
        const int64_t lo = o->lo <= -9.2e18 ? INT64_MIN : (int64_t)ceil(o->lo),
                      hi = o->hi >= 9.2e18 ? INT64_MAX : (int64_t)floor(o->hi);
        if (!sim_num_i64(arg, lo, hi, &x))
            return SIM_ERROR(SIM_EINVAL, "%s: --%s '%s'; expected %s", sub, o->name, arg, want);
        it->i = v->i = x;
        break;
    }
    case EXP_CLI_REAL: {
        double x = NAN;
        bool ok = sim_num_real(arg, -INFINITY, INFINITY, &x) &&
                  (o->flags & EXP_CLI_GT ? x > o->lo : x >= o->lo) &&
                  (o->flags & EXP_CLI_LT ? x < o->hi : x <= o->hi);
        if (!ok)
            return SIM_ERROR(SIM_EINVAL, "%s: --%s '%s'; expected %s", sub, o->name, arg, want);
        it->x = v->x = x;
        break;
    }
    case EXP_CLI_CHOICE: {
        int64_t idx = 0;
        size_t len = strlen(arg);
        const char *p = o->choices;
        for (;;) {
            size_t w = strcspn(p, "|");
            if (w == len && strncmp(p, arg, len) == 0)
                break;
            if (!p[w])
                return SIM_ERROR(SIM_EINVAL, "%s: --%s '%s'; expected %s", sub, o->name, arg,
                                 want);
            p += w + 1;
            idx++;
        }
        it->i = v->i = idx;
        break;
    }
    case EXP_CLI_LIST:
        v->list[v->n_list++] = arg; /* sized for every word in exp_cli_parse */
        break;
    case EXP_CLI_PAIR:
        if (!arg2)
            return SIM_ERROR(SIM_EINVAL, "%s: --%s needs two values; expected --%s %s", sub,
                             o->name, o->name, o->metavar);
        v->str2 = arg2;
        break;
    }
    v->count++;
    v->str = arg;
    a->n_seq++;
    return SIM_OK;
}

int exp_cli_parse(const exp_cli_cmd *cmd, int argc, char **argv, exp_cli_args *a, bool *help)
{
    memset(a, 0, sizeof *a);
    *help = false;
    a->cmd = cmd;
    const char *sub = cmd->name;
    size_t n = n_opts(cmd->opts), nw = (size_t)(argc > 0 ? argc : 0);
    a->vals = sim_xcalloc(n + 1, sizeof *a->vals);
    a->pos = sim_xcalloc(nw + 1, sizeof *a->pos);
    a->seq = sim_xcalloc(nw + 1, sizeof *a->seq);
    /* getopt_long wants a program name first. */
    char **words = sim_xcalloc(nw + 2, sizeof *words);
    words[0] = (char *)"crsim";
    for (size_t i = 0; i < nw; i++)
        words[i + 1] = argv[i];
    struct option *lo = sim_xcalloc(n + 2, sizeof *lo);
    /* '-': positionals come back in order (code 1), so nothing is permuted
     * and a PAIR may take the next word; ':': a missing value is ':'. */
    char *shorts = sim_xmalloc(2 * n + 8);
    size_t k = 0;
    shorts[k++] = '-';
    shorts[k++] = ':';
    shorts[k++] = 'h';
    for (size_t i = 0; i < n; i++) {
        const exp_cli_opt *o = &cmd->opts[i];
        lo[i] = (struct option){o->name, o->kind == EXP_CLI_FLAG ? no_argument : required_argument,
                                NULL, 256 + (int)i};
        if (o->short_name) {
            shorts[k++] = o->short_name;
            if (o->kind != EXP_CLI_FLAG)
                shorts[k++] = ':';
        }
    }
    shorts[k] = '\0';
    lo[n] = (struct option){"help", no_argument, NULL, 'h'};
    for (size_t i = 0; i < n; i++) /* size every list for all the words */
        if (cmd->opts[i].kind == EXP_CLI_LIST)
            a->vals[i].list = sim_xcalloc(nw + 1, sizeof *a->vals[i].list);

    int rc = SIM_OK, c, nargs = (int)nw + 1;
    char names[512];
    optind = 0; /* GNU: reinitialise */
    opterr = 0;
    while (rc == SIM_OK && (c = getopt_long(nargs, words, shorts, lo, NULL)) != -1) {
        const exp_cli_opt *o = NULL;
        if (c == 1) {
            a->pos[a->n_pos++] = optarg;
            continue;
        }
        if (c == 'h') {
            *help = true;
            break;
        }
        if (c == '?' || c == ':') {
            const char *typed = words[optind - 1];
            if (optopt >= 256 && optopt < 256 + (int)n)
                o = &cmd->opts[optopt - 256];
            for (size_t i = 0; !o && optopt > 0 && optopt < 256 && i < n; i++)
                if (cmd->opts[i].short_name == optopt)
                    o = &cmd->opts[i];
            if (c == ':' && o) {
                char want[160] = "";
                if (o->kind == EXP_CLI_INT || o->kind == EXP_CLI_REAL ||
                    o->kind == EXP_CLI_CHOICE) {
                    want[0] = ' ';
                    want[1] = '(';
                    expected_text(o, want + 2, sizeof want - 3);
                    strcat(want, ")");
                }
                rc = SIM_ERROR(SIM_EINVAL, "%s: option '--%s' needs a value; expected --%s %s%s",
                               sub, o->name, o->name, o->metavar, want);
            } else if (o || optopt == 'h') {
                rc = SIM_ERROR(SIM_EINVAL, "%s: option '--%s' takes no value; expected --%s",
                               sub, o ? o->name : "help", o ? o->name : "help");
            } else {
                option_list(cmd, names, sizeof names);
                if (optopt > 0)
                    rc = SIM_ERROR(SIM_EINVAL, "%s: unknown option '-%c'; expected %s (crsim %s "
                                   "--help)", sub, optopt, names, sub);
                else
                    rc = SIM_ERROR(SIM_EINVAL, "%s: unknown option '%.*s'; expected %s (crsim "
                                   "%s --help)", sub, (int)strcspn(typed, "="), typed, names,
                                   sub);
            }
            break;
        }
        if (c >= 256)
            o = &cmd->opts[c - 256];
        for (size_t i = 0; !o && i < n; i++)
            if (cmd->opts[i].short_name == c)
                o = &cmd->opts[i];
        SIM_ALWAYS(o);
        const char *arg2 = NULL;
        if (o->kind == EXP_CLI_PAIR && optind < nargs)
            arg2 = words[optind++];
        rc = store(a, o, o->kind == EXP_CLI_FLAG ? NULL : optarg, arg2);
    }
    /* After "--", the rest are positional. */
    while (rc == SIM_OK && !*help && optind > 0 && optind < nargs)
        a->pos[a->n_pos++] = words[optind++];
    if (rc == SIM_OK && !*help) {
        if (a->n_pos < cmd->min_pos)
            rc = SIM_ERROR(SIM_EINVAL, "%s: needs %s; expected crsim %s %s%s (crsim %s "
                           "--help)", sub, cmd->needs, sub, cmd->args, n ? " [options]" : "",
                           sub);
        else if (a->n_pos > cmd->max_pos)
            rc = SIM_ERROR(SIM_EINVAL, "%s: unexpected argument '%s'; expected crsim %s%s%s%s "
                           "(crsim %s --help)", sub, a->pos[cmd->max_pos], sub,
                           cmd->args[0] ? " " : "", cmd->args, n ? " [options]" : "", sub);
    }
    for (size_t i = 0; rc == SIM_OK && !*help && i < n; i++) {
        if (!(cmd->opts[i].flags & EXP_CLI_REQUIRED) || a->vals[i].count)
            continue;
        size_t m = 0;
        names[0] = '\0';
        for (size_t j = 0; j < n && m < sizeof names; j++)
            if (cmd->opts[j].flags & EXP_CLI_REQUIRED)
                m += (size_t)snprintf(names + m, sizeof names - m, "%s--%s %s", m ? " " : "",
                                      cmd->opts[j].name, cmd->opts[j].metavar);
        rc = SIM_ERROR(SIM_EINVAL, "%s: needs %s; --%s is missing", sub, names,
                       cmd->opts[i].name);
    }
    free(shorts);
    free(lo);
    free(words);
    return rc;
}

/* ---- accessors ---------------------------------------------------------- */

const exp_cli_val *exp_cli_get(const exp_cli_args *a, const char *name)
{
    for (size_t i = 0; a->cmd->opts[i].name; i++)
        if (strcmp(a->cmd->opts[i].name, name) == 0)
            return &a->vals[i];
    sim_panic(__FILE__, __LINE__, name); /* a name not in the table: a bug */
}

bool exp_cli_has(const exp_cli_args *a, const char *name)
{
    return exp_cli_get(a, name)->count > 0;
}

const char *exp_cli_str(const exp_cli_args *a, const char *name, const char *dflt)
{
    const exp_cli_val *v = exp_cli_get(a, name);
    return v->count ? v->str : dflt;
}

int64_t exp_cli_int(const exp_cli_args *a, const char *name, int64_t dflt)
{
    const exp_cli_val *v = exp_cli_get(a, name);
    return v->count ? v->i : dflt;
}

double exp_cli_real(const exp_cli_args *a, const char *name, double dflt)
{
    const exp_cli_val *v = exp_cli_get(a, name);
    return v->count ? v->x : dflt;
}

const char *const *exp_cli_list(const exp_cli_args *a, const char *name, size_t *n)
{
    const exp_cli_val *v = exp_cli_get(a, name);
    *n = v->n_list;
    return v->n_list ? v->list : NULL;
}

/* ---- the command line --------------------------------------------------- */

static bool is_help(const char *s)
{
    return strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0;
}

void exp_tune_malloc(void)
{
#if defined(M_TRIM_THRESHOLD) && defined(M_MMAP_THRESHOLD)
    (void)mallopt(M_TRIM_THRESHOLD, 256 << 20);
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
}

void exp_hugepages(char **argv)
{
#if defined(__linux__) && defined(__GLIBC__)
    const char *off = getenv("CRSIM_HUGEPAGES");
    if (off && strcmp(off, "0") == 0)
        return;
    const char *t = getenv("GLIBC_TUNABLES");
    if (t && strstr(t, "glibc.malloc.hugetlb"))
        return; /* the user's setting, or this is the re-executed image */
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return;
    char mode[256];
    const size_t n = fread(mode, 1, sizeof mode - 1, f);
    fclose(f);
    mode[n] = '\0';
    if (!strstr(mode, "[madvise]"))
        return; /* always: every mapping has them already; never: none */
    char val[4096];
    if (snprintf(val, sizeof val, "%s%sglibc.malloc.hugetlb=1", t ? t : "", t && *t ? ":" : "") >=
            (int)sizeof val ||
        setenv("GLIBC_TUNABLES", val, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* The exec failed: run on as before (the variable changes nothing in
     * this image). */
#else
    (void)argv;
#endif
}

static int cli_main(int argc, char **argv);

/* Every command's standard output is checked once, at the end: a write
 * error (a full disk, /dev/full, a closed pipe's EPIPE) is a failure
 * with exit status 2, as report and export already did (issue 38 C11). */
int exp_cli_main(int argc, char **argv)
{
    int status = cli_main(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "crsim: cannot write standard output: %s\n",
                errno ? strerror(errno) : "write error");
        if (status == 0)
            status = SIM_EXIT_BADINPUT;
    }
    return status;
}

static int cli_main(int argc, char **argv)
{
    if (argc < 2) {
        print_commands_usage(stderr);
        return SIM_EXIT_BADINPUT;
    }
    const char *w = argv[1];
    if (is_help(w)) {
        print_commands_usage(stdout);
        return 0;
    }
    if (strcmp(w, "--version") == 0)
        w = "version";
    const exp_cli_cmd *c = NULL;
    int used = 1; /* words of the command's name */
    bool group = false;
    size_t wl = strlen(w);
    for (size_t i = 0; !c && i < N_COMMANDS; i++) {
        const char *nm = commands[i].name;
        if (strcmp(nm, w) == 0) {
            c = &commands[i];
        } else if (strncmp(nm, w, wl) == 0 && nm[wl] == ' ') {
            group = true; /* "workload describe": the second word must follow */
            if (argc > 2 && strcmp(nm + wl + 1, argv[2]) == 0) {
                c = &commands[i];
                used = 2;
            }
        }
    }
    if (!c && group) {
        char subs[256] = "";
        size_t k = 0;
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (strncmp(commands[i].name, w, wl) == 0 && commands[i].name[wl] == ' ')
                k += (size_t)snprintf(subs + k, sizeof subs - k, "%s%s", k ? ", " : "",
                                      commands[i].name + wl + 1);
        if (argc > 2 && is_help(argv[2])) {
            for (size_t i = 0; i < N_COMMANDS; i++)
                if (strncmp(commands[i].name, w, wl) == 0 && commands[i].name[wl] == ' ')
                    print_synopsis(stdout, &commands[i]);
            return 0;
        }
        if (argc > 2)
            return exp_cli_fail(SIM_ERROR(SIM_EINVAL, "%s: unknown subcommand '%s'; expected "
                                          "%s (crsim %s --help)", w, argv[2], subs, w));
        return exp_cli_fail(SIM_ERROR(SIM_EINVAL, "%s: needs a subcommand; expected %s (crsim "
                                      "%s --help)", w, subs, w));
    }
    if (!c) {
        char names[512] = "";
        size_t k = 0;
        for (size_t i = 0; i < N_COMMANDS && k < sizeof names; i++)
            k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", commands[i].name,
                                  i + 2 < N_COMMANDS ? ", " : i + 1 < N_COMMANDS ? " or " : "");
        return exp_cli_fail(SIM_ERROR(SIM_EINVAL, "unknown command '%s'; expected %s (crsim "
                                      "--help)", w, names));
    }
    exp_cli_args a;
    bool help = false;
    int rc = exp_cli_parse(c, argc - 1 - used, argv + 1 + used, &a, &help);
    int status;
    if (help) {
        print_usage(stdout, c);
        status = 0;
    } else if (rc) {
        status = exp_cli_fail(rc);
    } else {
        status = c->main(&a);
    }
    exp_cli_args_fini(&a);
    return status;
}
