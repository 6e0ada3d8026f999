# Hand computation of the sync cost under the host-lead model (docs/rules.md, `sync`) on the
# PARAM ResNet corpus trace: each stream sync that drained the queue costs the gap time from
# the device going idle for as long as the lead the host had when it entered the sync (or
# until the call returned, if later); a sync made while the device was idle costs its overlap
# with the gap. Expected by tests/diagnose.rs (many_syncs_rank_host_sync): 920.0 µs.
# Usage: python3 scripts/oracle_sync_lead.py (reads /work/shared/corpus or $STALLSCOPE_CORPUS)
import bisect
import gzip
import json
import os
d = json.load(gzip.open(os.environ.get('STALLSCOPE_CORPUS', '../shared/corpus') + '/param/et_replay__tests__inputs__resnet_kineto.json.gz'))
ev = d['traceEvents']
acts = [e for e in ev if e.get('ph') == 'X' and e.get('cat') in ('kernel', 'gpu_memcpy', 'gpu_memset')]
syncs = [e for e in ev if e.get('ph') == 'X' and e.get('cat') in ('cuda_runtime', 'cuda_driver') and e['name'] == 'cudaStreamSynchronize']
# busy union (device 0 only)
iv = sorted((float(a['ts']), float(a['ts']) + float(a['dur'])) for a in acts)
busy = []
for s, e in iv:
    if busy and s <= busy[-1][1]:
        busy[-1][1] = max(busy[-1][1], e)
    else:
        busy.append([s, e])
gaps = [(busy[i][1], busy[i + 1][0]) for i in range(len(busy) - 1)]
starts = [g[0] for g in gaps]
total = 0.0
n = 0
for s in syncs:
    st, en = float(s['ts']), float(s['ts']) + float(s['dur'])
    # the gap that opened while the sync ran (or <= 20 us after it returned)
    i = bisect.bisect_left(starts, st)
    if i < len(gaps) and gaps[i][0] <= en + 20:
        a, b = gaps[i]
        lead = a - st
        total += min(lead, b - a)
        n += 1
print(len(syncs), 'syncs,', n, 'drained; wait', sum(float(s['dur']) for s in syncs), 'us; sync cost <=', round(total, 3), 'us')
tl = 0.0
for s in syncs:
    st, en = float(s['ts']), float(s['ts']) + float(s['dur'])
    i = bisect.bisect_left(starts, st)
    if i < len(gaps) and gaps[i][0] <= en + 20:
        tl += gaps[i][0] - st
print('sum of leads', tl)
# exact: per drained gap, the sync's part is [a, a+lead) ∪ [a, sync end) within the gap;
# a sync made while the device was idle costs its overlap with the gap
tot = 0.0
for s in syncs:
    st, en = float(s['ts']), float(s['ts']) + float(s['dur'])
    i = bisect.bisect_left(starts, st)
    if i < len(gaps) and gaps[i][0] <= en + 20:
        a, b = gaps[i]
        tot += min(max(a + (a - st), en), b) - a
    else:
        j = bisect.bisect_right(starts, st) - 1
        if j >= 0:
            a, b = gaps[j]
            tot += max(0.0, min(en, b) - max(st, a))
print('oracle sync cost', tot)
