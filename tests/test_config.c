/*
 * Tests of the YAML config module (sim/config.c): binding every type with
 * defaults, one test per class of bad input checking that the message
 * names the file, the line and the key path, --set overrides, the
 * bit-exact dump round trip, several schemas sharing one document, and
 * loading a real file with relative-path resolution.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, open_memstream, strdup */

#include "sim/core/config.h"
#include "sim/core/error.h"
#include "check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* A schema with every type, nested up to three levels.                */
/* ------------------------------------------------------------------ */

struct cfg {
    int64_t destinations;
    char *model;
    uint64_t seed;
    double rate;
    char *trace;
    bool warm;
    int64_t *sizes;
    size_t n_sizes;
    int64_t block_size;
    int policy;
    double *loads;
    size_t n_loads;
    char **policies;
    size_t n_policies;
    double slo;
    char *note;
};

static const char *const policy_names[] = { "flat_lb", "sticky", "cacheroute", NULL };

static const sim_cfg_key schema[] = {
    { .path = "cluster.destinations", .type = SIM_CFG_INT,
      .offset = offsetof(struct cfg, destinations), .min = 1, .max = 10000, .def = "30",
      .unit = "engines", .help = "number of destinations" },
    { .path = "cluster.model", .type = SIM_CFG_STRING, .offset = offsetof(struct cfg, model),
      .def = "llama-8b", .help = "served model" },
    { .path = "experiment.seed", .type = SIM_CFG_UINT64, .offset = offsetof(struct cfg, seed),
      .def = "42", .help = "master seed" },
    { .path = "workload.arrival.rate", .type = SIM_CFG_DOUBLE, .offset = offsetof(struct cfg, rate),
      .min = 0, .max = INFINITY, .flags = SIM_CFG_EXCL_MIN, .unit = "requests/s",
      .help = "mean arrival rate" },
    { .path = "workload.trace", .type = SIM_CFG_PATH, .offset = offsetof(struct cfg, trace),
      .help = "request trace" },
    { .path = "engine.cache.warm", .type = SIM_CFG_BOOL, .offset = offsetof(struct cfg, warm),
      .def = "false", .help = "start with warm caches" },
    { .path = "engine.cache.sizes", .type = SIM_CFG_INT_LIST, .offset = offsetof(struct cfg, sizes),
      .count_offset = offsetof(struct cfg, n_sizes), .min = 1, .max = 4096, .min_len = 1,
      .def = "[16, 32]", .unit = "tokens", .help = "cache sizes" },
    { .path = "engine.block_size", .type = SIM_CFG_INT, .offset = offsetof(struct cfg, block_size),
      .min = 1, .max = 4096, .def = "16", .unit = "tokens", .help = "KV block size" },
    { .path = "router.policy", .type = SIM_CFG_ENUM, .offset = offsetof(struct cfg, policy),
      .def = "flat_lb", .choices = policy_names, .help = "routing policy" },
    { .path = "experiment.loads", .type = SIM_CFG_DOUBLE_LIST, .offset = offsetof(struct cfg, loads),
      .count_offset = offsetof(struct cfg, n_loads), .min = 0, .max = 1, .def = "[0.5]",
      .help = "offered loads" },
    { .path = "experiment.policies", .type = SIM_CFG_STRING_LIST,
      .offset = offsetof(struct cfg, policies), .count_offset = offsetof(struct cfg, n_policies),
      .min_len = 1, .def = "[flat_lb, sticky]", .choices = policy_names,
      .help = "policies compared" },
    { .path = "experiment.slo.p99_ttft", .type = SIM_CFG_DOUBLE, .offset = offsetof(struct cfg, slo),
      .min = 0, .max = INFINITY, .def = "2.5", .unit = "s", .help = "TTFT SLO" },
    { .path = "experiment.note", .type = SIM_CFG_STRING, .offset = offsetof(struct cfg, note),
      .def = "\"\"", .help = "free text" },
    { .path = NULL }
};

static const char good_yaml[] =
    "# a complete config\n"                       /* 1 */
    "cluster:\n"                                  /* 2 */
    "  destinations: 40\n"                        /* 3 */
    "  model: \"qwen 7b\"\n"                      /* 4 */
    "workload:\n"                                 /* 5 */
    "  trace: traces/a.jsonl\n"                   /* 6 */
    "  arrival:\n"                                /* 7 */
    "    rate: 1e3\n"                             /* 8 */
    "engine:\n"                                   /* 9 */
    "  cache:\n"                                  /* 10 */
    "    warm: true\n"                            /* 11 */
    "    sizes: [8, 4096]\n"                      /* 12 */
    "experiment:\n"                               /* 13 */
    "  seed: 18446744073709551615\n"              /* 14 */
    "  policies:\n"                               /* 15 */
    "    - cacheroute\n"                          /* 16 */
    "    - 'sticky'\n"                            /* 17 */
    "  loads: [0.1, 1, 0]\n";                     /* 18 */

/* Parse `yaml` as "exp.yaml" and bind it into *c (zeroed first). */
static int parse_bind(const char *yaml, struct cfg *c)
{
    sim_cfgdoc *d;
    memset(c, 0, sizeof *c);
    int rc = sim_cfgdoc_parse_string(yaml, "exp.yaml", &d);
    if (rc == SIM_OK)
        rc = sim_cfg_bind(d, schema, c);
    sim_cfgdoc_destroy(d);
    return rc;
}

/* `yaml` must fail with SIM_EINVAL and a message containing every
 * NULL-terminated string that follows. */
static void expect_error(const char *yaml, ...)
{
    struct cfg c;
    int rc = parse_bind(yaml, &c);
    if (rc != SIM_EINVAL) {
        fprintf(stderr, "expected EINVAL for:\n%s\ngot %s\n", yaml, sim_strstatus(rc));
        exit(1);
    }
    va_list ap;
    va_start(ap, yaml);
    for (const char *want; (want = va_arg(ap, const char *)) != NULL;)
        CHECK_STR_CONTAINS(sim_errmsg(), want);
    va_end(ap);
    /* bind released everything on error; freeing again is harmless */
    CHECK(c.model == NULL && c.trace == NULL && c.sizes == NULL && c.policies == NULL);
    sim_cfg_free(schema, &c);
}

/* The minimal valid config: only the required keys. */
#define REQUIRED "workload:\n  trace: t.jsonl\n  arrival:\n    rate: 2\n"

static void test_good(void)
{
    struct cfg c;
    sim_cfgdoc *d;
    CHECK_INT_EQ(sim_cfgdoc_parse_string(good_yaml, "dir/exp.yaml", &d), SIM_OK);
    memset(&c, 0, sizeof c);
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_OK);
    sim_cfgdoc_destroy(d);

    CHECK_INT_EQ(c.destinations, 40);
    CHECK(strcmp(c.model, "qwen 7b") == 0);
    CHECK_U64_EQ(c.seed, UINT64_MAX);
    CHECK(c.rate == 1000.0);
    CHECK(strcmp(c.trace, "dir/traces/a.jsonl") == 0); /* relative to the file */
    CHECK(c.warm);
    CHECK_INT_EQ(c.n_sizes, 2);
    CHECK_INT_EQ(c.sizes[0], 8);
    CHECK_INT_EQ(c.sizes[1], 4096);
    CHECK_INT_EQ(c.n_policies, 2);
    CHECK(strcmp(c.policies[0], "cacheroute") == 0);
    CHECK(strcmp(c.policies[1], "sticky") == 0);
    CHECK_INT_EQ(c.n_loads, 3);
    CHECK(c.loads[0] == 0.1 && c.loads[1] == 1.0 && c.loads[2] == 0.0);
    /* defaults */
    CHECK_INT_EQ(c.block_size, 16);
    CHECK_INT_EQ(c.policy, 0);
    CHECK(c.slo == 2.5);
    CHECK(strcmp(c.note, "") == 0);

    sim_cfg_free(schema, &c);
    CHECK(c.model == NULL && c.trace == NULL && c.sizes == NULL && c.n_sizes == 0);
    CHECK(c.policies == NULL && c.n_policies == 0 && c.loads == NULL && c.note == NULL);
    sim_cfg_free(schema, &c); /* twice is safe */

    /* Only the required keys: everything else from defaults. */
    CHECK_INT_EQ(parse_bind(REQUIRED, &c), SIM_OK);
    CHECK_INT_EQ(c.destinations, 30);
    CHECK(strcmp(c.model, "llama-8b") == 0);
    CHECK_U64_EQ(c.seed, 42);
    CHECK(!c.warm);
    CHECK_INT_EQ(c.n_sizes, 2);
    CHECK_INT_EQ(c.sizes[1], 32);
    CHECK(strcmp(c.trace, "t.jsonl") == 0); /* "exp.yaml" has no directory */
    CHECK_INT_EQ(c.n_policies, 2);
    CHECK(strcmp(c.policies[1], "sticky") == 0);
    CHECK_INT_EQ(c.n_loads, 1);
    CHECK(c.loads[0] == 0.5);
    sim_cfg_free(schema, &c);

    /* Accepted spellings: signs, exponents, YAML 1.2 booleans, .inf, and
     * strings that look like other types when the key is a string. */
    CHECK_INT_EQ(parse_bind(REQUIRED "cluster: {destinations: +7, model: 30}\n"
                            "engine: {cache: {warm: FALSE}}\n"
                            "experiment: {slo: {p99_ttft: .inf}, loads: [], note: true}\n",
                            &c),
                 SIM_OK);
    CHECK_INT_EQ(c.destinations, 7);
    CHECK(strcmp(c.model, "30") == 0);
    CHECK(!c.warm);
    CHECK(isinf(c.slo) && c.slo > 0);
    CHECK(c.loads == NULL && c.n_loads == 0);
    CHECK(strcmp(c.note, "true") == 0);
    sim_cfg_free(schema, &c);

    /* a zeroed struct can be freed */
    struct cfg z = {0};
    sim_cfg_free(schema, &z);
    sim_cfg_free(schema, &z);
}

static void test_errors(void)
{
    /* unknown key, with a suggestion, the list of siblings and the line */
    expect_error(REQUIRED "cluster:\n  destinatons: 4\n", "exp.yaml:6:",
                 "unknown key 'cluster.destinatons'", "did you mean 'cluster.destinations'",
                 "expected one of: destinations, model (under 'cluster')", NULL);
    expect_error(REQUIRED "bogus: 1\n", "exp.yaml:5:", "unknown key 'bogus'", "at top level",
                 "cluster, experiment, workload, engine, router", NULL);
    /* the right name at the wrong level */
    expect_error(REQUIRED "destinations: 4\n", "exp.yaml:5:",
                 "did you mean 'cluster.destinations'", NULL);
    /* wrong type */
    expect_error(REQUIRED "cluster:\n  destinations: thirty\n", "exp.yaml:6:",
                 "key 'cluster.destinations' is 'thirty'; expected an integer in [1, 10000] "
                 "(engines)", NULL);
    expect_error(REQUIRED "cluster:\n  destinations: 3.5\n", "exp.yaml:6:", "is '3.5'", NULL);
    expect_error(REQUIRED "cluster:\n  destinations: 1e3\n", "exp.yaml:6:", "is '1e3'", NULL);
    expect_error(REQUIRED "cluster:\n  destinations: 0x10\n", "exp.yaml:6:", "is '0x10'", NULL);
    expect_error(REQUIRED "cluster:\n  destinations: \"30\"\n", "exp.yaml:6:",
                 "key 'cluster.destinations' is the quoted string '30'", NULL);
    expect_error(REQUIRED "cluster:\n  destinations: 99999999999999999999\n", "exp.yaml:6:",
                 "cluster.destinations", NULL);
    /* out of range */
    expect_error(REQUIRED "engine:\n  block_size: 0\n", "exp.yaml:6:",
                 "key 'engine.block_size' is 0; expected an integer in [1, 4096] (tokens)", NULL);
    expect_error(REQUIRED "engine:\n  cache:\n    sizes: [8, 5000]\n", "exp.yaml:7:",
                 "key 'engine.cache.sizes[1]' is 5000", "[1, 4096]", NULL);
    expect_error("workload:\n  trace: t\n  arrival:\n    rate: 0\n", "exp.yaml:4:",
                 "key 'workload.arrival.rate' is 0; expected a number > 0 (requests/s)", NULL);
    expect_error("workload:\n  trace: t\n  arrival:\n    rate: -.inf\n", "exp.yaml:4:",
                 "is -.inf", NULL);
    expect_error("workload:\n  trace: t\n  arrival:\n    rate: 1e999\n", "exp.yaml:4:",
                 "is 1e999", NULL);
    expect_error(REQUIRED "experiment:\n  seed: -1\n", "exp.yaml:6:",
                 "key 'experiment.seed' is -1; expected a non-negative integer", NULL);
    /* NaN is never a number; nor are strtod's other spellings */
    expect_error("workload:\n  trace: t\n  arrival:\n    rate: .nan\n", "exp.yaml:4:",
                 "is '.nan'; expected a number > 0", NULL);
    expect_error("workload:\n  trace: t\n  arrival:\n    rate: nan\n", "exp.yaml:4:", NULL);
    expect_error("workload:\n  trace: t\n  arrival:\n    rate: 0x1p3\n", "exp.yaml:4:", NULL);
    /* missing required key: no line, the key and the expected form */
    expect_error("workload:\n  arrival:\n    rate: 2\n",
                 "exp.yaml: missing required key 'workload.trace'; expected a path", NULL);
    /* enum and string choices, in a list, with a suggestion */
    expect_error(REQUIRED "experiment:\n  policies: [flat_lb, stickyy]\n", "exp.yaml:6:",
                 "key 'experiment.policies[1]' is 'stickyy'; expected "
                 "one of: flat_lb, sticky, cacheroute; did you mean 'sticky'?", NULL);
    expect_error(REQUIRED "router:\n  policy: random\n", "exp.yaml:6:",
                 "key 'router.policy' is 'random'; expected one of: flat_lb, sticky, cacheroute",
                 NULL);
    /* booleans are true/false only */
    expect_error(REQUIRED "engine:\n  cache:\n    warm: yes\n", "exp.yaml:7:",
                 "key 'engine.cache.warm' is 'yes'; expected true or false", NULL);
    /* mapping where a scalar is expected, and vice versa */
    expect_error(REQUIRED "cluster:\n  destinations:\n    a: 1\n", "exp.yaml:7:",
                 "key 'cluster.destinations' is a mapping; expected an integer", NULL);
    expect_error(REQUIRED "cluster: 5\n", "exp.yaml:5:",
                 "key 'cluster' is '5'; expected a mapping with keys: destinations, model", NULL);
    expect_error(REQUIRED "cluster:\n  model: [a, b]\n", "exp.yaml:6:",
                 "key 'cluster.model' is a list; expected a string", NULL);
    expect_error(REQUIRED "engine:\n  cache:\n    sizes: 8\n", "exp.yaml:7:",
                 "key 'engine.cache.sizes' is '8'; expected a list of integers in [1, 4096] "
                 "(tokens), with at least 1 element", NULL);
    expect_error(REQUIRED "engine:\n  cache:\n    sizes: []\n", "exp.yaml:7:",
                 "key 'engine.cache.sizes' has 0 elements", NULL);
    expect_error(REQUIRED "engine:\n  cache:\n    sizes: [[1]]\n", "exp.yaml:7:",
                 "key 'engine.cache.sizes[0]' is a list", NULL);
    /* null values are errors, never a silent default */
    expect_error(REQUIRED "cluster:\n  destinations:\n", "exp.yaml:6:",
                 "key 'cluster.destinations' is empty", NULL);
    expect_error(REQUIRED "cluster:\n  model: ~\n", "exp.yaml:6:",
                 "key 'cluster.model' is null; expected a string", NULL);
    expect_error(REQUIRED "cluster:\n", "exp.yaml:5:", "key 'cluster' is empty", NULL);
    expect_error("workload:\n  trace: ''\n  arrival:\n    rate: 2\n", "exp.yaml:2:",
                 "key 'workload.trace' is ''; expected a path", NULL);

    /* YAML-level errors, at parse time */
    expect_error("cluster:\n  destinations: [1, 2\nengine: {}\n", "exp.yaml:",
                 "YAML syntax error", NULL);
    expect_error("a: 1\n b: 2\n", "exp.yaml:2: YAML syntax error", NULL);
    expect_error(REQUIRED "cluster:\n  model: x\n  model: y\n", "exp.yaml:7:",
                 "duplicate key 'cluster.model'", NULL);
    expect_error("base: &b 1\nother: *b\n", "exp.yaml:1:", "anchors", NULL);
    expect_error("a: !!str 1\n", "exp.yaml:1:", "tags", NULL);
    expect_error("a: 1\n---\nb: 2\n", "exp.yaml:2:", "second YAML document", NULL);
    expect_error("", "exp.yaml: config is empty", NULL);
    expect_error("# nothing\n", "exp.yaml: config is empty", NULL);
    expect_error("- a\n- b\n", "exp.yaml:1: top level is a list", NULL);
    expect_error("hello\n", "exp.yaml:1: top level is a single text value, not a mapping; expected", NULL);
    expect_error("cluster.destinations: 3\n", "exp.yaml:1:",
                 "key 'cluster.destinations' contains '.'", NULL);
    expect_error("? [a]\n: 1\n", "exp.yaml:1:", "keys must be names", NULL);
    expect_error("a: \"\\x01\\0\"\n", "exp.yaml:1:", "NUL character", NULL);
}

static void test_set(void)
{
    sim_cfgdoc *d;
    struct cfg c = {0};

    CHECK_INT_EQ(sim_cfgdoc_parse_string(good_yaml, "dir/exp.yaml", &d), SIM_OK);
    /* scalar over scalar, list over list, new keys with new mappings */
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.destinations=12"), SIM_OK);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "engine.cache.sizes=[1, 2, 3]"), SIM_OK);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "router.policy=sticky"), SIM_OK);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "experiment.slo.p99_ttft=0.25"), SIM_OK);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.model=a=b"), SIM_OK); /* first '=' splits */
    CHECK_INT_EQ(sim_cfgdoc_set(d, "workload.trace=other.jsonl"), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_OK);
    CHECK_INT_EQ(c.destinations, 12);
    CHECK_INT_EQ(c.n_sizes, 3);
    CHECK_INT_EQ(c.sizes[2], 3);
    CHECK_INT_EQ(c.policy, 1);
    CHECK(c.slo == 0.25);
    CHECK(strcmp(c.model, "a=b") == 0);
    CHECK(strcmp(c.trace, "other.jsonl") == 0); /* --set paths are relative to the cwd */
    sim_cfg_free(schema, &c);

    /* a type error in a --set value names the --set, not a file line */
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.destinations=many"), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(),
                       "--set cluster.destinations: key 'cluster.destinations' is 'many'");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.destinations=[1,2]"), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "--set cluster.destinations: key 'cluster.destinations' "
                                     "is a list");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.destinations="), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "key 'cluster.destinations' is empty");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.destinations=9"), SIM_OK);
    /* an unknown key created by --set */
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.tpp=2"), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "--set cluster.tpp: unknown key 'cluster.tpp'");

    /* bad assignments */
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.destinations"), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "expected KEY=VALUE");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "=3"), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "empty key");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "a..b=3"), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "empty component in key 'a..b'");
    CHECK_INT_EQ(sim_cfgdoc_set(d, ".a=3"), SIM_EINVAL);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "a.=3"), SIM_EINVAL);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.model.x=3"), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "--set cluster.model.x: cannot set a key under "
                                     "'cluster.model': it is 'a=b' (--set cluster.model)");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "experiment.policies.x=3"), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "'experiment.policies': it is a list (dir/exp.yaml:16)");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "engine.cache.sizes=[1, 2"), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "--set engine.cache.sizes: value is not valid YAML");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "engine.cache.sizes=*x"), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "--set engine.cache.sizes:");
    /* the failed sets left the document as it was */
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.tpp.x=1"), SIM_EINVAL);
    sim_cfgdoc_destroy(d);
}

/* Every field of a and b equal, doubles bit for bit. */
static void check_same(const struct cfg *a, const struct cfg *b)
{
    CHECK_INT_EQ(a->destinations, b->destinations);
    CHECK(strcmp(a->model, b->model) == 0);
    CHECK_U64_EQ(a->seed, b->seed);
    CHECK(memcmp(&a->rate, &b->rate, sizeof a->rate) == 0);
    CHECK(strcmp(a->trace, b->trace) == 0);
    CHECK(a->warm == b->warm);
    CHECK_INT_EQ(a->n_sizes, b->n_sizes);
    for (size_t i = 0; i < a->n_sizes; i++)
        CHECK_INT_EQ(a->sizes[i], b->sizes[i]);
    CHECK_INT_EQ(a->block_size, b->block_size);
    CHECK_INT_EQ(a->policy, b->policy);
    CHECK_INT_EQ(a->n_loads, b->n_loads);
    CHECK(a->n_loads == 0 || memcmp(a->loads, b->loads, a->n_loads * sizeof *a->loads) == 0);
    CHECK_INT_EQ(a->n_policies, b->n_policies);
    for (size_t i = 0; i < a->n_policies; i++)
        CHECK(strcmp(a->policies[i], b->policies[i]) == 0);
    CHECK(memcmp(&a->slo, &b->slo, sizeof a->slo) == 0);
    CHECK(strcmp(a->note, b->note) == 0);
}

static void round_trip(const struct cfg *x)
{
    char *text = sim_cfg_dump(schema, x);
    struct cfg y;
    int rc = parse_bind(text, &y);
    if (rc) {
        fprintf(stderr, "dump does not re-bind: %s\n%s", sim_errmsg(), text);
        exit(1);
    }
    check_same(x, &y);
    char *again = sim_cfg_dump(schema, &y); /* the dump is a fixed point */
    CHECK(strcmp(text, again) == 0);
    free(again);
    free(text);
    sim_cfg_free(schema, &y);
}

static void test_dump(void)
{
    struct cfg c;
    CHECK_INT_EQ(parse_bind(good_yaml, &c), SIM_OK);
    char *text = sim_cfg_dump(schema, &c);
    /* nested by path, keys in schema order, a mapping where its first key is */
    static const char expect[] =
        "cluster:\n"
        "  destinations: 40\n"
        "  model: \"qwen 7b\"\n"
        "experiment:\n"
        "  seed: 18446744073709551615\n"
        "  loads: [0.1, 1, 0]\n"
        "  policies: [cacheroute, sticky]\n"
        "  slo:\n"
        "    p99_ttft: 2.5\n"
        "  note: \"\"\n"
        "workload:\n"
        "  arrival:\n"
        "    rate: 1000\n"
        "  trace: traces/a.jsonl\n"
        "engine:\n"
        "  cache:\n"
        "    warm: true\n"
        "    sizes: [8, 4096]\n"
        "  block_size: 16\n"
        "router:\n"
        "  policy: flat_lb\n";
    if (strcmp(text, expect) != 0) {
        fprintf(stderr, "dump differs; got:\n%s", text);
        exit(1);
    }
    free(text);
    round_trip(&c);

    /* awkward doubles and strings */
    static const double awkward[] = { 0.1, 1e-300, 5e-324, 1.0 / 3.0, 0.0, 1.0,
                                      2.2250738585072014e-308, 0.30000000000000004,
                                      0.99999999999999989 };
    size_t n = sizeof awkward / sizeof awkward[0];
    free(c.loads);
    c.loads = malloc(n * sizeof *c.loads);
    memcpy(c.loads, awkward, sizeof awkward);
    c.n_loads = n;
    c.rate = 3.5;
    c.slo = 1.7976931348623157e308;
    c.destinations = 10000;
    c.seed = 0;
    c.policy = 2;
    free(c.model);
    c.model = strdup("quote\" back\\slash\nnew\ttab \x01 ü: #");
    free(c.note);
    c.note = strdup("yes");
    free(c.trace);
    c.trace = strdup("/abs/path with space/t.jsonl");
    round_trip(&c);
    c.slo = INFINITY;
    c.rate = 1e-300;
    free(c.note);
    c.note = strdup("30");
    round_trip(&c);
    free(c.note);
    c.note = strdup("-.inf");
    round_trip(&c);
    text = sim_cfg_dump(schema, &c);
    CHECK_STR_CONTAINS(text, "loads: [0.1, 1e-300, 5e-324, 0.3333333333333333, 0, 1, "
                             "2.2250738585072014e-308, 0.30000000000000004, "
                             "0.9999999999999999]");
    CHECK_STR_CONTAINS(text, "rate: 1e-300\n");
    CHECK_STR_CONTAINS(text, "p99_ttft: .inf");
    CHECK_STR_CONTAINS(text, "note: \"-.inf\"");
    free(text);
    sim_cfg_free(schema, &c);
    sim_cfg_free(schema, &c);
}

/* A plug-in owning "router.sticky", bound with the main schema. */
struct sticky_cfg {
    double ttl;
    int64_t slots;
};

static const sim_cfg_key sticky_schema[] = {
    { .path = "ttl", .type = SIM_CFG_DOUBLE, .offset = offsetof(struct sticky_cfg, ttl),
      .min = 0, .max = INFINITY, .def = "60", .unit = "s", .help = "affinity lifetime" },
    { .path = "slots", .type = SIM_CFG_INT, .offset = offsetof(struct sticky_cfg, slots),
      .min = 1, .max = 64, .def = "4", .help = "replicas per key" },
    { .path = NULL }
};

static void test_sections(void)
{
    sim_cfgdoc *d;
    struct cfg c = {0};
    struct sticky_cfg s = {0};
    const sim_cfg_section secs[] = {
        { NULL, schema, &c },
        { "router.sticky", sticky_schema, &s },
    };

    CHECK_INT_EQ(sim_cfgdoc_parse_string(REQUIRED "router:\n  policy: sticky\n"
                                         "  sticky:\n    slots: 8\n",
                                         "exp.yaml", &d),
                 SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind_sections(d, secs, 2), SIM_OK);
    CHECK_INT_EQ(c.policy, 1);
    CHECK_INT_EQ(s.slots, 8);
    CHECK(s.ttl == 60);
    char *text = sim_cfg_dump_sections(secs, 2);
    CHECK_STR_CONTAINS(text, "router:\n  policy: sticky\n  sticky:\n    ttl: 60\n    slots: 8\n");
    free(text);
    sim_cfg_free(schema, &c);

    /* the main schema alone does not know router.sticky */
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "exp.yaml:7: unknown key 'router.sticky'");

    /* ... unless the section is declared opaque, and the plug-in binds its
     * subtree later by itself */
    const sim_cfg_section opaque[] = { { NULL, schema, &c }, { "router.sticky", NULL, NULL } };
    CHECK_INT_EQ(sim_cfg_bind_sections(d, opaque, 2), SIM_OK);
    memset(&s, 0, sizeof s);
    CHECK_INT_EQ(sim_cfg_bind_prefix(d, "router.sticky", sticky_schema, &s), SIM_OK);
    CHECK_INT_EQ(s.slots, 8);
    sim_cfg_free(schema, &c);

    /* unknown keys inside the plug-in section are caught either way */
    CHECK_INT_EQ(sim_cfgdoc_set(d, "router.sticky.slot=3"), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind_sections(d, secs, 2), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "--set router.sticky.slot: unknown key "
                                     "'router.sticky.slot' (did you mean 'router.sticky.slots'?)"
                                     "; expected one of: ttl, slots (under 'router.sticky')");
    CHECK_INT_EQ(sim_cfg_bind_prefix(d, "router.sticky", sticky_schema, &s), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "unknown key 'router.sticky.slot'");
    sim_cfgdoc_destroy(d);

    /* bind_prefix ignores the rest; an absent subtree gives defaults; a
     * scalar in its place is an error */
    CHECK_INT_EQ(sim_cfgdoc_parse_string("junk: 1\nrouter: {x: 1}\n", "p.yaml", &d), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind_prefix(d, "router.sticky", sticky_schema, &s), SIM_OK);
    CHECK_INT_EQ(s.slots, 4);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "router.sticky=3"), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind_prefix(d, "router.sticky", sticky_schema, &s), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "--set router.sticky: key 'router.sticky' is '3'; "
                                     "expected a mapping");
    CHECK_INT_EQ(sim_cfgdoc_set(d, "router=3"), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind_prefix(d, "router.sticky", sticky_schema, &s), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "key 'router' is '3'; expected a mapping");
    sim_cfgdoc_destroy(d);
}

static void test_file(void)
{
    char dir[] = "/tmp/crsim_cfgXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/exp.yaml", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("workload:\n  trace: traces/t.jsonl\n  arrival: {rate: 5}\n"
          "cluster:\n  destinations: -3\n", f);
    fclose(f);

    sim_cfgdoc *d;
    struct cfg c = {0};
    CHECK_INT_EQ(sim_cfgdoc_load(path, &d), SIM_OK);
    CHECK(strcmp(sim_cfgdoc_path(d), path) == 0);
    char *r = sim_cfg_resolve_path(d, "x/y.csv"), want[300];
    snprintf(want, sizeof want, "%s/x/y.csv", dir);
    CHECK(strcmp(r, want) == 0);
    free(r);
    r = sim_cfg_resolve_path(d, "/abs/y.csv");
    CHECK(strcmp(r, "/abs/y.csv") == 0);
    free(r);

    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_EINVAL);
    char msg[300];
    snprintf(msg, sizeof msg, "%s:5: key 'cluster.destinations' is -3", path);
    CHECK_STR_CONTAINS(sim_errmsg(), msg);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.destinations=3"), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_OK);
    snprintf(want, sizeof want, "%s/traces/t.jsonl", dir);
    CHECK(strcmp(c.trace, want) == 0);
    sim_cfg_free(schema, &c);
    sim_cfgdoc_destroy(d);
    remove(path);

    CHECK_INT_EQ(sim_cfgdoc_load(path, &d), SIM_EIO);
    CHECK(d == NULL);
    CHECK_STR_CONTAINS(sim_errmsg(), "cannot open config");
    CHECK_INT_EQ(sim_cfgdoc_load(dir, &d), SIM_EIO); /* a directory */
    CHECK_STR_CONTAINS(sim_errmsg(), dir);
    CHECK_STR_CONTAINS(sim_errmsg(), "config is a directory, not a regular file");

    /* Issue 17 items 10 and 15: a FIFO is refused at once (before: the
     * open blocked until a writer came), so is /dev/zero (before: read
     * until memory ran out); a UTF-8 byte order mark is accepted. */
    snprintf(path, sizeof path, "%s/fifo.yaml", dir);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK_INT_EQ(sim_cfgdoc_load(path, &d), SIM_EIO);
    CHECK(d == NULL);
    CHECK_STR_CONTAINS(sim_errmsg(), "fifo.yaml: config is a FIFO (named pipe), not a regular "
                                     "file; expected a readable YAML config file");
    remove(path);
    CHECK_INT_EQ(sim_cfgdoc_load("/dev/zero", &d), SIM_EIO);
    CHECK_STR_CONTAINS(sim_errmsg(), "/dev/zero: config is a character device");
    snprintf(path, sizeof path, "%s/bom.yaml", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("\xef\xbb\xbf" "workload:\n  trace: t.jsonl\n  arrival: {rate: 5}\n", f);
    fclose(f);
    CHECK_INT_EQ(sim_cfgdoc_load(path, &d), SIM_OK);
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_OK);
    CHECK(c.rate == 5);
    sim_cfg_free(schema, &c);
    sim_cfgdoc_destroy(d);
    remove(path);
    rmdir(dir);
}

/* Issue 17 item 13: a key or value holding control characters is echoed
 * escaped, so every message is one line; other messages are unchanged. */
static void test_control_chars(void)
{
    expect_error("workload:\n  \"tra\\nce\": 1\n", "exp.yaml:2: unknown key "
                 "'workload.tra\\nce'", NULL);
    CHECK(strchr(sim_errmsg(), '\n') == NULL);
    expect_error("workload:\n  \"a\\tb\\u0001\\x7f\": 1\n", "'workload.a\\tb\\x01\\x7f'",
                 NULL);
    sim_cfgdoc *d;
    CHECK_INT_EQ(sim_cfgdoc_parse_string(good_yaml, "exp.yaml", &d), SIM_OK);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "cluster.dest\ninations\r=3"), SIM_OK);
    struct cfg c = {0};
    CHECK_INT_EQ(sim_cfg_bind(d, schema, &c), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "--set cluster.dest\\ninations\\r: unknown key "
                                     "'cluster.dest\\ninations\\r'");
    for (const char *m = sim_errmsg(); *m; m++)
        CHECK((unsigned char)*m >= 0x20 && *m != 0x7f);
    CHECK_INT_EQ(sim_cfgdoc_set(d, "a\nb"), SIM_EINVAL); /* no '=' */
    CHECK_STR_CONTAINS(sim_errmsg(), "--set a\\nb: expected KEY=VALUE");
    sim_cfgdoc_destroy(d);
    /* Unchanged: a message without control characters, backslashes and
     * UTF-8 included, is stored byte for byte; escaping is idempotent. */
    const char *plain = "f.yaml:3: key 'a\\nb' is '\xc3\xa9'; expected x \\ y";
    SIM_ERROR(SIM_EINVAL, "%s", plain);
    CHECK(strcmp(sim_errmsg(), plain) == 0);
    char copy[1100];
    SIM_ERROR(SIM_EINVAL, "x\001y\n");
    snprintf(copy, sizeof copy, "%s", sim_errmsg());
    CHECK(strcmp(copy, "x\\x01y\\n") == 0);
    SIM_ERROR(SIM_EINVAL, "%s", copy);
    CHECK(strcmp(sim_errmsg(), copy) == 0);
    /* A long message keeps its start and its end (the expected form)
     * around a marker, cutting between whole escapes and whole UTF-8
     * characters (before: cut at 1 KiB, the expected form lost; the fuzz
     * finding keyrates-long-value, tests/bad-inputs/README.md). */
    char nl[2000];
    memset(nl, '\n', sizeof nl - 1);
    nl[sizeof nl - 1] = '\0';
    SIM_ERROR(SIM_EINVAL, "f:1: '%s'; expected x", nl);
    const char *m = sim_errmsg();
    CHECK(strlen(m) <= 1023);
    CHECK(strncmp(m, "f:1: '\\n\\n", 10) == 0);
    /* head: 6 + 2 x 327 of 660 bytes; tail: 2 x 153 + 13 of 320: 1999 - 480 cut */
    CHECK_STR_CONTAINS(m, "\\n [... 1519 bytes cut ...] \\n");
    CHECK(strcmp(m + strlen(m) - 15, "\\n'; expected x") == 0);
    char *big = malloc(100000);
    CHECK(big != NULL);
    for (size_t i = 0; i + 2 < 100000; i += 2)
        memcpy(big + i, "\xc3\xa9", 2); /* e acute, two bytes */
    big[99998] = '\0';
    SIM_ERROR(SIM_EINVAL, "g.csv:7: rate '%s' is not a number; expected key,rate", big);
    m = sim_errmsg();
    CHECK(strlen(m) <= 1023);
    CHECK(strncmp(m, "g.csv:7: rate '\xc3\xa9", 17) == 0);
    CHECK_STR_CONTAINS(m, "\xc3\xa9 [... ");
    CHECK_STR_CONTAINS(m, " bytes cut ...] \xc3\xa9");
    CHECK_STR_CONTAINS(m, "' is not a number; expected key,rate");
    free(big);
}

static void test_schema_and_help(void)
{
    CHECK_INT_EQ(sim_cfg_schema_check(schema), SIM_OK);
    CHECK_INT_EQ(sim_cfg_schema_check(sticky_schema), SIM_OK);

    static const sim_cfg_key bad_default[] = {
        { .path = "a.b", .type = SIM_CFG_INT, .min = 1, .max = 5, .def = "9" },
        { .path = NULL }
    };
    CHECK_INT_EQ(sim_cfg_schema_check(bad_default), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "schema default of 'a.b': key 'a.b' is 9");
    static const sim_cfg_key conflict[] = {
        { .path = "a", .type = SIM_CFG_INT, .def = "1" },
        { .path = "a.b", .type = SIM_CFG_INT, .offset = 8, .def = "1" },
        { .path = NULL }
    };
    CHECK_INT_EQ(sim_cfg_schema_check(conflict), SIM_EINVAL);
    CHECK_STR_CONTAINS(sim_errmsg(), "both a key and a mapping");
    static const sim_cfg_key no_choices[] = {
        { .path = "a", .type = SIM_CFG_ENUM },
        { .path = NULL }
    };
    CHECK_INT_EQ(sim_cfg_schema_check(no_choices), SIM_EINVAL);
    static const sim_cfg_key bad_path[] = {
        { .path = "a..b", .type = SIM_CFG_INT },
        { .path = NULL }
    };
    CHECK_INT_EQ(sim_cfg_schema_check(bad_path), SIM_EINVAL);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    sim_cfg_help(schema, f);
    fclose(f);
    CHECK_STR_CONTAINS(buf, "cluster.destinations");
    CHECK_STR_CONTAINS(buf, "default 30");
    CHECK_STR_CONTAINS(buf, "[1, 10000] engines; number of destinations");
    CHECK_STR_CONTAINS(buf, "required");
    CHECK_STR_CONTAINS(buf, "one of: flat_lb, sticky, cacheroute; routing policy");
    CHECK_STR_CONTAINS(buf, "> 0 requests/s; mean arrival rate");
    if (getenv("CRSIM_TEST_VERBOSE"))
        fputs(buf, stdout);
    free(buf);
}

int main(void)
{
    test_good();
    test_errors();
    test_set();
    test_dump();
    test_sections();
    test_file();
    test_control_chars();
    test_schema_and_help();
    printf("test_config: all passed\n");
    return 0;
}
