/*
 * Status codes and the single error funnel of crsim.
 *
 * Every fallible function returns an int from enum sim_status.  Errors are
 * created only through SIM_ERROR / sim_error(), which formats a user-facing
 * message into a per-thread buffer (read back with sim_errmsg()) and returns
 * the code, so one breakpoint on sim_error catches every failure.  The
 * per-thread buffer is the one piece of file-scope mutable state in crsim; it
 * is _Thread_local for the same reason errno is, so parallel runs on several
 * threads never see each other's messages.
 *
 * Invariant violations inside the kernel are bugs, not errors: they go
 * through SIM_ALWAYS(), which aborts with the source file and line.
 */
#ifndef CRSIM_SIM_ERROR_H
#define CRSIM_SIM_ERROR_H

#include <stddef.h>

/* Status codes.  SIM_OK is success; every other value is an error. */
enum sim_status {
    SIM_OK = 0,   /* success */
    SIM_EINVAL,   /* bad input: config, spec, trace or command line */
    SIM_ENOMEM,   /* an allocation failed */
    SIM_EIO,      /* a file could not be opened, read or written */
    SIM_EDB,      /* the SQLite result store reported an error */
    SIM_EINTR     /* interrupted by a signal; partial results are marked */
};

/* Exit status of the command-line tool for bad input (docs/design.md §14). */
#define SIM_EXIT_BADINPUT 2

/*
 * Record an error and return its code.  `fmt` and the arguments form the
 * user-facing message, which must name the file and line (or key path) of
 * the bad input and the expected form.  `src_file`/`src_line` are the C
 * source location, kept for debugging (printed by sim_errsrc()).
 * Control characters in the formatted message (bytes below 0x20 and 0x7f,
 * e.g. a newline inside a YAML key the user wrote) are stored escaped as
 * \n, \r, \t or \xHH, so every message is one line; other bytes are kept.
 * A message whose escaped text exceeds the 1 KiB buffer keeps its first
 * 660 and last 320 bytes around " [... N bytes cut ...] ", so that a long
 * quoted value cannot cut off the expected form at its end.
 * Returns `code`.  Cannot fail.
 */
int sim_error(int code, const char *src_file, int src_line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Record an error with the caller's source location and return its code. */
#define SIM_ERROR(code, ...) sim_error((code), __FILE__, __LINE__, __VA_ARGS__)

/* The message of the last error recorded on this thread ("" if none).
 * The string is owned by crsim and valid until the next sim_error() call on
 * this thread.  Cannot fail. */
const char *sim_errmsg(void);

/* "file.c:123" of the last error recorded on this thread.  Cannot fail. */
const char *sim_errsrc(void);

/* Short name of a status code ("EINVAL", ...).  Cannot fail. */
const char *sim_strstatus(int code);

/* Abort with file and line: used for violated kernel invariants. */
void sim_panic(const char *src_file, int src_line, const char *what)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

/* SIM_ALWAYS(cond): `cond` must hold; if not, the program aborts naming
 * the condition, file and line.  Active in every build type. */
#define SIM_ALWAYS(cond) \
    ((cond) ? (void)0 : sim_panic(__FILE__, __LINE__, #cond))

/*
 * What an aborting allocator (sim_xmalloc, sim_xcalloc, sim_xrealloc,
 * sim_xstrdup) does when memory runs out.  Without a hook it aborts
 * (sim_panic).  A harness that must leave its outputs consistent installs
 * one hook: the first allocation failure in any thread then prints
 * "crsim: out of memory" to stderr, calls fn(ctx) once (e.g. to mark the
 * experiment incomplete in the result store) and ends the process with
 * exit status 1 (_exit: no atexit handlers run while other threads may be
 * working).  Installing a hook sets 16 MiB of address space aside (never
 * touched) and frees it just before fn runs, so fn finds some memory;
 * fn must not need more.  NULL removes the hook and the reserve.
 * This is the one piece of process-wide mutable state in sim/core, in the
 * manner of Redis's zmalloc_set_oom_handler: an allocation failure deep in
 * the simulator cannot be unwound to the harness.  Cannot fail.
 */
typedef void (*sim_oom_fn)(void *ctx);
void sim_set_oom_hook(sim_oom_fn fn, void *ctx);

/* Allocators that abort on exhaustion (for small, bounded allocations on
 * which recovery is pointless, like Redis' zmalloc).  Never return NULL. */
void *sim_xmalloc(size_t n);
void *sim_xcalloc(size_t count, size_t size);
void *sim_xrealloc(void *p, size_t n);
char *sim_xstrdup(const char *s);

#endif
