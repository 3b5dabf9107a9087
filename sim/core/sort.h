/*
 * Stable sort of (key, value) pairs of u64 by key: an LSD radix sort, 8
 * bits a pass, passes whose digit is the same in every key skipped.
 * O(n) per pass, at most 8 passes, no comparisons: for the end-of-run
 * grouping of request records by routing key (models/cluster.c,
 * fairness), where libc's qsort (a merge sort through a comparison
 * callback) was 3 % of a flagship run's instructions.  Stable: pairs of
 * equal keys keep their input order, so pairs given in increasing value
 * come out in (key, value) order, as qsort by (key, value) gives.
 * Radix sort: Knuth, TAOCP vol. 3, 5.2.5.
 */
#ifndef CRSIM_SIM_SORT_H
#define CRSIM_SIM_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sort the n pairs pair[2i] (key), pair[2i+1] (value) by key, stably.
 * tmp: caller's scratch of 2 * n u64 (contents clobbered).  Cannot fail. */
void sim_sort_pairs_u64(uint64_t *pair, size_t n, uint64_t *tmp);

#endif
