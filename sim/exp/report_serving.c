/*
 * The serving metrics of `crsim report` (docs/report.md, "Serving
 * metrics"): per (point, policy) at the report rate, the means over seeds
 * of the run_metrics columns exp__serving_cols, and the capacity under
 * the experiment's joint SLO (exp_store_joint_capacity_rows).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "sim/exp/report_int.h"

const char *const exp__serving_cols[EXP_SERVING_COLS] = {
    "ttft_mean", "ttft_p50", "ttft_p90", "ttft_p99", "tpot_mean", "tpot_p50", "tpot_p90",
    "tpot_p99", "itl_mean",  "itl_p50",  "itl_p90",  "itl_p99",  "e2e_mean", "e2e_p50",
    "e2e_p90",  "e2e_p99",   "throughput_rps", "output_tps", "goodput_rps",
};

static bool same_rate(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* The cell of (point, policy), or NULL. */
static exp__rep_cell *find_cell(exp__report *r, int64_t point, const char *policy)
{
    for (size_t p = 0; p < r->n_points; p++)
        if (r->points[p].point == point)
            for (size_t c = 0; c < r->points[p].n_cells; c++)
                if (strcmp(r->points[p].cells[c].policy, policy) == 0)
                    return &r->points[p].cells[c];
    return NULL;
}

/* The load entry of `cell` at `rate` and its slot (its place in the
 * report's cells and loads, in order), or NULL. */
static exp__rep_load *find_load(const exp__report *r, exp__rep_cell *cell, double rate,
                                size_t *slot)
{
    size_t base = 0;
    for (size_t p = 0; p < r->n_points; p++)
        for (size_t c = 0; c < r->points[p].n_cells; c++) {
            exp__rep_cell *x = &r->points[p].cells[c];
            if (x == cell)
                for (size_t l = 0; l < x->n_loads; l++)
                    if (same_rate(x->loads[l].load_rps, rate)) {
                        *slot = base + l;
                        return &x->loads[l];
                    }
            base += x->n_loads;
        }
    return NULL;
}

int exp__report_serving_load(exp_store *db, exp__report *r)
{
    int rc = SIM_OK;
    /* Per (cell, load): sums and counts of the serving columns, indexed
     * by the load's place among all the report's loads. */
    size_t n_slots = 0;
    for (size_t p = 0; p < r->n_points; p++)
        for (size_t c = 0; c < r->points[p].n_cells; c++)
            n_slots += r->points[p].cells[c].n_loads;
    size_t *load_n = sim_xcalloc((n_slots ? n_slots : 1) * EXP_SERVING_COLS, sizeof *load_n);
    for (size_t p = 0; p < r->n_points; p++)
        for (size_t c = 0; c < r->points[p].n_cells; c++)
            for (size_t l = 0; l < r->points[p].cells[c].n_loads; l++)
                for (size_t k = 0; k < EXP_SERVING_COLS; k++)
                    r->points[p].cells[c].loads[l].serving[k] = 0;
    /* Means over the seeds at the report rate and at every load: NaN
     * (undefined) values are left out, +Inf (unfinished requests in a
     * percentile) is kept and makes the mean +Inf. */
    for (size_t b = 0; b < EXP_SERVING_COLS && rc == SIM_OK; b += EXP_STORE_RUN_COLS) {
        const size_t nb = EXP_SERVING_COLS - b < EXP_STORE_RUN_COLS ? EXP_SERVING_COLS - b
                                                                    : EXP_STORE_RUN_COLS;
        exp_store_run *runs = NULL;
        size_t n_runs = 0;
        if ((rc = exp_store_read_runs(db, r->id, exp__serving_cols + b, nb, &runs, &n_runs)))
            break;
        for (size_t i = 0; i < n_runs; i++) {
            const exp_store_run *sr = &runs[i];
            if (sr->interrupted || !sr->has_metrics)
                continue;
            size_t slot;
            exp__rep_cell *cell = find_cell(r, sr->point, sr->policy);
            exp__rep_load *e = cell ? find_load(r, cell, sr->rate_rps, &slot) : NULL;
            for (size_t k = 0; e && k < nb; k++)
                if (!isnan(sr->v[k])) {
                    e->serving[b + k] += sr->v[k];
                    load_n[slot * EXP_SERVING_COLS + b + k]++;
                }
            if (!cell || !same_rate(sr->rate_rps, r->rate_rps))
                continue;
            for (size_t k = 0; k < nb; k++)
                if (!isnan(sr->v[k])) {
                    cell->serving[b + k] += sr->v[k];
                    cell->serving_n[b + k]++;
                }
        }
        exp_store_runs_free(runs, n_runs);
    }
    size_t slot = 0;
    for (size_t p = 0; p < r->n_points; p++)
        for (size_t c = 0; c < r->points[p].n_cells; c++) {
            exp__rep_cell *cell = &r->points[p].cells[c];
            for (size_t k = 0; k < EXP_SERVING_COLS; k++)
                cell->serving[k] = cell->serving_n[k]
                                       ? cell->serving[k] / (double)cell->serving_n[k]
                                       : NAN;
            r->has_goodput |= cell->serving_n[EXP_SERVING_COLS - 1] > 0;
            for (size_t l = 0; l < cell->n_loads; l++, slot++)
                for (size_t k = 0; k < EXP_SERVING_COLS; k++) {
                    const size_t m = load_n[slot * EXP_SERVING_COLS + k];
                    cell->loads[l].serving[k] = m ? cell->loads[l].serving[k] / (double)m : NAN;
                }
        }
    free(load_n);
    if (rc)
        return rc;
    /* The joint SLO's capacities, per (point, policy) over seeds. */
    exp_capacity_row *rows = NULL;
    size_t n = 0;
    if ((rc = exp_store_joint_capacity_rows(db, r->id, &r->joint, &rows, &n)))
        return rc;
    exp_capacity *tmp = sim_xmalloc((n + 1) * sizeof *tmp);
    for (size_t p = 0; p < r->n_points; p++)
        for (size_t c = 0; c < r->points[p].n_cells; c++) {
            exp__rep_cell *cell = &r->points[p].cells[c];
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (rows[i].point == r->points[p].point &&
                    strcmp(rows[i].policy, cell->policy) == 0)
                    tmp[k++] = rows[i].cap;
            exp_capacity_aggregate(tmp, k, &cell->joint);
        }
    free(tmp);
    exp_capacity_rows_free(rows, n);
    return SIM_OK;
}
