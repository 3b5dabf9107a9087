#!/bin/sh
# The command-line table (sim/exp/cli.c): every subcommand listed by
# `crsim help commands` answers --help and -h with its usage on stdout and
# exit 0 (also `crsim help SUB`), is listed by `crsim --help`, and rejects
# an unknown option, a missing value and a bad number with one line
# "crsim: SUB: ..." naming the option, exit 2.  A new subcommand is covered
# by the loop without editing this file.
# usage: cli_help.sh CRSIM
set -u
case $1 in /*) CRSIM=$1 ;; *) CRSIM=$PWD/$1 ;; esac # meson passes ./crsim
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP" || exit 99
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error PATTERN -- command...: exit 2, one line on stderr, no stdout.
expect_error() {
    pat=$1; shift 2
    "$@" >out 2>err
    got=$?
    if [ "$got" -ne 2 ]; then fail "'$*' exited $got, expected 2; stderr: $(cat err)"
    elif ! grep -q -- "$pat" err; then fail "'$*' stderr lacks '$pat': $(cat err)"
    elif [ "$(wc -l < err)" -ne 1 ]; then fail "'$*' printed more than one error line: $(cat err)"
    elif [ -s out ]; then fail "'$*' printed to stdout: $(cat out)"
    else echo "ok: $pat"
    fi
}

# A word each known subcommand's help must contain besides its usage line.
distinctive() {
    case "$1" in
    run) echo "--dry-run" ;;
    report) echo "--format" ;;
    plot) echo "gnuplot" ;;
    merge) echo "SHARD.db" ;;
    regime) echo "--map" ;;
    calibrate) echo "q_cap" ;;
    fit) echo "--targets" ;;
    plan) echo "--placement" ;;
    "workload describe") echo "--block-size" ;;
    help) echo "policies" ;;
    version) echo "version" ;;
    *) echo "usage:" ;;
    esac
}

"$CRSIM" help commands >commands 2>err || fail "help commands: $(cat err)"
[ "$(grep -c . commands)" -ge 10 ] || fail "help commands lists too few: $(cat commands)"
"$CRSIM" --help >top 2>err || fail "crsim --help exited $?"
grep -q "^usage: crsim" top || fail "crsim --help lacks its usage line"
"$CRSIM" -h | cmp -s - top || fail "crsim -h differs from crsim --help"

n=0
while IFS= read -r sub; do
    n=$((n + 1))
    # shellcheck disable=SC2086 # "workload describe" is two words
    grep -q "^  $sub" top || fail "crsim --help does not list '$sub'"
    for h in --help -h; do
        "$CRSIM" $sub $h >out 2>err
        st=$?
        if [ "$st" -ne 0 ]; then fail "'crsim $sub $h' exited $st: $(cat err)"; continue; fi
        [ -s err ] && fail "'crsim $sub $h' wrote to stderr: $(cat err)"
        grep -q "^usage: crsim $sub" out || fail "'crsim $sub $h' lacks 'usage: crsim $sub'"
        grep -q -- "-h, --help" out || fail "'crsim $sub $h' lacks the -h, --help line"
        w=$(distinctive "$sub")
        grep -q -- "$w" out || fail "'crsim $sub $h' lacks '$w'"
        cp out "help_$h"
    done
    "$CRSIM" help $sub >out 2>err && cmp -s out "help_--help" || fail "'crsim help $sub' differs from --help"
    # Every option in the synopsis is explained below it.
    for o in $(sed -n '/^usage:/,/^$/p' "help_--help" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "^ .*$o" "help_--help" || fail "'crsim $sub --help' does not explain $o"
    done
    echo "ok: $sub --help, -h"
    expect_error "crsim: $sub: unknown option '--no-such-option'" -- "$CRSIM" $sub --no-such-option
done <commands
[ "$n" -ge 10 ] || fail "only $n subcommands"

# --help wins over the positional arguments and never opens a file.
"$CRSIM" workload describe --help >out 2>err && grep -q "^usage: crsim workload describe" out &&
    [ ! -s err ] || fail "workload describe --help: $(cat err)"
"$CRSIM" run no-such.yaml --jobs 2 --help >out 2>err && grep -q "^usage: crsim run" out ||
    fail "run CONFIG --help: $(cat err)"
"$CRSIM" workload --help >out 2>err && grep -q "^usage: crsim workload describe" out ||
    fail "workload --help: $(cat err)"
"$CRSIM" version >out && grep -q "^crsim " out || fail "version"
"$CRSIM" --version | cmp -s - out || fail "--version differs from version"

# Missing values, bad numbers, bad words, wrong counts: one line naming the
# option and the expected form.
expect_error "run: option '--jobs' needs a value; expected --jobs N (an integer 1..4096)" -- "$CRSIM" run x.yaml --jobs
expect_error "run: --jobs '0'; expected an integer 1..4096" -- "$CRSIM" run x.yaml -j 0
expect_error "run: --jobs '4x'; expected an integer" -- "$CRSIM" run x.yaml --jobs=4x
expect_error "run: option '--resume' takes no value" -- "$CRSIM" run x.yaml --resume=yes
expect_error "run: unknown option '-x'" -- "$CRSIM" run x.yaml -x
expect_error "run: needs an experiment config" -- "$CRSIM" run
expect_error "run: unexpected argument 'b.yaml'" -- "$CRSIM" run a.yaml b.yaml
expect_error "report: --rate '-1'; expected a number > 0 (in the experiment's load unit)" -- "$CRSIM" report x.db --rate -1
expect_error "report: --format 'xml'; expected one of text, markdown" -- "$CRSIM" report x.db --format xml
expect_error "plot: --experiment '0'; expected an integer >= 1" -- "$CRSIM" plot x.db --experiment 0
expect_error "regime: --tie 'nan'; expected a number in \[0, 1)" -- "$CRSIM" regime x.yaml --tie nan
expect_error "regime: option '--seeds' needs a value" -- "$CRSIM" regime x.yaml --seeds
expect_error "regime: --map needs two values" -- "$CRSIM" regime x.yaml --map "a=[1]"
expect_error "calibrate: --keys '-2'; expected an integer -1..1000000000" -- "$CRSIM" calibrate x.yaml --keys -2
expect_error "calibrate: --grid '2,1'; expected ascending" -- "$CRSIM" calibrate x.yaml --grid 2,1
expect_error "plan: option '--q-cap' needs a value" -- "$CRSIM" plan --rates r.csv --q-cap
expect_error "plan: --placement 'ring'; expected one of lpt, hash" -- "$CRSIM" plan --placement ring
expect_error "workload describe: --block-size '0'; expected an integer 1..4096 (tokens)" -- "$CRSIM" workload describe x.yaml --block-size 0
expect_error "merge: needs an output database" -- "$CRSIM" merge out.db
expect_error "version: unexpected argument 'x'" -- "$CRSIM" version x
expect_error "help: unknown topic 'nope'" -- "$CRSIM" help nope
expect_error "workload: unknown subcommand 'descibe'; expected describe" -- "$CRSIM" workload descibe x.yaml
expect_error "unknown command 'runn'" -- "$CRSIM" runn
"$CRSIM" >/dev/null 2>err; st=$?
[ "$st" -eq 2 ] && grep -q "^usage: crsim" err || fail "crsim without a command: exit $st"

if [ "$fails" -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "cli_help: ok"
