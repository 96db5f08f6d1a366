# SPDX-License-Identifier: MIT
# Sourced by the scripts that run PyOpenCL's own tests and examples against Debian's
# python3-pyopencl. Debian packages neither: the sdist of Debian's version is fetched from PyPI
# with pip into a cache (never committed). No network and no cached sdist is a failure, loudly.
#   PYOPENCL_TESTS_CACHE  where the sdist is kept (default ~/.cache/hetopt/pyopencl-sdist)

pyopencl_python=/usr/bin/python3  # Debian's module belongs to Debian's interpreter, whatever is first in PATH

# pyopencl_sdist: prints the path of the cached sdist of the installed version, fetching it the
# first time; prints why and returns 1 when it cannot. Concurrent callers fetch it once (a lock).
pyopencl_sdist() {
  local version cache sdist
  version=$("$pyopencl_python" -c 'import pyopencl; print(pyopencl.VERSION_TEXT)' 2>/dev/null) ||
    { echo "Debian's python3-pyopencl is not installed (scripts/setup.sh --tests)"; return 1; }
  cache=${PYOPENCL_TESTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hetopt/pyopencl-sdist}
  sdist=$cache/pyopencl-$version.tar.gz
  mkdir -p -m 700 "$cache" || { echo "cannot create $cache"; return 1; }
  (
    flock 9
    [[ -s $sdist ]] && exit 0
    # --no-build-isolation: pip reads the sdist's metadata with Debian's setuptools and numpy
    # instead of fetching (and, with --no-binary, building) its build dependencies.
    timeout 300 "$pyopencl_python" -m pip download --quiet --no-deps --no-binary :all: \
      --no-build-isolation -d "$cache" "pyopencl==$version" >"$cache/pip.log" 2>&1 ||
      { tail -n 5 "$cache/pip.log"; echo "cannot fetch pyopencl==$version's sdist from PyPI (network?)"; exit 1; }
  ) 9>"$cache/.lock" || return 1
  echo "$sdist"
}
