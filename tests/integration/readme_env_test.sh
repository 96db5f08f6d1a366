#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every HETOPT_* variable of the option table is documented in README.md, and README documents no
# variable the table lacks. Usage: readme_env_test.sh OPTIONS_DEF README
set -u
def=$1 readme=$2
table=$(grep -o '^HETOPT_OPTION([A-Z_]*' "$def" | sed 's/HETOPT_OPTION(/HETOPT_/' | sort -u)
documented=$(grep -o '^| `HETOPT_[A-Z_]*`' "$readme" | grep -o 'HETOPT_[A-Z_]*' | sort -u)
if [[ "$table" != "$documented" ]]; then
  echo "README.md's Environment table and common/options.def differ:"
  diff <(echo "$table") <(echo "$documented")
  exit 1
fi
echo "OK: $(wc -l <<<"$table") variables documented"
