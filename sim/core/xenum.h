/*
 * Callbacks for enum-and-name definition lists (X-macros).  A list is
 * written once as `#define LIST(X) X(CONSTANT, name) X(...)`, with the
 * full enum constant and the bare name; the enum and its NULL-terminated
 * name table are then generated from it, so the two cannot drift apart:
 *
 *   enum kind { LIST(SIM_XENUM_CONST) KIND_N };
 *   const char *const kind_names[] = {LIST(SIM_XENUM_NAME) NULL};
 *
 * The order of the list is the enum value; append only where the value is
 * stored (configs, databases).
 */
#ifndef CRSIM_SIM_XENUM_H
#define CRSIM_SIM_XENUM_H

#define SIM_XENUM_CONST(c, n) c,
#define SIM_XENUM_NAME(c, n) #n,

#endif
