/*
 * The per-block reference of the global prefix index (tests/pfxidx_ref.c):
 * the functions of sim/core/pfxidx.h under the prefix pfxidx_ref_, with
 * the same arguments, semantics, ownership and errors.  For tests only.
 */
#ifndef CRSIM_TESTS_PFXIDX_REF_H
#define CRSIM_TESTS_PFXIDX_REF_H

#include <stdint.h>

typedef struct pfxidx_ref pfxidx_ref;

pfxidx_ref *pfxidx_ref_create(uint32_t capacity, uint32_t n_dest);
void pfxidx_ref_destroy(pfxidx_ref *x);
void pfxidx_ref_expire(pfxidx_ref *x, double before);
uint32_t pfxidx_ref_match(const pfxidx_ref *x, const uint64_t *h, uint32_t n, uint32_t d);
void pfxidx_ref_add(pfxidx_ref *x, const uint64_t *h, uint32_t n, uint32_t d, double now);
uint32_t pfxidx_ref_size(const pfxidx_ref *x);

#endif
