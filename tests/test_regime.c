/*
 * The regime verdict rule on hand-made per-seed capacities: win only when
 * the ratio clears the tie band and the seed ranges do not overlap, lose
 * symmetrically, tie otherwise; censored capacities count at their bound.
 */
#include "sim/exp/regime.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    double r, lo, hi;
    /* Grid loads round-trip through "%g" text (the stored experiment.rates)
     * exactly: the hit@mid lookup matches rates exactly (issue 16). */
    CHECK(exp_regime_round_load(0.0411) == 0.0411);
    CHECK(exp_regime_round_load(0.20550000000000002) == 0.206);
    CHECK(exp_regime_round_load(143.25) == 143);
    for (int i = 1; i < 5000; i++) {
        double x = exp_regime_round_load(i * 0.0137);
        char b[32];
        snprintf(b, sizeof b, "%g", x);
        CHECK(strtod(b, NULL) == x);
    }
    /* Clear win: 150-160 vs 100-105. */
    exp_cap_interval c1[3] = {{150, 150}, {160, 160}, {155, 155}};
    exp_cap_interval b1[3] = {{100, 100}, {105, 105}, {102, 102}};
    CHECK_INT_EQ(exp_regime_verdict(c1, b1, 3, 0.1, &r, &lo, &hi), EXP_WIN);
    CHECK_NEAR(r, 465.0 / 307.0, 1e-12);
    /* Seeds are paired (same request stream): per-seed ratios 1.5,
     * 160/105 and 155/102. */
    CHECK_NEAR(lo, 1.5, 1e-12);
    CHECK_NEAR(hi, 160.0 / 105.0, 1e-12);
    /* Ratio above the band but overlapping seed ranges: tie. */
    exp_cap_interval c2[2] = {{200, 200}, {100, 100}};
    exp_cap_interval b2[2] = {{120, 120}, {110, 110}};
    CHECK_INT_EQ(exp_regime_verdict(c2, b2, 2, 0.1, &r, &lo, &hi), EXP_TIE);
    CHECK(r > 1.1);
    /* Within ±10 %: tie even without overlap. */
    exp_cap_interval c3[1] = {{105, 105}}, b3[1] = {{100, 100}};
    CHECK_INT_EQ(exp_regime_verdict(c3, b3, 1, 0.1, &r, &lo, &hi), EXP_TIE);
    CHECK_INT_EQ(exp_regime_verdict(c3, b3, 1, 0.01, &r, &lo, &hi), EXP_WIN);
    /* Lose. */
    CHECK_INT_EQ(exp_regime_verdict(b1, c1, 3, 0.1, &r, &lo, &hi), EXP_LOSE);
    /* Censoring: baseline left-censored below 30, candidate right-censored
     * at >= 200: a win with an open upper ratio bound. */
    exp_cap_interval c4[2] = {{200, INFINITY}, {200, INFINITY}};
    exp_cap_interval b4[2] = {{0, 30}, {0, 30}};
    CHECK_INT_EQ(exp_regime_verdict(c4, b4, 2, 0.1, &r, &lo, &hi), EXP_WIN);
    CHECK(isinf(hi));
    CHECK_NEAR(lo, 200.0 / 30.0, 1e-12);
    /* Both right-censored at the same highest load: tie. */
    exp_cap_interval c5[1] = {{200, INFINITY}}, b5[1] = {{200, INFINITY}};
    CHECK_INT_EQ(exp_regime_verdict(c5, b5, 1, 0.1, &r, &lo, &hi), EXP_TIE);
    CHECK(exp_verdict_name(EXP_WIN)[0] == 'w');
    puts("regime: ok");
    return 0;
}
