/*
 * Arrival processes for synthetic workloads: the gaps between consecutive
 * requests of the whole stream, scaled to a target mean request rate.
 * Three renewal-style processes are offered — Poisson, Gamma renewal with a
 * target coefficient of variation, and a circular moving-block bootstrap of
 * a recorded inter-arrival series (e.g. the Azure LLM conversation trace) —
 * plus the CSV reader that turns a recorded trace into that series.  Each
 * process draws only from the generator it is given (the caller passes
 * PCG stream (run seed, SIM_STREAM_ARRIVALS)), so arrival times never
 * depend on key choice, lengths or the router.
 */
#ifndef CRSIM_WORKLOADS_ARRIVALS_H
#define CRSIM_WORKLOADS_ARRIVALS_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "sim/core/xenum.h"

/* Arrival-process kinds (workload.arrival.process), defined once
 * (X-macro, sim/core/xenum.h): X(constant, name).  The order is the enum value;
 * append only.
 *   POISSON    exponential gaps, CV 1
 *   GAMMA      Gamma(shape 1/CV², scale CV²/rate) gaps
 *   BOOTSTRAP  circular moving-block bootstrap of a series */
#define WL_ARRIVAL_KINDS(X) \
    X(WL_ARRIVAL_POISSON, poisson) X(WL_ARRIVAL_GAMMA, gamma) X(WL_ARRIVAL_BOOTSTRAP, bootstrap)

/* WL_ARRIVAL_N is the number of kinds. */
enum wl_arrival_kind { WL_ARRIVAL_KINDS(SIM_XENUM_CONST) WL_ARRIVAL_N };

/* Names of the kinds by enum wl_arrival_kind (from WL_ARRIVAL_KINDS),
 * NULL-terminated; the choices of workload.arrival.process. */
extern const char *const wl_arrival_kind_names[];

/* Parse "poisson", "gamma" or "bootstrap" into *out.  Returns SIM_OK or
 * SIM_EINVAL ("unknown arrival process 'X'; expected one of: poisson,
 * gamma, bootstrap"); *out unchanged on error. */
int wl_arrival_kind_parse(const char *name, enum wl_arrival_kind *out);

/* Name of a kind; "?" for an invalid value.  Cannot fail. */
const char *wl_arrival_kind_name(enum wl_arrival_kind k);

/*
 * A recorded inter-arrival series: `n` gaps in seconds (>= 0, finite), in
 * recorded order.  Plain data owned by the struct (free with
 * wl_iat_series_fini).
 */
typedef struct wl_iat_series {
    size_t n;
    double *gap_s;
} wl_iat_series;

/*
 * Read arrival times from column `column` (matched case-sensitively against
 * the header line, e.g. "TIMESTAMP") of the CSV at `path` and store the
 * n − 1 gaps between consecutive rows.  A cell is either a number of
 * seconds ("12.5") or a civil date-time "YYYY-MM-DD HH:MM:SS[.fffffffff]"
 * (UTC, as in AzureLLMInferenceTrace_*.csv, "2023-11-16 18:15:46.6805900");
 * date-times are converted to integer nanoseconds before differencing, so
 * the 100 ns resolution of the Azure trace survives.  If `as_gaps` is
 * nonzero the column already holds gaps (seconds, >= 0) and is copied.
 * Fields are split at commas; quoting is not supported (the traces have
 * none).  Returns SIM_OK; SIM_EIO (cannot open/read); SIM_EINVAL with
 * "PATH:LINE: what; expected FORM" for an empty file, a header without
 * `column`, a row with fewer fields than the header, a cell that is neither
 * a number nor a date-time, a hexadecimal number, a day that does not
 * exist (2023-02-30: "PATH:LINE: '...' in column 'T' names a day that does
 * not exist"), numbers and date-times mixed in one column (the message
 * names the line of the other form), a negative, NaN or infinite value, a
 * time earlier than the previous row's, or fewer than 2 gaps in total;
 * SIM_ENOMEM.  Years 0000-9999 are all accepted: a gap is taken in integer
 * nanoseconds within ±292 years and in double seconds beyond.  On error
 * *out is zeroed.
 */
int wl_iat_load_csv(const char *path, const char *column, int as_gaps, wl_iat_series *out);

/* Free the series and zero it.  Accepts NULL.  Cannot fail. */
void wl_iat_series_fini(wl_iat_series *s);

/* Mean of the gaps (s) and lag-`lag` sample autocorrelation of a series of
 * n values (0 if undefined).  Cannot fail. */
double wl_series_mean(const double *x, size_t n);
double wl_series_autocorr(const double *x, size_t n, size_t lag);

/* Parameters of an arrival process. */
typedef struct wl_arrival_params {
    enum wl_arrival_kind kind;
    double rate;                /* target mean rate, requests/s (> 0) */
    double cv;                  /* GAMMA: target CV of the gaps (> 0) */
    const wl_iat_series *series;/* BOOTSTRAP: recorded gaps (copied) */
    size_t block_len;           /* BOOTSTRAP: block length, gaps (>= 1) */
} wl_arrival_params;

typedef struct wl_arrivals wl_arrivals;

/*
 * Create an arrival process.  POISSON draws gaps with gsl_ran_exponential
 * (mean 1/rate s).  GAMMA draws gsl_ran_gamma(r, a, b) with shape
 * a = 1/CV² and scale b = CV²/rate, so the mean gap is a·b = 1/rate and the
 * CV is 1/√a = CV (CV = 1 is Poisson; CV > 1 is bursty).  BOOTSTRAP copies
 * the series rescaled so its mean gap is 1/rate, then emits blocks of
 * `block_len` consecutive gaps, each starting at an index uniform over the
 * whole series (pcg bounded draw) and wrapping around its end: the
 * circular block bootstrap of Politis & Romano (1992), a moving-block
 * bootstrap whose wrap-around gives every gap the same inclusion
 * probability, so the expected mean gap is exactly 1/rate (the plain
 * moving-block bootstrap under-samples both ends).  Dependence shorter than
 * a block is kept; at the joins it is lost, so the lag-1 autocorrelation
 * shrinks by about (L − 1)/L.  block_len larger than the series is clamped
 * to the series length.
 * `r` is not owned and must outlive the process (it should be of type
 * sim_rng_pcg32; any GSL generator works for the continuous draws, but the
 * bootstrap's block starts need sim_rng_pcg).
 * Returns SIM_OK; SIM_EINVAL (rate not finite and > 0; CV not finite and
 * > 0 for GAMMA: "gamma arrival CV 0; expected a CV > 0 (shape = 1/CV²)";
 * no series or block_len = 0 for BOOTSTRAP; an all-zero series); SIM_ENOMEM.
 */
int wl_arrivals_create(const wl_arrival_params *p, gsl_rng *r, wl_arrivals **out);

/* Next gap, seconds (>= 0).  Cannot fail. */
double wl_arrivals_next(wl_arrivals *a);

/* Free.  Accepts NULL.  Cannot fail. */
void wl_arrivals_destroy(wl_arrivals *a);

#endif
