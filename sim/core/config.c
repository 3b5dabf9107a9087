/*
 * The YAML configuration reader and schema binder (see config.h).
 *
 * libyaml's event parser feeds a small tree of our own (struct node) rather
 * than libyaml's document API, because the tree must be edited by --set
 * overrides and every node must carry its source and line for messages;
 * libyaml's document would also silently expand aliases.  Binding then
 * works on full dotted paths: a document key is valid if some schema entry
 * has that path (a leaf) or lies below it (a mapping), which is what lets
 * several schemas share one document.  Schemas and configs are tens of keys,
 * so every lookup here is a linear scan; nothing is hashed or sorted.
 */
#include "sim/core/number.h"
#include "sim/core/config.h"

#include "sim/core/error.h"
#include "sim/core/fileio.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Deeper nesting than this is rejected before it can exhaust the C stack in
 * the recursive parser; no sane config comes near it. */
#define MAX_DEPTH 64

/* ------------------------------------------------------------------ */
/* Small helpers: growable strings, formatted messages.                */
/* ------------------------------------------------------------------ */

struct sbuf {
    char *p;
    size_t len, cap;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap)
            cap *= 2;
        b->p = sim_xrealloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    SIM_ALWAYS(n >= 0);
    if ((size_t)n < sizeof small) {
        sb_putn(b, small, (size_t)n);
        return;
    }
    char *big = sim_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_putn(b, big, (size_t)n);
    free(big);
}

/* sb contents as a string, "" if nothing was written; ownership passes. */
static char *sb_take(struct sbuf *b)
{
    if (!b->p)
        return sim_xstrdup("");
    char *p = b->p;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *d = sim_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".  Caller frees. */
static char *join_path(const char *prefix, const char *name)
{
    struct sbuf b = {0};
    if (prefix && *prefix) {
        sb_puts(&b, prefix);
        sb_puts(&b, ".");
    }
    sb_puts(&b, name);
    return sb_take(&b);
}

/* Record a SIM_EINVAL whose message starts with the location: "src:line: "
 * for a file, "src: " for the command line or a default (line 0). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail_at(const char *src, unsigned long line, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        return SIM_ERROR(SIM_EINVAL, "%s:%lu: %s", src, line, msg);
    return SIM_ERROR(SIM_EINVAL, "%s: %s", src, msg);
}

/* ------------------------------------------------------------------ */
/* The tree.                                                           */
/* ------------------------------------------------------------------ */

enum node_kind { NODE_SCALAR, NODE_SEQ, NODE_MAP };

struct node;

/* A mapping entry; the key keeps its own location because a --set can add
 * a key to a mapping that came from the file. */
struct mapent {
    char *key;
    const char *src;
    unsigned long line;
    struct node *val;
};

struct node {
    enum node_kind kind;
    const char *src;     /* owned by the document (or a caller's frame) */
    unsigned long line;  /* 1-based; 0 = command line or schema default */
    char *text;          /* NODE_SCALAR */
    bool quoted;         /* NODE_SCALAR written quoted or as a block: a string */
    size_t n, cap;       /* NODE_SEQ and NODE_MAP */
    struct node **items; /* NODE_SEQ */
    struct mapent *ents; /* NODE_MAP */
};

struct sim_cfgdoc {
    char *path;
    struct node *root; /* always a NODE_MAP */
    /* Interned "--set a.b" source names, freed with the document: nodes
     * point into them, and replaced nodes may outlive their own --set. */
    char **srcs;
    size_t n_srcs;
};

static struct node *node_new(enum node_kind kind, const char *src, unsigned long line)
{
    struct node *n = sim_xcalloc(1, sizeof *n);
    n->kind = kind;
    n->src = src;
    n->line = line;
    return n;
}

static void node_free(struct node *n)
{
    if (!n)
        return;
    free(n->text);
    for (size_t i = 0; i < n->n; i++) {
        if (n->kind == NODE_SEQ) {
            node_free(n->items[i]);
        } else {
            free(n->ents[i].key);
            node_free(n->ents[i].val);
        }
    }
    free(n->items);
    free(n->ents);
    free(n);
}

static void grow(struct node *n)
{
    if (n->n < n->cap)
        return;
    n->cap = n->cap ? 2 * n->cap : 4;
    if (n->kind == NODE_SEQ)
        n->items = sim_xrealloc(n->items, n->cap * sizeof *n->items);
    else
        n->ents = sim_xrealloc(n->ents, n->cap * sizeof *n->ents);
}

static void seq_push(struct node *seq, struct node *item)
{
    grow(seq);
    seq->items[seq->n++] = item;
}

/* Takes ownership of `key` and `val`. */
static void map_push(struct node *map, char *key, const char *src, unsigned long line,
                     struct node *val)
{
    grow(map);
    map->ents[map->n++] = (struct mapent){ key, src, line, val };
}

static struct mapent *map_find(const struct node *map, const char *key, size_t len)
{
    for (size_t i = 0; i < map->n; i++)
        if (strlen(map->ents[i].key) == len && memcmp(map->ents[i].key, key, len) == 0)
            return &map->ents[i];
    return NULL;
}

/* YAML 1.2 core schema: these plain scalars mean null. */
static bool is_null(const struct node *n)
{
    static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
    if (n->kind != NODE_SCALAR || n->quoted)
        return false;
    for (size_t i = 0; nulls[i]; i++)
        if (strcmp(n->text, nulls[i]) == 0)
            return true;
    return false;
}

/* How a node reads in a message: "'thirty'", "0" (raw, for range errors),
 * "the quoted string '30'", "a mapping", "a list", "empty", "null". */
enum desc_style { DESC_QUOTE, DESC_RAW, DESC_NOTE_QUOTED };

static void describe(const struct node *n, enum desc_style style, char *buf, size_t size)
{
    if (n->kind == NODE_MAP) {
        snprintf(buf, size, "a mapping");
        return;
    }
    if (n->kind == NODE_SEQ) {
        snprintf(buf, size, "a list");
        return;
    }
    if (is_null(n)) {
        snprintf(buf, size, "%s", n->text[0] ? "null" : "empty");
        return;
    }
    /* Truncate and blank out control characters so that the message stays
     * one readable line whatever the input holds. */
    char text[64];
    size_t len = strlen(n->text), keep = len < 40 ? len : 40;
    for (size_t i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)n->text[i];
        text[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    strcpy(text + keep, keep < len ? "..." : "");
    if (style == DESC_RAW && !n->quoted)
        snprintf(buf, size, "%s", text);
    else if (style == DESC_NOTE_QUOTED && n->quoted)
        snprintf(buf, size, "the quoted string '%s'", text);
    else
        snprintf(buf, size, "'%s'", text);
}

/* ------------------------------------------------------------------ */
/* Parsing with libyaml events.                                        */
/* ------------------------------------------------------------------ */

struct yp {
    yaml_parser_t parser;
    const char *text; /* the input, to turn a reader error's offset into a line */
    size_t len;
    const char *src;  /* file name, "--set a.b" or "schema default of 'a.b'" */
    bool cmdline;     /* a value from outside a file: every line is 0 */
};

static unsigned long yp_line(const struct yp *p, yaml_mark_t m)
{
    return p->cmdline ? 0 : (unsigned long)m.line + 1;
}

static int yp_syntax_error(const struct yp *p)
{
    const yaml_parser_t *y = &p->parser;
    if (y->error == YAML_MEMORY_ERROR)
        sim_panic(__FILE__, __LINE__, "out of memory in libyaml");
    unsigned long line = (unsigned long)y->problem_mark.line + 1;
    if (y->error == YAML_READER_ERROR) {
        /* Reader errors (bad UTF-8, control characters) carry a byte
         * offset instead of a mark. */
        line = 1;
        for (size_t i = 0; i < y->problem_offset && i < p->len; i++)
            line += p->text[i] == '\n';
    }
    const char *problem = y->problem ? y->problem : "unknown error";
    if (p->cmdline)
        return fail_at(p->src, 0, "value is not valid YAML: %s", problem);
    /* Every syntax error says what was expected: a binary or compressed
     * file named where YAML is read stops here (issue 38 C15). */
    if (y->context)
        return fail_at(p->src, line, "YAML syntax error: %s (%s at line %lu); expected a "
                       "YAML text file", problem, y->context,
                       (unsigned long)y->context_mark.line + 1);
    return fail_at(p->src, line, "YAML syntax error: %s; expected a YAML text file%s", problem,
                   y->error == YAML_READER_ERROR ? " (UTF-8, not compressed or binary)" : "");
}

static int yp_next(struct yp *p, yaml_event_t *ev)
{
    if (yaml_parser_parse(&p->parser, ev))
        return SIM_OK;
    return yp_syntax_error(p);
}

/* Anchors, aliases and tags are refused: with them one value could have two
 * spellings and two locations, and "!!str 30" would be a second way of
 * quoting that nobody in crsim needs. */
static int yp_check_props(const struct yp *p, unsigned long line, const yaml_char_t *anchor,
                          const yaml_char_t *tag)
{
    if (anchor)
        return fail_at(p->src, line,
                       "YAML anchors ('&%s') are not supported; write the value out in full",
                       (const char *)anchor);
    if (tag)
        return fail_at(p->src, line,
                       "YAML tags ('%s') are not supported; quote the value to make it a string",
                       (const char *)tag);
    return SIM_OK;
}

static int yp_node(struct yp *p, yaml_event_t *ev, const char *path, int depth, struct node **out);

static int yp_sequence(struct yp *p, struct node *seq, const char *path, int depth)
{
    for (size_t i = 0;; i++) {
        yaml_event_t ev;
        int rc = yp_next(p, &ev);
        if (rc)
            return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return SIM_OK;
        }
        struct sbuf cpath = {0};
        sb_printf(&cpath, "%s[%zu]", path, i);
        struct node *child;
        rc = yp_node(p, &ev, cpath.p, depth + 1, &child);
        free(cpath.p);
        if (child)
            seq_push(seq, child);
        if (rc)
            return rc;
    }
}

static int yp_mapping(struct yp *p, struct node *map, const char *path, int depth)
{
    for (;;) {
        yaml_event_t ev;
        int rc = yp_next(p, &ev);
        if (rc)
            return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return SIM_OK;
        }
        unsigned long kline = yp_line(p, ev.start_mark);
        const char *where = *path ? path : "the top level";
        if (ev.type == YAML_ALIAS_EVENT) {
            rc = fail_at(p->src, kline, "YAML aliases ('*%s') are not supported",
                         (const char *)ev.data.alias.anchor);
            yaml_event_delete(&ev);
            return rc;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            const char *what = ev.type == YAML_MAPPING_START_EVENT ? "mapping" : "list";
            yaml_event_delete(&ev);
            return fail_at(p->src, kline, "a key under %s is a %s; keys must be names", where,
                           what);
        }
        rc = yp_check_props(p, kline, ev.data.scalar.anchor, ev.data.scalar.tag);
        char *key = xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
        size_t klen = ev.data.scalar.length;
        yaml_event_delete(&ev);
        char *full = join_path(path, key);
        if (rc == SIM_OK) {
            if (klen == 0)
                rc = fail_at(p->src, kline, "empty key under %s", where);
            else if (strlen(key) != klen)
                rc = fail_at(p->src, kline, "a key under %s contains a NUL character", where);
            else if (strchr(key, '.'))
                /* Dotted keys would give a value two spellings ("a.b: 1" and
                 * "a: {b: 1}"), so duplicates could slip past the check below. */
                rc = fail_at(p->src, kline,
                             "key '%s' contains '.'; write nested mappings instead", full);
            else if (map_find(map, key, klen))
                rc = fail_at(p->src, kline, "duplicate key '%s'", full);
        }
        struct node *val = NULL;
        if (!rc)
            rc = yp_next(p, &ev);
        if (!rc)
            rc = yp_node(p, &ev, full, depth + 1, &val);
        free(full);
        if (val)
            map_push(map, key, p->src, kline, val);
        else
            free(key);
        if (rc)
            return rc;
    }
}

/* Build the node that starts with `ev` (consumed) into *out.  On error *out
 * may hold a partial node that the caller frees. */
static int yp_node(struct yp *p, yaml_event_t *ev, const char *path, int depth, struct node **out)
{
    unsigned long line = yp_line(p, ev->start_mark);
    int rc = SIM_OK;
    *out = NULL;
    if (depth > MAX_DEPTH) {
        rc = fail_at(p->src, line, "nesting deeper than %d levels at '%s'", MAX_DEPTH, path);
        goto done;
    }
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        rc = fail_at(p->src, line, "YAML aliases ('*%s') are not supported",
                     (const char *)ev->data.alias.anchor);
        break;
    case YAML_SCALAR_EVENT:
        rc = yp_check_props(p, line, ev->data.scalar.anchor, ev->data.scalar.tag);
        if (rc)
            break;
        if (memchr(ev->data.scalar.value, 0, ev->data.scalar.length)) {
            rc = fail_at(p->src, line, "the value of '%s' contains a NUL character", path);
            break;
        }
        *out = node_new(NODE_SCALAR, p->src, line);
        (*out)->text = xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        (*out)->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        break;
    case YAML_SEQUENCE_START_EVENT:
        rc = yp_check_props(p, line, ev->data.sequence_start.anchor,
                            ev->data.sequence_start.tag);
        if (!rc) {
            *out = node_new(NODE_SEQ, p->src, line);
            rc = yp_sequence(p, *out, path, depth);
        }
        break;
    case YAML_MAPPING_START_EVENT:
        rc = yp_check_props(p, line, ev->data.mapping_start.anchor, ev->data.mapping_start.tag);
        if (!rc) {
            *out = node_new(NODE_MAP, p->src, line);
            rc = yp_mapping(p, *out, path, depth);
        }
        break;
    default:
        /* libyaml only yields node events here in a well-formed stream. */
        sim_panic(__FILE__, __LINE__, "unexpected YAML event");
    }
done:
    yaml_event_delete(ev);
    return rc;
}

/*
 * Parse a whole YAML stream of `len` bytes into *root: NULL for an empty
 * stream, otherwise the single document's node.  Positions are attributed
 * to `src` (file lines, or line 0 when `cmdline`).
 */
static int yp_parse(const char *text, size_t len, const char *src, bool cmdline,
                    struct node **root)
{
    struct yp p = { .text = text, .len = len, .src = src, .cmdline = cmdline };
    yaml_event_t ev;
    int rc;

    *root = NULL;
    if (!yaml_parser_initialize(&p.parser))
        sim_panic(__FILE__, __LINE__, "out of memory in libyaml");
    yaml_parser_set_input_string(&p.parser, (const unsigned char *)text, len);

    if ((rc = yp_next(&p, &ev)))           /* STREAM-START */
        goto out;
    yaml_event_delete(&ev);
    if ((rc = yp_next(&p, &ev)))           /* DOCUMENT-START or STREAM-END */
        goto out;
    if (ev.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&ev);
        goto out;
    }
    yaml_event_delete(&ev);
    if ((rc = yp_next(&p, &ev)) || (rc = yp_node(&p, &ev, "", 1, root)))
        goto out;
    if ((rc = yp_next(&p, &ev)))           /* DOCUMENT-END */
        goto out;
    yaml_event_delete(&ev);
    if ((rc = yp_next(&p, &ev)))           /* STREAM-END, or a second document */
        goto out;
    if (ev.type != YAML_STREAM_END_EVENT)
        rc = fail_at(src, yp_line(&p, ev.start_mark),
                     "a second YAML document ('---') is not supported; "
                     "put everything in one mapping");
    yaml_event_delete(&ev);
out:
    yaml_parser_delete(&p.parser);
    if (rc) {
        node_free(*root);
        *root = NULL;
    }
    return rc;
}

static const char *doc_intern(sim_cfgdoc *d, char *s)
{
    d->srcs = sim_xrealloc(d->srcs, (d->n_srcs + 1) * sizeof *d->srcs);
    d->srcs[d->n_srcs++] = s;
    return s;
}

static int doc_parse(const char *text, size_t len, const char *name, sim_cfgdoc **out)
{
    sim_cfgdoc *d = sim_xcalloc(1, sizeof *d);
    d->path = sim_xstrdup(name);
    *out = NULL;
    int rc = yp_parse(text, len, d->path, false, &d->root);
    if (!rc && !d->root) {
        rc = SIM_ERROR(SIM_EINVAL, "%s: config is empty; expected a mapping of keys", d->path);
    } else if (!rc && d->root->kind != NODE_MAP) {
        /* The kind only, not the text: a file named by mistake (a CSV, a
         * trace, notes) would otherwise have its first bytes echoed
         * (issue 38 C15). */
        rc = fail_at(d->path, d->root->line, "top level is %s, not a mapping; expected a YAML "
                     "file of KEY: VALUE lines (is this the right file?)",
                     d->root->kind == NODE_SEQ ? "a list" : "a single text value");
    }
    if (rc) {
        sim_cfgdoc_destroy(d);
        return rc;
    }
    *out = d;
    return SIM_OK;
}

int sim_cfgdoc_parse_string(const char *text, const char *name, sim_cfgdoc **out)
{
    return doc_parse(text, strlen(text), name, out);
}

int sim_cfgdoc_load(const char *path, sim_cfgdoc **out)
{
    *out = NULL;
    /* A FIFO or device is refused before any read (sim_file_open): a
     * FIFO would block, /dev/zero would be read without end. */
    FILE *f;
    int orc = sim_file_open(path, "config", "a readable YAML config file", &f);
    if (orc)
        return orc;
    /* Read the whole file ourselves rather than hand libyaml the FILE:
     * read errors (a directory, EIO) then become SIM_EIO, not a puzzling
     * "input error" from the YAML reader. */
    struct sbuf b = {0};
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        sb_putn(&b, chunk, n);
    if (ferror(f)) {
        int err = errno;
        fclose(f);
        free(b.p);
        return SIM_ERROR(SIM_EIO, "%s: cannot read config: %s", path, strerror(err));
    }
    fclose(f);
    int rc = doc_parse(b.p ? b.p : "", b.len, path, out);
    free(b.p);
    return rc;
}

void sim_cfgdoc_destroy(sim_cfgdoc *d)
{
    if (!d)
        return;
    node_free(d->root);
    for (size_t i = 0; i < d->n_srcs; i++)
        free(d->srcs[i]);
    free(d->srcs);
    free(d->path);
    free(d);
}

const char *sim_cfgdoc_path(const sim_cfgdoc *d) { return d->path; }

static void put_loc(const char *src, unsigned long line, char *buf, size_t n)
{
    if (line > 0)
        snprintf(buf, n, "%s:%lu", src, line);
    else
        snprintf(buf, n, "%s", src);
}

bool sim_cfgdoc_locate(const sim_cfgdoc *d, const char *path, const char *item, char *buf,
                       size_t n)
{
    const struct node *m = d->root;
    for (const char *c = path;;) {
        size_t len = strcspn(c, ".");
        const char *br = memchr(c, '[', len);
        if (br && c[len - 1] == ']') {
            /* "groups[1]": element 1 of the list at key "groups" (a
             * TABLE key's element, sim_cfg_key.table). */
            const struct mapent *e =
                m->kind == NODE_MAP ? map_find(m, c, (size_t)(br - c)) : NULL;
            char *end = NULL;
            unsigned long idx = strtoul(br + 1, &end, 10);
            if (!e || e->val->kind != NODE_SEQ || end != c + len - 1 || idx >= e->val->n)
                return false;
            m = e->val->items[idx];
            if (c[len] == '\0') {
                if (item)
                    return false;
                put_loc(m->src, m->line, buf, n);
                return true;
            }
            c += len + 1;
            continue;
        }
        const struct mapent *e = m->kind == NODE_MAP ? map_find(m, c, len) : NULL;
        if (!e)
            return false;
        if (c[len] != '\0') {
            m = e->val;
            c += len + 1;
            continue;
        }
        if (!item) {
            put_loc(e->src, e->line, buf, n);
            return true;
        }
        if (e->val->kind != NODE_SEQ)
            return false;
        for (size_t i = 0; i < e->val->n; i++) {
            const struct node *x = e->val->items[i];
            if (x->kind == NODE_SCALAR && strcmp(x->text, item) == 0) {
                put_loc(x->src, x->line, buf, n);
                return true;
            }
        }
        return false;
    }
}

int sim_cfgdoc_set(sim_cfgdoc *d, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return SIM_ERROR(SIM_EINVAL, "--set %s: expected KEY=VALUE, e.g. cluster.destinations=30",
                         assignment);
    char *path = xstrndup(assignment, (size_t)(eq - assignment));
    if (!*path) {
        free(path);
        return SIM_ERROR(SIM_EINVAL, "--set %s: empty key before '='", assignment);
    }
    /* Every '.' and the end must follow a non-empty component. */
    for (const char *c = path + 1;; c++) {
        if ((*c == '.' || *c == '\0') && (path[0] == '.' || c[-1] == '.')) {
            int rc = SIM_ERROR(SIM_EINVAL, "--set %s: empty component in key '%s'", assignment,
                               path);
            free(path);
            return rc;
        }
        if (*c == '\0')
            break;
    }

    struct sbuf sb = {0};
    sb_printf(&sb, "--set %s", path);
    const char *src = doc_intern(d, sb_take(&sb));
    struct node *val;
    const char *text = eq + 1;
    int rc = yp_parse(text, strlen(text), src, true, &val);
    if (rc) {
        free(path);
        return rc;
    }
    if (!val) { /* "a.b=": an empty value, which bind reports as empty */
        val = node_new(NODE_SCALAR, src, 0);
        val->text = sim_xstrdup("");
    }

    /* Walk down, creating missing mappings.  Once one is created every
     * later component is missing too, so the only failure (an existing
     * scalar or list on the way) happens before anything is changed. */
    struct node *map = d->root;
    char *comp = path;
    for (;;) {
        char *dot = strchr(comp, '.');
        size_t len = dot ? (size_t)(dot - comp) : strlen(comp);
        struct mapent *e = map_find(map, comp, len);
        if (!dot) {
            if (e) {
                node_free(e->val);
                e->val = val;
                e->src = src;
                e->line = 0;
            } else {
                map_push(map, xstrndup(comp, len), src, 0, val);
            }
            break;
        }
        if (!e) {
            struct node *m = node_new(NODE_MAP, src, 0);
            map_push(map, xstrndup(comp, len), src, 0, m);
            map = m;
        } else if (e->val->kind != NODE_MAP) {
            char desc[128], at[256];
            describe(e->val, DESC_QUOTE, desc, sizeof desc);
            if (e->val->line > 0)
                snprintf(at, sizeof at, " (%s:%lu)", e->val->src, e->val->line);
            else
                snprintf(at, sizeof at, " (%s)", e->val->src);
            *dot = '\0';
            rc = SIM_ERROR(SIM_EINVAL,
                           "--set %.*s: cannot set a key under '%s': it is %s%s, not a mapping",
                           (int)(eq - assignment), assignment, path, desc, at);
            node_free(val);
            free(path);
            return rc;
        } else {
            map = e->val;
        }
        comp = dot + 1;
    }
    free(path);
    return SIM_OK;
}

char *sim_cfg_resolve_path(const sim_cfgdoc *d, const char *p)
{
    const char *slash = strrchr(d->path, '/');
    if (p[0] == '/' || p[0] == '\0' || !slash)
        return sim_xstrdup(p);
    struct sbuf b = {0};
    sb_putn(&b, d->path, (size_t)(slash - d->path) + 1);
    sb_puts(&b, p);
    return sb_take(&b);
}

/* ------------------------------------------------------------------ */
/* Schema helpers: ranges, expected-form text, suggestions.            */
/* ------------------------------------------------------------------ */

static bool is_list(enum sim_cfg_type t)
{
    return t == SIM_CFG_INT_LIST || t == SIM_CFG_DOUBLE_LIST || t == SIM_CFG_STRING_LIST;
}

/* The scalar type of one element (the type itself for scalars). */
static enum sim_cfg_type elem_type(enum sim_cfg_type t)
{
    switch (t) {
    case SIM_CFG_INT_LIST: return SIM_CFG_INT;
    case SIM_CFG_DOUBLE_LIST: return SIM_CFG_DOUBLE;
    case SIM_CFG_STRING_LIST: return SIM_CFG_STRING;
    default: return t;
    }
}

static bool is_number(enum sim_cfg_type t)
{
    return t == SIM_CFG_INT || t == SIM_CFG_UINT64 || t == SIM_CFG_DOUBLE;
}

static size_t elem_size(enum sim_cfg_type t)
{
    switch (elem_type(t)) {
    case SIM_CFG_INT: return sizeof(int64_t);
    case SIM_CFG_UINT64: return sizeof(uint64_t);
    case SIM_CFG_DOUBLE: return sizeof(double);
    case SIM_CFG_BOOL: return sizeof(bool);
    case SIM_CFG_ENUM: return sizeof(int);
    default: return sizeof(char *);
    }
}

static bool has_range(const sim_cfg_key *k) { return !(k->min == 0 && k->max == 0); }

static bool in_range(const sim_cfg_key *k, double v)
{
    if (isnan(v))
        return false;
    if (!has_range(k))
        return true;
    bool lo = (k->flags & SIM_CFG_EXCL_MIN) ? v > k->min : v >= k->min;
    bool hi = (k->flags & SIM_CFG_EXCL_MAX) ? v < k->max : v <= k->max;
    return lo && hi;
}

/* The integer bounds of k's range (min/max are doubles in the schema):
 * the smallest and largest integers in it, clamped to int64.  Unchanged
 * without a range. */
static void int_bounds(const sim_cfg_key *k, int64_t *lo, int64_t *hi)
{
    if (!has_range(k))
        return;
    double a = ceil(k->min), b = floor(k->max);
    if ((k->flags & SIM_CFG_EXCL_MIN) && a == k->min)
        a += 1;
    if ((k->flags & SIM_CFG_EXCL_MAX) && b == k->max)
        b -= 1;
    *lo = a <= -0x1p63 ? INT64_MIN : a >= 0x1p63 ? INT64_MAX : (int64_t)a;
    *hi = b >= 0x1p63 ? INT64_MAX : b <= -0x1p63 ? INT64_MIN : (int64_t)b;
}

/* Shortest "%.Ng" that reads back to the same bits (N <= 17 always does).
 * Shortest rather than a fixed %.17g so that the stored config shows 0.1,
 * not 0.10000000000000001; both re-parse exactly. */
static void fmt_double(double v, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, ".nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, "%s", v > 0 ? ".inf" : "-.inf");
        return;
    }
    /* Whole numbers print in full ("1000", not "1e+03"); below 2^53 that
     * is exact. */
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, size, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        double r = strtod(buf, NULL);
        if (memcmp(&r, &v, sizeof v) == 0)
            return;
    }
}

static void fmt_bound(const sim_cfg_key *k, double v, char *buf, size_t size)
{
    if (elem_type(k->type) == SIM_CFG_DOUBLE)
        fmt_double(v, buf, size);
    else
        snprintf(buf, size, "%.0f", v);
}

/* " in [1, 4096]", " > 0", " <= 1", or "" for no range. */
static void range_text(const sim_cfg_key *k, char *buf, size_t size)
{
    char lo[40], hi[40];
    bool has_lo = has_range(k) && isfinite(k->min);
    bool has_hi = has_range(k) && isfinite(k->max);
    fmt_bound(k, k->min, lo, sizeof lo);
    fmt_bound(k, k->max, hi, sizeof hi);
    bool xlo = k->flags & SIM_CFG_EXCL_MIN, xhi = k->flags & SIM_CFG_EXCL_MAX;
    if (has_lo && has_hi)
        snprintf(buf, size, " in %c%s, %s%c", xlo ? '(' : '[', lo, hi, xhi ? ')' : ']');
    else if (has_lo)
        snprintf(buf, size, " %s %s", xlo ? ">" : ">=", lo);
    else if (has_hi)
        snprintf(buf, size, " %s %s", xhi ? "<" : "<=", hi);
    else
        buf[0] = '\0';
}

/* "a, b, c" from a NULL-terminated list, bounded by `size`. */
static void choices_text(const char *const *choices, char *buf, size_t size)
{
    struct sbuf b = {0};
    for (size_t i = 0; choices[i]; i++)
        sb_printf(&b, "%s%s", i ? ", " : "", choices[i]);
    snprintf(buf, size, "%s", b.p ? b.p : "");
    free(b.p);
}

/* "name, destinations, engine": the top-level names of a TABLE key's
 * element schema, in schema order.  A new string.  Cannot fail. */
static char *table_keys(const sim_cfg_key *k)
{
    struct sbuf b = {0};
    for (const sim_cfg_key *e = k->table; e && e->path; e++) {
        size_t len = strcspn(e->path, ".");
        bool seen = false;
        for (const sim_cfg_key *f = k->table; f < e && !seen; f++)
            seen = strncmp(f->path, e->path, len) == 0 && (f->path[len] == '.' || !f->path[len]);
        if (seen)
            continue;
        if (b.len)
            sb_puts(&b, ", ");
        sb_putn(&b, e->path, len);
    }
    if (!b.p)
        sb_puts(&b, "");
    return sb_take(&b);
}

/* The expected form of key `k` (of one element if `element`), as in
 * "an integer in [1, 4096] (tokens)". */
static void expected(const sim_cfg_key *k, bool element, char *buf, size_t size)
{
    char range[100], ch[400] = "", unit[80] = "";
    enum sim_cfg_type t = element ? elem_type(k->type) : k->type;
    range_text(k, range, sizeof range);
    if (k->choices)
        choices_text(k->choices, ch, sizeof ch);
    if (k->unit && *k->unit)
        snprintf(unit, sizeof unit, " (%s)", k->unit);
    switch (t) {
    case SIM_CFG_INT: snprintf(buf, size, "an integer%s%s", range, unit); break;
    case SIM_CFG_UINT64: snprintf(buf, size, "a non-negative integer%s%s", range, unit); break;
    case SIM_CFG_DOUBLE: snprintf(buf, size, "a number%s%s", range, unit); break;
    case SIM_CFG_BOOL: snprintf(buf, size, "true or false"); break;
    case SIM_CFG_PATH: snprintf(buf, size, "a path%s", unit); break;
    case SIM_CFG_ENUM: snprintf(buf, size, "one of: %s", ch); break;
    case SIM_CFG_STRING:
        if (k->choices)
            snprintf(buf, size, "one of: %s", ch);
        else
            snprintf(buf, size, "a string%s", unit);
        break;
    case SIM_CFG_TABLE: {
        char *kids = table_keys(k);
        snprintf(buf, size, "a list of mappings, each with keys: %s", kids);
        free(kids);
        break;
    }
    default: {
        const char *what = t == SIM_CFG_INT_LIST ? "integers"
                         : t == SIM_CFG_DOUBLE_LIST ? "numbers" : "strings";
        char len[64] = "";
        if (k->min_len > 0)
            snprintf(len, sizeof len, ", with at least %zu element%s", k->min_len,
                     k->min_len == 1 ? "" : "s");
        if (t == SIM_CFG_STRING_LIST && k->choices)
            snprintf(buf, size, "a list of strings, each one of: %s%s", ch, len);
        else
            snprintf(buf, size, "a list of %s%s%s%s", what, range, unit, len);
        break;
    }
    }
}

/* Levenshtein distance, for "did you mean"; names longer than 63 bytes
 * are simply not suggested. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Close enough to be a typo: at most a third of the name's length, and at
 * least one edit allowed. */
static bool is_close(const char *typo, const char *name)
{
    size_t d = edit_distance(typo, name), len = strlen(typo);
    return d <= (len / 3 > 1 ? len / 3 : 1);
}

static int bad_value(const struct node *n, const sim_cfg_key *k, const char *label, bool element,
                     bool range)
{
    char desc[128], exp[600], hint[128] = "";
    enum sim_cfg_type t = element ? elem_type(k->type) : k->type;
    enum desc_style style = range ? DESC_RAW
                          : (is_number(t) || t == SIM_CFG_BOOL) ? DESC_NOTE_QUOTED : DESC_QUOTE;
    describe(n, style, desc, sizeof desc);
    expected(k, element, exp, sizeof exp);
    if (k->choices && n->kind == NODE_SCALAR && (t == SIM_CFG_ENUM || t == SIM_CFG_STRING)) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; k->choices[i]; i++) {
            size_t dist = edit_distance(n->text, k->choices[i]);
            if (dist < best && is_close(n->text, k->choices[i])) {
                best = dist;
                snprintf(hint, sizeof hint, "; did you mean '%s'?", k->choices[i]);
            }
        }
    }
    return fail_at(n->src, n->line, "key '%s' is %s; expected %s%s", label, desc, exp, hint);
}

/* ------------------------------------------------------------------ */
/* Converting one node.                                                */
/* ------------------------------------------------------------------ */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* YAML 1.2 core int, decimal only: [-+]?[0-9]+ */
static bool is_int_text(const char *s, bool allow_minus)
{
    if (*s == '+' || (allow_minus && *s == '-'))
        s++;
    if (!is_digit(*s))
        return false;
    while (is_digit(*s))
        s++;
    return *s == '\0';
}

/* YAML 1.2 core float: the project's one decimal grammar (sim/core/number.h;
 * checked because strtod would also take "nan", "0x1p3", "infinity"). */
static bool is_float_text(const char *s) { return sim_num_is_decimal(s); }

/* +1 for .inf, -1 for -.inf, 0 otherwise (YAML 1.2 core spellings). */
static int inf_sign(const char *s)
{
    int sign = 1;
    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    return (strcmp(s, ".inf") == 0 || strcmp(s, ".Inf") == 0 || strcmp(s, ".INF") == 0) ? sign
                                                                                         : 0;
}

static int match_choice(const char *const *choices, const char *s)
{
    for (int i = 0; choices[i]; i++)
        if (strcmp(choices[i], s) == 0)
            return i;
    return -1;
}

/*
 * Convert scalar node `n` for key `k` (one element of it if `element`)
 * and store it at `dst`.  `d` (may be NULL) resolves paths.  Nothing is
 * stored on error.
 */
static int bind_scalar(const sim_cfgdoc *d, const sim_cfg_key *k, const char *label,
                       const struct node *n, bool element, void *dst)
{
    enum sim_cfg_type t = element ? elem_type(k->type) : k->type;
    if (n->kind != NODE_SCALAR || is_null(n))
        return bad_value(n, k, label, element, false);
    const char *s = n->text;
    switch (t) {
    case SIM_CFG_INT: {
        if (n->quoted || !is_int_text(s, true))
            return bad_value(n, k, label, element, false);
        /* The range compared in int64, not double (2^53 + 1 must not pass
         * a bound of 2^53; issue 38 C9). */
        int64_t lo = INT64_MIN, hi = INT64_MAX, v = 0;
        int_bounds(k, &lo, &hi);
        if (!sim_num_i64(s, lo, hi, &v))
            return bad_value(n, k, label, element, true);
        *(int64_t *)dst = v;
        return SIM_OK;
    }
    case SIM_CFG_UINT64: {
        /* Validated first: strtoull would quietly wrap "-1". */
        if (n->quoted || !is_int_text(s, false))
            return bad_value(n, k, label, element, *s == '-' && is_int_text(s, true));
        int64_t lo = 0, hi = INT64_MAX;
        int_bounds(k, &lo, &hi);
        uint64_t v = 0;
        const uint64_t uhi = has_range(k) ? (uint64_t)(hi < 0 ? 0 : hi) : UINT64_MAX;
        if (!sim_num_u64(s, uhi, &v) || (has_range(k) && v < (uint64_t)(lo < 0 ? 0 : lo)))
            return bad_value(n, k, label, element, true);
        *(uint64_t *)dst = v;
        return SIM_OK;
    }
    case SIM_CFG_DOUBLE: {
        double v;
        if (n->quoted)
            return bad_value(n, k, label, element, false);
        if (inf_sign(s)) {
            v = inf_sign(s) > 0 ? (double)INFINITY : -(double)INFINITY;
        } else if (is_float_text(s)) {
            errno = 0;
            v = strtod(s, NULL);
            /* Overflow is an error; underflow (ERANGE with a tiny or zero
             * result) is kept, because a denormal printed by the dump must
             * read back. */
            if (errno == ERANGE && isinf(v))
                return bad_value(n, k, label, element, true);
        } else {
            return bad_value(n, k, label, element, false);
        }
        if (!in_range(k, v))
            return bad_value(n, k, label, element, true);
        *(double *)dst = v;
        return SIM_OK;
    }
    case SIM_CFG_BOOL: {
        static const char *const truths[] = { "true", "True", "TRUE", NULL };
        static const char *const lies[] = { "false", "False", "FALSE", NULL };
        if (!n->quoted && match_choice(truths, s) >= 0)
            *(bool *)dst = true;
        else if (!n->quoted && match_choice(lies, s) >= 0)
            *(bool *)dst = false;
        else
            return bad_value(n, k, label, element, false);
        return SIM_OK;
    }
    case SIM_CFG_ENUM: {
        int i = match_choice(k->choices, s);
        if (i < 0)
            return bad_value(n, k, label, element, false);
        *(int *)dst = i;
        return SIM_OK;
    }
    case SIM_CFG_STRING:
        if (k->choices && match_choice(k->choices, s) < 0)
            return bad_value(n, k, label, element, false);
        *(char **)dst = sim_xstrdup(s);
        return SIM_OK;
    case SIM_CFG_PATH:
        if (!*s && (k->flags & SIM_CFG_OPTIONAL)) {
            *(char **)dst = sim_xstrdup(s); /* "" = not set */
            return SIM_OK;
        }
        if (!*s)
            return bad_value(n, k, label, element, false);
        /* Only a path written in the file is relative to the file. */
        *(char **)dst = (d && n->line > 0) ? sim_cfg_resolve_path(d, s) : sim_xstrdup(s);
        return SIM_OK;
    default:
        sim_panic(__FILE__, __LINE__, "list type in bind_scalar");
    }
}

static void *field(void *base, size_t offset) { return (char *)base + offset; }

static const void *cfield(const void *base, size_t offset)
{
    return (const char *)base + offset;
}

static int bind_table(const sim_cfgdoc *d, const sim_cfg_key *k, const char *full,
                      const struct node *n, void *base);

/* Convert node `n` for key `k` and store it in `base`.  For lists the
 * array and count are stored together, only on success. */
static int bind_node(const sim_cfgdoc *d, const sim_cfg_key *k, const char *full,
                     const struct node *n, void *base)
{
    if (k->type == SIM_CFG_TABLE)
        return bind_table(d, k, full, n, base);
    if (!is_list(k->type))
        return bind_scalar(d, k, full, n, false, field(base, k->offset));
    if (n->kind != NODE_SEQ)
        return bad_value(n, k, full, false, false);
    if (n->n < k->min_len) {
        char exp[600];
        expected(k, false, exp, sizeof exp);
        return fail_at(n->src, n->line, "key '%s' has %zu element%s; expected %s", full, n->n,
                       n->n == 1 ? "" : "s", exp);
    }
    size_t esz = elem_size(k->type);
    char *arr = n->n ? sim_xcalloc(n->n, esz) : NULL;
    for (size_t i = 0; i < n->n; i++) {
        struct sbuf label = {0};
        sb_printf(&label, "%s[%zu]", full, i);
        int rc = bind_scalar(d, k, label.p, n->items[i], true, arr + i * esz);
        free(label.p);
        if (rc) {
            if (k->type == SIM_CFG_STRING_LIST)
                for (size_t j = 0; j < i; j++)
                    free(((char **)(void *)arr)[j]);
            free(arr);
            return rc;
        }
    }
    *(void **)field(base, k->offset) = arr;
    *(size_t *)field(base, k->count_offset) = n->n;
    return SIM_OK;
}

/* Bind the schema default of `k` (YAML text) as if written in the file. */
static int bind_default(const sim_cfg_key *k, const char *full, void *base)
{
    struct sbuf src = {0};
    sb_printf(&src, "schema default of '%s'", full);
    struct node *n;
    int rc = yp_parse(k->def, strlen(k->def), src.p, true, &n);
    if (!rc && !n)
        rc = fail_at(src.p, 0, "empty default");
    if (!rc)
        rc = bind_node(NULL, k, full, n, base);
    node_free(n);
    free(src.p);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Binding a document: full paths, unknown keys.                        */
/* ------------------------------------------------------------------ */

/* One schema key at its full path in the document. */
struct ent {
    char *full;
    const sim_cfg_key *key;
    void *base;
};

struct binder {
    const sim_cfgdoc *d;
    struct ent *ents;
    size_t n;
    const sim_cfg_section *secs;
    size_t n_secs;
};

static const char *sec_prefix(const sim_cfg_section *s) { return s->prefix ? s->prefix : ""; }

static void binder_init(struct binder *b, const sim_cfgdoc *d, const sim_cfg_section *secs,
                        size_t n_secs)
{
    *b = (struct binder){ .d = d, .secs = secs, .n_secs = n_secs };
    for (size_t s = 0; s < n_secs; s++)
        for (const sim_cfg_key *k = secs[s].schema; k && k->path; k++) {
            b->ents = sim_xrealloc(b->ents, (b->n + 1) * sizeof *b->ents);
            b->ents[b->n++] = (struct ent){ join_path(sec_prefix(&secs[s]), k->path), k,
                                            secs[s].out };
        }
}

static void binder_fini(struct binder *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->ents[i].full);
    free(b->ents);
}

/* Is `s` strictly below the mapping `prefix` ("" is above everything)? */
static bool is_under(const char *s, const char *prefix)
{
    size_t len = strlen(prefix);
    return len == 0 || (strncmp(s, prefix, len) == 0 && s[len] == '.');
}

enum kind { K_UNKNOWN, K_LEAF, K_MAPPING, K_OPAQUE };

static enum kind classify(const struct binder *b, const char *full)
{
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->ents[i].full, full) == 0)
            return K_LEAF;
    for (size_t s = 0; s < b->n_secs; s++)
        if (!b->secs[s].schema &&
            (strcmp(sec_prefix(&b->secs[s]), full) == 0 || is_under(full, sec_prefix(&b->secs[s]))))
            return K_OPAQUE;
    for (size_t i = 0; i < b->n; i++)
        if (is_under(b->ents[i].full, full))
            return K_MAPPING;
    for (size_t s = 0; s < b->n_secs; s++) {
        const char *p = sec_prefix(&b->secs[s]);
        if (*p && (strcmp(p, full) == 0 || is_under(p, full)))
            return K_MAPPING;
    }
    return K_UNKNOWN;
}

/* Append to `list` the first path component of `s` below `prefix`,
 * unless `seen` (names between '\n's, starting with "\n") has it. */
static void add_child(struct sbuf *list, struct sbuf *seen, const char *s, const char *prefix)
{
    if (!*s || !is_under(s, prefix))
        return;
    const char *c = s + (*prefix ? strlen(prefix) + 1 : 0);
    size_t len = strcspn(c, ".");
    struct sbuf tok = {0};
    sb_puts(&tok, "\n");
    sb_putn(&tok, c, len);
    sb_puts(&tok, "\n");
    if (!strstr(seen->p, tok.p)) {
        sb_puts(seen, tok.p + 1);
        if (list->len)
            sb_puts(list, ", ");
        sb_putn(list, c, len);
    }
    free(tok.p);
}

/* "destinations, tp, ..." : the names allowed in mapping `prefix`. */
static char *children(const struct binder *b, const char *prefix)
{
    struct sbuf list = {0}, seen = {0};
    sb_puts(&seen, "\n");
    for (size_t i = 0; i < b->n; i++)
        add_child(&list, &seen, b->ents[i].full, prefix);
    for (size_t s = 0; s < b->n_secs; s++)
        add_child(&list, &seen, sec_prefix(&b->secs[s]), prefix);
    free(seen.p);
    if (list.len > 400) { /* keep the message on one readable line */
        list.p[400] = '\0';
        list.len = 400;
        sb_puts(&list, ", ...");
    }
    return sb_take(&list);
}

/* " (did you mean 'cluster.destinations'?)": a close sibling of `name`, or
 * the same name at another level of the schema. */
static void suggest(const struct binder *b, const char *prefix, const char *name, char *buf,
                    size_t size)
{
    size_t best = SIZE_MAX;
    buf[0] = '\0';
    for (size_t i = 0; i < b->n; i++) {
        const char *s = b->ents[i].full;
        if (!is_under(s, prefix))
            continue;
        const char *c = s + (*prefix ? strlen(prefix) + 1 : 0);
        char comp[64];
        size_t len = strcspn(c, ".");
        if (len >= sizeof comp)
            continue;
        memcpy(comp, c, len);
        comp[len] = '\0';
        size_t dist = edit_distance(name, comp);
        if (dist < best && is_close(name, comp)) {
            best = dist;
            snprintf(buf, size, " (did you mean '%.*s'?)", (int)(c - s + (ptrdiff_t)len), s);
        }
    }
    if (buf[0])
        return;
    for (size_t i = 0; i < b->n; i++) {
        const char *s = b->ents[i].full, *dot = strrchr(s, '.');
        const char *last = dot ? dot + 1 : s;
        if (strcmp(last, name) == 0) {
            snprintf(buf, size, " (did you mean '%s'?)", s);
            return;
        }
    }
}

/* Check every key of mapping `m` (at path `prefix`) against the schema,
 * in document order, recursing into mappings. */
static int check_keys(const struct binder *b, const struct node *m, const char *prefix)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct mapent *e = &m->ents[i];
        char *full = join_path(prefix, e->key);
        int rc = SIM_OK;
        switch (classify(b, full)) {
        case K_LEAF:
        case K_OPAQUE:
            break;
        case K_MAPPING:
            if (e->val->kind == NODE_MAP) {
                rc = check_keys(b, e->val, full);
            } else {
                char desc[128];
                char *kids = children(b, full);
                describe(e->val, DESC_QUOTE, desc, sizeof desc);
                rc = fail_at(e->val->src, e->val->line,
                             "key '%s' is %s; expected a mapping with keys: %s", full, desc, kids);
                free(kids);
            }
            break;
        case K_UNKNOWN: {
            char hint[200], under[200];
            char *kids = children(b, prefix);
            suggest(b, prefix, e->key, hint, sizeof hint);
            if (*prefix)
                snprintf(under, sizeof under, "under '%s'", prefix);
            else
                snprintf(under, sizeof under, "at top level");
            rc = fail_at(e->src, e->line, "unknown key '%s'%s; expected %s%s (%s)", full, hint,
                         *kids ? "one of: " : "no keys", kids, under);
            free(kids);
            break;
        }
        }
        free(full);
        if (rc)
            return rc;
    }
    return SIM_OK;
}

/* Find the node at `full` in the document; *out = NULL if absent.  Fails
 * if something on the way is not a mapping (possible only above a prefix
 * bound with sim_cfg_bind_prefix: check_keys catches it everywhere else). */
static int lookup_from(const struct node *root, const char *label, const char *full,
                       const struct node **out)
{
    const struct node *m = root;
    const char *c = full;
    *out = NULL;
    for (;;) {
        size_t len = strcspn(c, ".");
        const struct mapent *e = map_find(m, c, len);
        if (!e)
            return SIM_OK;
        if (c[len] == '\0') {
            *out = e->val;
            return SIM_OK;
        }
        if (e->val->kind != NODE_MAP) {
            char desc[128];
            describe(e->val, DESC_QUOTE, desc, sizeof desc);
            return fail_at(e->val->src, e->val->line, "key '%s%s%.*s' is %s; expected a mapping",
                           label, *label ? "." : "", (int)(c - full + (ptrdiff_t)len), full,
                           desc);
        }
        m = e->val;
        c += len + 1;
    }
}

static int lookup(const sim_cfgdoc *d, const char *full, const struct node **out)
{
    return lookup_from(d->root, "", full, out);
}

/* One element of a TABLE key: the mapping `item`, labelled `label`
 * ("cluster.groups[1]"), bound against k->table into `elem` (zeroed).
 * Unknown keys are checked inside the element only.  On error `elem` is
 * released. */
static int bind_elem(const sim_cfgdoc *d, const sim_cfg_key *k, const char *label,
                     const struct node *item, void *elem)
{
    const sim_cfg_section sec = { label, k->table, elem };
    struct binder b;
    binder_init(&b, d, &sec, 1);
    int rc = check_keys(&b, item, label);
    for (size_t i = 0; !rc && i < b.n; i++) {
        const struct ent *e = &b.ents[i];
        const struct node *n;
        rc = lookup_from(item, label, e->key->path, &n);
        if (rc)
            break;
        if (n) {
            rc = bind_node(d, e->key, e->full, n, e->base);
        } else if (e->key->def) {
            rc = bind_default(e->key, e->full, e->base);
        } else {
            char exp[600];
            expected(e->key, false, exp, sizeof exp);
            rc = fail_at(item->src, item->line, "missing required key '%s'; expected %s",
                         e->full, exp);
        }
    }
    binder_fini(&b);
    if (rc)
        sim_cfg_free(k->table, elem);
    return rc;
}

/* A TABLE key: a sequence of mappings, each bound by bind_elem into a new
 * array stored with its count only on success. */
static int bind_table(const sim_cfgdoc *d, const sim_cfg_key *k, const char *full,
                      const struct node *n, void *base)
{
    if (n->kind != NODE_SEQ)
        return bad_value(n, k, full, false, false);
    if (n->n < k->min_len) {
        char exp[600];
        expected(k, false, exp, sizeof exp);
        return fail_at(n->src, n->line, "key '%s' has %zu element%s; expected %s", full, n->n,
                       n->n == 1 ? "" : "s", exp);
    }
    char *arr = n->n ? sim_xcalloc(n->n, k->elem_size) : NULL;
    int rc = SIM_OK;
    size_t i = 0;
    for (; !rc && i < n->n; i++) {
        struct sbuf label = {0};
        sb_printf(&label, "%s[%zu]", full, i);
        const struct node *item = n->items[i];
        if (item->kind != NODE_MAP) {
            char desc[128];
            char *kids = table_keys(k);
            describe(item, DESC_QUOTE, desc, sizeof desc);
            rc = fail_at(item->src, item->line, "key '%s' is %s; expected a mapping with keys: %s",
                         label.p, desc, kids);
            free(kids);
        } else {
            rc = bind_elem(d, k, label.p, item, arr + i * k->elem_size);
        }
        free(label.p);
    }
    if (rc) {
        for (size_t j = 0; j + 1 < i; j++) /* element i - 1 freed itself */
            sim_cfg_free(k->table, arr + j * k->elem_size);
        free(arr);
        return rc;
    }
    *(void **)field(base, k->offset) = arr;
    *(size_t *)field(base, k->count_offset) = n->n;
    return SIM_OK;
}

/* Bind all sections; check unknown keys in the subtree at `scope` ("" for
 * the whole document). */
static int bind_common(const sim_cfgdoc *d, const sim_cfg_section *secs, size_t n_secs,
                       const char *scope)
{
    struct binder b;
    binder_init(&b, d, secs, n_secs);
    const struct node *top = d->root;
    int rc = *scope ? lookup(d, scope, &top) : SIM_OK;
    if (!rc && top && top->kind != NODE_MAP) {
        char desc[128];
        describe(top, DESC_QUOTE, desc, sizeof desc);
        rc = fail_at(top->src, top->line, "key '%s' is %s; expected a mapping", scope, desc);
    }
    if (!rc && top)
        rc = check_keys(&b, top, scope);
    for (size_t i = 0; !rc && i < b.n; i++) {
        const struct ent *e = &b.ents[i];
        const struct node *n;
        rc = lookup(d, e->full, &n);
        if (rc)
            break;
        if (n) {
            rc = bind_node(d, e->key, e->full, n, e->base);
        } else if (e->key->def) {
            rc = bind_default(e->key, e->full, e->base);
        } else {
            char exp[600];
            expected(e->key, false, exp, sizeof exp);
            rc = SIM_ERROR(SIM_EINVAL, "%s: missing required key '%s'; expected %s", d->path,
                           e->full, exp);
        }
    }
    binder_fini(&b);
    if (rc)
        for (size_t s = 0; s < n_secs; s++)
            if (secs[s].schema)
                sim_cfg_free(secs[s].schema, secs[s].out);
    return rc;
}

int sim_cfg_bind_sections(const sim_cfgdoc *d, const sim_cfg_section *sections,
                          size_t n_sections)
{
    return bind_common(d, sections, n_sections, "");
}

int sim_cfg_bind(const sim_cfgdoc *d, const sim_cfg_key *schema, void *out)
{
    const sim_cfg_section s = { NULL, schema, out };
    return bind_common(d, &s, 1, "");
}

int sim_cfg_bind_prefix(const sim_cfgdoc *d, const char *prefix, const sim_cfg_key *schema,
                        void *out)
{
    const sim_cfg_section s = { prefix, schema, out };
    return bind_common(d, &s, 1, prefix ? prefix : "");
}

void sim_cfg_free(const sim_cfg_key *schema, void *out)
{
    for (const sim_cfg_key *k = schema; k->path; k++) {
        void *f = field(out, k->offset);
        switch (k->type) {
        case SIM_CFG_STRING:
        case SIM_CFG_PATH:
            free(*(char **)f);
            *(char **)f = NULL;
            break;
        case SIM_CFG_STRING_LIST: {
            char **a = *(char ***)f;
            size_t *count = field(out, k->count_offset);
            for (size_t i = 0; a && i < *count; i++)
                free(a[i]);
            free(a);
            *(char ***)f = NULL;
            *count = 0;
            break;
        }
        case SIM_CFG_INT_LIST:
        case SIM_CFG_DOUBLE_LIST:
            free(*(void **)f);
            *(void **)f = NULL;
            *(size_t *)field(out, k->count_offset) = 0;
            break;
        case SIM_CFG_TABLE: {
            char *a = *(char **)f;
            size_t *count = field(out, k->count_offset);
            for (size_t i = 0; a && i < *count; i++)
                sim_cfg_free(k->table, a + i * k->elem_size);
            free(a);
            *(void **)f = NULL;
            *count = 0;
            break;
        }
        default:
            break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Dump and help.                                                      */
/* ------------------------------------------------------------------ */

/* Can `s` be written unquoted and still read back as this string under
 * every common YAML reader (including YAML 1.1 ones that take "yes" or
 * "on" for booleans)?  Deliberately narrow: identifiers and paths. */
static bool plain_safe(const char *s)
{
    static const char *const reserved[] = { "null", "true", "false", "yes", "no", "on",
                                            "off", "y", "n", NULL };
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || *s == '/'))
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || is_digit(*c) ||
              *c == '_' || *c == '.' || *c == '/' || *c == '-'))
            return false;
    for (size_t i = 0; reserved[i]; i++) {
        size_t j = 0;
        while (s[j] && reserved[i][j] && (s[j] | 0x20) == reserved[i][j])
            j++;
        if (!s[j] && !reserved[i][j])
            return false;
    }
    return true;
}

static void dump_string(struct sbuf *b, const char *s)
{
    if (!s) {
        sb_puts(b, "null");
        return;
    }
    if (plain_safe(s)) {
        sb_puts(b, s);
        return;
    }
    sb_puts(b, "\"");
    for (const char *c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u == '"' || u == '\\')
            sb_printf(b, "\\%c", u);
        else if (u == '\n')
            sb_puts(b, "\\n");
        else if (u == '\t')
            sb_puts(b, "\\t");
        else if (u < 0x20 || u == 0x7f)
            sb_printf(b, "\\x%02x", u);
        else
            sb_putn(b, c, 1); /* UTF-8 passes through: it came from YAML */
    }
    sb_puts(b, "\"");
}

static void dump_scalar(struct sbuf *b, const sim_cfg_key *k, enum sim_cfg_type t, const void *p)
{
    char num[40];
    switch (t) {
    case SIM_CFG_INT: sb_printf(b, "%" PRId64, *(const int64_t *)p); break;
    case SIM_CFG_UINT64: sb_printf(b, "%" PRIu64, *(const uint64_t *)p); break;
    case SIM_CFG_DOUBLE:
        fmt_double(*(const double *)p, num, sizeof num);
        sb_puts(b, num);
        break;
    case SIM_CFG_BOOL: sb_puts(b, *(const bool *)p ? "true" : "false"); break;
    case SIM_CFG_ENUM: {
        int i = *(const int *)p, n = 0;
        while (k->choices[n])
            n++;
        SIM_ALWAYS(i >= 0 && i < n);
        dump_string(b, k->choices[i]);
        break;
    }
    default: dump_string(b, *(const char *const *)p); break;
    }
}

static void dump_flow(struct sbuf *b, const struct binder *bd, const char *prefix);

static void dump_value(struct sbuf *b, const sim_cfg_key *k, const void *base)
{
    const void *f = cfield(base, k->offset);
    if (k->type == SIM_CFG_TABLE) {
        /* Flow style, one mapping per element, keys in schema order. */
        const char *arr = *(const char *const *)f;
        size_t n = *(const size_t *)cfield(base, k->count_offset);
        sb_puts(b, "[");
        for (size_t i = 0; i < n; i++) {
            const sim_cfg_section s = { NULL, k->table,
                                        (void *)(uintptr_t)(arr + i * k->elem_size) };
            struct binder bd;
            binder_init(&bd, NULL, &s, 1);
            sb_puts(b, i ? ", {" : "{");
            dump_flow(b, &bd, "");
            sb_puts(b, "}");
            binder_fini(&bd);
        }
        sb_puts(b, "]");
        return;
    }
    if (!is_list(k->type)) {
        dump_scalar(b, k, k->type, f);
        return;
    }
    const char *arr = *(const char *const *)f;
    size_t n = *(const size_t *)cfield(base, k->count_offset), esz = elem_size(k->type);
    sb_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_puts(b, ", ");
        dump_scalar(b, k, elem_type(k->type), arr + i * esz);
    }
    sb_puts(b, "]");
}

/* Whether an entry before i under `prefix` has the same next path
 * component as entry i (its first `end` characters, ending at a '.' or
 * the end of the key): that component was dumped already. */
static bool component_seen(const struct binder *bd, size_t i, const char *prefix, size_t end)
{
    const char *s = bd->ents[i].full;
    for (size_t j = 0; j < i; j++) {
        const char *t = bd->ents[j].full;
        if (is_under(t, prefix) && strncmp(t, s, end) == 0 && (t[end] == '.' || t[end] == '\0'))
            return true;
    }
    return false;
}

/* Emit the mapping at `prefix`: its names in the order of their first
 * schema key, leaves with values, mappings recursively.  O(n^2) in the
 * number of keys, which is a few dozen. */
static void dump_level(struct sbuf *b, const struct binder *bd, const char *prefix, int depth)
{
    size_t plen = *prefix ? strlen(prefix) + 1 : 0;
    for (size_t i = 0; i < bd->n; i++) {
        const char *s = bd->ents[i].full;
        if (!is_under(s, prefix))
            continue;
        size_t len = strcspn(s + plen, ".");
        if (component_seen(bd, i, prefix, plen + len))
            continue;
        char *comp = xstrndup(s + plen, len);
        sb_printf(b, "%*s", 2 * depth, "");
        dump_string(b, comp);
        if (s[plen + len] == '\0') {
            sb_puts(b, ": ");
            dump_value(b, bd->ents[i].key, bd->ents[i].base);
            sb_puts(b, "\n");
        } else {
            sb_puts(b, ":\n");
            char *sub = xstrndup(s, plen + len);
            dump_level(b, bd, sub, depth + 1);
            free(sub);
        }
        free(comp);
    }
}

/* dump_level in flow style: "a: 1, b: {c: 2}" for the mapping at
 * `prefix`, without the enclosing braces. */
static void dump_flow(struct sbuf *b, const struct binder *bd, const char *prefix)
{
    size_t plen = *prefix ? strlen(prefix) + 1 : 0;
    bool first = true;
    for (size_t i = 0; i < bd->n; i++) {
        const char *s = bd->ents[i].full;
        if (!is_under(s, prefix))
            continue;
        size_t len = strcspn(s + plen, ".");
        if (component_seen(bd, i, prefix, plen + len))
            continue;
        char *comp = xstrndup(s + plen, len);
        sb_puts(b, first ? "" : ", ");
        first = false;
        dump_string(b, comp);
        sb_puts(b, ": ");
        if (s[plen + len] == '\0') {
            dump_value(b, bd->ents[i].key, bd->ents[i].base);
        } else {
            char *sub = xstrndup(s, plen + len);
            sb_puts(b, "{");
            dump_flow(b, bd, sub);
            sb_puts(b, "}");
            free(sub);
        }
        free(comp);
    }
}

char *sim_cfg_dump_sections(const sim_cfg_section *sections, size_t n_sections)
{
    struct binder bd;
    struct sbuf b = {0};
    binder_init(&bd, NULL, sections, n_sections);
    dump_level(&b, &bd, "", 0);
    binder_fini(&bd);
    return sb_take(&b);
}

char *sim_cfg_dump(const sim_cfg_key *schema, const void *in)
{
    /* The section's `out` is only read here; the cast keeps one section
     * type for bind and dump. */
    const sim_cfg_section s = { NULL, schema, (void *)(uintptr_t)in };
    return sim_cfg_dump_sections(&s, 1);
}

static const char *type_name(enum sim_cfg_type t)
{
    switch (t) {
    case SIM_CFG_INT: return "int";
    case SIM_CFG_UINT64: return "uint64";
    case SIM_CFG_DOUBLE: return "number";
    case SIM_CFG_BOOL: return "bool";
    case SIM_CFG_STRING: return "string";
    case SIM_CFG_ENUM: return "enum";
    case SIM_CFG_PATH: return "path";
    case SIM_CFG_INT_LIST: return "int list";
    case SIM_CFG_DOUBLE_LIST: return "number list";
    case SIM_CFG_STRING_LIST: return "string list";
    case SIM_CFG_TABLE: return "table";
    }
    return "?";
}

void sim_cfg_help_sections(const sim_cfg_section *sections, size_t n_sections, FILE *f)
{
    struct binder bd;
    binder_init(&bd, NULL, sections, n_sections);
    int wpath = 0, wdef = 0;
    for (size_t i = 0; i < bd.n; i++) {
        const sim_cfg_key *k = bd.ents[i].key;
        int lp = (int)strlen(bd.ents[i].full);
        int ld = k->def ? (int)strlen(k->def) + 8 : 8; /* "default " / "required" */
        wpath = lp > wpath ? lp : wpath;
        wdef = ld > wdef ? ld : wdef;
    }
    for (size_t i = 0; i < bd.n; i++) {
        const sim_cfg_key *k = bd.ents[i].key;
        char def[256], what[512], range[100];
        snprintf(def, sizeof def, k->def ? "default %s" : "required", k->def);
        if (k->choices) {
            char ch[400];
            choices_text(k->choices, ch, sizeof ch);
            snprintf(what, sizeof what, "one of: %s", ch);
        } else {
            range_text(k, range, sizeof range);
            snprintf(what, sizeof what, "%s%s%s", range[0] ? range + 1 : "",
                     range[0] && k->unit && *k->unit ? " " : "", k->unit ? k->unit : "");
        }
        if (k->type == SIM_CFG_TABLE)
            snprintf(what, sizeof what, "a list of mappings");
        fprintf(f, "  %-*s  %-11s  %-*s  %s%s%s\n", wpath, bd.ents[i].full, type_name(k->type),
                wdef, def, what, *what ? "; " : "", k->help ? k->help : "");
        if (k->type == SIM_CFG_TABLE) {
            /* Each element's keys, as "cluster.groups[].name". */
            struct sbuf pre_b = {0};
            sb_printf(&pre_b, "%s[]", bd.ents[i].full);
            char *pre = sb_take(&pre_b);
            const sim_cfg_section sub = { pre, k->table, NULL };
            sim_cfg_help_sections(&sub, 1, f);
            free(pre);
        }
    }
    binder_fini(&bd);
}

void sim_cfg_help(const sim_cfg_key *schema, FILE *f)
{
    const sim_cfg_section s = { NULL, schema, NULL };
    sim_cfg_help_sections(&s, 1, f);
}

/* ------------------------------------------------------------------ */
/* Schema check.                                                       */
/* ------------------------------------------------------------------ */

int sim_cfg_schema_check(const sim_cfg_key *schema)
{
    size_t size = 1;
    for (const sim_cfg_key *k = schema; k->path; k++) {
        const bool arr = is_list(k->type) || k->type == SIM_CFG_TABLE;
        size_t end = k->offset + (arr ? sizeof(void *) : elem_size(k->type));
        size = end > size ? end : size;
        if (arr && k->count_offset + sizeof(size_t) > size)
            size = k->count_offset + sizeof(size_t);
    }
    for (const sim_cfg_key *k = schema; k->path; k++) {
        const char *p = k->path;
        if (!*p || *p == '.' || p[strlen(p) - 1] == '.' || strstr(p, "..") ||
            strpbrk(p, " \t\n=[]"))
            return SIM_ERROR(SIM_EINVAL, "schema key '%s': malformed path", p);
        if ((unsigned)k->type > (unsigned)SIM_CFG_TABLE)
            return SIM_ERROR(SIM_EINVAL, "schema key '%s': bad type %d", p, (int)k->type);
        if (k->type == SIM_CFG_TABLE) {
            if (!k->table || !k->table[0].path || k->elem_size == 0)
                return SIM_ERROR(SIM_EINVAL, "schema key '%s': TABLE without element schema "
                                 "or size", p);
            if (k->def && strcmp(k->def, "[]") != 0)
                return SIM_ERROR(SIM_EINVAL, "schema key '%s': TABLE default must be [] or "
                                 "none", p);
            if (k->count_offset < k->offset + sizeof(void *) &&
                k->offset < k->count_offset + sizeof(size_t))
                return SIM_ERROR(SIM_EINVAL, "schema key '%s': count_offset overlaps offset", p);
            int rc = sim_cfg_schema_check(k->table);
            if (rc) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", sim_errmsg());
                return SIM_ERROR(rc, "schema key '%s' (element): %s", p, msg);
            }
        }
        if (k->type == SIM_CFG_ENUM && (!k->choices || !k->choices[0]))
            return SIM_ERROR(SIM_EINVAL, "schema key '%s': ENUM without choices", p);
        if (is_list(k->type) && k->count_offset < k->offset + sizeof(void *) &&
            k->offset < k->count_offset + sizeof(size_t))
            return SIM_ERROR(SIM_EINVAL, "schema key '%s': count_offset overlaps offset", p);
        if (has_range(k) && !(k->min <= k->max))
            return SIM_ERROR(SIM_EINVAL, "schema key '%s': min > max", p);
        for (const sim_cfg_key *j = schema; j < k; j++) {
            if (strcmp(j->path, p) == 0)
                return SIM_ERROR(SIM_EINVAL, "schema key '%s': declared twice", p);
            if (is_under(j->path, p) || is_under(p, j->path))
                return SIM_ERROR(SIM_EINVAL, "schema key '%s': both a key and a mapping (see '%s')",
                                 p, j->path);
        }
    }
    /* Bind every default into a zeroed scratch struct of the right size
     * (calloc is aligned for any field type). */
    void *scratch = sim_xcalloc(1, size);
    int rc = SIM_OK;
    for (const sim_cfg_key *k = schema; !rc && k->path; k++)
        if (k->def)
            rc = bind_default(k, k->path, scratch);
    sim_cfg_free(schema, scratch);
    free(scratch);
    return rc;
}
