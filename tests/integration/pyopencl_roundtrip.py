# SPDX-License-Identifier: MIT
"""A tiny PyOpenCL program (Debian's python3-pyopencl; none of hetopt's code): numpy arrays written
to the device, scaled by a kernel and read back, 5 times; then moved the other ways PyOpenCL's users
move them: buffers created from arrays (CL_MEM_COPY_HOST_PTR, `hostbuf=`) and read back, 3 times,
and, where the device has coarse-grained SVM, an array copied into SVM memory and back. Prints the
device and a checksum only, so its stdout is the same in every run. Device: first GPU, else the
first device (hetopt's rule)."""
import numpy as np
import pyopencl as cl

devices = [d for p in cl.get_platforms() for d in p.get_devices()]
gpus = [d for d in devices if d.type & cl.device_type.GPU]
dev = (gpus or devices)[0]
print(f"device: {dev.platform.name} / {dev.name}")
ctx = cl.Context([dev])
queue = cl.CommandQueue(ctx)
prog = cl.Program(ctx, """
__kernel void scale(__global uint* x, uint a) { size_t i = get_global_id(0); x[i] = x[i] * a + 1; }
""").build()
n = 1 << 18  # 1 MiB of uint32: large enough to be a tracked allocation site
host = np.arange(n, dtype=np.uint32)
out = np.empty_like(host)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, host.nbytes)
total = 0
for it in range(5):
    host += it
    cl.enqueue_copy(queue, buf, host)
    prog.scale(queue, (n,), None, buf, np.uint32(3))
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    assert np.array_equal(out, host * np.uint32(3) + np.uint32(1))
    total += int(out.astype(np.uint64).sum())
for it in range(3):
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    made = cl.Buffer(ctx, flags, hostbuf=host + np.uint32(it))
    cl.enqueue_copy(queue, out, made)
    assert np.array_equal(out, host + np.uint32(it))
    total += int(out.astype(np.uint64).sum())
    made.release()
svm_caps = dev.svm_capabilities if dev.version >= "OpenCL 2" else 0
if svm_caps & cl.device_svm_capabilities.COARSE_GRAIN_BUFFER:
    svm = cl.SVM(cl.csvm_empty(ctx, n, np.uint32))
    cl.enqueue_copy(queue, svm, host)
    cl.enqueue_copy(queue, out, svm)
    queue.finish()
    assert np.array_equal(out, host)
    total += int(out.astype(np.uint64).sum())
print(f"result: checksum {total}")
