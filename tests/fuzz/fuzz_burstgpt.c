/* libFuzzer target: the BurstGPT CSV reader (workloads/trace_csv.c)
 * through wl_trace_load with trace_format burstgpt; byte 0 chooses the
 * other load options.  See fuzz_traceload.c. */
#define FZ_TRACE_FORMAT "burstgpt"
#include "fuzz_traceload.c"
