/*
 * The closed-loop client section of `crsim report` (docs/clients.md,
 * docs/report.md): one row per stage of every run (for sessions,
 * concurrency and burst runs the whole run is one stage) with the metrics
 * the benchmark tools print, then the SLO capacity of closed-loop
 * experiments with the throughput achieved at it.
 *
 * SLO capacity here: for a load sweep (sessions, concurrency, burst), the
 * capacity search of docs/design.md §8 over the tested loads (rates or
 * concurrencies), and the achieved requests/s of that seed's run at its
 * capacity load; for a stage ladder, per run, the highest stage load,
 * in ladder order, whose stage SLO holds at every stage up to it
 * (stage p99 of the SLO metric's family <= the threshold), with that
 * stage's achieved requests/s.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/exp/report_int.h"

static void num(char *b, size_t n, double x, const char *fmt)
{
    if (isnan(x))
        snprintf(b, n, "-");
    else if (isinf(x))
        snprintf(b, n, "inf");
    else
        snprintf(b, n, fmt, x);
}

/* Achieved requests/s of the run (point, policy, seed) at load `rate`,
 * stage 0, or NaN. */
static double tput_at(const exp__report *r, int64_t point, const char *policy, int64_t seed,
                      double rate)
{
    for (size_t i = 0; i < r->n_stages; i++) {
        const exp_store_stage_row *g = &r->stages[i];
        if (g->point == point && g->seed == seed && g->stage == 0 && g->rate_rps == rate &&
            strcmp(g->policy, policy) == 0)
            return g->throughput_rps;
    }
    return NAN;
}

/* Stage ladder: per run (rows i0 .. i1 of one run, in stage order), the
 * highest stage load whose stage p99 holds the SLO at every stage up to
 * it; *tput its throughput; *all whether every stage held.  NaN when the
 * first stage fails. */
static double ladder_capacity(const exp__report *r, size_t i0, size_t i1, double slo,
                              bool e2e, double *tput, bool *all)
{
    double cap = NAN;
    *tput = NAN;
    *all = true;
    for (size_t i = i0; i < i1; i++) {
        const exp_store_stage_row *g = &r->stages[i];
        const double m = e2e ? g->e2e_p99 : g->ttft_p99;
        if (!(m <= slo)) {
            *all = false;
            break;
        }
        cap = g->load;
        *tput = g->throughput_rps;
    }
    return cap;
}

/* One past the last stage row of the ladder run that starts at row i0
 * (rows of one point, policy, seed and load are consecutive). */
static size_t ladder_end(const exp__report *r, size_t i0)
{
    const exp_store_stage_row *a = &r->stages[i0];
    size_t i1 = i0 + 1;
    while (i1 < r->n_stages && r->stages[i1].point == a->point &&
           r->stages[i1].seed == a->seed && r->stages[i1].rate_rps == a->rate_rps &&
           strcmp(r->stages[i1].policy, a->policy) == 0)
        i1++;
    return i1;
}

void exp__report_print_clients(const exp__report *r, bool markdown, FILE *out)
{
    if (!r->n_stages)
        return;
    const char *sep = markdown ? " | " : "  ";
    if (markdown)
        fprintf(out, "## Clients: per-stage metrics (%s)\n\n", r->stages[0].mode);
    else
        fprintf(out, "Clients: per-stage metrics (mode %s)\n", r->stages[0].mode);
    static const char *const head[] = {"policy", "load", "seed", "stage", "stage load",
                                       "sent", "done", "req/s", "out tok/s", "hit%",
                                       "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99",
                                       "ITL p50", "ITL p99", "E2E p99", "TTFT p99 int",
                                       "abandoned"};
    const size_t nh = sizeof head / sizeof head[0];
    static const int w[] = {18, 8, 5, 5, 12, 7, 7, 8, 10, 6, 9, 9, 9, 9, 9, 9, 9, 12, 9};
    if (markdown)
        fputs("| ", out);
    for (size_t c = 0; c < nh; c++)
        fprintf(out, "%s%-*s", c ? sep : "", markdown ? 0 : w[c], head[c]);
    fputs(markdown ? " |\n" : "\n", out);
    if (markdown) {
        fputs("|", out);
        for (size_t c = 0; c < nh; c++)
            fputs("---|", out);
        fputs("\n", out);
    }
    for (size_t i = 0; i < r->n_stages; i++) {
        const exp_store_stage_row *g = &r->stages[i];
        char v[19][40];
        snprintf(v[0], 40, "%s", g->policy);
        num(v[1], 40, g->rate_rps, "%g");
        snprintf(v[2], 40, "%lld", (long long)g->seed);
        snprintf(v[3], 40, "%lld", (long long)g->stage);
        snprintf(v[4], 40, "%g %s", g->load,
                 strcmp(g->load_kind, "rate") == 0 ? "rps"
                 : strcmp(g->load_kind, "concurrency") == 0 ? "conc" : "batch");
        snprintf(v[5], 40, "%lld", (long long)g->sent);
        snprintf(v[6], 40, "%lld", (long long)g->completed);
        num(v[7], 40, g->throughput_rps, "%.2f");
        num(v[8], 40, g->output_tps, "%.0f");
        num(v[9], 40, 100 * g->hit_rate, "%.1f");
        num(v[10], 40, g->ttft_p50, "%.3f");
        num(v[11], 40, g->ttft_p99, "%.3f");
        num(v[12], 40, g->tpot_p50, "%.4f");
        num(v[13], 40, g->tpot_p99, "%.4f");
        num(v[14], 40, g->itl_p50, "%.4f");
        num(v[15], 40, g->itl_p99, "%.4f");
        num(v[16], 40, g->e2e_p99, "%.3f");
        num(v[17], 40, g->ttft_p99_intended, "%.3f");
        snprintf(v[18], 40, "%lld", (long long)g->abandoned);
        if (markdown)
            fputs("| ", out);
        for (size_t c = 0; c < nh; c++)
            fprintf(out, "%s%-*s", c ? sep : "", markdown ? 0 : w[c], v[c]);
        fputs(markdown ? " |\n" : "\n", out);
    }
    fputs("\n", out);
    /* SLO capacity with the throughput it achieved. */
    const bool ladder = strcmp(r->stages[0].mode, "stages") == 0;
    const bool e2e = strncmp(r->slo_metric, "e2e", 3) == 0;
    if (markdown)
        fprintf(out, "## Clients: SLO capacity (%s p99) and achieved requests/s\n\n",
                e2e ? "E2E" : "TTFT");
    else
        fprintf(out, "Clients: SLO capacity (%s; %s) and the requests/s achieved there\n",
                ladder ? "highest stage whose stage p99 holds, stages in ladder order"
                       : "highest tested load whose SLO holds at every load up to it",
                ladder ? (e2e ? "E2E p99" : "TTFT p99") : r->slo_metric);
    if (markdown)
        fputs("| policy | seed | SLO (s) | capacity | req/s there |\n|---|---|---|---|---|\n",
              out);
    else
        fprintf(out, "%-18s  %5s  %7s  %12s  %11s\n", "policy", "seed", "SLO s", "capacity",
                "req/s there");
    if (ladder) {
        for (size_t i0 = 0; i0 < r->n_stages;) {
            const size_t i1 = ladder_end(r, i0);
            const exp_store_stage_row *a = &r->stages[i0];
            for (size_t s = 0; s < r->n_slos; s++) {
                double tput;
                bool all;
                const double cap = ladder_capacity(r, i0, i1, r->slos[s], e2e, &tput, &all);
                char c[40], t[40];
                num(c, 40, cap, "%g");
                num(t, 40, tput, "%.2f");
                if (markdown)
                    fprintf(out, "| %s | %lld | %g | %s | %s |\n", a->policy,
                            (long long)a->seed, r->slos[s], c, t);
                else
                    fprintf(out, "%-18s  %5lld  %7g  %12s  %11s\n", a->policy,
                            (long long)a->seed, r->slos[s], c, t);
            }
            i0 = i1;
        }
    } else {
        for (size_t i = 0; i < r->n_cap_rows; i++) {
            const exp_capacity_row *c = &r->cap_rows[i];
            char cs[40], t[40];
            const double cap = c->cap.capacity_rps;
            if (c->cap.censoring == EXP_CENS_LEFT)
                snprintf(cs, 40, "< %g", c->cap.lowest_rps);
            else if (c->cap.censoring == EXP_CENS_RIGHT)
                snprintf(cs, 40, ">= %g", c->cap.highest_rps);
            else
                num(cs, 40, cap, "%g");
            num(t, 40, isnan(cap) ? NAN : tput_at(r, c->point, c->policy, c->seed, cap),
                "%.2f");
            if (markdown)
                fprintf(out, "| %s | %lld | %g | %s | %s |\n", c->policy, (long long)c->seed,
                        c->slo_s, cs, t);
            else
                fprintf(out, "%-18s  %5lld  %7g  %12s  %11s\n", c->policy, (long long)c->seed,
                        c->slo_s, cs, t);
        }
    }
    fputs("\n", out);
}

/* CSV number: empty when undefined, "inf", else %.10g (as report.c). */
static void cnum(double x, FILE *out)
{
    fputc(',', out);
    if (isinf(x))
        fputs(x > 0 ? "inf" : "-inf", out);
    else if (!isnan(x))
        fprintf(out, "%.10g", x);
}

static const char *const cens_name[] = {"none", "left", "right"};

void exp__report_print_client_caps_csv(const exp__report *r, FILE *out)
{
    const bool ladder = r->n_stages && strcmp(r->stages[0].mode, "stages") == 0;
    const bool e2e = strncmp(r->slo_metric, "e2e", 3) == 0;
    fputs("experiment_id,point,policy,seed,mode,slo_metric,slo_s,capacity,censoring,"
          "throughput_rps\n", out);
    if (ladder) {
        for (size_t i0 = 0; i0 < r->n_stages;) {
            const size_t i1 = ladder_end(r, i0);
            const exp_store_stage_row *a = &r->stages[i0];
            for (size_t s = 0; s < r->n_slos; s++) {
                double tput;
                bool all;
                const double cap = ladder_capacity(r, i0, i1, r->slos[s], e2e, &tput, &all);
                /* left: the first stage fails; right: every stage holds */
                const int cens = isnan(cap) ? 1 : all ? 2 : 0;
                fprintf(out, "%lld,%lld,%s,%lld,stages,%s", (long long)r->id,
                        (long long)a->point, a->policy, (long long)a->seed,
                        e2e ? "e2e_p99" : "ttft_p99");
                cnum(r->slos[s], out);
                cnum(cap, out);
                fprintf(out, ",%s", cens_name[cens]);
                cnum(tput, out);
                fputc('\n', out);
            }
            i0 = i1;
        }
        return;
    }
    for (size_t i = 0; i < r->n_cap_rows; i++) {
        const exp_capacity_row *c = &r->cap_rows[i];
        const double cap = c->cap.capacity_rps;
        fprintf(out, "%lld,%lld,%s,%lld,%s,%s", (long long)r->id, (long long)c->point,
                c->policy, (long long)c->seed, r->n_stages ? r->stages[0].mode : "",
                r->slo_metric);
        cnum(c->slo_s, out);
        cnum(cap, out);
        fprintf(out, ",%s", cens_name[c->cap.censoring]);
        cnum(isnan(cap) ? NAN : tput_at(r, c->point, c->policy, c->seed, cap), out);
        fputc('\n', out);
    }
}
