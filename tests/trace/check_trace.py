#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks `hetopt trace` on a test app against what the app knows it did.

  check_trace.py app HETOPT APP [EXPECT...] -- ARGS...
      Runs APP natively and under `hetopt trace`; both must succeed with identical stdout. Then,
      through `hetopt show --json`: the trace is complete, every EXPECT holds, and every host segment
      that crossed to or from the device was allocated on a source line of the app marked
      `// hetopt:transfer` (symbolized with addr2line). EXPECT is one of
        calls:FUNCTION=N     exact number of calls
        h2d=N / d2h=N        bytes of host memory read / written by calls
        wrapped=N            bytes wrapped by CL_MEM_USE_HOST_PTR buffers
        transfer-lines=N     distinct marked lines that fed transfers
        untracked=CLASS:N    untracked memory of that class (static, mmap, heap, ...) moved N bytes
  check_trace.py invariance HETOPT APP SMALL LARGE MAXBYTES -- ARGS...
      Traces APP with --iters SMALL and --iters LARGE: the compressed structures must be identical
      (only counts differ) and the larger trace file under MAXBYTES.
  check_trace.py fork HETOPT APP
      Traces tests/trace/fork_exec: the parent, its forked child and its exec'd child each leave
      their own complete trace (FILE, FILE.<pid>) holding only their own allocation.
  check_trace.py kill HETOPT SHIM APP SECONDS -- ARGS...
      Runs APP under the shim in trace mode, SIGKILLs it after SECONDS; the trace must still read
      (incomplete) and hold the calls made before the kill.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def show_json(hetopt, path):
    r = run([hetopt, 'show', '--json', path])
    if r.returncode != 0:
        fail(f'hetopt show failed ({r.returncode}): {r.stderr.strip()}')
        return None
    return json.loads(r.stdout)


def leaves(nodes):
    for n in nodes:
        if 'loop' in n:
            yield from leaves(n['loop']['body'])
        else:
            yield n


def all_leaves(trace):
    for th in trace['threads']:
        yield from leaves(th['entries'])


def structure(nodes):
    out = []
    for n in nodes:
        if 'loop' in n:
            out.append(('loop', structure(n['loop']['body'])))
        else:
            name = n.get('call') or n.get('alloc') or n.get('free')
            out.append((name, tuple((r['arg'], r['access'], r.get('host', '')) for r in n['refs'])))
    return out


def source_lines(app, module_path, offset):
    """Source locations (file, line) of a return address, inlined frames included."""
    r = run(['addr2line', '-i', '-e', module_path, hex(offset - 1)])
    locs = []
    for line in r.stdout.splitlines():
        m = re.match(r'(.*):(\d+)', line.strip())
        if m and m.group(1) != '??':
            locs.append((m.group(1), int(m.group(2))))
    return locs


def marked_line(locs, marker='hetopt:transfer'):
    """The first location on a line carrying the marker, else None."""
    for path, line in locs:
        try:
            with open(path) as f:
                text = f.read().splitlines()
        except OSError:
            continue
        if 0 < line <= len(text) and marker in text[line - 1]:
            return (path, line)
    return None


def check_app(argv):
    hetopt, app = argv[0], argv[1]
    sep = argv.index('--')
    expects, args = argv[2:sep], argv[sep + 1:]
    with tempfile.TemporaryDirectory(prefix='hetopt-trace-test.') as tmp:
        path = os.path.join(tmp, 'app.trace')
        native = run([app] + args)
        traced = run([hetopt, 'trace', '-o', path, '--', app] + args)
        if native.returncode != 0:
            fail(f'native run exited {native.returncode}: {native.stderr[-2000:]}')
        if traced.returncode != 0:
            fail(f'traced run exited {traced.returncode}: {traced.stderr[-2000:]}')
        if native.stdout != traced.stdout:
            fail(f'stdout differs:\n--- native\n{native.stdout}--- traced\n{traced.stdout}')
        if not native.stdout:
            fail('the app printed nothing')
        mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else None
        if mode != 0o600:
            fail(f'trace file mode {oct(mode) if mode is not None else "missing"}, expected 0600')
        trace = show_json(hetopt, path) if os.path.exists(path) else None
        if trace is None:
            return
        if not trace['complete']:
            fail('trace is not complete')
        s = trace['summary']
        objects = {o['id']: o for o in trace['objects']}
        modules = trace['modules']
        sites = trace['sites']
        # Every host segment that crossed: its allocation site is a marked line of the app.
        lines = set()
        untracked = {}
        for leaf in all_leaves(trace):
            for r in leaf['refs']:
                if r.get('host') not in ('h2d', 'd2h', 'wrap'):
                    continue
                o = objects[r['object']]
                if o['kind'] == 'untracked':
                    key = o.get('region', 'unknown')
                    untracked[key] = untracked.get(key, 0) + r['bytes']
                    continue
                if o['kind'] != 'segment':
                    continue
                site = sites[o['site']]
                found = None
                tried = []
                for fr in site['frames']:
                    if fr['module'] < 0:
                        continue
                    locs = source_lines(app, modules[fr['module']]['path'], fr['offset'])
                    tried += locs
                    found = marked_line(locs)
                    if found:
                        break
                if not found:
                    fail(f'segment {o["id"]} ({o["size"]} B, {r["host"]} in {leaf.get("call")}) was '
                         f'allocated at {tried}, no line marked hetopt:transfer')
                else:
                    lines.add(found)
        for e in expects:
            key, want = e.rsplit('=', 1)
            want = int(want)
            if key.startswith('calls:'):
                got = s['calls_by_function'].get(key[6:], 0)
            elif key == 'h2d':
                got = s['h2d_bytes']
            elif key == 'd2h':
                got = s['d2h_bytes']
            elif key == 'wrapped':
                got = s['wrapped_bytes']
            elif key == 'transfer-lines':
                got = len(lines)
            elif key.startswith('untracked:'):
                got = untracked.get(key[10:], 0)
            else:
                fail(f'unknown expectation {e}')
                continue
            if got != want:
                fail(f'{key}: trace says {got}, the app did {want}')
        print(f'transfer lines: {sorted(lines)}; untracked: {untracked}; summary: '
              f'calls={s["calls"]} h2d={s["h2d_bytes"]} d2h={s["d2h_bytes"]} kernel_ns={s["kernel_ns"]} '
              f'transfer_ns={s["transfer_ns"]} file={trace["file_bytes"]} B')


def check_invariance(argv):
    hetopt, app, small, large, maxbytes = argv[0], argv[1], argv[2], argv[3], int(argv[4])
    args = argv[argv.index('--') + 1:]
    results = {}
    with tempfile.TemporaryDirectory(prefix='hetopt-trace-test.') as tmp:
        for iters in (small, large):
            path = os.path.join(tmp, f'{iters}.trace')
            start = time.time()
            r = run([hetopt, 'trace', '-o', path, '--', app] + args + ['--iters', iters])
            if r.returncode != 0:
                fail(f'--iters {iters}: exited {r.returncode}: {r.stderr[-2000:]}')
                return
            t = show_json(hetopt, path)
            if t is None:
                return
            results[iters] = (t, os.path.getsize(path))
            print(f'--iters {iters}: {os.path.getsize(path)} bytes, {time.time() - start:.1f} s')
    (ts, size_s), (tl, size_l) = results[small], results[large]
    if structure(ts['threads'][0]['entries']) != structure(tl['threads'][0]['entries']):
        fail('the compressed structure depends on the trip count')
    writes = tl['summary']['calls_by_function'].get('clEnqueueWriteBuffer', 0)
    if writes != int(large):
        fail(f'--iters {large}: {writes} clEnqueueWriteBuffer calls in the trace')
    if size_l >= maxbytes:
        fail(f'--iters {large}: trace of {size_l} bytes, expected under {maxbytes}')


def check_kill(argv):
    hetopt, shim, app, seconds = argv[0], argv[1], argv[2], float(argv[3])
    args = argv[argv.index('--') + 1:]
    with tempfile.TemporaryDirectory(prefix='hetopt-trace-test.') as tmp:
        path = os.path.join(tmp, 'killed.trace')
        env = dict(os.environ, HETOPT_MODE='trace', HETOPT_TRACE_FILE=path, LD_PRELOAD=shim,
                   OPENCL_LAYERS=shim)
        p = subprocess.Popen([app] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(seconds)
        if p.poll() is not None:
            fail(f'the app ended before the kill (exit {p.returncode}); give it more work')
            return
        p.send_signal(signal.SIGKILL)
        p.wait()
        t = show_json(hetopt, path)
        if t is None:
            return
        if t['complete']:
            fail('a killed program left a trace marked complete')
        writes = t['summary']['calls_by_function'].get('clEnqueueWriteBuffer', 0)
        print(f'killed after {seconds} s: {os.path.getsize(path)} bytes, {writes} writes recorded, '
              f'{t["duration_ns"] / 1e9:.2f} s traced')
        if writes < 100:
            fail(f'only {writes} clEnqueueWriteBuffer calls survived the kill')


def check_fork(argv):
    hetopt, app = argv[0], argv[1]
    with tempfile.TemporaryDirectory(prefix='hetopt-trace-test.') as tmp:
        path = os.path.join(tmp, 'f.trace')
        r = run([hetopt, 'trace', '-o', path, '--', app])
        m = re.search(r'children (\d+) (\d+)', r.stdout)
        if r.returncode != 0 or not m:
            fail(f'fork_exec exited {r.returncode}: {r.stdout} {r.stderr[-2000:]}')
            return
        expect = {path: 64 << 10, f'{path}.{m.group(1)}': 128 << 10, f'{path}.{m.group(2)}': 256 << 10}
        for p, size in expect.items():
            if not os.path.exists(p):
                fail(f'no trace {os.path.basename(p)}; files: {sorted(os.listdir(tmp))}')
                continue
            if os.stat(p).st_mode & 0o777 != 0o600:
                fail(f'{os.path.basename(p)} is not 0600')
            t = show_json(hetopt, p)
            if t is None:
                continue
            sizes = sorted(o['size'] for o in t['objects'] if o['kind'] == 'segment' and o['size'] >= 64 << 10)
            print(f'{os.path.basename(p)}: pid {t["pid"]}, complete {t["complete"]}, segments {sizes}')
            if not t['complete']:
                fail(f'{os.path.basename(p)} is incomplete')
            if sizes != [size]:
                fail(f'{os.path.basename(p)}: segments of {sizes} bytes, expected only [{size}]')
        if f'child trace {path}.{m.group(2)}' not in r.stderr:
            fail('hetopt trace did not list the child traces')


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ('app', 'invariance', 'kill', 'fork'):
        sys.exit(__doc__)
    {'app': check_app, 'invariance': check_invariance, 'kill': check_kill,
     'fork': check_fork}[sys.argv[1]](sys.argv[2:])
    if failures:
        sys.exit(1)
    print('OK')


if __name__ == '__main__':
    main()
