# Shell helpers of the CLI tests (sourced, not run): the caller sets
# TMP (a scratch folder) and fails=0 before sourcing, and exits with
# "[ $fails -eq 0 ]" or its own summary.
#
# fail MESSAGE...: print "FAIL: MESSAGE" and count it.
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error STATUS PATTERN -- command...: the command exits STATUS and
# prints exactly one line on stderr, containing PATTERN (grep -q), the
# house rule for bad input (one clear line, exit 2).  Prints "ok: PATTERN".
expect_error() { expect_error_grep -q "$@"; }

# expect_error_fixed STATUS TEXT -- command...: as expect_error, TEXT a
# fixed string (grep -F), for messages full of brackets and dots.
expect_error_fixed() { expect_error_grep -qF "$@"; }

# expect_error_grep GREP_FLAGS STATUS PATTERN -- command...: the two above.
expect_error_grep() {
    gflags=$1; want=$2; pat=$3; shift 4
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "'$*' exited $got, expected $want; stderr: $(cat "$TMP/err")"
    elif ! grep $gflags -- "$pat" "$TMP/err"; then
        fail "'$*' stderr lacks '$pat': $(cat "$TMP/err")"
    elif [ "$(wc -l < "$TMP/err")" -ne 1 ]; then
        fail "'$*' printed more than one error line: $(cat "$TMP/err")"
    else
        echo "ok: $pat"
    fi
}
