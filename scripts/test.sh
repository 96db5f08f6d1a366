#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's test command: installs what is missing, builds, and runs the whole test suite on
# the default OpenCL device (PoCL on machines without a GPU). .ci/run calls exactly this.
#
# The suite runs with hetopt's default places (the DB under XDG_DATA_HOME, plans and identities
# under XDG_CACHE_HOME) moved into a fresh directory, and HETOPT_DB unset: every test must name
# its own private DB, and one that fell back to the default would show up there. Afterwards that
# directory must still be empty of hetopt's files, so the user's own DB is never written by tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
sandbox=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-test-home.XXXXXX")
trap 'rm -rf "$sandbox"' EXIT
status=0
env -u HETOPT_DB XDG_DATA_HOME="$sandbox/data" XDG_CACHE_HOME="$sandbox/cache" \
  ctest --test-dir "${BUILD_DIR:-build}" -j"$(nproc)" --output-on-failure --timeout 300 || status=$?
if [[ -e $sandbox/data/hetopt ]]; then
  echo "test.sh: FAIL: tests wrote hetopt's default DB (they must each use a private one):" >&2
  find "$sandbox/data/hetopt" -maxdepth 1 >&2
  status=1
fi
exit $status
