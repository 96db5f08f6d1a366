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
      Traces tests/trace/fork_exec with --no-analyze (which keeps the traces of processes without
      OpenCL calls): the parent, its forked child and its exec'd child each leave their own
      complete trace (FILE, FILE.<pid>) holding only their own allocation.
  check_trace.py sampled HETOPT APP -- ARGS...
      Traces APP (a loop of write -> kernel -> read) with the default HETOPT_TIME_SAMPLE: each of
      the loop's enqueue leaves has timed fewer commands than it executed, timed + sampled out +
      missing = executed, and kernels and both transfer directions still have device times.
  check_trace.py agreement HETOPT APP RUNS -- ARGS...
      Traces APP RUNS times with HETOPT_TIME_SAMPLE=1 (every command timed) and RUNS times with the
      default, alternating; the medians of the analysis's extrapolated per-direction transfer
      device times (and kernel time) must agree within a factor of 1.5 (see the test's comment).
  check_trace.py kill HETOPT SHIM APP SECONDS -- ARGS...
      Runs APP under the shim in trace mode, SIGKILLs it after SECONDS; the trace must still read
      (incomplete) and hold the calls made before the kill.
"""
import json
import os
import re
import signal
import statistics
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


def check_recording_cost(trace, summary):
    """The tracer's own cost: timed on about one call in 64 per thread (random gaps of 32-95
    calls), kept in the trace (format 3) and printed in the `hetopt trace` summary. Checked where
    there are calls enough."""
    calls, timed, threads = trace['summary']['calls'], trace['recording_timed_calls'], len(trace['threads'])
    if calls < 96 * (threads + 1):
        return False
    if not (calls // 96 - threads <= timed <= calls // 32 + threads) or trace['recording_timed_ns'] <= 0:
        fail(f'recording cost timed on {timed} of {calls} calls ({threads} threads), '
             f'{trace["recording_timed_ns"]} ns in all')
    if "recording (hetopt's own time after each call)" not in summary:
        fail(f'the summary does not say what recording cost: {summary[-2000:]}')
    return True


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
        check_recording_cost(trace, traced.stderr)
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


def enqueue_leaves(t):
    return [n for n in all_leaves(t) if n.get('call') in
            ('clEnqueueWriteBuffer', 'clEnqueueNDRangeKernel', 'clEnqueueReadBuffer')]


def analyze_json(hetopt, path):
    r = run([hetopt, 'analyze', '--json', '--no-store', '--no-symbols', path])
    if r.returncode != 0:
        fail(f'hetopt analyze failed ({r.returncode}): {r.stderr.strip()}')
        return None
    return json.loads(r.stdout)


def trace_with_sample(hetopt, app, args, path, sample):
    env = dict(os.environ)
    env.pop('HETOPT_TIME_SAMPLE', None)
    if sample is not None:
        env['HETOPT_TIME_SAMPLE'] = str(sample)
    r = run([hetopt, 'trace', '-o', path, '--', app] + args, env=env)
    if r.returncode != 0:
        fail(f'HETOPT_TIME_SAMPLE={sample}: exited {r.returncode}: {r.stderr[-2000:]}')
        return None
    return r.stderr


def check_sampled(argv):
    hetopt, app = argv[0], argv[1]
    args = argv[argv.index('--') + 1:]
    with tempfile.TemporaryDirectory(prefix='hetopt-trace-test.') as tmp:
        path = os.path.join(tmp, 'sampled.trace')
        summary = trace_with_sample(hetopt, app, args, path, None)
        if summary is None:
            return
        t = show_json(hetopt, path)
        a = analyze_json(hetopt, path)
        if t is None or a is None:
            return
    if not check_recording_cost(t, summary):
        fail(f"{t['summary']['calls']} calls: too few to check what recording cost")
    # The estimate is the timed sample extrapolated to every call, and the analysis shows the same
    # cost inside cpu+sync.
    want = t['recording_timed_ns'] / max(t['recording_timed_calls'], 1) * t['summary']['calls']
    for where, got in (('show --json', t['summary']['recording_ns']), ('analysis', a['breakdown']['recording_ns'])):
        if not got > 0 or abs(got - want) > 0.01 * want + 1:
            fail(f"{where}: hetopt's recording {got} ns, the timed sample says {want:.0f} ns")
    big = [n for n in enqueue_leaves(t) if n['count'] > 1000]
    if sorted(n['call'] for n in big) != ['clEnqueueNDRangeKernel', 'clEnqueueReadBuffer',
                                          'clEnqueueWriteBuffer']:
        fail(f'expected one loop leaf each of write, kernel and read, got {[n["call"] for n in big]}')
    for n in big:
        timed, out, missing = n['device_ns']['count'], n['device_sampled_out'], n['device_missing']
        print(f"{n['call']}: {n['count']} executed, {timed} timed, {out} sampled out, {missing} missing, "
              f"mean {n['device_ns']['total'] / max(timed, 1):.0f} ns")
        if not 0 < timed < n['count'] // 4:
            fail(f"{n['call']}: {timed} of {n['count']} commands timed: not sampled")
        if timed + out + missing != n['count']:
            fail(f"{n['call']}: timed {timed} + sampled out {out} + missing {missing} != {n['count']} executed")
        if n['device_ns']['total'] <= 0 or n['device_estimated_ns'] < n['device_ns']['total']:
            fail(f"{n['call']}: no extrapolated device time ({n['device_estimated_ns']} ns)")
    s, b = t['summary'], a['breakdown']
    if not 0 < s['device_timed'] < s['calls'] // 4 or s['device_sampled_out'] == 0:
        fail(f"summary: {s['device_timed']} timed, {s['device_sampled_out']} sampled out of {s['calls']} calls")
    for key in ('kernel_ns', 'h2d_ns', 'd2h_ns'):
        if not b[key] > 0:
            fail(f'analysis: no device time for {key}')
    if b['device_sampled_out_commands'] != s['device_sampled_out']:
        fail('analysis and summary disagree on the commands sampled out')


def check_agreement(argv):
    hetopt, app, runs = argv[0], argv[1], int(argv[2])
    args = argv[argv.index('--') + 1:]
    got = {1: [], None: []}
    with tempfile.TemporaryDirectory(prefix='hetopt-trace-test.') as tmp:
        for i in range(runs):
            for sample in (1, None):
                path = os.path.join(tmp, f'{sample}-{i}.trace')
                if trace_with_sample(hetopt, app, args, path, sample) is None:
                    return
                a = analyze_json(hetopt, path)
                if a is None:
                    return
                b = a['breakdown']
                got[sample].append(b)
                print(f"HETOPT_TIME_SAMPLE={sample or 'default'}: h2d {b['h2d_ns'] / 1e6:.2f} ms, "
                      f"d2h {b['d2h_ns'] / 1e6:.2f} ms, kernel {b['kernel_ns'] / 1e6:.2f} ms, "
                      f"{b['device_timed_commands']} timed, {b['device_sampled_out_commands']} sampled out")
    if any(b['device_sampled_out_commands'] for b in got[1]):
        fail('HETOPT_TIME_SAMPLE=1 left commands untimed')
    if not all(b['device_sampled_out_commands'] for b in got[None]):
        fail('the default left no command untimed')
    # Same number of commands in both variants, so the totals compare like per-command means. If
    # the extrapolation were missing, the sampled totals would be the timed share (about 1/30
    # here) of the all-timed ones; weighting the census right is the analysis tests' job, with
    # known times. Here the times are PoCL's, i.e. CPU time, and heavy-tailed: one preempted
    # sample counts 64 times. At 1000 iterations (~15 samples per key after the census) the
    # median of 5 runs ran to 1.52x in a CI run beside other tests and to 1.54x on an idle
    # 2-core VM (2 of 8); at 2000 (~31 samples), run alone, 8 of 8 stayed within 0.88-1.20
    # (isolated samples run ~10% slower on PoCL than back-to-back timed ones). PoCL's copies also
    # run at one of two speeds for a whole run (48-60 or 107-125 ms of h2d in one suite run): the
    # two variants of one round are compared (the median of the rounds' ratios), not the medians
    # of each variant, which paired a fast run with a slow one (1.72x) in that suite run.
    for key in ('h2d_ns', 'd2h_ns', 'kernel_ns'):
        ratios = [s[key] / a[key] if a[key] > 0 else float('inf') for a, s in zip(got[1], got[None])]
        ratio = statistics.median(ratios)
        print(f'{key}: sampled/all timed per round {", ".join(f"{r:.2f}" for r in ratios)}; median {ratio:.2f}')
        if not 1 / 1.5 <= ratio <= 1.5:
            fail(f'{key}: the median of the rounds\' sampled/all-timed ratios, {ratio:.2f}, is outside [0.67, 1.5]')


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
        r = run([hetopt, 'trace', '--no-analyze', '-o', path, '--', app])
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
        if 'hetopt: 2 processes it started made no OpenCL calls\n' not in r.stderr:
            fail(f'hetopt trace did not count the child traces: {r.stderr[-2000:]}')


def main():
    modes = {'app': check_app, 'invariance': check_invariance, 'kill': check_kill,
             'fork': check_fork, 'sampled': check_sampled, 'agreement': check_agreement}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    # `hetopt trace` stores a profile: in a DB of this test's own, never the user's.
    with tempfile.TemporaryDirectory(prefix='hetopt-trace-db.') as db:
        os.environ['HETOPT_DB'] = os.path.join(db, 'hetopt.db')
        modes[sys.argv[1]](sys.argv[2:])
    if failures:
        sys.exit(1)
    print('OK')


if __name__ == '__main__':
    main()
