/*
 * Writes a libFuzzer dictionary made from the config schema itself, so
 * every key and choice the binder knows (cluster.groups, faults, gateway,
 * the production routers, the workload models, ... and any key added
 * later) is in the fuzz targets' dictionaries without editing them.  Run
 * at build time by tests/fuzz/meson.build (docs/fuzzing.md).
 *
 * usage: fuzz_gen_dict MODE BASE OUT
 *   MODE yaml: each component of every key path as "NAME" and "NAME: "
 *              (a YAML mapping key), and every choice of an enum or
 *              string-choice key ("one of: a, b" in `crsim help config`);
 *   MODE set:  every key as "KEY=" (a --set override, or a free parameter
 *              of a fit targets file; keys inside a list of mappings as
 *              "NAME: ", since --set replaces the whole list), and every
 *              choice;
 *   BASE: a hand-written dictionary (syntax tokens) copied first;
 *   OUT:  the dictionary written.
 * The schema is read from exp_config_help (the text of `crsim help
 * config`): one key per line, its path first.  Exit 0, or 1 with a
 * message on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/exp/exp.h"

static char **seen;
static size_t n_seen, cap_seen;

/* Print `tok` as a dictionary entry once (quotes and backslashes as \xHH). */
static void emit(FILE *out, const char *tok, size_t n)
{
    if (n == 0)
        return;
    for (size_t i = 0; i < n_seen; i++)
        if (strlen(seen[i]) == n && memcmp(seen[i], tok, n) == 0)
            return;
    if (n_seen == cap_seen) {
        cap_seen = cap_seen ? 2 * cap_seen : 256;
        char **s = realloc(seen, cap_seen * sizeof *s);
        if (!s)
            exit(1);
        seen = s;
    }
    seen[n_seen] = strndup(tok, n);
    if (!seen[n_seen])
        exit(1);
    n_seen++;
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)tok[i];
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    fputs("\"\n", out);
}

/* The choices after "one of: " up to ';' (or the line's end). */
static void emit_choices(FILE *out, const char *line)
{
    const char *p = strstr(line, "one of: ");
    if (!p)
        return;
    p += strlen("one of: ");
    const size_t end = strcspn(p, ";\n");
    for (size_t i = 0; i < end;) {
        size_t k = strcspn(p + i, ",;\n");
        if (i + k > end)
            k = end - i;
        emit(out, p + i, k);
        i += k;
        while (i < end && (p[i] == ',' || p[i] == ' '))
            i++;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "yaml") != 0 && strcmp(argv[1], "set") != 0)) {
        fprintf(stderr, "usage: fuzz_gen_dict yaml|set BASE OUT\n");
        return 1;
    }
    const int yaml = strcmp(argv[1], "yaml") == 0;
    char *help = NULL;
    size_t help_n = 0;
    FILE *h = open_memstream(&help, &help_n);
    FILE *base = fopen(argv[2], "r");
    FILE *out = fopen(argv[3], "w");
    if (!h || !base || !out) {
        fprintf(stderr, "fuzz_gen_dict: cannot open %s or %s\n", argv[2], argv[3]);
        return 1;
    }
    exp_config_help(h);
    fclose(h);
    char buf[4096];
    while (fgets(buf, sizeof buf, base))
        fputs(buf, out);
    fclose(base);
    fprintf(out, "# generated from the config schema (exp_config_help) by fuzz_gen_dict %s\n",
            argv[1]);
    size_t keys = 0;
    for (char *line = strtok(help, "\n"); line; line = strtok(NULL, "\n")) {
        const char *k = line + strspn(line, " ");
        const size_t kn = strcspn(k, " ");
        if (kn == 0 || memchr(k, '.', kn) == NULL)
            continue;
        keys++;
        const char *list = strstr(k, "[].");
        if (yaml || (list && list < k + kn)) {
            /* Components: "a.b[].c" -> a, b, c. */
            const char *first = yaml ? k : list + 3;
            for (const char *c = first; c < k + kn;) {
                size_t cn = strcspn(c, ".[");
                if (c + cn > k + kn)
                    cn = (size_t)(k + kn - c);
                char tok[256];
                if (cn + 3 < sizeof tok) {
                    memcpy(tok, c, cn);
                    memcpy(tok + cn, ": ", 3);
                    emit(out, tok, cn);
                    emit(out, tok, cn + 2);
                }
                c += cn;
                c += strspn(c, ".[]");
            }
        }
        if (!yaml && !(list && list < k + kn)) {
            char tok[300];
            if (kn + 2 < sizeof tok) {
                memcpy(tok, k, kn);
                tok[kn] = '=';
                emit(out, tok, kn + 1);
            }
        }
        emit_choices(out, k + kn);
    }
    free(help);
    for (size_t i = 0; i < n_seen; i++)
        free(seen[i]);
    free(seen);
    if (keys < 50 || fclose(out) != 0) {
        fprintf(stderr, "fuzz_gen_dict: %zu keys in the schema help, or %s not written\n", keys,
                argv[3]);
        return 1;
    }
    return 0;
}
