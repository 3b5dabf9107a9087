/*
 * The plan command: read rates, run the planner (models/plan.c), report.
 */
#include "sim/exp/plan_cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/plan.h"
#include "workloads/keyrates.h"
#include "sim/core/error.h"
#include "sim/core/wall.h"

static int parse_num(const char *opt, const char *v, double lo, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x) || !(x > lo))
        return SIM_ERROR(SIM_EINVAL, "%s '%s'; expected a number > %g", opt, v, lo);
    *out = x;
    return SIM_OK;
}

int exp_plan_main(int argc, char **argv, FILE *out)
{
    const char *rates = NULL, *table = NULL;
    double r = 0, q = 0, w = 0;
    plan_params p = {.placement = PLAN_LPT, .replicate = 1, .vnodes = 256};
    int rc = SIM_OK;
    for (int i = 0; i < argc && rc == SIM_OK; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-replicate") == 0) {
            p.replicate = 0;
            continue;
        }
        if (!v) {
            rc = SIM_ERROR(SIM_EINVAL, "option '%s' needs a value (crsim --help)", a);
            break;
        }
        i++;
        if (strcmp(a, "--rates") == 0)
            rates = v;
        else if (strcmp(a, "--out") == 0)
            table = v;
        else if (strcmp(a, "--destinations") == 0)
            rc = parse_num(a, v, 0, &r);
        else if (strcmp(a, "--q-cap") == 0)
            rc = parse_num(a, v, 0, &q);
        else if (strcmp(a, "--slots") == 0)
            rc = parse_num(a, v, 0, &w);
        else if (strcmp(a, "--placement") == 0) {
            if (strcmp(v, "lpt") == 0)
                p.placement = PLAN_LPT;
            else if (strcmp(v, "hash") == 0)
                p.placement = PLAN_HASH;
            else
                rc = SIM_ERROR(SIM_EINVAL, "--placement '%s'; expected lpt or hash", v);
        } else
            rc = SIM_ERROR(SIM_EINVAL, "unknown option '%s' for 'plan'; expected --rates, "
                           "--destinations, --q-cap, --slots, --placement, --no-replicate, "
                           "--out", a);
    }
    if (rc)
        return rc;
    if (!rates || !(r > 0) || !(q > 0) || !(w > 0))
        return SIM_ERROR(SIM_EINVAL, "crsim plan needs --rates FILE --destinations R --q-cap Q "
                         "--slots W; expected all four");
    if (r != floor(r) || r > 1e6)
        return SIM_ERROR(SIM_EINVAL, "--destinations %g; expected a whole number of "
                         "destinations", r);
    p.n_dest = (uint32_t)r;
    p.q_cap = q;
    p.slots = w;
    wl_keyrates kr;
    char **names = NULL;
    if ((rc = wl_keyrates_load_csv_names(rates, &kr, &names)))
        return rc;
    plan_key *keys = sim_xmalloc(kr.n * sizeof *keys);
    double total = 0;
    for (size_t i = 0; i < kr.n; i++) {
        keys[i] = (plan_key){kr.id[i], kr.rate[i]};
        total += kr.rate[i];
    }
    plan pl;
    const double t0 = sim_wall_s();
    rc = plan_build(keys, kr.n, &p, &pl);
    double ms = 1e3 * (sim_wall_s() - t0);
    if (rc == SIM_OK) {
        double mx = 0;
        for (uint32_t d = 0; d < pl.n_dest; d++)
            mx = fmax(mx, pl.load[d]);
        fprintf(out, "keys %zu, total %.6g requests/s; R = %u, q_cap = %g requests/s, W = %g "
                "-> C = %llu slots\n", kr.n, total, p.n_dest, q, w,
                (unsigned long long)pl.capacity);
        fprintf(out, "admitted %zu keys carrying %.1f%% of requests, sum k_b = %llu; cold tail "
                "%.6g requests/s\n", pl.n_admitted, total > 0 ? 100 * pl.admitted_rate / total : 0,
                (unsigned long long)pl.sum_k, pl.cold_rate);
        fprintf(out, "expected load per destination: max %.4g, mean %.4g requests/s, "
                "max/mean %.3f (%s placement%s)\n", mx, total / p.n_dest, plan_imbalance(&pl),
                p.placement == PLAN_LPT ? "LPT" : "hash", p.replicate ? "" : ", no replication");
        fprintf(out, "plan built in %.3f ms\n", ms);
        size_t show = pl.n_admitted < 10 ? pl.n_admitted : 10;
        if (show)
            fprintf(out, "\n%-24s %12s %5s  destinations\n", "key", "rate/s", "k_b");
        for (size_t a = 0; a < show; a++) {
            fprintf(out, "%-24s %12.6g %5u  ", names[pl.key[a]], pl.rate[a], pl.k[a]);
            for (uint32_t j = pl.off[a]; j < pl.off[a + 1]; j++)
                fprintf(out, "%s%u", j > pl.off[a] ? "," : "", pl.dest[j]);
            fputc('\n', out);
        }
        if (pl.n_admitted > show)
            fprintf(out, "... %zu more admitted keys\n", pl.n_admitted - show);
        if (table) {
            FILE *f = fopen(table, "w");
            if (!f) {
                rc = SIM_ERROR(SIM_EIO, "%s: cannot write the table: %s", table, strerror(errno));
            } else {
                fputs("key,rate_rps,k_b,destinations\n", f);
                for (size_t a = 0; a < pl.n_admitted; a++) {
                    fprintf(f, "%s,%.17g,%u,", names[pl.key[a]], pl.rate[a], pl.k[a]);
                    for (uint32_t j = pl.off[a]; j < pl.off[a + 1]; j++)
                        fprintf(f, "%s%u", j > pl.off[a] ? ";" : "", pl.dest[j]);
                    fputc('\n', f);
                }
                if (fclose(f) != 0)
                    rc = SIM_ERROR(SIM_EIO, "%s: write error", table);
                else
                    fprintf(out, "table written to %s\n", table);
            }
        }
    }
    plan_fini(&pl);
    free(keys);
    wl_names_free(names, kr.n);
    wl_keyrates_fini(&kr);
    return rc;
}
