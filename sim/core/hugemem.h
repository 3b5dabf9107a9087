/*
 * Large zeroed tables on transparent huge pages.
 *
 * A table of at least SIM_HUGE_BYTES (2 MiB, the x86-64 huge page) is an
 * anonymous mapping (zero-filled by the kernel, no memset) whose start is
 * 2-MiB aligned and whose length is rounded up to whole 2-MiB pages,
 * advised with madvise(MADV_HUGEPAGE) (Linux; honoured when
 * /sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise").
 * Two effects, both on speed only: a first touch faults in 2 MiB at once
 * instead of 4 KiB (far fewer page faults for a table filled front to
 * back, such as a trace's block-hash table), and random probes of a large
 * index hit the TLB instead of walking the page tables.  Contents and
 * results never depend on it.  Smaller tables, other systems or a failed
 * mapping: an ordinary calloc.
 */
#ifndef CRSIM_SIM_HUGEMEM_H
#define CRSIM_SIM_HUGEMEM_H

#include <stddef.h>

#define SIM_HUGE_BYTES ((size_t)2 << 20)

/* `bytes` of zeroed memory (bytes > 0), or NULL if out of memory.  Free
 * it with sim_huge_free() and the same `bytes`; the caller owns it. */
void *sim_huge_alloc(size_t bytes);

/* Free memory from sim_huge_alloc(bytes).  Accepts NULL. */
void sim_huge_free(void *p, size_t bytes);

#endif
