/*
 * The number reader of every text number crsim takes outside YAML's own
 * scalars' typing (command-line options, CSV fields, fault events, fit
 * bounds, ...): decimal only, range-checked in the value's own type
 * (issue 38 C9).  strtod alone would also take hexadecimal ("0x10" = 16,
 * "0x1p3" = 8), "inf", "nan" and "infinity", and a range checked in
 * double lets 2^53 + 1 pass a bound of 2^53.
 *
 * Grammar (YAML 1.2 core schema float, without .inf/.nan):
 *   [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
 * Integers: [-+]?[0-9]+ (no sign for sim_num_u64 except '+').
 */
#ifndef CRSIM_SIM_NUMBER_H
#define CRSIM_SIM_NUMBER_H

#include <stdbool.h>
#include <stdint.h>

/* Whether `s` (NUL-terminated, nothing around it) is a decimal number in
 * the grammar above.  Cannot fail. */
bool sim_num_is_decimal(const char *s);

/* Read decimal number `s` into *v: true if it is in the grammar, finite
 * (an overflow to infinity is refused; an underflow to a denormal or 0 is
 * kept, so that a printed denormal reads back) and in [lo, hi].  On false
 * *v is unchanged.  Cannot fail. */
bool sim_num_real(const char *s, double lo, double hi, double *v);

/* Read decimal integer `s` into *v: true if it matches [-+]?[0-9]+ and
 * lo <= value <= hi, compared as int64 (no rounding through double).  On
 * false *v is unchanged.  Cannot fail. */
bool sim_num_i64(const char *s, int64_t lo, int64_t hi, int64_t *v);

/* As sim_num_i64 for unsigned values: [+]?[0-9]+, value <= hi. */
bool sim_num_u64(const char *s, uint64_t hi, uint64_t *v);

#endif
