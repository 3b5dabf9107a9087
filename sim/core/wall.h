/*
 * Wall-clock time for progress reports, ETAs and telemetry of how long a
 * computation took (never for simulated time, which is the event queue's,
 * and never as a seed).  One monotonic clock for the whole tree, so that
 * durations from different modules compare.
 */
#ifndef CRSIM_SIM_WALL_H
#define CRSIM_SIM_WALL_H

/* Seconds on the monotonic clock (CLOCK_MONOTONIC) since an arbitrary
 * origin fixed for the process; only differences are meaningful.
 * Resolution nanoseconds.  Cannot fail (returns 0 if the clock is
 * unavailable, which POSIX systems do not allow). */
double sim_wall_s(void);

#endif
