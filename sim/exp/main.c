/*
 * crsim command-line interface.  Subcommands: run, help, version.
 * Exit status: 0 success, 2 bad input (config, spec, trace, command line),
 * 1 other failures (database, out of memory), 130 interrupted.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/route.h"
#include "sim/core/error.h"
#include "workloads/wl_config.h"
#include "sim/exp/calib.h"
#include "sim/exp/exp.h"
#include "sim/exp/merge.h"
#include "sim/exp/plan_cli.h"
#include "sim/exp/plot.h"
#include "sim/exp/regime.h"
#include "sim/exp/report.h"
#include "version.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void usage(FILE *f)
{
    fputs("usage: crsim <command> [options]\n"
          "\n"
          "commands:\n"
          "  run CONFIG [--set KEY=VALUE]... [--jobs N] [--shard I/N] [--resume] [--dry-run]\n"
          "        [--quiet]\n"
          "        run every sweep point x rate x seed x policy of the experiment config\n"
          "        on N parallel jobs (default: all cores; results do not depend on N),\n"
          "        print a table and store all runs and SLO capacities in SQLite\n"
          "        (experiment.db, default results/<experiment.name>.db).  --set overrides\n"
          "        any key, e.g. --set experiment.rates=[10,20] --set cluster.destinations=8;\n"
          "        --shard I/N runs only runs with index % N == I (0 <= I < N), for job\n"
          "        arrays; --resume reuses runs stored with the same config hash; --dry-run\n"
          "        checks everything, prints the experiment's and every run's config hash\n"
          "        and runs nothing (no database is opened)\n"
          "  report DB [--experiment ID] [--format text|markdown|csv] [--rate R] [--out FILE]\n"
          "        paper-style tables: KV hit, SLO capacity per threshold (censoring\n"
          "        marked), p99, imbalance\n"
          "  plot DB [--experiment ID] [--rate R] [--out DIR]\n"
          "        capacity / p99-vs-load / hit-rate figures (gnuplot; PNG, SVG and TSV,\n"
          "        default results/<experiment name>/)\n"
          "  merge OUT.db SHARD.db...   combine shard databases into one\n"
          "  regime CONFIG [--rates CSV | --servegen DIR | --trace JSONL] [--iat CSV]\n"
          "        [--prefix-tokens N] [--input-tokens N] [--output-tokens N] [--set K=V]...\n"
          "        [--seeds N] [--slo S] [--tie X] [--jobs N] [--fast] [--db PATH]\n"
          "        [--map \"KEY=[v...]\" \"KEY=[v...]\" [--out DIR]]\n"
          "        will cacheroute win, tie or lose against flat_lb here? (docs/regime.md)\n"
          "  calibrate CONFIG [--set KEY=VALUE]... [--seeds N] [--slo S] [--grid L,...]\n"
          "        [--safety X]   measure CacheRoute's q_cap (single-destination latency\n"
          "        knee) and W (warm-slot budget) for the config's workload (docs/qcap.md)\n"
          "  plan --rates FILE --destinations R --q-cap Q --slots W [--placement lpt|hash]\n"
          "       [--no-replicate] [--out TABLE.csv]\n"
          "        build a CacheRoute table from a CSV of key,rate (requests/s)\n"
          "  workload describe CONFIG [--set KEY=VALUE]... [--rate R] [--seed S]\n"
          "        [--requests N] [--block-size B]\n"
          "        statistics of a workload (a preset in workloads/specs/ or any config):\n"
          "        keys, Gini, top 1/4/10 % shares, largest share; and of its request\n"
          "        stream at rate R (default 10/s, first N = 100000 requests): rate,\n"
          "        inter-arrival CV, lengths, infinite-cache hit rate\n"
          "  help config      list every config key with type, default, range, unit\n"
          "  help policies    list the routers\n"
          "  version          print the build version\n"
          "\n"
          "exit status: 0 ok, 2 bad input, 1 other error, 130 interrupted\n"
          "docs: README.md, docs/config.md, docs/harness.md, docs/results-schema.md\n",
          f);
}

static int exit_code(int rc)
{
    switch (rc) {
    case SIM_OK: return 0;
    case SIM_EINVAL:
    case SIM_EIO: return SIM_EXIT_BADINPUT;
    case SIM_EINTR: return 130;
    default: return 1;
    }
}

static int fail(int rc)
{
    fprintf(stderr, "crsim: %s\n", sim_errmsg());
    if (getenv("CRSIM_DEBUG"))
        fprintf(stderr, "crsim: (%s at %s)\n", sim_strstatus(rc), sim_errsrc());
    return exit_code(rc);
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
    return SIM_ERROR(SIM_EINVAL, "--shard '%s'; expected I/N with 0 <= I < N (e.g. "
                     "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with a 0-based array)", v);
}

static int cmd_run(int argc, char **argv)
{
    const char *config = NULL;
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    size_t n_set = 0;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    exp_run_opts o = {.stop = &stop_flag, .jobs = ncpu > 0 ? (unsigned)ncpu : 1};
    int rc = SIM_OK;
    for (int i = 0; i < argc && rc == SIM_OK; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--set") == 0 || strcmp(a, "--jobs") == 0 || strcmp(a, "-j") == 0 ||
            strcmp(a, "--shard") == 0) {
            if (!val) {
                rc = SIM_ERROR(SIM_EINVAL, "%s needs a value", a);
                break;
            }
            i++;
            if (strcmp(a, "--set") == 0) {
                sets[n_set++] = val;
            } else if (strcmp(a, "--shard") == 0) {
                rc = parse_shard(val, &o.shard_i, &o.shard_n);
            } else {
                char *end = NULL;
                long j = strtol(val, &end, 10);
                if (*end || j < 1 || j > 4096)
                    rc = SIM_ERROR(SIM_EINVAL, "--jobs '%s'; expected an integer 1..4096", val);
                else
                    o.jobs = (unsigned)j;
            }
        } else if (strncmp(a, "--set=", 6) == 0) {
            sets[n_set++] = a + 6;
        } else if (strcmp(a, "--quiet") == 0) {
            o.quiet = true;
        } else if (strcmp(a, "--resume") == 0) {
            o.resume = true;
        } else if (strcmp(a, "--dry-run") == 0) {
            o.dry_run = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            free(sets);
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            rc = SIM_ERROR(SIM_EINVAL, "unknown option '%s' for 'run'; expected --set KEY=VALUE, "
                           "--jobs N, --shard I/N, --resume, --dry-run or --quiet", a);
        } else if (!config) {
            config = a;
        } else {
            rc = SIM_ERROR(SIM_EINVAL, "unexpected argument '%s'; expected one config file", a);
        }
    }
    if (rc == SIM_OK && !config) {
        free(sets);
        usage(stderr);
        return SIM_EXIT_BADINPUT;
    }
    if (rc) {
        free(sets);
        return fail(rc);
    }
    o.config_path = config;
    o.sets = sets;
    o.n_set = n_set;
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = exp_run(&o, stdout);
    free(sets);
    return rc ? fail(rc) : 0;
}

static int cmd_workload(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[0], "describe") != 0) {
        fprintf(stderr, "crsim: usage: crsim workload describe CONFIG [--set KEY=VALUE]... "
                "[--rate R] [--seed S] [--requests N] [--block-size B]\n");
        return SIM_EXIT_BADINPUT;
    }
    const char *path = argv[1];
    double rate = 10;
    uint64_t seed = 1, max = 100000;
    long block = 16;
    sim_cfgdoc *d = NULL;
    int rc = sim_cfgdoc_load(path, &d);
    for (int i = 2; rc == SIM_OK && i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!val) {
            rc = SIM_ERROR(SIM_EINVAL, "option '%s' needs a value", opt);
        } else if (strcmp(opt, "--set") == 0) {
            rc = sim_cfgdoc_set(d, val);
        } else if (strcmp(opt, "--rate") == 0) {
            rate = strtod(val, &end);
            if (*end || !(rate > 0) || rate > 1e9)
                rc = SIM_ERROR(SIM_EINVAL, "--rate '%s'; expected a rate > 0 (requests/s)", val);
        } else if (strcmp(opt, "--seed") == 0) {
            seed = strtoull(val, &end, 10);
            if (*end || val[0] == '-')
                rc = SIM_ERROR(SIM_EINVAL, "--seed '%s'; expected an integer >= 0", val);
        } else if (strcmp(opt, "--requests") == 0) {
            max = strtoull(val, &end, 10);
            if (*end || val[0] == '-' || max == 0)
                rc = SIM_ERROR(SIM_EINVAL, "--requests '%s'; expected an integer >= 1", val);
        } else if (strcmp(opt, "--block-size") == 0) {
            block = strtol(val, &end, 10);
            if (*end || block < 1 || block > 4096)
                rc = SIM_ERROR(SIM_EINVAL, "--block-size '%s'; expected 1..4096 tokens", val);
        } else {
            rc = SIM_ERROR(SIM_EINVAL, "unknown option '%s' for 'workload describe'; expected "
                           "--set, --rate, --seed, --requests or --block-size", opt);
        }
        i++;
    }
    wl_config wl = {0};
    if (rc == SIM_OK)
        rc = wl_config_bind(d, &wl);
    sim_cfgdoc_destroy(d);
    if (rc == SIM_OK)
        rc = exp_workload_describe(&wl, seed, rate, max, (uint32_t)block, stdout);
    wl_config_fini(&wl);
    return rc ? fail(rc) : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return SIM_EXIT_BADINPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "report") == 0)
        return exp_report_main(argc - 2, argv + 2);
    if (strcmp(cmd, "plot") == 0)
        return exp_plot_main(argc - 2, argv + 2);
    if (strcmp(cmd, "calibrate") == 0) {
        int rc = exp_calib_main(argc - 2, argv + 2);
        return rc ? fail(rc) : 0;
    }
    if (strcmp(cmd, "regime") == 0) {
        int rc = exp_regime_main(argc - 2, argv + 2, stdout);
        return rc ? fail(rc) : 0;
    }
    if (strcmp(cmd, "plan") == 0) {
        int rc = exp_plan_main(argc - 2, argv + 2, stdout);
        return rc ? fail(rc) : 0;
    }
    if (strcmp(cmd, "merge") == 0) {
        int rc = exp_merge_main(argc - 2, argv + 2);
        return rc ? fail(rc) : 0;
    }
    if (strcmp(cmd, "workload") == 0)
        return cmd_workload(argc - 2, argv + 2);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("crsim %s\n", CRSIM_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc >= 3 && strcmp(argv[2], "config") == 0) {
            exp_config_help(stdout);
            return 0;
        }
        if (argc >= 3 && strcmp(argv[2], "policies") == 0) {
            route_list(stdout);
            return 0;
        }
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "crsim: unknown command '%s'; expected run, report, plot, merge, plan, calibrate, regime, workload, help or version (crsim --help)\n",
            cmd);
    return SIM_EXIT_BADINPUT;
}
