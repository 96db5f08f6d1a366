#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The timeline of a traced run follows real time (hetopt analyze --timeline).

  check_timeline.py HETOPT TIMELINE_APP SLEEP_MS [TIMER_LAYER SHIM]

Traces tests/analyzer/timeline_app (a loop of 40 x write -> kernel -> read, then clFlush, a sleep
of SLEEP_MS, clFlush) with HETOPT_TIMELINE_CALLS=8, writes its timeline and checks, in the JSON
that Perfetto and chrome://tracing read:
  - on every track, no two slices overlap (host threads, loop tracks, the in-order queue);
  - the sleep shows: the second clFlush starts at least SLEEP_MS after the first one ended, and
    the slices end near the traced duration (not at the sum of the calls' host times);
  - each call of the loop is shown 8 times, the loop once as an aggregate of all 120 calls;
  - every blocking transfer's device command lies inside its host call (the clock alignment);
  - the clock's method is named, the candidate allocation is an instant event.

With TIMER_LAYER (tests/fault_icd's layer, which gives PoCL clGetDeviceAndHostTimer when
FAULTCL_TIMER is set, its host timer 1000 s ahead of CLOCK_MONOTONIC): the clock must come from the
timer, within TIMER_UNCERTAINTY_US, and the device commands still lie in their calls, so the
shim placed the driver's host timer on its own clock (the 1000 s cancel out). OPENCL_LAYERS lists
the layer, then SHIM (which `hetopt trace` then leaves as it is): ocl-icd puts later layers nearer
the application, and the shim's own clock calls must pass through the timer layer.
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []
TIMER_UNCERTAINTY_US = 50.0


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg)


def main(argv):
    hetopt, app, sleep_ms = argv[0], argv[1], int(argv[2])
    timer_layer = argv[3] if len(argv) > 4 else None
    with tempfile.TemporaryDirectory(prefix='hetopt-timeline-test.') as tmp:
        env = dict(os.environ, HETOPT_DB=os.path.join(tmp, 'db'), HETOPT_TIMELINE_CALLS='8')
        env.pop('FAULTCL_TIMER', None)
        if timer_layer:
            env.update(OPENCL_LAYERS=f'{timer_layer}:{argv[4]}', FAULTCL_TIMER=str(1000 * 10**9))
        trace, timeline = os.path.join(tmp, 't.trace'), os.path.join(tmp, 't.json')
        r = subprocess.run([hetopt, 'trace', '-o', trace, '--', app, '--iters', '40', '--sleep-ms', str(sleep_ms)],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            fail(f'trace exited {r.returncode}: {r.stderr[-2000:]}')
            return
        r = subprocess.run([hetopt, 'analyze', '--no-store', '--timeline', timeline, trace], env=env,
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f'analyze exited {r.returncode}: {r.stderr[-2000:]}')
            return
        shown = json.loads(subprocess.run([hetopt, 'show', '--json', trace], capture_output=True,
                                          text=True, check=True).stdout)
        with open(timeline) as f:
            doc = json.load(f)
    duration_us = shown['duration_ns'] / 1e3
    events = [e for e in doc['traceEvents'] if e['ph'] != 'M']
    slices = [e for e in events if e['ph'] == 'X']
    # 1. No overlaps on any track (times in us with ns fractions: allow rounding).
    tracks = {}
    for e in slices:
        tracks.setdefault((e['pid'], e['tid']), []).append(e)
    for key, evs in tracks.items():
        evs.sort(key=lambda e: e['ts'])
        for a, b in zip(evs, evs[1:]):
            if b['ts'] < a['ts'] + a['dur'] - 1e-3:
                fail(f'track {key}: {a["name"]} [{a["ts"]}, +{a["dur"]}] overlaps {b["name"]} at {b["ts"]}')
                break
    # 2. Real time: the sleep is a gap, and the timeline spans the traced run.
    host = [e for e in slices if e['pid'] == 2]
    flushes = sorted((e for e in host if e['name'] == 'clFlush'), key=lambda e: e['ts'])
    if len(flushes) != 2:
        fail(f'{len(flushes)} clFlush slices, expected 2')
    else:
        gap_ms = (flushes[1]['ts'] - flushes[0]['ts'] - flushes[0]['dur']) / 1e3
        print(f'gap between the flushes: {gap_ms:.1f} ms (slept {sleep_ms} ms)')
        if gap_ms < sleep_ms or gap_ms > sleep_ms + 1000:
            fail(f'gap of {gap_ms:.1f} ms between the flushes around a sleep of {sleep_ms} ms')
    end_us = max(e['ts'] + e['dur'] for e in host)
    host_sum_us = sum(e['dur'] for e in host)
    print(f'last host slice ends at {end_us / 1e3:.1f} ms of {duration_us / 1e3:.1f} ms traced; '
          f'host time in the slices {host_sum_us / 1e3:.1f} ms')
    if end_us > duration_us or end_us < sleep_ms * 1e3 or end_us < 0.5 * duration_us:
        fail(f'the last slice ends at {end_us / 1e3:.1f} ms of {duration_us / 1e3:.1f} ms traced')
    # 3. First occurrences shown, the loop aggregated.
    for name in ('clEnqueueWriteBuffer', 'clEnqueueNDRangeKernel', 'clEnqueueReadBuffer'):
        n = sum(1 for e in host if e['name'] == name)
        if n != 8:
            fail(f'{n} {name} slices on the host, expected the first 8 of 40')
    loops = [e for e in slices if e['pid'] == 3 and e['args'].get('calls') == '120']
    if len(loops) != 1 or loops[0]['args'].get('calls shown') != '24' or 'aggregated' not in loops[0]['args']:
        fail(f'expected one aggregated span of the 120 loop calls (24 shown): {loops}')
    elif not (loops[0]['ts'] <= min(e['ts'] for e in host if e['name'] == 'clEnqueueWriteBuffer') and
              loops[0]['ts'] + loops[0]['dur'] <= flushes[0]['ts'] + 1e-3):
        fail(f'the loop span {loops[0]["ts"]} +{loops[0]["dur"]} is not where its calls are')
    # 4. Device commands where their calls were: a blocking transfer runs inside its call.
    device = [e for e in slices if e['pid'] == 1]
    kernels = [e for e in device if e['cat'] == 'kernel']
    if len(kernels) != 8:
        fail(f'{len(kernels)} kernels on the device track, expected 8')
    clocks = {k: v for k, v in doc['otherData'].items() if k.startswith('clock of queue')}
    if len(clocks) != 1:
        fail(f'expected one queue clock in otherData: {doc["otherData"]}')
    slack_us = 50.0
    for k, v in clocks.items():
        print(f'{k}: {v}')
        uncertainty_us = float(v.split('+-')[1].split()[0])
        if timer_layer and (not v.startswith('clGetDeviceAndHostTimer') or uncertainty_us > TIMER_UNCERTAINTY_US):
            fail(f'{k} is not from clGetDeviceAndHostTimer within {TIMER_UNCERTAINTY_US} us: {v}')
        elif 'clGetDeviceAndHostTimer' not in v and 'estimated' not in v:
            fail(f'{k} does not say how it was aligned: {v}')
        slack_us += uncertainty_us
    for d in (e for e in device if e['cat'] in ('h2d', 'd2h')):
        calls = [h for h in host if h['name'] == d['name'] and
                 h['ts'] - slack_us <= d['ts'] and d['ts'] + d['dur'] <= h['ts'] + h['dur'] + slack_us]
        if not calls:
            fail(f'device {d["name"]} at {d["ts"]} +{d["dur"]} us lies in no host call of it')
            break
    # 5. The candidate site's allocation.
    allocs = [e for e in events if e['ph'] == 'i' and e['cat'] == 'alloc']
    if len(allocs) != 1 or not allocs[0]['name'].startswith('malloc'):
        fail(f'expected the one candidate allocation as an instant event: {allocs}')


if __name__ == '__main__':
    main(sys.argv[1:])
    print('FAILED' if failures else 'ok')
    sys.exit(1 if failures else 0)
