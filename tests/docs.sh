#!/bin/sh
# The docs stand on their own (issue 12): README.md, docs/*.md and
# data/README.md cite no file outside the repository — no DESIGN.md,
# nothing under ../shared/ — and every repository path they name
# (sim/exp/store.c, models/routers/route.h, tests/layers.sh, scripts/bench,
# experiments/*.yaml, docs/engine.md, data/mooncake/*.xz, ...) exists in
# the tree.  Paths are recognised only under the tree's top-level folders
# and only where they start a word, so prose ("requests/s") and other
# projects' paths ("docs/source/...", "build/tests/calibrate",
# "data/perf_model.csv": only data/{README.md,mooncake,azure,servegen} are
# ours) are not taken for ours; `*` and `<name>` are globs.
# docs/config.md is generated from the config schemas (crsim help config),
# so it is not read here; instead the code it is generated from (and every
# code comment) must not cite DESIGN.md or the reference notes outside the
# tree either.
# usage: docs.sh SOURCE_ROOT
set -u
cd "$1" || exit 99
bad=0
report() { echo "docs: $*"; bad=1; }

docs=$(ls README.md data/README.md docs/*.md | grep -v '^docs/config\.md$')

# 1. No citation of files outside the repository.
hits=$(grep -n 'DESIGN\.md\|\.\./shared/' $docs)
[ -n "$hits" ] && report "cites a file outside the repository (expected docs/design.md §N, or the public traces shipped in data/, data/README.md):
$hits"
hits=$(grep -rn --include='*.[ch]' --include='*.cpp' --include='*.yaml' --include='*.sh' \
        --include='*.gp' --include='meson.build' 'DESIGN\.md\|shared/reference' \
        sim models workloads tests scripts meson.build experiments | grep -v '^tests/docs\.sh:')
hits2=$(grep -ln 'DESIGN\.md\|shared/reference' scripts/* 2>/dev/null)
[ -n "$hits$hits2" ] && report "code cites DESIGN.md or the reference notes outside the tree (expected docs/design.md §N):
$hits$hits2"

# 2. Every repository path a doc names exists.
for f in $docs; do
    # LINE:MATCH; one sed over all of a doc's hits (a process per hit made
    # this test take ~30 s on a loaded machine): drop the word boundary,
    # <name> -> *, trailing punctuation.
    grep -noE '(^|[^A-Za-z0-9_./$-])((sim|models|workloads|tests|scripts|experiments|bench)/[A-Za-z0-9_.*/<>-]*|data/(README\.md|mooncake|azure|servegen)[A-Za-z0-9_.*/<>-]*|docs/[A-Za-z0-9_-]+\.md)' "$f" |
    sed -e 's/^\([0-9]*\):[^a-z]/\1:/' -e 's/<[^>]*>/*/g' -e 's/[.,:;<>-]*$//' |
    while IFS= read -r hit; do
        line=${hit%%:*}
        path=${hit#*:}
        case "$path" in
        *'*'*)
            # a glob: something must match (word splitting is the point)
            # shellcheck disable=SC2086
            set -- $path
            [ -e "$1" ] || echo "$f:$line: $path (no file matches)" ;;
        *)
            [ -e "$path" ] || echo "$f:$line: $path (no such file or folder)" ;;
        esac
    done
done > "${TMPDIR:-/tmp}/docs.$$"
if [ -s "${TMPDIR:-/tmp}/docs.$$" ]; then
    report "paths that are not in the tree (moved? see README.md, Layout):
$(cat "${TMPDIR:-/tmp}/docs.$$")"
fi
rm -f "${TMPDIR:-/tmp}/docs.$$"

[ $bad -eq 0 ] && echo "docs: ok ($(echo "$docs" | wc -l) documents self-contained)"
exit $bad
