/*
 * The plan command: read rates, run the planner (models/routers/plan.c), report.
 */
#include "sim/exp/plan_cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/routers/plan.h"
#include "workloads/keyrates.h"
#include "sim/core/error.h"
#include "sim/core/wall.h"

int exp_plan_main(const exp_cli_args *args, FILE *out)
{
    /* The parser checked the four required options and their ranges. */
    const char *rates = exp_cli_str(args, "rates", NULL), *table = exp_cli_str(args, "out", NULL);
    int64_t r = exp_cli_int(args, "destinations", 1);
    double q = exp_cli_real(args, "q-cap", 0), w = exp_cli_real(args, "slots", 0);
    const char *placement = exp_cli_str(args, "placement", "lpt");
    plan_params p = {.placement = strcmp(placement, "hash") == 0 ? PLAN_HASH : PLAN_LPT,
                     .replicate = !exp_cli_has(args, "no-replicate"), .vnodes = 256};
    int rc;
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
    /* The loader rejects rates whose sum overflows; this guards the
     * report's shares (a non-finite total printed "total inf", "-nan%"). */
    if (!isfinite(total) || !(total > 0)) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: the %zu key rates sum to %g; expected rates with a "
                       "positive finite sum (requests/s)", rates, kr.n, total);
        free(keys);
        wl_names_free(names, kr.n);
        wl_keyrates_fini(&kr);
        return rc;
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
