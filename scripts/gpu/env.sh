#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Source on the lent GPU machine (Ubuntu 24.04, NVIDIA driver, no ICD entry for it) before any
# measurement: makes NVIDIA's OpenCL visible through the default loader and selects the GPU by
# name, so nothing silently runs on PoCL, which the loader lists first. Prints what it did.
nv=$(ls /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/lib/libnvidia-opencl.so.1 \
        /usr/local/nvidia/lib64/libnvidia-opencl.so.1 2>/dev/null | head -n1)
if [[ -z $nv ]]; then
  nv=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -n1)
fi
if [[ -n $nv ]]; then
  export OCL_ICD_FILENAMES=$nv
  echo "gpu/env: OCL_ICD_FILENAMES=$nv"
else
  echo "gpu/env: libnvidia-opencl.so.1 not found" >&2
fi
export HETOPT_DEVICE=${HETOPT_DEVICE:-NVIDIA}
echo "gpu/env: HETOPT_DEVICE=$HETOPT_DEVICE"
