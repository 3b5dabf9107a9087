/*
 * SIM_PREFETCH(p): ask the CPU to start loading the cache line at `p`
 * (GCC and Clang __builtin_prefetch; a no-op elsewhere).  A hint only: it
 * never faults and changes no result.  Used by the loops over a request's
 * blocks whose tables are too large for the caches (router indexes, the
 * diagnostic's LRU tables), which issue the loads of later blocks early so
 * that their misses overlap (docs/performance.md).
 *
 * SIM_PREFETCH_W(p): the same with the intent to write (the line is
 * fetched for ownership, so the store that follows does not wait for a
 * second transaction).
 */
#ifndef CRSIM_SIM_PREFETCH_H
#define CRSIM_SIM_PREFETCH_H

#if defined(__GNUC__) || defined(__clang__)
#define SIM_PREFETCH(p) __builtin_prefetch(p)
#define SIM_PREFETCH_W(p) __builtin_prefetch((p), 1)
#else
#define SIM_PREFETCH(p) ((void)(p))
#define SIM_PREFETCH_W(p) ((void)(p))
#endif

#endif
