#!/bin/sh
# A cross-host test that fails an assertion, that meson's timeout kills
# (SIGKILL to its process group), or whose process alone is killed, leaves
# no process it started, no network namespace and no file (its scratch
# directory) behind.  $1: the test_cluster_netns executable, with its
# environment (B2S_DAEMON, B2S_COMMITTER, B2S_CLI).  Root and iproute2;
# skipped (77) otherwise.  Counted as cmocka counts (scripts/test-all).
set -u
exe=$1
[ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1 || {
  echo "skipped: needs root and iproute2"; exit 77; }
tmp=$(mktemp -d /tmp/b2s-leftovers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# Every process the test starts inherits this mark (not this shell's
# environment: only the test's).
mark="b2s-leftover-$$-$(date +%s%N)"
passed=0 failed=0

# The scratch directory the run logged in $1 (its output), if it still is.
scratch() {
  d=$(sed -n 's/^netns: scratch //p' "$1")
  [ -n "$d" ] && [ -e "$d" ] && echo "$d"
}

# What of run $1 (the test's pid; $2 its output) is left: namespaces,
# marked processes, its scratch directory.
left() {
  ns=$(ip netns list | grep -c "^b2s$(($1 % 100000))[nh]")
  ps=$(grep -ls "B2S_NETNS_MARK=$mark" /proc/[0-9]*/environ 2>/dev/null | wc -l)
  sc=$(scratch "$2" | wc -l)
  echo $((ns + ps + sc))
}

# Waits up to 20 s for run $1 (output $3) to leave nothing; says what is
# left.
check() {
  name=$2 n=0
  while [ "$(left "$1" "$3")" -gt 0 ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n + 1)); done
  if [ "$(left "$1" "$3")" -eq 0 ]; then
    echo "ok: $name left nothing"; passed=$((passed + 1))
  else
    echo "FAIL: $name left $(left "$1" "$3"):"
    ip netns list | grep "^b2s$(($1 % 100000))[nh]"
    scratch "$3" | sed 's/^/  directory /'
    grep -ls "B2S_NETNS_MARK=$mark" /proc/[0-9]*/environ 2>/dev/null |
      while read -r f; do d=${f%/environ}; echo "  ${d#/proc/}: $(tr '\0' ' ' <"$d/cmdline")"; done
    failed=$((failed + 1))
  fi
}

# The child's cmocka lines are indented so that they are not counted.
show() { sed 's/^/  | /' "$1" | tail -20; }

# 1. A failed assertion at the first fault (daemons, committer and
#    producer running, a link cut).
B2S_NETNS_MARK=$mark B2S_NETNS_FAIL_AT=1 "$exe" >"$tmp/fail.log" 2>&1 &
pid=$!
wait $pid
rc=$?
if [ $rc -ne 0 ] && grep -q "failing on purpose" "$tmp/fail.log" &&
   grep -q "^netns: scratch " "$tmp/fail.log"; then
  check $pid "a failed assertion" "$tmp/fail.log"
else
  echo "FAIL: the test did not fail on purpose (exit $rc)"; show "$tmp/fail.log"
  failed=$((failed + 1))
fi

# 2. Killed as meson's timeout kills: SIGKILL to its process group, once
#    its daemons are up.
B2S_NETNS_MARK=$mark setsid "$exe" >"$tmp/kill.log" 2>&1 &
pid=$!
n=0
until grep -q "netns: daemons up" "$tmp/kill.log" || [ $n -ge 600 ]; do
  sleep 0.1; n=$((n + 1)); done
if grep -q "netns: daemons up" "$tmp/kill.log"; then
  kill -KILL -"$pid"
  wait $pid 2>/dev/null
  rc=$?
  if [ $rc -eq 137 ]; then
    check $pid "SIGKILL to the process group" "$tmp/kill.log"
  else
    echo "FAIL: the test was not killed (exit $rc)"; show "$tmp/kill.log"
    failed=$((failed + 1))
  fi
else
  echo "FAIL: the daemons did not come up"; show "$tmp/kill.log"
  kill -KILL -"$pid" 2>/dev/null
  failed=$((failed + 1))
fi

# 3. The test's process alone killed (as an abort, a sanitizer's report
#    or the OOM killer ends it), once its daemons are up: what it started
#    goes with it (PR_SET_PDEATHSIG), the janitor removes the rest.
B2S_NETNS_MARK=$mark "$exe" >"$tmp/alone.log" 2>&1 &
pid=$!
n=0
until grep -q "netns: daemons up" "$tmp/alone.log" || [ $n -ge 600 ]; do
  sleep 0.1; n=$((n + 1)); done
if grep -q "netns: daemons up" "$tmp/alone.log"; then
  kill -KILL "$pid"
  wait $pid 2>/dev/null
  rc=$?
  if [ $rc -eq 137 ]; then
    check $pid "SIGKILL to the test's process alone" "$tmp/alone.log"
  else
    echo "FAIL: the test was not killed (exit $rc)"; show "$tmp/alone.log"
    failed=$((failed + 1))
  fi
else
  echo "FAIL: the daemons did not come up"; show "$tmp/alone.log"
  kill -KILL "$pid" 2>/dev/null
  failed=$((failed + 1))
fi

[ $passed -gt 0 ] && echo "[  PASSED  ] $passed test(s)."
[ $failed -gt 0 ] && echo "[  FAILED  ] $failed test(s)."
[ $failed -eq 0 ]
