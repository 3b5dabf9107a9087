# Shell helpers of the CLI tests (sourced, not run): the caller sets
# TMP (a scratch folder) and fails=0 before sourcing, and exits with
# "[ $fails -eq 0 ]" or its own summary.
#
# fail MESSAGE...: print "FAIL: MESSAGE" and count it.
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error STATUS PATTERN -- command...: the command exits STATUS and
# prints exactly one line on stderr, containing PATTERN (grep -q), the
# house rule for bad input (one clear line, exit 2).  Prints "ok: PATTERN".
expect_error() {
    want=$1; pat=$2; shift 3
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "'$*' exited $got, expected $want; stderr: $(cat "$TMP/err")"
    elif ! grep -q -- "$pat" "$TMP/err"; then
        fail "'$*' stderr lacks '$pat': $(cat "$TMP/err")"
    elif [ "$(wc -l < "$TMP/err")" -ne 1 ]; then
        fail "'$*' printed more than one error line: $(cat "$TMP/err")"
    else
        echo "ok: $pat"
    fi
}
