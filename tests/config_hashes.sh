#!/bin/sh
# The stored config text and hash of every experiment config (the
# experiment row and every run) must not change with refactoring: --resume
# matches runs by config hash, so a changed hash silently orphans the runs
# of old databases.  tests/expected/config_hashes.txt was written by the
# build before the house move (issue 12); a deliberate change of the config
# schema regenerates it and says so in its commit.
# usage: config_hashes.sh CRSIM SOURCE_ROOT
set -u
CRSIM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") # meson may pass ./crsim
cd "$2" || exit 99
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in experiments/*.yaml tests/configs/whale.yaml; do
    echo "== $f"
    "$CRSIM" run "$f" --quiet --dry-run
done > "$out" 2>&1
if diff -u tests/expected/config_hashes.txt "$out"; then
    echo "config_hashes: $(grep -c '^run ' "$out") run hashes and $(grep -c '^experiment ' "$out") experiment hashes unchanged"
else
    echo "config_hashes: config text changed (see diff above)"
    exit 1
fi
