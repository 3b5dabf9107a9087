/*
 * The crsim command line: one table of subcommands (name, summary, usage,
 * positional arguments, options with their kind, range and help), one
 * parser over it (getopt_long), one help printer and one mapping from
 * status codes to exit statuses.  A subcommand's function receives the
 * parsed arguments (exp_cli_args) and reads them with the exp_cli_*
 * accessors; it never sees argv.
 *
 * Every subcommand accepts -h/--help (its usage on stdout, exit 0).  A bad
 * command line is one line "crsim: SUB: ..." on stderr naming the option
 * and the expected form, exit status 2.
 */
#ifndef CRSIM_SIM_EXP_CLI_H
#define CRSIM_SIM_EXP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kinds of option argument. */
typedef enum exp_cli_kind {
    EXP_CLI_FLAG = 0, /* no argument: given or not */
    EXP_CLI_STR,      /* one string (the last one given counts) */
    EXP_CLI_INT,      /* an integer in [lo, hi] */
    EXP_CLI_REAL,     /* a finite real in the range lo..hi (EXP_CLI_GT/LT: open) */
    EXP_CLI_CHOICE,   /* one word of `choices` ("a|b|c"); its index is the value */
    EXP_CLI_LIST,     /* a string, repeatable; every value kept in order (--set) */
    EXP_CLI_PAIR      /* two words: the option's argument and the next one (--map) */
} exp_cli_kind;

/* Flags of an option. */
enum {
    EXP_CLI_GT = 1u << 0,       /* lo is excluded (x > lo) */
    EXP_CLI_LT = 1u << 1,       /* hi is excluded (x < hi) */
    EXP_CLI_REQUIRED = 1u << 2  /* must be given */
};

/* One option of a subcommand.  A table of them ends with a zeroed entry. */
typedef struct exp_cli_opt {
    const char *name;     /* long name without "--", e.g. "jobs" */
    char short_name;      /* e.g. 'j'; 0 when none */
    exp_cli_kind kind;
    const char *metavar;  /* the argument in usage and messages, e.g. "N" */
    double lo, hi;        /* range of EXP_CLI_INT/EXP_CLI_REAL (±INFINITY: open) */
    unsigned flags;       /* EXP_CLI_GT | EXP_CLI_LT | EXP_CLI_REQUIRED */
    const char *choices;  /* EXP_CLI_CHOICE: accepted words, '|'-separated */
    const char *unit;     /* unit of a number ("s", "requests/s"), or NULL */
    const char *help;     /* one line, with the default */
} exp_cli_opt;

typedef struct exp_cli_args exp_cli_args;

/* One subcommand. */
typedef struct exp_cli_cmd {
    const char *name;     /* "run", or two words: "workload describe" */
    const char *summary;  /* one line for `crsim --help` */
    const char *args;     /* positional arguments in usage, e.g. "CONFIG" */
    size_t min_pos;       /* positional arguments required */
    size_t max_pos;       /* positional arguments accepted (SIZE_MAX: any) */
    const char *needs;    /* what a missing positional is, for the message */
    const char *details;  /* paragraph(s) of `crsim SUB --help` */
    const exp_cli_opt *opts; /* zero-terminated table; -h/--help is implicit */
    /* Run the subcommand on parsed arguments; returns the process exit
     * status (errors already printed, through exp_cli_fail). */
    int (*main)(const exp_cli_args *a);
} exp_cli_cmd;

/* The value of one option after parsing. */
typedef struct exp_cli_val {
    unsigned count;       /* times given (0: absent) */
    const char *str;      /* last argument as typed (NULL for a flag) */
    const char *str2;     /* EXP_CLI_PAIR: the second word */
    int64_t i;            /* EXP_CLI_INT: the value; EXP_CLI_CHOICE: the index */
    double x;             /* EXP_CLI_REAL: the value */
    const char **list;    /* EXP_CLI_LIST: every argument, in order */
    size_t n_list;
} exp_cli_val;

/* One option as it occurred on the command line. */
typedef struct exp_cli_item {
    const exp_cli_opt *opt;
    const char *arg;      /* its argument (NULL for a flag) */
    int64_t i;            /* EXP_CLI_INT: this occurrence's value; CHOICE: index */
    double x;             /* EXP_CLI_REAL: this occurrence's value */
} exp_cli_item;

/* The parsed command line of one subcommand.  Strings point into argv. */
struct exp_cli_args {
    const exp_cli_cmd *cmd;
    const char **pos;     /* positional arguments, in order */
    size_t n_pos;
    exp_cli_val *vals;    /* one per entry of cmd->opts, same order */
    exp_cli_item *seq;    /* every option given, in command-line order */
    size_t n_seq;
};

/*
 * The whole command line: find the subcommand of argv[1] (two words for
 * "workload describe") in the table, parse its arguments, print its usage
 * for -h/--help, run it.  Returns the process exit status: 0 ok, 2 bad
 * input, 1 other errors, 130 interrupted (exp_cli_status).
 */
int exp_cli_main(int argc, char **argv);

/* Keep freed memory in the process instead of returning it to the kernel
 * at once (glibc mallopt: M_TRIM_THRESHOLD 256 MiB, M_MMAP_THRESHOLD at
 * its 32-MiB maximum for 64-bit glibc, which also stops glibc's dynamic
 * threshold).  A sweep allocates and frees the same large arrays (caches,
 * records, hash lists) run after run; with glibc's defaults every run
 * faulted its pages in again (Mooncake experiment: ~50,000 page faults,
 * 0.10 s of kernel time in 0.75 s; docs/performance.md "Round 5").  Peak
 * memory is unchanged; memory stays mapped until exit.  Call once, before
 * the first allocation that matters; elsewhere than glibc, nothing. */
void exp_tune_malloc(void);

/* Run the process with glibc malloc's transparent huge pages (the glibc
 * tunable glibc.malloc.hugetlb=1, glibc >= 2.35: malloc madvises the heap
 * it grows MADV_HUGEPAGE).  With the kernel's THP mode `madvise` (Debian's
 * default) the simulator's memory is otherwise 4-KiB pages, and at fleet
 * sizes a good part of a run is page faults and TLB misses
 * (docs/performance.md "Round 8": cacheroute at R = 1000 ~9 -> ~7 us a
 * request, llmd on the flagship ~7.5 -> ~5.8).  Tunables are read only at
 * start-up, so when the mode is `madvise`, GLIBC_TUNABLES names no
 * glibc.malloc.hugetlb (the user's own setting wins) and CRSIM_HUGEPAGES
 * is not "0", this adds it to GLIBC_TUNABLES and re-executes
 * /proc/self/exe with `argv` (same pid, arguments and descriptors); the
 * new image finds the tunable set and returns at once.  Results do not
 * depend on it (no result depends on addresses).  Returns (doing nothing)
 * elsewhere than Linux with glibc, when THP is `always` or `never`, or if
 * the exec fails.  Call first thing in main, before any thread or file.
 * Under valgrind, set CRSIM_HUGEPAGES=0 (the exec would leave the tool). */
void exp_hugepages(char **argv);

/*
 * Parse argv[0..argc) (the words after the subcommand's name) against
 * `cmd`'s table into *a, checking kinds, ranges, required options and the
 * number of positional arguments.  Returns SIM_OK; SIM_EINVAL with a
 * message "SUB: ..." naming the option and the expected form; and sets
 * *help when -h/--help was given (then *a holds what came before it).
 * Free *a with exp_cli_args_fini in every case.  Not reentrant (getopt).
 */
int exp_cli_parse(const exp_cli_cmd *cmd, int argc, char **argv, exp_cli_args *a, bool *help);

/* Free what exp_cli_parse allocated in *a (not the strings).  Accepts a
 * zeroed struct. */
void exp_cli_args_fini(exp_cli_args *a);

/* The option called `name` of a's subcommand.  A name not in the table is
 * a bug (aborts).  Cannot fail. */
const exp_cli_val *exp_cli_get(const exp_cli_args *a, const char *name);

/* Accessors: whether option `name` was given; its last value, or `dflt`
 * when it was not given.  Cannot fail (an unknown name aborts). */
bool exp_cli_has(const exp_cli_args *a, const char *name);
const char *exp_cli_str(const exp_cli_args *a, const char *name, const char *dflt);
int64_t exp_cli_int(const exp_cli_args *a, const char *name, int64_t dflt);
double exp_cli_real(const exp_cli_args *a, const char *name, double dflt);

/* Every value of a repeatable option, in order, into *n (NULL, 0 when not
 * given).  The array belongs to `a`. */
const char *const *exp_cli_list(const exp_cli_args *a, const char *name, size_t *n);

/* Exit status of a status code, the one mapping of the tool: SIM_OK 0;
 * SIM_EINVAL and SIM_EIO (bad input) 2; SIM_EINTR 130; others 1. */
int exp_cli_status(int rc);

/* For rc != SIM_OK, print the last error as one line "crsim: <message>" on
 * stderr (and its status and C source when $CRSIM_DEBUG is set).  Returns
 * exp_cli_status(rc). */
int exp_cli_fail(int rc);

#endif
