/*
 * Benchmark (not a test): setup time of the synthetic generator for a
 * preset (by default the paper's 128,824-key population, with the Gini
 * fit) and its generation rate over 10^6 requests.  Prints wall-clock
 * figures; asserts nothing about them.
 * Usage: bench_workload PRESET.yaml [REQUESTS] [ACTIVE_SET] [BLOCK_SIZE]
 */
#include <stdio.h>
#include <stdlib.h>

#include "sim/core/error.h"
#include "workloads/synth.h"
#include "sim/core/wall.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PRESET.yaml [REQUESTS] [ACTIVE_SET] [BLOCK_SIZE]\n", argv[0]);
        return 2;
    }
    long long n = argc > 2 ? atoll(argv[2]) : 1000000;
    long long k = argc > 3 ? atoll(argv[3]) : 0;
    unsigned bs = argc > 4 ? (unsigned)atoi(argv[4]) : 16;
    wl_config cfg;
    if (wl_config_load(argv[1], &cfg)) {
        fprintf(stderr, "%s\n", sim_errmsg());
        return 2;
    }
    cfg.max_requests = n;
    cfg.duration_s = 0;
    cfg.keys.active_set = k;
    double t0 = sim_wall_s();
    wl_synth *s;
    if (wl_synth_create(&cfg, 1, 100.0, bs, &s)) {
        fprintf(stderr, "%s\n", sim_errmsg());
        return 2;
    }
    double t1 = sim_wall_s();
    wl_request r;
    unsigned long long blocks = 0, tokens = 0, got = 0;
    while (wl_synth_next(s, &r)) {
        blocks += r.n_blocks;
        tokens += r.prompt_tokens;
        got++;
        wl_request_fini(&r);
    }
    double t2 = sim_wall_s();
    printf("preset %s: %zu keys (population %lld%s), block %u tokens\n", argv[1],
           wl_synth_rates(s)->n, (long long)cfg.keys.n,
           cfg.keys.fit_gini > 0 ? ", Gini fit" : "", bs);
    printf("setup: %.3f s\n", t1 - t0);
    printf("generation: %llu requests in %.3f s = %.0f requests/s, %.1f M blocks/s "
           "(mean prompt %.0f tokens, %.0f blocks)\n", got, t2 - t1, (double)got / (t2 - t1),
           (double)blocks / (t2 - t1) / 1e6, (double)tokens / (double)got,
           (double)blocks / (double)got);
    wl_synth_destroy(s);
    wl_config_fini(&cfg);
    return 0;
}
