/* libFuzzer target: compressed input (workloads/infile.c): the plain
 * bytes, then gzip and xz of them, through wl_trace_load must give the
 * same trace or both fail; see fuzz_traceload.c. */
#define FZ_TRACE_COMPRESSED 1
#include "fuzz_traceload.c"
