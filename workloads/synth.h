/*
 * The synthetic business-key workload as a lazy request stream (wl_source).
 * Each key has a shared prefix (its business context / system prompt) and
 * a few open conversations; a request is global prefix + key prefix +
 * the conversation's history (every earlier turn's input and output) + new
 * input, with chained block hashes so that identical prefixes match exactly
 * and nothing else does.  Arrival gaps, key choice, lengths and rate drift
 * each draw from their own PCG stream of the run seed, and the key
 * population from the workload seed, so a given (workload, run seed, rate)
 * yields one identical stream for every router (common random numbers).
 * The token-level structure is documented in docs/workloads.md.
 */
#ifndef CRSIM_WORKLOADS_SYNTH_H
#define CRSIM_WORKLOADS_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "workloads/keyrates.h"
#include "workloads/request.h"
#include "workloads/wl_config.h"

/*
 * Build the key-rate vector a synthetic config describes, before any run
 * seed: the population (lognormal/zipf drawn or fitted with the workload
 * seed `cfg->seed`, or the CSV file), share cap, active set (top
 * keys.active_set keys, renormalised), then whales.  Rates are relative
 * and sum to 1.  If `theta` is not NULL it receives the shape parameter
 * used (σ or s; the fitted one when keys.fit_gini > 0; NaN for a file).
 * The caller frees *out with wl_keyrates_fini.  Returns SIM_OK or the
 * errors of the keyrates.h constructors (SIM_EINVAL, SIM_EIO, SIM_ENOMEM).
 */
int wl_synth_keys(const wl_config *cfg, wl_keyrates *out, double *theta);

typedef struct wl_synth wl_synth;

/*
 * Prepare the synthetic stream of `cfg` (type synthetic; it is read only
 * during the call) for run seed `run_seed`, target mean request rate
 * `rate` (requests/s, > 0) and engine KV block size `block_size` (tokens,
 * >= 1).  Streams: arrivals (run_seed, SIM_STREAM_ARRIVALS), key and
 * conversation choice (run_seed, SIM_STREAM_KEYS), per-turn lengths and
 * turns per conversation (run_seed, SIM_STREAM_LENGTHS), drift
 * (run_seed, SIM_STREAM_DRIFT); the population and each key's prefix length
 * depend on cfg->seed only.  Reads keys.file and arrival.iat_file if used.
 * Cost: O(keys) for the population (O(keys · 40) when fitting), plus an
 * O(active keys) alias table.  The caller destroys *out with
 * wl_synth_destroy.  Returns SIM_OK; SIM_EINVAL (a config that is not
 * synthetic or fails wl_config_check, rate or block size out of range, or
 * the errors of the key-rate and arrival constructors, each naming the
 * file and line where one is involved); SIM_EIO; SIM_ENOMEM.  On error
 * *out is NULL and nothing is left allocated.
 */
int wl_synth_create(const wl_config *cfg, uint64_t run_seed, double rate, uint32_t block_size,
                    wl_synth **out);

/*
 * As wl_synth_create(), but with the key population already built: `keys`
 * must be what wl_synth_keys(cfg, keys, &theta) returned for this `cfg`
 * (relative rates summing to 1; copied, not kept), and `theta` its shape
 * parameter.  The stream is then identical to wl_synth_create()'s, without
 * redrawing (and refitting) the population for every run: a sweep builds
 * it once per point (sim/setup.c; ~70 ms for 128,824 fitted keys).  With
 * keys == NULL this is wl_synth_create().  Same errors.
 */
int wl_synth_create_keys(const wl_config *cfg, const wl_keyrates *keys, double theta,
                         uint64_t run_seed, double rate, uint32_t block_size, wl_synth **out);

/* Free the generator and everything it owns (not requests already
 * produced).  Accepts NULL.  Cannot fail. */
void wl_synth_destroy(wl_synth *s);

/*
 * Produce the next request into *out: id (from 0), arrival time (s, non-
 * decreasing), key (the key id), prompt and output tokens, and the chained
 * hashes of the prompt's full blocks (freshly allocated, owned by the
 * caller: free with wl_request_fini).  Returns 1, or 0 once max_requests
 * requests were produced or the next arrival would fall after duration_s.
 * Returns -SIM_ENOMEM (message set) when the request's block list cannot
 * be allocated; the generator may then only be destroyed.
 */
int wl_synth_next(wl_synth *s, wl_request *out);

/*
 * Advance to the next arrival only: *arrival_s (s) receives the arrival
 * time the next wl_synth_next call would have given, under the same end
 * rule (max_requests, duration_s), without drawing its key, lengths or
 * block hashes.  Arrival times come from their own stream
 * (SIM_STREAM_ARRIVALS, sim/core/rng.h) and never from the key or length
 * streams, so the sequence of arrival times is exactly that of
 * wl_synth_next.  For the harness's measurement-window scan (the warm-up
 * by time, count or share: sim/exp/setup.c exp_setup_window), where only
 * arrival times count.  After this call the generator's key and length
 * streams are behind its arrivals: it may then only be advanced with
 * wl_synth_next_arrival or destroyed.  Returns 1, or 0 at the end.
 * Cannot fail.
 */
int wl_synth_next_arrival(wl_synth *s, double *arrival_s);

/* The generator as a wl_source for cluster_run (state = s; `s` must
 * outlive the source).  Cannot fail. */
wl_source wl_synth_source(wl_synth *s);

/* The current key rates (requests/s, summing to the target rate; they
 * change at drift steps).  Owned by `s`.  Cannot fail. */
const wl_keyrates *wl_synth_rates(const wl_synth *s);

/* Drift steps applied so far.  Cannot fail. */
uint64_t wl_synth_epoch(const wl_synth *s);

/* Shape parameter used for the population (see wl_synth_keys). */
double wl_synth_theta(const wl_synth *s);

/*
 * One step of the per-key log-normal random walk: rate[i] ← rate[i] ·
 * exp(σ·Z_i), Z_i ~ N(0,1) drawn in index order with gsl_ran_gaussian from
 * `r`, then all rates rescaled so their sum is unchanged (the offered load
 * stays at the target; only the mix drifts — so the usual −σ²/2 mean
 * correction would cancel and is omitted).  Cannot fail.
 */
void wl_drift_step(double *rate, size_t n, double sigma, gsl_rng *r);

#endif
