/*
 * Helpers shared between files of the workloads module; not part of its
 * API (double-underscore names, STYLE.md §1).
 */
#ifndef CRSIM_WORKLOADS_INTERNAL_H
#define CRSIM_WORKLOADS_INTERNAL_H

/* Strip leading and trailing white space (isspace) of `s` in place;
 * returns the first non-space character.  Cannot fail.  (csv.c) */
char *wl__trim(char *s);

/* Index of `name` in the NULL-terminated `names` (an X-macro names list),
 * or -1 if it is not there or `name` is NULL.  Cannot fail.  (wl_config.c) */
int wl__name_index(const char *const names[], const char *name);

/* As wl__name_index, into *index; an unknown name is SIM_EINVAL "unknown
 * WHAT 'NAME'; expected one of: A, B, C" (*index unchanged).  (wl_config.c) */
int wl__name_parse(const char *const names[], const char *what, const char *name, int *index);

#endif
