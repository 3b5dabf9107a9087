/*
 * CSV request traces without block hashes, loaded into the wl_trace of
 * workloads/mooncake.h so that replay, time scaling and every router work
 * on them unchanged (docs/trace-replay.md, "Other formats").
 *
 *   azure     Azure LLM inference traces (Azure/AzurePublicDataset,
 *             AzureLLMInferenceTrace_{conv,code}.csv of 2023 and the 2024
 *             week-long release): header TIMESTAMP,ContextTokens,
 *             GeneratedTokens; TIMESTAMP a UTC date-time
 *             "2023-11-16 18:15:46.6805900" (2023, 100 ns digits) or
 *             "2024-05-10 00:00:00.009930+00:00" (2024, a UTC offset).
 *             Arrival t_s = seconds since the first row (integer ns
 *             differences, so the 100 ns digits survive).
 *   burstgpt  BurstGPT (HPMLL/BurstGPT, data/BurstGPT_*.csv): header
 *             Timestamp,Model,Request tokens,Response tokens,Total tokens,
 *             Log Type; Timestamp in seconds from the start of the trace
 *             (a decimal number).  Rows whose Response tokens are 0 are
 *             the failed requests the BurstGPT README describes.
 * Columns are found by header name (any order, extra columns allowed).
 * Rows with 0 prompt or 0 output tokens are skipped and counted
 * (wl_trace.n_skipped); every other defect is an error.
 */
#ifndef CRSIM_WORKLOADS_TRACE_CSV_H
#define CRSIM_WORKLOADS_TRACE_CSV_H

#include <stdint.h>

#include "workloads/mooncake.h"

/*
 * Load CSV trace `path` of `format` ("azure" or "burstgpt") with
 * `key_column` ("" = none: every request its own key) and synthetic ids
 * of `block_tokens` tokens, per_key-shared over the first `prefix_tokens`
 * tokens (0 = no reuse); see wl_trace_load for the key and id rules.
 * Returns SIM_OK; SIM_EIO (cannot open or read); SIM_EINVAL with
 * "PATH:LINE: what; expected form" for an empty file, a header lacking a
 * column the format needs (or key_column), a row with a missing field, a
 * time that is not a date-time (azure) or a decimal number >= 0
 * (burstgpt), a time earlier than the previous row's, a token count that
 * is not an integer in 0..2^32-1, or no usable row; SIM_ENOMEM.  On error
 * *out is unchanged.
 */
int wl_trace_csv_load(const char *path, const char *format, const char *key_column,
                      uint32_t block_tokens, uint64_t prefix_tokens, wl_trace **out);

/*
 * Parse a civil UTC date-time "YYYY-MM-DD HH:MM:SS[.fffffffff][Z|+HH:MM|-HH:MM]"
 * ('T' may replace the space) into whole seconds since 1970-01-01 UTC and
 * nanoseconds (0..999999999), the offset subtracted.  Days are checked
 * against their month (2023-02-29 is rejected).  Returns 1, or 0 if `s` is
 * not such a time.  Cannot fail otherwise.
 */
int wl_trace_parse_datetime(const char *s, int64_t *sec, int64_t *nsec);

#endif
