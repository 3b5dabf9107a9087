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

int exp__report_serving_load(exp_store *db, exp__report *r)
{
    int rc = SIM_OK;
    /* Means over the seeds at the report rate: NaN (undefined) values are
     * left out, +Inf (unfinished requests in a percentile) is kept and
     * makes the mean +Inf. */
    for (size_t b = 0; b < EXP_SERVING_COLS && rc == SIM_OK; b += EXP_STORE_RUN_COLS) {
        const size_t nb = EXP_SERVING_COLS - b < EXP_STORE_RUN_COLS ? EXP_SERVING_COLS - b
                                                                    : EXP_STORE_RUN_COLS;
        exp_store_run *runs = NULL;
        size_t n_runs = 0;
        if ((rc = exp_store_read_runs(db, r->id, exp__serving_cols + b, nb, &runs, &n_runs)))
            break;
        for (size_t i = 0; i < n_runs; i++) {
            const exp_store_run *sr = &runs[i];
            if (sr->interrupted || !sr->has_metrics || !same_rate(sr->rate_rps, r->rate_rps))
                continue;
            exp__rep_cell *cell = find_cell(r, sr->point, sr->policy);
            for (size_t k = 0; cell && k < nb; k++)
                if (!isnan(sr->v[k])) {
                    cell->serving[b + k] += sr->v[k];
                    cell->serving_n[b + k]++;
                }
        }
        exp_store_runs_free(runs, n_runs);
    }
    for (size_t p = 0; p < r->n_points; p++)
        for (size_t c = 0; c < r->points[p].n_cells; c++) {
            exp__rep_cell *cell = &r->points[p].cells[c];
            for (size_t k = 0; k < EXP_SERVING_COLS; k++)
                cell->serving[k] = cell->serving_n[k]
                                       ? cell->serving[k] / (double)cell->serving_n[k]
                                       : NAN;
            r->has_goodput |= cell->serving_n[EXP_SERVING_COLS - 1] > 0;
        }
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
