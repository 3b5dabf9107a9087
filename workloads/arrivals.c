/*
 * Arrival processes and the inter-arrival CSV reader (see arrivals.h).
 * The processes are tiny state machines over one GSL generator; the reader
 * parses civil date-times itself (days-from-civil, H. Hinnant's algorithm)
 * because strptime/timegm are neither C17 nor POSIX-2008 for the fractional
 * seconds the Azure trace carries.
 */
#include "workloads/arrivals.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "workloads/csv.h"
#include "workloads/internal.h"

const char *const wl_arrival_kind_names[] = {WL_ARRIVAL_KINDS(SIM_XENUM_NAME) NULL};

int wl_arrival_kind_parse(const char *name, enum wl_arrival_kind *out)
{
    int i, rc = wl__name_parse(wl_arrival_kind_names, "arrival process", name, &i);
    *out = rc ? *out : (enum wl_arrival_kind)i;
    return rc;
}

const char *wl_arrival_kind_name(enum wl_arrival_kind k)
{
    return (unsigned)k < (unsigned)WL_ARRIVAL_N ? wl_arrival_kind_names[k] : "?";
}

void wl_iat_series_fini(wl_iat_series *s)
{
    if (!s)
        return;
    free(s->gap_s);
    s->gap_s = NULL;
    s->n = 0;
}

double wl_series_mean(const double *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return n ? s / (double)n : 0;
}

double wl_series_autocorr(const double *x, size_t n, size_t lag)
{
    if (n <= lag + 1)
        return 0;
    double m = wl_series_mean(x, n), num = 0, den = 0;
    for (size_t i = 0; i < n; i++)
        den += (x[i] - m) * (x[i] - m);
    for (size_t i = 0; i + lag < n; i++)
        num += (x[i] - m) * (x[i + lag] - m);
    return den > 0 ? num / den : 0;
}

/* ------------------------------------------------------------------ */
/* CSV reader                                                         */
/* ------------------------------------------------------------------ */

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant,
 * "chrono-Compatible Low-Level Date Algorithms", days_from_civil). */
int64_t wl__days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int wl__digits(const char **p, int n, int64_t *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return 0;
        *v = *v * 10 + (**p - '0');
    }
    return 1;
}

/* Days in month m (1..12) of year y, proleptic Gregorian. */
int64_t wl__days_in_month(int64_t y, int64_t m)
{
    static const int8_t dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return dm[m - 1] + (m == 2 && leap);
}

/* A civil date-time as whole seconds since the epoch and the nanoseconds
 * within the second: two fields, because years 0000-9999 (all that four
 * digits can write) span ±2.5e11 s, more than int64 nanoseconds hold
 * (about ±292 years around 1970). */
typedef struct civil_time {
    int64_t s;   /* seconds since 1970-01-01 00:00:00 UTC */
    int64_t ns;  /* 0 .. 999999999 */
} civil_time;

/* Parse "YYYY-MM-DD HH:MM:SS[.f…]" (or 'T' as separator, an optional 'Z')
 * into *t.  Returns 1 on success, 0 if `s` is not such a date-time or names
 * a day that does not exist (2023-02-30, 2023-04-31); *bad_day is then set
 * to 1 for the latter, so the message can say so. */
static int parse_datetime(const char *s, civil_time *t, int *bad_day)
{
    int64_t y, mo, d, h, mi, se;
    const char *p = s;
    *bad_day = 0;
    if (!wl__digits(&p, 4, &y) || *p++ != '-' || !wl__digits(&p, 2, &mo) || *p++ != '-' ||
        !wl__digits(&p, 2, &d) || (*p != ' ' && *p != 'T'))
        return 0;
    p++;
    if (!wl__digits(&p, 2, &h) || *p++ != ':' || !wl__digits(&p, 2, &mi) || *p++ != ':' ||
        !wl__digits(&p, 2, &se))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 60)
        return 0;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (isdigit((unsigned char)*p)) {
            if (nd < 9) {
                frac = frac * 10 + (*p - '0');
                nd++;
            }
            p++;
        }
        if (nd == 0)
            return 0;
        for (; nd < 9; nd++)
            frac *= 10;
    }
    if (*p == 'Z')
        p++;
    if (*p != '\0')
        return 0;
    if (d > wl__days_in_month(y, mo)) {
        *bad_day = 1;
        return 0;
    }
    t->s = wl__days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    t->ns = frac;
    return 1;
}

/* b − a in seconds.  Within ±2^63 ns (±292 years) the difference is taken
 * in integer nanoseconds and converted once, so the 100 ns resolution of
 * the Azure trace survives; farther apart (only possible with far-off
 * years) in double seconds. */
static double civil_diff_s(civil_time a, civil_time b)
{
    int64_t ds = b.s - a.s, dns = b.ns - a.ns; /* |ds| < 6e11: no overflow */
    if (ds > -9000000000LL && ds < 9000000000LL)
        return (double)(ds * 1000000000LL + dns) * 1e-9;
    return (double)ds + (double)dns * 1e-9;
}

int wl_iat_load_csv(const char *path, const char *column, int as_gaps, wl_iat_series *out)
{
    *out = (wl_iat_series){0};
    wl_csv *csv;
    int rc = wl_csv_open(path, "inter-arrival file", 0, &csv);
    if (rc)
        return rc;
    size_t n = 0, alloc = 0, col = 0, nf;
    int have_header = 0, have_prev = 0, prev_numeric = 0;
    double *gaps = NULL, prev_s = 0;
    civil_time prev_t = {0};
    long prev_line = 0;
    const char *form = as_gaps ? "a gap in seconds >= 0"
                               : "seconds >= 0 or YYYY-MM-DD HH:MM:SS[.fff], non-decreasing";
    while ((rc = wl_csv_next(csv, &nf)) == SIM_OK && nf > 0) {
        long lineno = wl_csv_line(csv);
        if (!have_header) {
            size_t i = 0;
            while (i < nf && strcmp(wl_csv_field(csv, i), column) != 0)
                i++;
            if (i == nf) {
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: header has no column '%s'; expected a CSV "
                               "header naming it", path, lineno, column);
                break;
            }
            col = i;
            have_header = 1;
            continue;
        }
        const char *cell = wl_csv_field(csv, col);
        if (!cell) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: row has no field for column '%s'; expected %s",
                           path, lineno, column, form);
            break;
        }
        double v;
        int numeric = wl__parse_decimal(cell, &v), bad_day = 0;
        civil_time ct = {0};
        if (!numeric && (as_gaps || !parse_datetime(cell, &ct, &bad_day))) {
            if (bad_day)
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: '%s' in column '%s' names a day that does "
                               "not exist; expected %s", path, lineno, cell, column, form);
            else
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: '%s' in column '%s' is not a %s; expected "
                               "%s", path, lineno, cell, column,
                               as_gaps ? "decimal number" : "time", form);
            break;
        }
        if (numeric && (!(v >= 0) || !isfinite(v))) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: %s in column '%s'; expected %s", path, lineno,
                           cell, column, form);
            break;
        }
        double gap = 0;
        int emit = 1;
        if (!as_gaps && have_prev && numeric != prev_numeric) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: '%s' mixes numeric and date-time times (line "
                           "%ld has a %s); expected one form throughout", path, lineno, cell,
                           prev_line, prev_numeric ? "number" : "date-time");
            break;
        }
        if (as_gaps) {
            gap = v;
        } else if (!have_prev) {
            emit = 0;
        } else if (numeric) {
            gap = v - prev_s;
        } else {
            gap = civil_diff_s(prev_t, ct);
        }
        if (!as_gaps) {
            if (have_prev && gap < 0) {
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: time '%s' is earlier than the previous "
                               "row's; expected %s", path, lineno, cell, form);
                break;
            }
            have_prev = 1;
            prev_numeric = numeric;
            prev_line = lineno;
            prev_s = v;
            prev_t = ct;
        }
        if (!emit)
            continue;
        if (n == alloc) {
            alloc = alloc ? 2 * alloc : 4096;
            double *ng = realloc(gaps, alloc * sizeof *gaps);
            if (!ng) {
                rc = SIM_ERROR(SIM_ENOMEM, "%s: out of memory reading inter-arrivals", path);
                break;
            }
            gaps = ng;
        }
        gaps[n++] = gap;
    }
    wl_csv_close(csv);
    if (rc == SIM_OK && !have_header)
        rc = SIM_ERROR(SIM_EINVAL, "%s: empty file; expected a CSV header with column '%s' and "
                       "rows", path, column);
    else if (rc == SIM_OK && n < 2)
        rc = SIM_ERROR(SIM_EINVAL, "%s: %zu inter-arrival gap%s; expected at least 2", path, n,
                       n == 1 ? "" : "s");
    if (rc) {
        free(gaps);
        return rc;
    }
    *out = (wl_iat_series){.n = n, .gap_s = gaps};
    return SIM_OK;
}

/* ------------------------------------------------------------------ */
/* Processes                                                          */
/* ------------------------------------------------------------------ */

struct wl_arrivals {
    enum wl_arrival_kind kind;
    gsl_rng *r;
    double mean;        /* 1/rate, s */
    double shape, scale;/* GAMMA */
    double *gap;        /* BOOTSTRAP: rescaled series */
    size_t n, L, pos, left;
};

int wl_arrivals_create(const wl_arrival_params *p, gsl_rng *r, wl_arrivals **out)
{
    *out = NULL;
    if (!(p->rate > 0) || !isfinite(p->rate))
        return SIM_ERROR(SIM_EINVAL, "arrival rate %g; expected a finite rate > 0 (requests/s)",
                         p->rate);
    if (p->kind == WL_ARRIVAL_GAMMA && (!(p->cv > 0) || !isfinite(p->cv)))
        return SIM_ERROR(SIM_EINVAL, "gamma arrival CV %g (workload.arrival.cv); expected a "
                         "finite CV > 0 (shape = 1/CV^2)", p->cv);
    if (p->kind == WL_ARRIVAL_BOOTSTRAP && (!p->series || p->series->n == 0))
        return SIM_ERROR(SIM_EINVAL, "bootstrap arrivals need an inter-arrival series; expected "
                         "workload.arrival.iat_file");
    if (p->kind == WL_ARRIVAL_BOOTSTRAP && p->block_len == 0)
        return SIM_ERROR(SIM_EINVAL, "bootstrap block length 0 (workload.arrival.block_len); "
                         "expected at least 1 gap");
    if ((unsigned)p->kind >= (unsigned)WL_ARRIVAL_N)
        return SIM_ERROR(SIM_EINVAL, "unknown arrival process %d; expected one of: poisson, "
                         "gamma, bootstrap", (int)p->kind);
    wl_arrivals *a = calloc(1, sizeof *a);
    if (!a)
        return SIM_ERROR(SIM_ENOMEM, "out of memory creating arrivals");
    a->kind = p->kind;
    a->r = r;
    a->mean = 1.0 / p->rate;
    if (p->kind == WL_ARRIVAL_GAMMA) {
        a->shape = 1.0 / (p->cv * p->cv);
        a->scale = a->mean / a->shape;
    } else if (p->kind == WL_ARRIVAL_BOOTSTRAP) {
        a->n = p->series->n;
        a->gap = malloc(a->n * sizeof *a->gap);
        if (!a->gap) {
            free(a);
            return SIM_ERROR(SIM_ENOMEM, "out of memory creating arrivals");
        }
        double m = wl_series_mean(p->series->gap_s, a->n);
        if (!(m > 0) || !isfinite(m)) {
            free(a->gap);
            free(a);
            return SIM_ERROR(SIM_EINVAL, "inter-arrival series has mean gap %g s; expected a "
                             "positive finite mean", m);
        }
        for (size_t i = 0; i < a->n; i++)
            a->gap[i] = p->series->gap_s[i] * (a->mean / m);
        a->L = p->block_len < a->n ? p->block_len : a->n;
        SIM_ALWAYS(a->n <= UINT32_MAX);
    }
    *out = a;
    return SIM_OK;
}

double wl_arrivals_next(wl_arrivals *a)
{
    switch (a->kind) {
    case WL_ARRIVAL_POISSON:
        return gsl_ran_exponential(a->r, a->mean);
    case WL_ARRIVAL_GAMMA:
        return gsl_ran_gamma(a->r, a->shape, a->scale);
    case WL_ARRIVAL_BOOTSTRAP:
        if (a->left == 0) {
            a->pos = sim_pcg32_bounded(sim_rng_pcg(a->r), (uint32_t)a->n);
            a->left = a->L;
        }
        {
            double g = a->gap[a->pos];
            a->pos = (a->pos + 1 == a->n) ? 0 : a->pos + 1;
            a->left--;
            return g;
        }
    case WL_ARRIVAL_N: /* not a kind: wl_arrivals_create rejects it */
        break;
    }
    SIM_ALWAYS(0);
    return 0;
}

void wl_arrivals_destroy(wl_arrivals *a)
{
    if (!a)
        return;
    free(a->gap);
    free(a);
}
