#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The register-at-first-transfer baseline (bench/register_first_transfer.cpp) keeps programs'
# results: each test app natively and with the library preloaded prints the same `result:` lines
# and exit status, and the library registered at least one block (its stats line). The apps cover
# malloc, calloc+realloc (blocks that move while registered), new[], two threads, Rect transfers.
#   baseline_results.sh LIB APP...
set -u
lib=$1
shift
fail=0
for app in "$@"; do
  name=$(basename "$app")
  native=$("$app" --size 1M --iters 3 2>/dev/null)
  rc_native=$?
  out=$(LD_PRELOAD=$lib REGISTER_FIRST_TRANSFER_STATS=1 "$app" --size 1M --iters 3 2>&1)
  rc=$?
  stats=$(grep '^register_first_transfer:' <<<"$out")
  if [[ $rc != "$rc_native" ]] || [[ $(grep '^result:' <<<"$native") != $(grep '^result:' <<<"$out") ]] ||
    ! grep -q '^result:' <<<"$native"; then
    echo "FAIL: $name: results or exit status differ under the baseline (exit $rc_native natively, $rc preloaded)"
    diff <(grep '^result:' <<<"$native") <(grep '^result:' <<<"$out")
    fail=1
  elif ! grep -Eq ' [1-9][0-9]* registered' <<<"$stats"; then
    echo "FAIL: $name: nothing registered ($stats)"
    fail=1
  else
    echo "ok: $name: $(grep -c '^result:' <<<"$native") result lines identical; $stats"
  fi
done
exit $fail
