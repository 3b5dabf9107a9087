/*
 * The round-trip property shared by the two config targets: a config that
 * loads dumps to canonical YAML that loads again to the same canonical
 * text (docs/config.md: the stored config text is what a resumed run or a
 * rerun loads).
 */
#ifndef CRSIM_TESTS_FUZZ_ROUNDTRIP_H
#define CRSIM_TESTS_FUZZ_ROUNDTRIP_H

#include "sim/exp/exp.h"

/* Dump `cfg`, load the dump from a file named without a folder (the
 * process works in fz_dir() meanwhile, so paths in the dump resolve to
 * themselves), dump again and fz_fail unless both dumps are equal. */
void fz_roundtrip(const exp_config *cfg);

#endif
