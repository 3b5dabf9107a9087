/*
 * Field scenario (c) of issue 14: an unhealthy worker that fails fast.
 * A worker answering every request with an immediate error (a crashed
 * model server behind a live HTTP front, a 5xx loop) completes requests at
 * once, so the gateway's own in-flight count for it stays 0: it looks like
 * the least-loaded worker of the cluster.  crsim's engines cannot fail, so
 * the scenario drives the real routers (route_type.route) with a
 * gateway-side model of the cluster: 8 workers, one request every 10 ms
 * with a unique 64-block prompt (1,024 tokens, single turn), a healthy
 * worker answers 6 s after dispatch (FIFO completions), the broken one
 * (destination 7) at once; the in-flight counts are the gateway's
 * (route_view.outstanding).  600 s of arrivals.
 *
 * Asserts what each router does with the broken worker's share:
 *  - sglang_cache_aware: nothing matches, so the smallest tree wins (round
 *    robin here) and the healthy workers reach ~75 in flight; then the
 *    balance gate (max - min > 64 and max > 1.5 min, with min = 0 always)
 *    fires and sends requests to the "least loaded" worker — the broken
 *    one — whenever a healthy worker is above 64: it takes > 0.2 of all
 *    requests (measured 0.252), double the 1/8 of the same router with the
 *    gate off (balance_abs_threshold 1e6: exactly 1/8);
 *  - aibrix_prefix: nothing matches, so every request takes the
 *    least-requests fallback, and the broken worker always has the fewest:
 *    it takes > 98 % (measured 0.988; the gate, max > 2 (mean + 1), never
 *    fires: one worker at 0 cannot pull the mean below max / 2);
 *  - flat_lb (power of two choices on in-flight): the broken worker wins
 *    exactly when it is drawn, 1 - C(7,2)/C(8,2) = 1/4 of the requests
 *    (within 0.01): bounded damage, the closed form;
 *  - sticky (load-blind hashing): 1/8 (within 0.02; measured 0.112).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/routers/route.h"
#include "sim/core/error.h"
#include "check.h"

#define R 8
#define BROKEN 7
#define BS 16
#define NB 64
#define GAP_S 0.01
#define SERVICE_S 6.0
#define DURATION_S 600.0

static double share_broken(const char *name, const char *yaml)
{
    const route_type *t = route_find(name);
    CHECK(t);
    route_config *c = NULL;
    CHECK_INT_EQ(route_config_parse(yaml, "test_scenario_gate", &c), SIM_OK);
    route_env env = {.n_dest = R, .seed = 7, .block_size = BS, .batch_tokens = 8192,
                     .pool_blocks = 100000, .ttft_slo_s = 2};
    void *s = calloc(1, t->state_size);
    const void *args[ROUTE_MAX_READS];
    route_config_args(c, t, args);
    CHECK_INT_EQ(t->create(s, &env, args), SIM_OK);

    const size_t n = (size_t)(DURATION_S / GAP_S);
    uint32_t load[R] = {0};
    uint32_t *qd = malloc(n * sizeof *qd); /* FIFO of healthy dispatches */
    double *qt = malloc(n * sizeof *qt);
    size_t qh = 0, qn = 0, to_broken = 0;
    uint64_t blocks[NB];
    for (size_t k = 0; k < n; k++) {
        const double now = (double)k * GAP_S;
        while (qh < qn && qt[qh] <= now)
            load[qd[qh++]]--;
        uint64_t parent = 0;
        for (uint32_t j = 0; j < NB; j++)
            parent = blocks[j] = wl_block_hash(parent, (uint64_t)k * 1000003 + j);
        wl_request r = {.id = k, .arrival_s = now, .key = blocks[0], .prompt_tokens = NB * BS,
                        .output_tokens = 128, .n_blocks = NB, .blocks = blocks};
        route_view v = {.n_dest = R, .outstanding = load, .now_s = now};
        const uint32_t d = t->route(s, &r, &v);
        CHECK(d < R);
        if (d == BROKEN) {
            to_broken++; /* fails at once: never in flight */
        } else {
            load[d]++;
            qd[qn] = d;
            qt[qn++] = now + SERVICE_S;
        }
    }
    free(qd);
    free(qt);
    if (t->destroy)
        t->destroy(s);
    free(s);
    route_config_free(c);
    const double sh = (double)to_broken / (double)n;
    printf("%-20s %-60s broken worker's share %.4f\n", name, yaml, sh);
    return sh;
}

int main(void)
{
    const char *def = "router: {}";
    /* The gate doubles the broken worker's share (measured 0.252) over
     * the same router with the gate off, which is round robin by tree size
     * here (exactly 1/8). */
    CHECK(share_broken("sglang_cache_aware", def) > 0.2);
    CHECK_NEAR(share_broken("sglang_cache_aware",
                            "router: {sglang_cache_aware: {balance_abs_threshold: 1000000}}"),
               0.125, 0.002);
    CHECK(share_broken("aibrix_prefix", def) > 0.98); /* measured 0.988 */
    CHECK_NEAR(share_broken("flat_lb", def), 0.25, 0.01); /* measured 0.249 */
    CHECK_NEAR(share_broken("sticky", def), 0.125, 0.02); /* measured 0.112 */
    printf("scenario_gate: ok\n");
    return 0;
}
