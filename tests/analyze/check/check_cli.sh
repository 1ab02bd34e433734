#!/bin/sh
# check_cli.sh NVTRACE REPORT TEST: `nvtrace check --expect X` as a user runs it, for inputs that must be a clear
# error (exit 2), never a pass. One TEST per ctest test (tests/analyze/check/CMakeLists.txt).
set -u
nv=$1
report=$2
t=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

case $t in
directory_that_is_not_a_scenario_is_an_error)
    # A directory without scenario.conf was read as an empty expectations file: zero checks, exit 0.
    mkdir "$tmp/not-a-scenario"
    "$nv" check "$report" --expect "$tmp/not-a-scenario" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    cat "$tmp/out" "$tmp/err"
    [ "$rc" -eq 2 ] || fail "exit $rc, expected 2"
    grep -q "not-a-scenario: a directory without scenario.conf is not a scenario" "$tmp/err" || fail "no clear error"
    ;;
file_without_checks_is_an_error)
    printf 'format nvtrace.expect/1\ntitle nothing to check\n' >"$tmp/empty.expect"
    "$nv" check "$report" --expect "$tmp/empty.expect" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    cat "$tmp/out" "$tmp/err"
    [ "$rc" -eq 2 ] || fail "exit $rc, expected 2"
    grep -q "empty.expect:.*expected at least one check" "$tmp/err" || fail "no clear error naming the file"
    ;;
*)
    fail "unknown test $t"
    ;;
esac
echo ok
