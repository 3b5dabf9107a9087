/*
 * ServeGen per-client CSV reader (see servegen.h).  Directory listing uses
 * POSIX opendir/readdir; the names are sorted by chunk number so that the
 * client order (and hence key ids) does not depend on the file system.
 */
#include "workloads/servegen.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/core/error.h"
#include "workloads/csv.h"
#include "workloads/internal.h"

static const char form[] = "expected window_start_s, rate_rps, iat_cv, pattern, shape, scale "
                           "with numbers >= 0 and pattern Gamma, Weibull or empty";

/* Chunk number of "chunk-12-trace.csv" (or -1). */
static long chunk_no(const char *name)
{
    const char *p = strstr(name, "chunk-");
    if (!p)
        return -1;
    char *end;
    long v = strtol(p + 6, &end, 10);
    return end == p + 6 ? -1 : v;
}

static int cmp_names(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    long cx = chunk_no(x), cy = chunk_no(y);
    if (cx != cy)
        return cx < cy ? -1 : 1;
    return strcmp(x, y);
}

void wl_servegen_fini(wl_servegen *sg)
{
    if (!sg)
        return;
    for (size_t i = 0; sg->names && i < sg->n_clients; i++)
        free(sg->names[i]);
    free(sg->names);
    free(sg->mean_rate);
    free(sg->rate);
    free(sg->cv);
    *sg = (wl_servegen){0};
}


/* Growable per-file buffers. */
typedef struct rows {
    double *rate, *cv, *start;
    size_t n, cap;
} rows;

static int read_file(const char *path, rows *r)
{
    r->n = 0;
    wl_csv *csv;
    int rc = wl_csv_open(path, "ServeGen trace", 0, &csv);
    if (rc)
        return rc;
    size_t nf;
    static const char *const names[6] = {"window_start_s", "rate_rps", "iat_cv",
                                         "pattern",        "shape",    "scale"};
    while ((rc = wl_csv_next(csv, &nf)) == SIM_OK && nf > 0) {
        long lineno = wl_csv_line(csv);
        if (r->n == 0 && lineno == 1 && isalpha((unsigned char)*wl_csv_field(csv, 0)))
            continue; /* header */
        if (nf != 6) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: %s%d field%s; %s", path, lineno,
                           nf > 6 ? "more than " : "", nf > 6 ? 6 : (int)nf, nf == 1 ? "" : "s",
                           form);
            break;
        }
        double v[6] = {0};
        for (int i = 0; i < 6 && rc == SIM_OK; i++) {
            const char *x = wl_csv_field(csv, i);
            if (i == 3) {
                if (*x && strcmp(x, "Gamma") != 0 && strcmp(x, "Weibull") != 0)
                    rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: pattern '%s'; %s", path, lineno, x,
                                   form);
                continue;
            }
            if (!wl__parse_decimal(x, &v[i]))
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: %s '%s' is not a %snumber; %s", path, lineno,
                               names[i], x, strpbrk(x, "xX") ? "decimal " : "", form);
            else if (!(v[i] >= 0) || !isfinite(v[i]))
                rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: %s %s; %s", path, lineno, names[i], x, form);
        }
        if (rc)
            break;
        if (v[0] != floor(v[0]) || v[0] > 9007199254740992.0) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: window_start_s %s is not a whole number of "
                           "seconds; expected integer window starts (s) below 2^53", path,
                           lineno, wl_csv_field(csv, 0));
            break;
        }
        if (r->n > 0 && !(v[0] > r->start[r->n - 1])) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: window_start_s %.17g does not follow %.17g; "
                           "expected increasing window starts", path, lineno, v[0],
                           r->start[r->n - 1]);
            break;
        }
        if (r->n > 1 && v[0] - r->start[r->n - 1] != r->start[1] - r->start[0]) {
            rc = SIM_ERROR(SIM_EINVAL, "%s:%ld: window_start_s %.17g is %.17g s after the "
                           "previous window, but the first two windows are %.17g s apart; "
                           "expected evenly spaced window starts", path, lineno, v[0],
                           v[0] - r->start[r->n - 1], r->start[1] - r->start[0]);
            break;
        }
        if (r->n == r->cap) {
            size_t nc = r->cap ? 2 * r->cap : 256;
            double *a = realloc(r->rate, nc * sizeof *a);
            if (a)
                r->rate = a;
            double *b = realloc(r->cv, nc * sizeof *b);
            if (b)
                r->cv = b;
            double *c = realloc(r->start, nc * sizeof *c);
            if (c)
                r->start = c;
            if (!a || !b || !c) {
                rc = SIM_ERROR(SIM_ENOMEM, "%s: out of memory", path);
                break;
            }
            r->cap = nc;
        }
        r->start[r->n] = v[0];
        r->rate[r->n] = v[1];
        r->cv[r->n] = v[2];
        r->n++;
    }
    wl_csv_close(csv);
    if (rc == SIM_OK && r->n == 0)
        rc = SIM_ERROR(SIM_EINVAL, "%s: no rows; %s", path, form);
    return rc;
}

int wl_servegen_load(const char *dir, int keep_windows, wl_servegen *out)
{
    *out = (wl_servegen){0};
    DIR *d = opendir(dir);
    if (!d)
        return SIM_ERROR(SIM_EIO, "%s: cannot open ServeGen folder: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = SIM_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".csv") != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = sim_xrealloc(names, cap * sizeof *names);
        }
        names[n++] = sim_xstrdup(e->d_name);
    }
    closedir(d);
    if (n == 0) {
        free(names);
        return SIM_ERROR(SIM_EINVAL, "%s: no .csv files; expected one ServeGen "
                         "chunk-N-trace.csv per client", dir);
    }
    qsort(names, n, sizeof *names, cmp_names);
    out->names = names;
    out->n_clients = n;
    out->mean_rate = calloc(n, sizeof *out->mean_rate);
    if (!out->mean_rate) {
        wl_servegen_fini(out);
        return SIM_ERROR(SIM_ENOMEM, "out of memory reading %s", dir);
    }
    rows r = {0};
    double total = 0; /* sum of the clients' mean rates, requests/s */
    size_t plen = strlen(dir) + 2;
    for (size_t i = 0; i < n && rc == SIM_OK; i++) {
        char *path = sim_xmalloc(plen + strlen(names[i]));
        snprintf(path, plen + strlen(names[i]), "%s/%s", dir, names[i]);
        rc = read_file(path, &r);
        if (rc == SIM_OK && i == 0) {
            out->n_windows = r.n;
            out->window_s = r.n > 1 ? r.start[1] - r.start[0] : 0;
            if (keep_windows) {
                out->rate = malloc(n * r.n * sizeof *out->rate);
                out->cv = malloc(n * r.n * sizeof *out->cv);
                if (!out->rate || !out->cv)
                    rc = SIM_ERROR(SIM_ENOMEM, "out of memory reading %s", dir);
            }
            out->start_s = r.start[0];
        } else if (rc == SIM_OK && r.n != out->n_windows) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: %zu rows but %s has %zu; expected every client of "
                           "a model to cover the same windows", path, r.n, names[0],
                           out->n_windows);
        } else if (rc == SIM_OK && (r.start[0] != out->start_s ||
                                    (r.n > 1 && r.start[1] - r.start[0] != out->window_s))) {
            rc = SIM_ERROR(SIM_EINVAL, "%s: windows start at %.17g s, %.17g s apart, but in %s "
                           "at %.17g s, %.17g s apart; expected every client of a model to "
                           "cover the same windows", path, r.start[0],
                           r.n > 1 ? r.start[1] - r.start[0] : 0.0, names[0], out->start_s,
                           out->window_s);
        }
        double s = 0;
        if (rc == SIM_OK) {
            for (size_t w = 0; w < r.n; w++)
                s += r.rate[w];
            total += s / (double)r.n;
            if (!isfinite(s) || !isfinite(total))
                rc = SIM_ERROR(SIM_EINVAL, "%s: rate_rps values sum to %g%s (the sum "
                               "overflows); expected rates whose sums are finite (requests/s)",
                               path, isfinite(s) ? total : s,
                               isfinite(s) ? " over the model's clients" : "");
        }
        if (rc == SIM_OK) {
            out->mean_rate[i] = s / (double)r.n;
            if (keep_windows) {
                memcpy(out->rate + i * r.n, r.rate, r.n * sizeof *r.rate);
                memcpy(out->cv + i * r.n, r.cv, r.n * sizeof *r.cv);
            }
        }
        free(path);
    }
    free(r.rate);
    free(r.cv);
    free(r.start);
    if (rc)
        wl_servegen_fini(out);
    return rc;
}

int wl_servegen_keyrates(const wl_servegen *sg, size_t window, wl_keyrates *out,
                         size_t *n_idle)
{
    *out = (wl_keyrates){0};
    const int per_window = window != (size_t)-1;
    if (per_window && (!sg->rate || window >= sg->n_windows))
        return SIM_ERROR(SIM_EINVAL, "ServeGen window %zu; expected a window below %zu of a "
                         "trace loaded with per-window rates", window, sg->n_windows);
    size_t k = 0;
    for (size_t i = 0; i < sg->n_clients; i++) {
        double v = per_window ? sg->rate[i * sg->n_windows + window] : sg->mean_rate[i];
        k += v > 0;
    }
    if (n_idle)
        *n_idle = sg->n_clients - k;
    if (k == 0)
        return SIM_ERROR(SIM_EINVAL, "every ServeGen client is idle%s; expected at least one "
                         "client with a positive rate", per_window ? " in this window" : "");
    out->rate = malloc(k * sizeof *out->rate);
    out->id = malloc(k * sizeof *out->id);
    if (!out->rate || !out->id) {
        wl_keyrates_fini(out);
        return SIM_ERROR(SIM_ENOMEM, "out of memory for ServeGen key rates");
    }
    for (size_t i = 0; i < sg->n_clients; i++) {
        double v = per_window ? sg->rate[i * sg->n_windows + window] : sg->mean_rate[i];
        if (v > 0) {
            out->rate[out->n] = v;
            out->id[out->n++] = i;
        }
    }
    wl_keyrates_sort(out);
    return SIM_OK;
}
