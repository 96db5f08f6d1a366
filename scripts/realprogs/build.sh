#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the development suite of real third-party OpenCL programs out of tree: SHOC's OpenCL
# level0/level1 benchmarks (serial, no MPI) and PolyBench-ACC's OpenCL codes, from source trees the
# caller provides (never copied into this repository). No autotools: the script reads SHOC's
# Makefile.am files for each program's sources, writes its own config.h, turns SHOC's .cl files into
# C strings the way SHOC's targets.mk does (`const char *cl_source_<name> = "...\n" ...;`), and
# generates one Makefile (OUTDIR/Makefile) that make runs with -k: incremental (gcc -MMD
# dependencies; a flags stamp per suite rebuilds when compiler or flags change) and parallel.
#
#   scripts/realprogs/build.sh SHOC_SRC POLYBENCH_SRC OUTDIR
#
# SHOC_SRC is a SHOC checkout (holds src/opencl), POLYBENCH_SRC a PolyBench-ACC checkout (holds
# OpenCL/); either may be '-' to skip that suite. Layout of OUTDIR:
#   shoc/bin/<Program>                       e.g. shoc/bin/GEMM (run from anywhere)
#   polybench/<DATASET>/<prog>/<prog>        e.g. polybench/STANDARD/2mm/2mm, next to its .cl file:
#                                            the programs read it from the current directory, so
#                                            that folder is the program's run directory
#   build.txt                                one line per program: built | up-to-date | FAILED
# Environment:
#   POLYBENCH_DEVICE    device type the PolyBench programs ask "platform 0" for (their
#                       OPENCL_DEVICE_SELECTION): GPU (default, as shipped), CPU, ALL, DEFAULT,
#                       ACCELERATOR, or a CL_DEVICE_TYPE_* name. ALL or CPU for PoCL.
#   POLYBENCH_DATASETS  datasets to build (default "STANDARD LARGE EXTRALARGE"; also MINI SMALL)
#   OPENCL_CFLAGS, OPENCL_LIBS  override the OpenCL header/library detection (default: <CL/cl.h>
#                       and -lOpenCL, else a libOpenCL.so[.1] found by ldconfig or in the CUDA toolkit)
#   CXX, CC, JOBS       compilers (g++, gcc) and parallel jobs (nproc)
# A program that fails to build is reported (with its log) and the others are built: the exit
# status is 0 unless nothing at all could be built or the arguments are wrong.
set -uo pipefail
if [[ ${1:-} == --cl-to-c ]]; then  # internal: SHOC's %_cl.cpp rule (config/targets.mk.in)
  name=$(basename "${2%.cl}")
  { echo "const char *cl_source_$name ="
    tr -d '\r' <"$2" | sed 's/\\/\\\\/g' | sed 's/"/\\"/g' | sed 's,^\(.*\)$,"\1\\n",'
    echo ";"; } >"$3"
  exit
fi
shoc=${1:?usage: build.sh SHOC_SRC POLYBENCH_SRC OUTDIR}
poly=${2:?usage: build.sh SHOC_SRC POLYBENCH_SRC OUTDIR}
outdir=${3:?usage: build.sh SHOC_SRC POLYBENCH_SRC OUTDIR}
CXX=${CXX:-g++} CC=${CC:-gcc}
jobs=${JOBS:-$(nproc)}
datasets=${POLYBENCH_DATASETS:-STANDARD LARGE EXTRALARGE}
mkdir -p "$outdir" && outdir=$(cd "$outdir" && pwd) || exit 2
[[ $shoc == - ]] || shoc=$(cd "$shoc" && pwd) || exit 2
[[ $poly == - ]] || poly=$(cd "$poly" && pwd) || exit 2
[[ $shoc == - || -d $shoc/src/opencl/level1 ]] || { echo "build.sh: $shoc has no src/opencl/level1" >&2; exit 2; }
[[ $poly == - || -d $poly/OpenCL/utilities ]] || { echo "build.sh: $poly has no OpenCL/utilities" >&2; exit 2; }

case ${POLYBENCH_DEVICE:-GPU} in
  CL_DEVICE_TYPE_*) devtype=$POLYBENCH_DEVICE ;;
  *) devtype=CL_DEVICE_TYPE_$(tr '[:lower:]' '[:upper:]' <<<"${POLYBENCH_DEVICE:-GPU}") ;;
esac
case $devtype in
  CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_ALL | CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_ACCELERATOR) ;;
  *) echo "build.sh: POLYBENCH_DEVICE=$POLYBENCH_DEVICE is not a device type" >&2; exit 2 ;;
esac

# ---- OpenCL headers and library -----------------------------------------------------------------
probe=$outdir/.probe
mkdir -p "$probe"
printf '#include <CL/cl.h>\nint main(void) { cl_uint n; return clGetPlatformIDs(0, 0, &n); }\n' >"$probe/p.c"
try_cl() { "$CC" $1 "$probe/p.c" -o "$probe/p" $2 >/dev/null 2>&1; }
if [[ -n ${OPENCL_CFLAGS+x} || -n ${OPENCL_LIBS+x} ]]; then
  clflags=${OPENCL_CFLAGS:-} cllibs=${OPENCL_LIBS:--lOpenCL}
else
  clflags='' cllibs=''
  for inc in '' /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include; do
    f=${inc:+-I$inc}
    "$CC" $f -fsyntax-only "$probe/p.c" >/dev/null 2>&1 || continue
    clflags=$f
    for lib in -lOpenCL $(ldconfig -p 2>/dev/null | awk '/libOpenCL\.so/ { print $NF }') \
      /usr/local/cuda/targets/x86_64-linux/lib/libOpenCL.so /usr/local/cuda/lib64/libOpenCL.so; do
      [[ $lib == -l* || -e $lib ]] || continue
      if try_cl "$f" "$lib"; then cllibs=$lib; break; fi
    done
    break
  done
fi
if ! try_cl "$clflags" "$cllibs"; then
  echo "build.sh: cannot compile and link an OpenCL program (headers: '${clflags:-default}', library: '${cllibs:-none found}'); set OPENCL_CFLAGS/OPENCL_LIBS" >&2
  exit 2
fi
echo "build.sh: OpenCL: ${clflags:-default include path}, ${cllibs}; PolyBench device type $devtype; $jobs jobs"

# A flags stamp changes (and so rebuilds) only when its content does.
stamp() {
  local f=$outdir/.flags.$1
  [[ -f $f && $(cat "$f") == "$2" ]] || printf '%s' "$2" >"$f"
  echo "$f"
}

mk=$outdir/Makefile.new
programs=()  # "<suite> <label> <target>"
{
  echo "# Generated by scripts/realprogs/build.sh; regenerated on every run."
  echo ".DELETE_ON_ERROR:"
  echo ".SUFFIXES:"
  # Logged step: quiet on success; on failure the log's head and the target removed.
  echo 'logged = @mkdir -p $(@D) && { $(1); } >$@.log 2>&1 || { echo "FAILED $@ (log: $@.log)"; sed -n 1,12p $@.log | sed "s/^/    /"; rm -f $@; exit 1; }'
  echo "all:"
} >"$mk"

# ---- SHOC ---------------------------------------------------------------------------------------
# Sources of a Makefile.am variable (continuation lines joined).
am_var() { sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$1" | sed -n "s/^[[:space:]]*$2[[:space:]]*=//p" | head -n1; }
if [[ $shoc != - ]]; then
  s=$shoc/src o=$outdir/shoc
  mkdir -p "$o/gen"
  # What configure would find on Linux with gcc (AC_C_RESTRICT included); only Timer.{h,cpp} and
  # Matrix2D.h read it.
  cfg='#define restrict __restrict
#define HAVE_CLOCK_GETTIME 1
#define HAVE_CLOCK_PROCESS_CPUTIME_ID 1
#define HAVE_GETTIMEOFDAY 1
#define HAVE_STDLIB_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_FLOAT_H 1'
  [[ -f $o/gen/config.h && $(cat "$o/gen/config.h") == "$cfg" ]] || printf '%s\n' "$cfg" >"$o/gen/config.h"
  shoc_flags="$CXX -std=gnu++14 -g -O2 -w -DCL_TARGET_OPENCL_VERSION=120 -DCL_USE_DEPRECATED_OPENCL_1_1_APIS -DCL_USE_DEPRECATED_OPENCL_1_2_APIS $clflags | $cllibs"
  fs=$(stamp shoc "$shoc_flags")
  inc="-I$o/gen -I$s/common -I$s/opencl/common $clflags"
  cxx="$CXX -std=gnu++14 -g -O2 -w -DCL_TARGET_OPENCL_VERSION=120 -DCL_USE_DEPRECATED_OPENCL_1_1_APIS -DCL_USE_DEPRECATED_OPENCL_1_2_APIS"
  # obj SRC EXTRA-INCLUDES: sets $ob to the object's path; writes its rule once.
  declare -A have_obj=()
  obj() {
    local src=$1 rel=${1#"$s"/}
    ob=$o/obj/${rel%.*}.o
    [[ -z ${have_obj[$ob]:-} ]] || return 0
    have_obj[$ob]=1
    echo "$ob: $src $fs" >>"$mk"
    printf '\t$(call logged,%s -MMD -MP %s %s -c %s -o $@)\n' "$cxx" "$2" "$inc" "$src" >>"$mk"
    echo "-include ${ob%.o}.d" >>"$mk"
  }
  common_objs=()
  for f in $(am_var "$s/common/Makefile.am" libSHOCCommon_a_SOURCES); do obj "$s/common/$f" "" && common_objs+=("$ob"); done
  for f in $(am_var "$s/opencl/common/Makefile.am" libSHOCCommonOpenCL_a_SOURCES); do
    obj "$s/opencl/common/$f" "" && common_objs+=("$ob")
  done
  obj "$s/opencl/common/main.cpp" "" && main_obj=$ob
  for am in "$s"/opencl/level0/Makefile.am "$s"/opencl/level1/*/Makefile.am; do
    d=$(dirname "$am")
    for p in $(am_var "$am" serialopencl_PROGRAMS); do
      objs=()
      for f in $(am_var "$am" "${p}_SOURCES"); do
        if [[ $f == *_cl.cpp ]]; then  # made from <name>.cl
          cl=$d/${f%_cl.cpp}.cl gen=$o/gen/${d#"$s"/}/$f
          echo "$gen: $cl" >>"$mk"
          printf '\t$(call logged,bash %q --cl-to-c %s %s)\n' "$(cd "$(dirname "$0")" && pwd)/build.sh" "$cl" "$gen" >>"$mk"
          ob=$o/obj/${d#"$s"/}/${f%.cpp}.o
          echo "$ob: $gen $fs" >>"$mk"
          printf '\t$(call logged,%s %s -c %s -o $@)\n' "$cxx" "$inc" "$gen" >>"$mk"
          objs+=("$ob")
        elif [[ $f == main.cpp ]]; then objs+=("$main_obj")
        elif [[ -f $d/$f ]]; then obj "$d/$f" "-I$d" && objs+=("$ob")
        elif [[ -f $s/opencl/common/$f ]]; then obj "$s/opencl/common/$f" "-I$d" && objs+=("$ob")
        elif [[ -f $s/common/$f ]]; then obj "$s/common/$f" "-I$d" && objs+=("$ob")
        else objs+=("$d/$f")  # missing: make reports it
        fi
      done
      bin=$o/bin/$p
      echo "$bin: ${objs[*]} ${common_objs[*]}" >>"$mk"
      printf '\t$(call logged,%s -o $@ $^ %s -lm -lpthread)\n' "$CXX" "$cllibs" >>"$mk"
      echo "all: $bin" >>"$mk"
      programs+=("shoc $p $bin")
    done
  done
fi

# ---- PolyBench-ACC --------------------------------------------------------------------------------
if [[ $poly != - ]]; then
  u=$poly/OpenCL/utilities
  for ds in $datasets; do
    [[ $ds =~ ^(MINI|SMALL|STANDARD|LARGE|EXTRALARGE)$ ]] || { echo "build.sh: unknown dataset $ds" >&2; exit 2; }
    flags="$CC -O3 -w -D${ds}_DATASET -DOPENCL_DEVICE_SELECTION=$devtype -DCL_TARGET_OPENCL_VERSION=120 -DCL_USE_DEPRECATED_OPENCL_1_1_APIS -DCL_USE_DEPRECATED_OPENCL_1_2_APIS -I$u $clflags"
    fp=$(stamp "polybench-$ds" "$flags | $cllibs")
    while IFS= read -r mkf; do
      d=$(dirname "$mkf") name=$(basename "$(dirname "$mkf")")
      src=$(sed -n 's/^CFILES[[:space:]]*:=[[:space:]]*//p' "$mkf" | tr -d '[:space:]')
      [[ -n $src && -f $d/$src ]] || src=$(cd "$d" && ls ./*.c 2>/dev/null | head -n1)
      run=$outdir/polybench/$ds/$name bin=$outdir/polybench/$ds/$name/$name
      deps=()
      for cl in "$d"/*.cl; do
        echo "$run/$(basename "$cl"): $cl" >>"$mk"
        printf '\t$(call logged,cp %s $@)\n' "$cl" >>"$mk"
        deps+=("$run/$(basename "$cl")")
      done
      echo "$bin: $d/${src#./} $fp" >>"$mk"
      printf '\t$(call logged,%s -I%s -MMD -MP %s -o $@ -lm %s)\n' "$flags" "$d" "$d/${src#./}" "$cllibs" >>"$mk"
      echo "-include $bin.d" >>"$mk"
      echo "all: $bin ${deps[*]}" >>"$mk"
      programs+=("polybench $ds/$name $bin ${deps[*]}")
    done < <(find "$poly/OpenCL" -mindepth 2 -name Makefile -not -path '*/utilities/*' | sort)
  done
fi

mv "$mk" "$outdir/Makefile"
start=$outdir/.build-start
touch "$start"
sleep 0.01
echo "build.sh: make -k -j$jobs in $outdir (${#programs[@]} programs)"
make -k -j"$jobs" -C "$outdir" -f "$outdir/Makefile" all --no-print-directory 2>&1 | grep -v "^make.*Error\|^make.*Target .* not remade\|Nothing to be done"

# ---- report --------------------------------------------------------------------------------------
: >"$outdir/build.txt"
nb=0 nu=0 nf=0 failed=()
for entry in "${programs[@]}"; do
  read -r suite label files <<<"$entry"
  read -r -a fs_ <<<"$files"
  state=up-to-date
  for f in "${fs_[@]}"; do
    if [[ ! -e $f ]] || ! make -q -C "$outdir" -f "$outdir/Makefile" "$f" >/dev/null 2>&1; then state=FAILED; break; fi
    [[ $f -nt $start ]] && state=built
  done
  echo "$suite $label $state" >>"$outdir/build.txt"
  case $state in built) ((++nb)) ;; up-to-date) ((++nu)) ;; FAILED) ((++nf)); failed+=("$suite/$label") ;; esac
done
rm -f "$start"
echo "build.sh: $((nb + nu)) of ${#programs[@]} programs ready ($nb built now, $nu up to date), $nf failed${failed[*]:+: ${failed[*]}}"
echo "build.sh: per-program state in $outdir/build.txt; logs next to each target (*.log)"
((nb + nu > 0))
