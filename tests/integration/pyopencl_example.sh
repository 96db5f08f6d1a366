#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One of PyOpenCL's example scripts (from the sdist of Debian's python3-pyopencl version, see
# pyopencl_sdist.sh) under every hetopt route, through third_party.sh: the same exit status (the
# examples assert their own answers) and the same stdout as natively.
#
#   pyopencl_example.sh HETOPT SHIM EXAMPLE.py [third_party.sh options]
set -u
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/pyopencl_sdist.sh"
hetopt=$1 shim=$2 example=$3
shift 3
sdist=$(pyopencl_sdist) || { echo "FAIL: $sdist"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hetopt-pyexample.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
top=$(basename "$sdist" .tar.gz)
tar -xzf "$sdist" -C "$work" "$top/examples/$example" || { echo "FAIL: $sdist holds no examples/$example"; exit 1; }
# Non-interactive device choice (the examples call create_some_context): the first platform's first device.
PYOPENCL_CTX=0 bash "$here/third_party.sh" "$hetopt" "$shim" "$@" -- \
  "$pyopencl_python" "$work/$top/examples/$example"
