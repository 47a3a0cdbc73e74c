"""Recomputes `m2n inspect --steps` from `m2n inspect --json` and compares.

Usage: check_steps.py PLAN.json STEPS.txt [TOPOLOGY.json]. Prices every
message by the cost model of the topology (its defaults where a key or the
file is missing), prints "steps: N rows match, sum matches predicted" or
the first row that differs, and exits non-zero then.
"""
import collections
import json
import sys


def model(path):
    topology = json.load(open(path)) if path else {}
    per_node = topology.get("ranks_per_node", 8)
    latency = topology.get("latency_us", 10) * 1e-6
    intra = topology.get("intra_node_gbps", 370) * 1e9
    inter = topology.get("inter_node_gbps", 46) * 1e9

    def node(rank):
        return rank // per_node if per_node > 0 else rank

    def seconds(m):
        same = node(m["src"]) == node(m["dst"])
        return latency + m["bytes"] / (intra if same else inter)

    return seconds, topology.get("step_us", 20) * 1e-6


def expected(plan, seconds, step_seconds):
    senders = sum(1 for r in plan["ranks"] if r["send_bytes"] > 0)
    receivers = sum(1 for r in plan["ranks"] if r["receive_bytes"] > 0)
    share = plan["lower_bound_seconds"] / plan["steps"]
    total_send = collections.Counter()
    total_recv = collections.Counter()
    for m in plan["messages"]:
        total_send[m["src"]] += seconds(m)
        total_recv[m["dst"]] += seconds(m)
    # The rank with the most work, sends before receives, the lowest rank
    # of a tie.
    loaded = min([(-v, 0, r) for r, v in total_send.items()] +
                 [(-v, 1, r) for r, v in total_recv.items()])
    by_step = collections.defaultdict(list)
    for m in plan["messages"]:
        by_step[m["step"]].append(m)
    rows, total = [], 0.0
    for step in range(plan["steps"]):
        messages = by_step[step]
        sent = collections.Counter()
        received = collections.Counter()
        for m in messages:
            sent[m["src"]] += seconds(m)
            received[m["dst"]] += seconds(m)
        most = min([(-v, 0, r) for r, v in sent.items()] +
                   [(-v, 1, r) for r, v in received.items()],
                   default=(0, 0, 0))
        busiest = ("send %d" if most[1] == 0 else "recv %d") % most[2]
        time = -most[0] + step_seconds
        total += time
        load = (sent if loaded[1] == 0 else received)[loaded[2]]
        rows.append([str(step), str(len(messages)),
                     str(sum(m["bytes"] for m in messages)), busiest,
                     "%.3f" % (-most[0] * 1e6), "%.3f" % (share * 1e6),
                     "%.2f" % (time / share), "%.3f" % (load * 1e6),
                     str(senders - len(sent)), str(receivers - len(received))])
    return rows, total


def printed(text):
    # The step table follows the summary's rank table, after its header.
    rows = []
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["step"])
    for line in lines[start + 1:]:
        fields = line.split()
        if not fields or not fields[0].isdigit():
            continue
        # step messages bytes send|recv RANK us share ratio loaded idle idle
        rows.append(fields[:3] + [fields[3] + " " + fields[4]] + fields[5:])
    return rows


def main():
    plan = json.load(open(sys.argv[1]))
    text = open(sys.argv[2]).read()
    seconds, step_seconds = model(sys.argv[3] if len(sys.argv) > 3 else None)
    want, total = expected(plan, seconds, step_seconds)
    got = printed(text)
    for i, (a, b) in enumerate(zip(want, got)):
        # The last digit of a time may round either way.
        if [x for j, x in enumerate(a) if j not in (4, 7)] != \
                [x for j, x in enumerate(b) if j not in (4, 7)] or \
                any(abs(float(a[j]) - float(b[j])) > 0.0015 for j in (4, 7)):
            print("row %d differs: expected %s, printed %s" % (i, a, b))
            return 1
    if len(want) != len(got):
        print("expected %d rows, printed %d" % (len(want), len(got)))
        return 1
    if abs(total - plan["predicted_seconds"]) > 1e-6 * max(1.0, total):
        print("steps sum to %g s, the plan predicts %g s" %
              (total, plan["predicted_seconds"]))
        return 1
    print("steps: %d rows match, sum matches predicted" % len(want))
    return 0


if __name__ == "__main__":
    sys.exit(main())
