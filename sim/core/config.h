/*
 * Schema-driven configuration: a YAML file plus command-line overrides,
 * checked and copied into a plain C struct.
 *
 * crsim reads its configuration exactly once.  A YAML file is parsed into a
 * small tree (sim_cfgdoc) that remembers where every value came from,
 * "--set a.b=VALUE" overrides are applied to that tree, and sim_cfg_bind
 * copies it into the caller's struct, checking every key against a static
 * schema table (type, range, choices, default).  From then on the struct is
 * treated as const and the tree can be destroyed.  This module knows nothing
 * about crsim's keys: each component passes its own schema, and several
 * schemas can share one document (sim_cfg_bind_sections).
 *
 * Typical use (error handling shortened):
 *
 *     struct exp_cfg { int64_t destinations; double rate; char *trace;
 *                      double *loads; size_t n_loads; int policy; };
 *     static const char *const policies[] = { "flat_lb", "sticky", NULL };
 *     static const sim_cfg_key exp_schema[] = {
 *         { .path = "cluster.destinations", .type = SIM_CFG_INT,
 *           .offset = offsetof(struct exp_cfg, destinations),
 *           .min = 1, .max = 10000, .def = "30", .unit = "engines",
 *           .help = "number of destinations behind the router" },
 *         { .path = "workload.trace", .type = SIM_CFG_PATH,
 *           .offset = offsetof(struct exp_cfg, trace),
 *           .help = "JSONL request trace" },                  // required
 *         ...
 *         { .path = NULL }
 *     };
 *
 *     sim_cfgdoc *doc;
 *     struct exp_cfg cfg = {0};
 *     if (sim_cfgdoc_load(argv[2], &doc) ||
 *         sim_cfgdoc_set(doc, "cluster.destinations=40") ||
 *         sim_cfg_bind(doc, exp_schema, &cfg)) {
 *         fprintf(stderr, "crsim: %s\n", sim_errmsg());
 *         sim_cfgdoc_destroy(doc);
 *         exit(SIM_EXIT_BADINPUT);
 *     }
 *     sim_cfgdoc_destroy(doc);
 *     char *canon = sim_cfg_dump(exp_schema, &cfg);   // stored and hashed
 *     ...
 *     free(canon);
 *     sim_cfg_free(exp_schema, &cfg);
 *
 * Every message names the source ("exp.yaml:12", or "--set a.b" for a
 * command-line override), the full key path and the expected form, on one
 * line, as docs/design.md §14 asks.  Allocation failures abort (sim_xmalloc):
 * configs are small and there is nothing useful to do without one, so no
 * function here returns SIM_ENOMEM.  Numbers are parsed and printed with
 * strtod/printf, which assume the "C" numeric locale (crsim never calls
 * setlocale).
 */
#ifndef CRSIM_SIM_CONFIG_H
#define CRSIM_SIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ */
/* The document: a parsed YAML tree with source locations.            */
/* ------------------------------------------------------------------ */

/*
 * A parsed configuration: nested mappings, sequences and scalars, each node
 * tagged with its source (the file name, or "--set a.b" for an override)
 * and its 1-based line (0 for the command line).  The top level is always a
 * mapping.  Anchors, aliases, tags, multi-document streams, non-scalar
 * mapping keys and keys containing '.' are rejected at parse time so that
 * every value has exactly one spelling and one location.
 */
typedef struct sim_cfgdoc sim_cfgdoc;

/*
 * Parse the YAML file at `path` into a new document stored in *out.
 * `path` is copied; it is used in messages and to resolve relative paths
 * (sim_cfg_resolve_path).  The caller destroys *out with
 * sim_cfgdoc_destroy.  On error *out is NULL.
 * Returns SIM_OK; SIM_EIO if the file cannot be opened or read
 * ("PATH: cannot open config: REASON"); SIM_EINVAL for a YAML syntax error
 * ("PATH:LINE: YAML syntax error: PROBLEM"), a duplicate key
 * ("PATH:LINE: duplicate key 'a.b'"), an empty file, a top level that is
 * not a mapping, or an unsupported YAML feature (anchor, alias, tag, second
 * document).  Failure class: see codes.
 */
int sim_cfgdoc_load(const char *path, sim_cfgdoc **out);

/*
 * As sim_cfgdoc_load, from the NUL-terminated `text`; `name` stands in for
 * the file name in messages and in path resolution (a name without '/'
 * resolves relative paths against the current directory).  Both strings
 * are copied.  Returns SIM_OK or SIM_EINVAL.
 */
int sim_cfgdoc_parse_string(const char *text, const char *name, sim_cfgdoc **out);

/* Free a document and everything in it.  Accepts NULL.  Cannot fail. */
void sim_cfgdoc_destroy(sim_cfgdoc *d);

/*
 * Apply a command-line override "a.b.c=VALUE" to `d`.  The text after the
 * first '=' is parsed as a YAML node, so "experiment.rates=[10, 20]" sets a
 * list, "cluster.model=llama" a scalar, "a.b=" an empty (null) value that
 * the binder will reject.  Missing intermediate mappings are created; an
 * existing node at a.b.c is replaced whatever its kind.  The new node and
 * everything in it are located at "--set a.b.c" (line 0), so later errors
 * about them read "--set a.b.c: key 'a.b.c' is ...".  Unknown keys are not
 * detected here but by the next bind, which knows the schema.
 * Returns SIM_OK or SIM_EINVAL: no '=', an empty path or path component,
 * a path that passes through a scalar or a list, or a VALUE that is not
 * valid YAML.  On error `d` is unchanged.
 */
int sim_cfgdoc_set(sim_cfgdoc *d, const char *assignment);

/*
 * Where key `path` ("router.cacheroute.q_cap") was written: "FILE:LINE"
 * of its key for a key from the file, "--set KEY" for one from the
 * command line.  With `item` non-NULL the value at `path` must be a list
 * and the location is that of its first scalar element equal to `item`
 * (path "experiment.policies", item "cacheroute").  A component "name[i]"
 * steps into element i (0-based) of the list at "name", so
 * "cluster.groups[1].tp" locates a key of a TABLE element and
 * "cluster.groups[1]" the element itself.  Writes at most `n`
 * bytes (NUL-terminated) to `buf`.  Returns true if found; false, leaving
 * buf unchanged, if the key or item is absent.  Cannot fail.
 */
bool sim_cfgdoc_locate(const sim_cfgdoc *d, const char *path, const char *item, char *buf,
                       size_t n);

/* The file path (or name) given at load.  Owned by `d`.  Cannot fail. */
const char *sim_cfgdoc_path(const sim_cfgdoc *d);

/*
 * Resolve a path written in the config file of `d`: an absolute path is
 * returned unchanged, a relative one is taken relative to the directory of
 * that file ("experiments/x.yaml" + "t.jsonl" -> "experiments/t.jsonl").
 * No normalisation and no file-system access.  The result is a new string
 * that the caller frees.  Cannot fail (aborts on OOM).
 */
char *sim_cfg_resolve_path(const sim_cfgdoc *d, const char *p);

/* ------------------------------------------------------------------ */
/* The schema.                                                        */
/* ------------------------------------------------------------------ */

/*
 * Value types, the C field each writes at `offset`, and the YAML it accepts.
 *
 *   SIM_CFG_INT          int64_t   decimal integer with optional sign: 30,
 *                                  -2, +7.  Not 3.5, 1e3, 0x10 or "30".
 *   SIM_CFG_UINT64       uint64_t  decimal integer, optional '+' (seeds).
 *   SIM_CFG_DOUBLE       double    integer, decimal or exponent form (3,
 *                                  0.1, 1e-300); .inf/-.inf when the range
 *                                  admits them; NaN never.
 *   SIM_CFG_BOOL         bool      true or false (also True/TRUE/False/
 *                                  FALSE, as YAML 1.2); not yes/no/on/1.
 *   SIM_CFG_STRING       char *    any scalar, quoted or not, except null;
 *                                  if `choices` is set, one of them.  A
 *                                  fresh copy owned by the struct.
 *   SIM_CFG_ENUM         int       one of `choices`; stores its index.
 *   SIM_CFG_PATH         char *    non-empty string, resolved as
 *                                  sim_cfg_resolve_path does when written in
 *                                  the file; kept as written (relative to
 *                                  the current directory) when it came from
 *                                  --set or from the schema default.
 *   SIM_CFG_INT_LIST     int64_t * a YAML sequence of SIM_CFG_INT values;
 *   SIM_CFG_DOUBLE_LIST  double *  ... of SIM_CFG_DOUBLE values;
 *   SIM_CFG_STRING_LIST  char **   ... of SIM_CFG_STRING values (each
 *                                  checked against `choices` if set).
 *                                  Lists also write the element count to a
 *                                  size_t at `count_offset`; an empty list
 *                                  is (NULL, 0).
 *   SIM_CFG_TABLE        void *    a YAML sequence of mappings ("a list of
 *                                  maps": cluster.groups), each bound
 *                                  against the sub-schema `table` (keys,
 *                                  ranges and defaults as at top level;
 *                                  nested mappings allowed) into a new
 *                                  array of `elem_size`-byte structs, with
 *                                  the count at `count_offset`.  Messages
 *                                  name an element's keys "path[i].key"
 *                                  (0-based i) at the element's file and
 *                                  line; unknown keys inside an element are
 *                                  errors as anywhere.  The default must be
 *                                  "[]" or NULL (required).  --set can
 *                                  replace the whole list ("a.b=[{k: 1}]")
 *                                  but not address one element.
 *
 * Numbers in quotes are rejected: in YAML "30" is a string, and accepting
 * it would hide a config written for some other tool.  Null values ("key:"
 * with nothing, "~", "null") are rejected for every type: a key is either
 * absent (default applies) or has a value, never silently defaulted.
 */
enum sim_cfg_type {
    SIM_CFG_INT,
    SIM_CFG_UINT64,
    SIM_CFG_DOUBLE,
    SIM_CFG_BOOL,
    SIM_CFG_STRING,
    SIM_CFG_ENUM,
    SIM_CFG_PATH,
    SIM_CFG_INT_LIST,
    SIM_CFG_DOUBLE_LIST,
    SIM_CFG_STRING_LIST,
    SIM_CFG_TABLE
};

/* sim_cfg_key.flags: make a range bound exclusive ("a rate > 0"). */
#define SIM_CFG_EXCL_MIN 1u
#define SIM_CFG_EXCL_MAX 2u
/* sim_cfg_key.flags, SIM_CFG_PATH only: the empty string is allowed and
 * means "not set" (use with .def = "\"\""). */
#define SIM_CFG_OPTIONAL 4u

/*
 * One configuration key.  A schema is a static const array of these,
 * terminated by an entry whose `path` is NULL; write entries with
 * designated initializers so unused fields are zero.
 */
typedef struct sim_cfg_key {
    /* Dotted path below the schema's prefix: "cluster.destinations".
     * Every component but the last names a nested mapping. */
    const char *path;
    enum sim_cfg_type type;
    /* offsetof() of the field in the output struct (see the type table). */
    size_t offset;
    /* Lists only: offsetof() of the size_t element count. */
    size_t count_offset;
    /* Inclusive range of a number, or of each element of a number list.
     * min == max == 0 means "no range" (any value of the type); use
     * -INFINITY/INFINITY for a one-sided range.  For integer types the
     * comparison is done in double, exact up to 2^53. */
    double min, max;
    /* SIM_CFG_EXCL_MIN / SIM_CFG_EXCL_MAX, or 0. */
    unsigned flags;
    /* Lists only: minimum number of elements (0 allows []). */
    size_t min_len;
    /* Default as YAML text ("30", "[10, 20]", "flat_lb"), bound exactly as
     * if it had been written in the file; NULL makes the key required. */
    const char *def;
    /* ENUM (required) and STRING / STRING_LIST (optional): the accepted
     * values, NULL-terminated.  NULL means any string. */
    const char *const *choices;
    /* Unit shown in help and messages: "s", "tokens", "requests/s"; NULL
     * or "" for none. */
    const char *unit;
    /* One line for --help. */
    const char *help;
    /* SIM_CFG_TABLE only: the schema of one element (NULL-terminated,
     * offsets into the element struct) and the element struct's size. */
    const struct sim_cfg_key *table;
    size_t elem_size;
} sim_cfg_key;

/*
 * One schema bound at a place in the document.  `prefix` is the dotted path
 * of the mapping the schema's paths are relative to ("router.sticky"), or
 * NULL / "" for the top level.  `out` is the struct the schema describes.
 * A section with a NULL `schema` (and `out`) declares an opaque subtree:
 * anything under `prefix` is accepted and left for its owner to bind later
 * with sim_cfg_bind_prefix.
 */
typedef struct sim_cfg_section {
    const char *prefix;
    const sim_cfg_key *schema;
    void *out;
} sim_cfg_section;

/* ------------------------------------------------------------------ */
/* Binding.                                                           */
/* ------------------------------------------------------------------ */

/*
 * Fill `out` from `d` according to `schema`, applying defaults for absent
 * keys.  The schema owns the whole document: any key in `d` that is
 * neither a schema key nor a mapping on the way to one is an error.
 * Same as sim_cfg_bind_sections with one section at the top level.
 *
 * `out` must be zeroed (or previously released with sim_cfg_free): bind
 * overwrites pointer fields without freeing them.  On success the strings
 * and lists in `out` are owned by it; release them with sim_cfg_free.
 *
 * Returns SIM_OK or SIM_EINVAL with one line naming location, key and
 * expected form, for example:
 *   exp.yaml:12: unknown key 'cluster.destinatons' (did you mean
 *     'cluster.destinations'?); expected one of: destinations, tp (under
 *     'cluster')                                          [one line]
 *   exp.yaml:7: key 'cluster.destinations' is 'thirty'; expected an
 *     integer in [1, 10000] (engines)
 *   exp.yaml:7: key 'engine.block_size' is 0; expected an integer in
 *     [1, 4096] (tokens)
 *   exp.yaml: missing required key 'workload.trace'; expected a path
 *   --set experiment.policies: key 'experiment.policies[1]' is 'stickyy';
 *     expected one of: flat_lb, sticky; did you mean 'sticky'?
 * Keys are checked in document order for unknown keys first, then in
 * schema order.  On error every string and list already stored in `out`
 * has been released (as by sim_cfg_free); calling sim_cfg_free again is
 * harmless.  Failure class: see codes.
 */
int sim_cfg_bind(const sim_cfgdoc *d, const sim_cfg_key *schema, void *out);

/*
 * Bind several schemas from one document in one pass, each at its own
 * prefix.  This is how plug-ins own a section: the harness passes its own
 * schema at the top level plus, for every registered router, that router's
 * schema at "router.<name>".  Unknown-key detection is global: a key is
 * accepted only if some section declares it (or it is a mapping leading to
 * one), so a typo inside a plug-in's section is caught even when that
 * plug-in is not selected.  Consequently a plug-in schema should give every
 * key a default, or only the selected plug-ins should be passed.  Two
 * sections must not declare the same full path.
 * Ownership and errors as sim_cfg_bind; on error all sections are released.
 */
int sim_cfg_bind_sections(const sim_cfgdoc *d, const sim_cfg_section *sections,
                          size_t n_sections);

/*
 * Bind only the subtree at `prefix` ("router.sticky"): the schema's paths
 * are relative to it, unknown keys are detected inside that subtree only,
 * and everything else in `d` is ignored.  An absent subtree binds all
 * defaults.  Use this when a plug-in binds its own section after the
 * harness has bound the rest with that section declared opaque (a section
 * with a NULL schema), e.g. once the harness knows which plug-in is
 * selected.
 * Ownership and errors as sim_cfg_bind.
 */
int sim_cfg_bind_prefix(const sim_cfgdoc *d, const char *prefix, const sim_cfg_key *schema,
                        void *out);

/*
 * Release the strings and lists held in `out` and set them to NULL (list
 * counts to 0).  Safe on a zeroed struct and when called twice.  Other
 * fields are left as they are.  Cannot fail.
 */
void sim_cfg_free(const sim_cfg_key *schema, void *out);

/* ------------------------------------------------------------------ */
/* Canonical dump, help, schema check.                                 */
/* ------------------------------------------------------------------ */

/*
 * Canonical YAML text of every key of `schema` with its value in `in`:
 * nested mappings by path, two-space indentation, keys in schema order
 * (a mapping appears where its first key does), lists in flow style
 * ("[10, 20]").  Doubles are printed with the fewest significant digits
 * (at most 17) that read back to the identical bits, so 0.1 prints as 0.1
 * and bind(parse(dump(x))) == x bit for bit; infinities print as .inf.
 * Strings are double-quoted (with escapes) unless they are plain
 * identifiers or paths that YAML cannot mistake for anything else.  A NULL
 * string prints as null (only possible for a struct never bound).
 * This is the text crsim stores as "the full config" and hashes; note that
 * PATH values are stored resolved, so a config loaded as
 * "experiments/x.yaml" dumps "experiments/t.jsonl": the dump of a relative
 * path depends on the directory crsim was started from.
 * Returns a new NUL-terminated string that the caller frees with free().
 * Cannot fail (aborts on OOM).
 */
char *sim_cfg_dump(const sim_cfg_key *schema, const void *in);

/* As sim_cfg_dump, for several sections merged into one document (the
 * same sections as given to sim_cfg_bind_sections).  Cannot fail. */
char *sim_cfg_dump_sections(const sim_cfg_section *sections, size_t n_sections);

/*
 * Write one line per key to `f`: full path, type, default (or
 * "required"), range or choices with unit, and the help text.  `out`
 * fields of the sections are not used.  Cannot fail (write errors on `f`
 * are the caller's to check with ferror).
 */
void sim_cfg_help(const sim_cfg_key *schema, FILE *f);
void sim_cfg_help_sections(const sim_cfg_section *sections, size_t n_sections, FILE *f);

/*
 * Check a schema for programming errors: malformed or duplicate paths, a
 * path that is both a key and a mapping of other keys, an ENUM without
 * choices, an inverted range, a list whose count overlaps its pointer, or
 * a default that does not bind.  Meant for the unit test that loops over
 * every registered schema (STYLE.md §3).  Returns SIM_OK or SIM_EINVAL
 * ("schema key 'a.b': ...").
 */
int sim_cfg_schema_check(const sim_cfg_key *schema);

#endif
