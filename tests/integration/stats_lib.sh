# SPDX-License-Identifier: MIT
# Sourced by the integration scripts that read `hetopt run --stats` (HETOPT_STATS=1). The shim
# prints a heading per part ("hetopt: stats: opencl pool of ...") and one fact per indented line
# under it, each process's lines in one write.

# stats_records FILE: one line per heading, its facts joined to it with "; " (what tests match).
stats_records() {
  sed -n 's/^hetopt: stats: //p' "$1" |
    awk '/^  / { sub(/^ +/, ""); r = r "; " $0; next } { if (r != "") print r; r = $0 } END { if (r != "") print r }'
}

# hetopt_messages FILE: how many messages hetopt printed on FILE (a stats heading counts once, its
# fact lines not at all).
hetopt_messages() { grep -v '^hetopt: stats:   ' "$1" | grep -c '^hetopt'; }

# stats_lines_short FILE: every stats line fits 120 characters (one fact per line).
stats_lines_short() { ! grep '^hetopt: stats:' "$1" | grep -q ".\{121\}"; }
