/*
 * libFuzzer target: the Mooncake JSONL trace reader (workloads/mooncake.c)
 * through wl_mooncake_load on a file holding the input, 512 tokens per
 * hash id.  Checks: an error is one line starting with the path, saying
 * what was expected (I/O errors aside), and leaves *out alone; a loaded
 * trace keeps the documented invariants (lengths >= 1, one id per started
 * block, contiguous id offsets, non-decreasing times) and every routing
 * key can be computed.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/core/error.h"
#include "workloads/mooncake.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", fz_write("trace.jsonl", data, size));
    wl_trace sentinel, *t = &sentinel;
    int rc = wl_mooncake_load(path, WL_MOONCAKE_BLOCK_TOKENS, &t);
    if (rc) {
        fz_check_error(rc, path, rc == SIM_EINVAL);
        if (t != &sentinel)
            fz_fail("*out changed on error");
        return 0;
    }
    if (t->n < 1 || t->block_tokens != WL_MOONCAKE_BLOCK_TOKENS || strcmp(t->path, path) != 0)
        fz_fail("loaded trace header");
    size_t off = 0;
    for (size_t i = 0; i < t->n; i++) {
        const wl_trace_req *r = &t->reqs[i];
        if (r->input_tokens < 1 || r->output_tokens < 1)
            fz_fail("a length below 1 token");
        if (r->n_ids != (r->input_tokens + (uint64_t)WL_MOONCAKE_BLOCK_TOKENS - 1) /
                            WL_MOONCAKE_BLOCK_TOKENS)
            fz_fail("n_ids is not ceil(input_tokens / block)");
        if (r->ids_off != off)
            fz_fail("id offsets not contiguous");
        off += r->n_ids;
        if (!(r->t_s >= 0) || !isfinite(r->t_s) || (i && r->t_s < t->reqs[i - 1].t_s))
            fz_fail("arrival times negative or decreasing");
        (void)wl_trace_routing_key(t, i, 2);
        (void)wl_trace_routing_key(t, i, 40);
    }
    if (off != t->n_ids_total)
        fz_fail("n_ids_total");
    if (!isfinite(wl_trace_span_s(t)) || !isfinite(wl_trace_mean_rate(t)))
        fz_fail("span or rate not finite");
    wl_trace_destroy(t);
    return 0;
}
