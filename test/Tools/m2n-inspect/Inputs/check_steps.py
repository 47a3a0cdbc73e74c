"""Recomputes `m2n inspect --steps` from `m2n inspect --json` and compares.

Usage: check_steps.py PLAN.json STEPS.txt. Prints "steps: N rows match" or
the first row that differs, and exits non-zero then.
"""
import collections
import json
import sys


def expected_rows(plan):
    senders = sum(1 for r in plan["ranks"] if r["send_bytes"] > 0)
    receivers = sum(1 for r in plan["ranks"] if r["receive_bytes"] > 0)
    by_step = collections.defaultdict(list)
    for m in plan["messages"]:
        by_step[m["step"]].append(m)
    rows = []
    for step in range(plan["steps"]):
        messages = by_step[step]
        total = sum(m["bytes"] for m in messages)
        sent = collections.Counter()
        received = collections.Counter()
        for m in messages:
            sent[m["src"]] += m["bytes"]
            received[m["dst"]] += m["bytes"]
        # The busiest of each side, the lowest rank of a tie.
        send_rank, send_bytes = min(sent.items(), key=lambda kv: (-kv[1], kv[0]), default=(0, 0))
        recv_rank, recv_bytes = min(received.items(), key=lambda kv: (-kv[1], kv[0]), default=(0, 0))
        send_ratio = send_bytes / (total / senders) if total else 0
        recv_ratio = recv_bytes / (total / receivers) if total else 0
        if send_ratio >= recv_ratio:
            busiest, nbytes, ratio = "send %d" % send_rank, send_bytes, send_ratio
        else:
            busiest, nbytes, ratio = "recv %d" % recv_rank, recv_bytes, recv_ratio
        rows.append([str(step), str(len(messages)), str(total), busiest,
                     str(nbytes), "%.2f" % ratio, str(senders - len(sent)),
                     str(receivers - len(received))])
    return rows


def printed_rows(text):
    # The step table follows the summary's rank table, after its header.
    rows = []
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["step"])
    for line in lines[start + 1:]:
        fields = line.split()
        if not fields or not fields[0].isdigit():
            continue
        # step messages bytes send|recv RANK bytes share ratio idle idle
        rows.append(fields[:3] + [fields[3] + " " + fields[4], fields[5],
                                  fields[7], fields[8], fields[9]])
    return rows


def main():
    plan = json.load(open(sys.argv[1]))
    text = open(sys.argv[2]).read()
    expected, printed = expected_rows(plan), printed_rows(text)
    for i, (want, got) in enumerate(zip(expected, printed)):
        if want != got:
            print("row %d differs: expected %s, printed %s" % (i, want, got))
            return 1
    if len(expected) != len(printed):
        print("expected %d rows, printed %d" % (len(expected), len(printed)))
        return 1
    print("steps: %d rows match" % len(expected))
    return 0


if __name__ == "__main__":
    sys.exit(main())
