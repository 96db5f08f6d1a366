# SPDX-License-Identifier: MIT
# Sourced by the integration scripts that check what optimize mode did. They read its stats as JSON
# (HETOPT_STATS_JSON, `hetopt run --stats=FILE.json`; a forked child's go to FILE.<pid>), never the
# --stats lines, whose wording one unit test pins (shim_unit_tests: OptimizeStats.*).
HETOPT_STATS_CHECK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/stats_check.py

# stats_expect FILE EXPR...: each Python expression over the stats `s` holds (stats_check.py).
stats_expect() { python3 "$HETOPT_STATS_CHECK" "$@"; }
# stats_get FILE KEY: the value at KEY (dotted), e.g. registered_blocks.adopted.
stats_get() { python3 "$HETOPT_STATS_CHECK" --get "$1" "$2"; }
# stats_eval FILE EXPR: the value of the Python expression EXPR over the stats `s`.
stats_eval() { python3 "$HETOPT_STATS_CHECK" --eval "$1" "$2"; }
# stats_children FILE EXPR...: each EXPR holds for every forked child's FILE.<pid>; prints how many.
stats_children() { python3 "$HETOPT_STATS_CHECK" --children "$@"; }
# stats_files FILE: FILE and its forked children's FILE.<pid> that exist, one per line.
stats_files() { python3 "$HETOPT_STATS_CHECK" --files "$1"; }

# hetopt_messages FILE: how many messages hetopt printed on FILE.
hetopt_messages() { grep -c '^hetopt' "$1"; }
