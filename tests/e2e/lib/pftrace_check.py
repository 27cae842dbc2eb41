#!/usr/bin/env python3
"""pftrace_check.py - reads a `npurr export --perfetto` trace back, as a
viewer would, and prints what it holds; exits 1 on anything a viewer would
reject or misread.

The trace is decoded by protoc against tests/data/perfetto_min.proto (our
own minimal schema with Perfetto's field numbers), after expanding the
zlib compressed_packets bundles (a .gz file is gunzipped first). Checked:
  - every track_event names a declared track; counters sit on counter tracks
  - packets are in time order (Perfetto keeps the file order of ties)
  - BEGIN/END nest per track (an END with nothing open is an error)
  - every flow: one start (flow_ids) read before one end
    (terminating_flow_ids), the end not earlier than the start
  - every transfer slice (category "transfer") sits on a pipe track whose
    parent is a core's thread track
Usage: pftrace_check.py TRACE PROTO_DIR  (prints key=value lines)
"""
import gzip, re, subprocess, sys, zlib

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i

def expand(data):
    """The trace with every compressed_packets bundle replaced by its packets."""
    out, i, bundles = bytearray(), 0, 0
    while i < len(data):
        tag, j = varint(data, i)
        assert tag == 0x0a, "not a Trace: tag %#x at %d" % (tag, i)
        n, j = varint(data, j)
        pkt = data[j:j + n]
        k, inner = 0, None
        while k < len(pkt):
            t, k = varint(pkt, k)
            w = t & 7
            if w == 0:
                _, k = varint(pkt, k)
            elif w == 1:
                k += 8
            elif w == 5:
                k += 4
            else:
                ln, k = varint(pkt, k)
                if t >> 3 == 50:
                    inner = zlib.decompress(pkt[k:k + ln])
                k += ln
        if inner is not None:
            out += inner
            bundles += 1
        else:
            out += data[i:j + n]
        i = j + n
    return bytes(out), bundles

def parse(text):
    """protoc's text format -> nested dicts of lists."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            node = {}
            cur.setdefault(line[:-1].strip(), []).append(node)
            stack.append(cur)
            cur = node
        elif line == "}":
            cur = stack.pop()
        else:
            key, _, val = line.partition(": ")
            if val.startswith('"'):
                val = val[1:-1].encode().decode("unicode_escape")
            cur.setdefault(key, []).append(val)
    return root

def one(d, k, default=None):
    v = d.get(k)
    return v[0] if v else default

def main():
    path, proto_dir = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    raw, bundles = expand(data)
    dec = subprocess.run(["protoc", "--proto_path=" + proto_dir, "--decode=perfetto.protos.Trace",
                          "perfetto_min.proto"], input=raw, capture_output=True)
    if dec.returncode:
        sys.exit("protoc --decode failed: " + dec.stderr.decode())
    packets = parse(dec.stdout.decode()).get("packet", [])
    tracks, names, cats, errors = {}, {}, {}, []
    kinds = {"process": 0, "thread": 0, "pipe": 0, "counter": 0}
    for p in packets:
        td = one(p, "track_descriptor")
        if td:
            u = int(one(td, "uuid"))
            t = {"name": one(td, "name"), "parent": one(td, "parent_uuid"),
                 "kind": "process" if "process" in td else "thread" if "thread" in td
                 else "counter" if "counter" in td else "pipe"}
            if t["kind"] == "process":
                t["name"] = one(one(td, "process"), "process_name")
            if t["kind"] == "thread":
                t["name"] = one(one(td, "thread"), "thread_name")
            tracks[u] = t
            kinds[t["kind"]] += 1
    pipes = {"MTE1", "MTE2", "MTE3", "V", "M", "FIX", "NIC", "AICPU", "scalar"}
    open_, flow_start = {}, {}
    last_ts = -1
    st = dict(slices=0, transfers=0, transfers_on_pipe_track=0, waits=0, flows=0,
              flows_backward=0, flows_unmatched=0, counters=0, counter_tracks_used=0)
    used_counters = set()
    for p in packets:
        idata = one(p, "interned_data")
        if idata:
            for n in idata.get("event_names", []):
                names[int(one(n, "iid"))] = one(n, "name")
            for n in idata.get("event_categories", []):
                cats[int(one(n, "iid"))] = one(n, "name")
        te = one(p, "track_event")
        if not te:
            continue
        ts = int(one(p, "timestamp", -1))
        if ts < last_ts:
            errors.append("packet at %d after %d: out of time order" % (ts, last_ts))
        last_ts = max(last_ts, ts)
        u = int(one(te, "track_uuid", 0))
        if u not in tracks:
            errors.append("event on undeclared track %d" % u)
            continue
        typ = one(te, "type")
        cat = cats.get(int(one(te, "category_iids", 0)), "")
        if typ == "TYPE_COUNTER":
            st["counters"] += 1
            used_counters.add(u)
            if tracks[u]["kind"] != "counter":
                errors.append("counter value on non-counter track %d" % u)
            continue
        if tracks[u]["kind"] == "counter":
            errors.append("%s on counter track %d" % (typ, u))
        if typ == "TYPE_SLICE_BEGIN":
            open_.setdefault(u, []).append(ts)
            st["slices"] += 1
            if cat == "wait":
                st["waits"] += 1
            if cat == "transfer":
                st["transfers"] += 1
                t = tracks[u]
                par = tracks.get(int(t["parent"] or 0))
                if t["kind"] == "pipe" and t["name"] in pipes and par and par["kind"] == "thread":
                    st["transfers_on_pipe_track"] += 1
        elif typ == "TYPE_SLICE_END":
            if not open_.get(u):
                errors.append("END at %d on track %d with no open slice" % (ts, u))
            else:
                open_[u].pop()
        for f in te.get("flow_ids", []):
            if f in flow_start:
                errors.append("flow %s started twice" % f)
            flow_start[f] = ts
        for f in te.get("terminating_flow_ids", []):
            st["flows"] += 1
            if f not in flow_start:
                st["flows_unmatched"] += 1
            elif ts < flow_start.pop(f):
                st["flows_backward"] += 1
    st["flows_unmatched"] += len(flow_start)
    st["counter_tracks_used"] = len(used_counters)
    for u, s in open_.items():
        if s:
            errors.append("%d slices never end on track %d" % (len(s), u))
    print("bytes=%d bundles=%d packets=%d" % (len(data), bundles, len(packets)))
    print(" ".join("%s_tracks=%d" % kv for kv in kinds.items()))
    print(" ".join("%s=%d" % kv for kv in st.items()))
    if st["flows_unmatched"] or st["flows_backward"]:
        errors.append("%d flows without a start or end, %d ending before they start"
                      % (st["flows_unmatched"], st["flows_backward"]))
    if st["transfers_on_pipe_track"] != st["transfers"]:
        errors.append("%d transfers off their core's pipe track"
                      % (st["transfers"] - st["transfers_on_pipe_track"]))
    for e in errors[:20]:
        print("ERROR:", e)
    sys.exit(1 if errors else 0)

main()
