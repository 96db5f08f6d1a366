# SPDX-License-Identifier: MIT
"""Python multiprocessing (fork start method) over PyOpenCL: the parent forks a pool of workers
before it touches OpenCL; each worker makes its own context, scales its share of the data on the
device and sends it back; the parent checks every result, then (PARENT opencl, the default) uses
OpenCL itself, or (PARENT none) never touches OpenCL, as job runners do. WORKERS 0: the parent runs
every task itself, forking nothing. Exits 3 when all is right (so a run that loses the exit status
shows), 1 when a result is wrong.
  pyopencl_multiprocessing.py [TASKS] [WORKERS] [opencl|none]"""
import multiprocessing as mp
import sys

import numpy as np

KERNEL = "__kernel void scale(__global uint* x, uint a) { size_t i = get_global_id(0); x[i] = x[i] * a + 1; }"


def device_run(data, factor):
    import pyopencl as cl
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    ctx = cl.Context([(gpus or devices)[0]])
    queue = cl.CommandQueue(ctx)
    prog = cl.Program(ctx, KERNEL).build()
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, data.nbytes)
    out = np.empty_like(data)
    cl.enqueue_copy(queue, buf, data)
    prog.scale(queue, data.shape, None, buf, np.uint32(factor))
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return out


def task(i):
    data = np.arange(1 << 16, dtype=np.uint32) + np.uint32(i)
    return i, int(device_run(data, i % 7 + 2).astype(np.uint64).sum())


def expected(i):
    data = np.arange(1 << 16, dtype=np.uint32) + np.uint32(i)
    return int((data * np.uint32(i % 7 + 2) + np.uint32(1)).astype(np.uint64).sum())


def main():
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    parent_opencl = (sys.argv[3] if len(sys.argv) > 3 else "opencl") == "opencl"
    if workers:
        with mp.get_context("fork").Pool(workers) as pool:
            results = dict(pool.map(task, range(tasks)))
    else:
        results = dict(map(task, range(tasks)))
    wrong = [i for i in range(tasks) if results.get(i) != expected(i)]
    if parent_opencl:  # the parent's own OpenCL use after its workers are gone
        mine = device_run(np.arange(1 << 16, dtype=np.uint32), 5)
        if not np.array_equal(mine, np.arange(1 << 16, dtype=np.uint32) * np.uint32(5) + np.uint32(1)):
            wrong.append("parent")
    if wrong:
        print(f"wrong results for tasks {wrong}")
        return 1
    print(f"result: {tasks} tasks, checksum {sum(results.values())}")
    return 3


if __name__ == "__main__":
    sys.exit(main())
