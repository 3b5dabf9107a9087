#!/bin/sh
# Run every command block the docs mark runnable, so the command lines
# quoted in README.md and docs/*.md cannot drift from the code (issue 39
# item 8).
#
# Convention: a fenced block whose info string is `sh runnable` is run as
# one shell script (`set -e`; variables and `\` continuations work) from a
# scratch folder that mirrors the source tree (experiments/, data/, tests/,
# workloads/, models/, docs/ linked; results/ empty), where `crsim` and
# `build/crsim` are the binary under test.  A block must finish in seconds:
# where a doc's real run is long, it shows the long command in a plain
# block and a short form (a small config, `--set` overrides, --dry-run) in
# the runnable one.  Blocks run in document order, so a later block may
# read a database an earlier block of the same document wrote.
# usage: doc_commands.sh CRSIM SOURCE_ROOT
set -u
case $1 in /*) CRSIM=$1 ;; *) CRSIM=$(pwd)/$1 ;; esac
SRC=$(cd "$2" && pwd) || exit 99
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
n=0
mkdir -p "$TMP/bin"
ln -s "$CRSIM" "$TMP/bin/crsim"
for f in "$SRC/README.md" "$SRC"/docs/*.md; do
    doc=${f#"$SRC"/}
    # one scratch tree per document
    W="$TMP/w/$(echo "$doc" | tr / _)"
    mkdir -p "$W/build" "$W/results"
    for d in experiments data tests workloads models docs scripts; do ln -s "$SRC/$d" "$W/$d"; done
    ln -s "$CRSIM" "$W/build/crsim"
    mkdir -p "$TMP/blocks"
    awk -v dir="$TMP/blocks" -v base="$(echo "$doc" | tr / _)" '
        /^```sh runnable[ \t]*$/ { inb = 1; k++; file = sprintf("%s/%s.%03d", dir, base, k);
                                   printf "# line %d\n", NR > file; next }
        inb && /^```[ \t]*$/ { inb = 0; close(file); next }
        inb { print > file }' "$f"
    for b in "$TMP/blocks/$(echo "$doc" | tr / _)".*; do
        [ -f "$b" ] || continue
        n=$((n + 1))
        at="$doc:$(sed -n '1s/# line //p' "$b")"
        if (cd "$W" && PATH="$TMP/bin:$PATH" sh -e "$b") >"$TMP/out" 2>&1; then
            echo "ok: $at"
        else
            echo "FAIL: $at: the runnable block failed:"
            sed 's/^/    /' "$TMP/out" | tail -5
            fails=$((fails + 1))
        fi
    done
done
# Statements the docs made that the code contradicted (issue 39 item 8):
# each must stay gone.
chk() { # file pattern why
    if grep -q -- "$2" "$SRC/$1"; then echo "FAIL: $1 says '$2' ($3)"; fails=$((fails + 1)); else echo "ok: $1 no longer says '$2'"; fi
}
chk docs/harness.md "Looping a trace to a duration is not implemented" "workload.loop_s exists"
chk docs/report.md "crsim export DB group_metrics" "the table is --table T"
chk docs/engine.md "view of queued tokens is exact and instantaneous" "the default is a 50 ms scrape"
"$CRSIM" regime --help 2>&1 | grep -q -- "--trace JSONL" &&
    { echo "FAIL: regime --help says --trace takes JSONL only"; fails=$((fails + 1)); }
grep -q '^build/crsim export ' "$SRC/README.md" ||
    { echo "FAIL: the README's usage list omits export"; fails=$((fails + 1)); }
# The README's docs index lists every doc (issue 39 item 11).
for f in "$SRC"/docs/*.md; do
    d=docs/$(basename "$f")
    grep -q "^| \[$d\]($d) |" "$SRC/README.md" ||
        { echo "FAIL: README.md's documentation index lacks $d"; fails=$((fails + 1)); }
done
[ "$n" -gt 0 ] || { echo "FAIL: no runnable block found"; exit 1; }
[ "$fails" -eq 0 ] && echo "doc_commands: $n runnable blocks ran"
exit "$fails"
