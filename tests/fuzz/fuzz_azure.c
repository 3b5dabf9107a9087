/* libFuzzer target: the Azure LLM inference 2023/2024 CSV reader
 * (workloads/trace_csv.c) through wl_trace_load with trace_format azure;
 * byte 0 chooses the other load options.  See fuzz_traceload.c. */
#define FZ_TRACE_FORMAT "azure"
#include "fuzz_traceload.c"
