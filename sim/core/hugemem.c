/*
 * Large zeroed tables on transparent huge pages (sim/core/hugemem.h).
 */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE (glibc <sys/mman.h>) */
#include "sim/core/hugemem.h"

#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(MADV_HUGEPAGE) && defined(MAP_ANONYMOUS)
#define SIM_HUGE_MAP 1
static size_t rounded(size_t bytes)
{
    return (bytes + SIM_HUGE_BYTES - 1) / SIM_HUGE_BYTES * SIM_HUGE_BYTES;
}
#endif

void *sim_huge_alloc(size_t bytes)
{
#ifdef SIM_HUGE_MAP
    if (bytes >= SIM_HUGE_BYTES && bytes <= SIZE_MAX - 2 * SIM_HUGE_BYTES) {
        const size_t len = rounded(bytes);
        /* One huge page more than needed, then the unaligned ends cut off. */
        char *p = mmap(NULL, len + SIM_HUGE_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        const size_t lead = (SIM_HUGE_BYTES - (uintptr_t)p % SIM_HUGE_BYTES) % SIM_HUGE_BYTES;
        if (lead)
            munmap(p, lead);
        if (SIM_HUGE_BYTES - lead)
            munmap(p + lead + len, SIM_HUGE_BYTES - lead);
        (void)madvise(p + lead, len, MADV_HUGEPAGE); /* advice only */
        return p + lead;
    }
#endif
    return calloc(1, bytes ? bytes : 1);
}

void sim_huge_free(void *p, size_t bytes)
{
    if (!p)
        return;
#ifdef SIM_HUGE_MAP
    if (bytes >= SIM_HUGE_BYTES && bytes <= SIZE_MAX - 2 * SIM_HUGE_BYTES) {
        munmap(p, rounded(bytes));
        return;
    }
#endif
    free(p);
}
