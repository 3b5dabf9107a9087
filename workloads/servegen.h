/*
 * Reader for ServeGen per-client load traces (alibaba/ServeGen, data/
 * <category>/<model>/chunk-<N>-trace.csv): one CSV per client (tenant) of
 * one model, one row per 600 s window.  It turns a model's clients into a
 * key-rate vector (one key per client, its mean rate), optionally keeping
 * the per-window rates and inter-arrival CVs, so the real per-tenant skew
 * and burstiness of a production service can drive the synthetic
 * generator (write the vector with keys.distribution: file, or use it
 * directly).
 *
 * Row format (the published files have no header line; a first line that
 * starts with a letter is skipped as a header, so a user-added header is
 * accepted): `window_start_s, rate_rps, iat_cv, pattern, shape, scale` —
 * window start (s, integer-valued, >= 0, increasing), mean request rate in
 * the window (requests/s, >= 0), CV of inter-arrival times in the window
 * (>= 0), the fitted inter-arrival family ("Gamma", "Weibull", or empty for
 * an idle window) and its two parameters (>= 0).
 */
#ifndef CRSIM_WORKLOADS_SERVEGEN_H
#define CRSIM_WORKLOADS_SERVEGEN_H

#include <stddef.h>

#include "workloads/keyrates.h"

/*
 * One model's clients.  Client i is the file names[i]; files are ordered by
 * their chunk number (then by name), so client indices are stable.  Plain
 * data owned by the struct (free with wl_servegen_fini).
 */
typedef struct wl_servegen {
    size_t n_clients;
    size_t n_windows;     /* rows per client (all files must agree) */
    double window_s;      /* spacing of window starts, s (600 in the data; 0: one window) */
    double start_s;       /* start of the first window, s (0 in the data) */
    char **names;         /* file names (without directory) */
    double *mean_rate;    /* per client: mean of rate_rps over all windows, requests/s */
    double *rate;         /* keep_windows: n_clients × n_windows rates, row-major; else NULL */
    double *cv;           /* keep_windows: same layout, iat_cv (0 in idle windows); else NULL */
} wl_servegen;

/*
 * Load every "*.csv" in directory `dir` (one model's folder, e.g. the
 * extracted data/language/m-small) into *out.  With keep_windows nonzero
 * the per-window rates and CVs are kept too.  Returns SIM_OK; SIM_EIO (the
 * directory or a file cannot be read); SIM_EINVAL naming file and line:
 * "PATH:LINE: rate_rps 'x' is not a number; expected window_start_s,
 * rate_rps, iat_cv, pattern, shape, scale with numbers >= 0 and pattern
 * Gamma, Weibull or empty" for a row without six fields, a field that is
 * not a (decimal) number, a negative, NaN or infinite value, an unknown
 * pattern, a window start that is not a whole number of seconds below
 * 2^53, window starts that do not increase or are not evenly spaced (the
 * spacing of the file's first two); a file with no rows; files with
 * different row counts, first starts or spacings; rates whose sum (over a
 * client's windows, or of the clients' means) overflows; a directory
 * without CSV files; SIM_EIO also for a client file that is a FIFO or
 * device; SIM_ENOMEM.  On error *out is zeroed.
 */
int wl_servegen_load(const char *dir, int keep_windows, wl_servegen *out);

/* Free and zero.  Accepts NULL.  Cannot fail. */
void wl_servegen_fini(wl_servegen *sg);

/*
 * Key-rate vector of the clients: key id = client index, rate = mean rate
 * (requests/s).  Clients idle in every window (mean 0) are left out, since a
 * key needs a positive rate; *n_idle (if not NULL) receives their number.
 * With `window` < n_windows (and windows kept), use that window's rates
 * instead of the means (clients idle in it are left out).  Pass
 * (size_t)-1 for the means.  Returns SIM_OK; SIM_EINVAL (window out of
 * range or not kept, or every client idle); SIM_ENOMEM.
 */
int wl_servegen_keyrates(const wl_servegen *sg, size_t window, wl_keyrates *out,
                         size_t *n_idle);

#endif
