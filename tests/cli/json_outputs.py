#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`hetopt devices --json` and `hetopt characterize --show --json` on the machine's OpenCL (PoCL in
CI): each prints one JSON object that python's json reads, with the fields the commands' --help
documents, agreeing with the text output and the exit status of the text form.

  json_outputs.py HETOPT
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def parsed(r, what):
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        fail(f'{what}: not JSON ({e}): {r.stdout[:500]!r}')
        return None


def check_devices(hetopt):
    r = run([hetopt, 'devices', '--json'])
    d = parsed(r, 'devices --json')
    if d is None:
        return
    if r.returncode != 0:
        fail(f'devices --json exited {r.returncode}')
    keys = {'platform_index', 'platform', 'platform_version', 'device_index', 'device', 'vendor', 'type',
            'driver_version', 'global_mem_bytes', 'max_alloc_bytes', 'host_unified_memory', 'selected'}
    if not d['devices']:
        fail('no devices listed')
    for dev in d['devices']:
        if set(dev) != keys:
            fail(f'device fields {sorted(dev)} != {sorted(keys)}')
        if not isinstance(dev['global_mem_bytes'], int) or dev['global_mem_bytes'] <= 0:
            fail(f'global_mem_bytes {dev["global_mem_bytes"]!r}')
    picked = [dev for dev in d['devices'] if dev['selected']]
    if len(picked) != 1 or d['selected'] is None or d['error'] is not None:
        fail(f'expected one selected device and no error: {d}')
    elif (picked[0]['platform_index'], picked[0]['device_index']) != (d['selected']['platform_index'],
                                                                       d['selected']['device_index']):
        fail(f'"selected" {d["selected"]} is not the device marked selected {picked[0]}')
    text = run([hetopt, 'devices']).stdout
    for dev in d['devices']:
        if dev['device'] not in text or dev['platform'] not in text:
            fail(f'{dev["device"]} / {dev["platform"]} not in the text listing')
    for f in d['findings']:
        if f['level'] not in ('warning', 'note') or not f['text']:
            fail(f'finding {f}')
    # No device matches: exit 1 as the text form, and the JSON says why.
    r = run([hetopt, 'devices', '--json', '--device', 'no-such-device'])
    d = parsed(r, 'devices --json --device no-such-device')
    if d is not None and (r.returncode != 1 or d['selected'] is not None or not d['error'] or
                          any(dev['selected'] for dev in d['devices'])):
        fail(f'no match: exit {r.returncode}, {d}')


def check_characterize(hetopt, tmp):
    db = os.path.join(tmp, 'c.db')
    r = run([hetopt, 'characterize', '--quick', '--max-size', '64K', '--no-plots', '--db', db])
    if r.returncode != 0:
        fail(f'characterize exited {r.returncode}: {r.stderr[-1000:]}')
        return
    r = run([hetopt, 'characterize', '--show', '--json', '--db', db])
    d = parsed(r, 'characterize --show --json')
    if d is None:
        return
    if r.returncode != 0 or d['db'] != db or len(d['runs']) != 1:
        fail(f'exit {r.returncode}, db {d.get("db")}, {len(d.get("runs", []))} runs')
        return
    run_ = d['runs'][0]
    text = run([hetopt, 'characterize', '--show', '--db', db]).stdout
    if run_['device'] not in text or not run_['quick'] or run_['device_name'] not in run_['device']:
        fail(f'run {run_["device"]!r} (quick {run_["quick"]}) does not match the text: {text[:300]}')
    names = {p['policy'] for p in run_['policies']}
    if names != {'standard', 'locked', 'opencl', 'hybrid', 'register'}:
        fail(f'policies {names}')
    for f in run_['fits']:
        if (f['points'] <= 0 or not 0 <= f['outliers'] < f['points'] or not f['segments']
                or f['segments'][0]['ns_per_byte'] < 0):
            fail(f'fit {f}')
            break
    # The decisions cover every size in each direction, without gaps; the last has no bound.
    for direction in ('h2d', 'd2h', 'roundtrip'):
        rows = [x for x in run_['decisions'] if x['direction'] == direction]
        nxt = 0
        for x in rows:
            if x['size_lo'] != nxt or x['policy'] not in names or x['alloc'] not in ('plain', 'direct', 'pool'):
                fail(f'{direction} decision {x} (expected to start at {nxt})')
            nxt = x['size_hi']
        if nxt is not None:
            fail(f'{direction} decisions end at {nxt}, not unbounded')
    for s in run_['samples']:
        if not (s['reps'] >= 3 and 0 < s['min_ns'] <= s['median_ns'] <= s['max_ns'] and s['q1_ns'] <= s['q3_ns']):
            fail(f'sample {s}')
            break
    # Nothing matches: exit 1 as the text form, still JSON; --json without --show is refused.
    r = run([hetopt, 'characterize', '--show', '--json', '--device', 'no-such-device', '--db', db])
    d = parsed(r, 'characterize --show --json --device no-such-device')
    if d is not None and (r.returncode != 1 or d['runs'] != []):
        fail(f'no match: exit {r.returncode}, {d}')
    r = run([hetopt, 'characterize', '--json', '--db', db])
    if r.returncode != 2:
        fail(f'--json without --show exited {r.returncode}')


if __name__ == '__main__':
    with tempfile.TemporaryDirectory(prefix='hetopt-json-test.') as tmp:
        check_devices(sys.argv[1])
        check_characterize(sys.argv[1], tmp)
    print('FAILED' if failures else 'ok')
    sys.exit(1 if failures else 0)
