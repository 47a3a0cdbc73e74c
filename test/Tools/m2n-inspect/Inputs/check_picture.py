"""Checks the pictures of `m2n inspect` against the plan's `--json` summary.

    check_picture.py SUMMARY.json [--svg PICTURE.svg] [--html PAGE.html]
                     [--topology TOPOLOGY.json]

Both files must be well-formed XML. In the picture, every cell, send bar and
receive bar must carry in its tooltip exactly the bytes and messages that the
summary's messages and ranks give (summed over blocks of ranks for plans of
more than 128 ranks), no more and no fewer of them; the title must name the
busiest sender and receiver and their ratio to the average. The page must
embed the picture and list every step with its messages and bytes, its
time by the cost model of the topology (its defaults where a key or the
file is missing) as check_steps.py recomputes it, and its idle senders and
receivers.

Prints what it found, for FileCheck; exits 1 at the first mismatch.
"""

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET

import check_steps

SVG = "{http://www.w3.org/2000/svg}"
MAX_CELLS = 128
WHO = r"ranks? (\d+)(?:-(\d+))?"
MESSAGES = r"(\d+) messages?"


def fail(message):
    print(f"MISMATCH: {message}")
    sys.exit(1)


class Expected:
    """The summary's traffic, per block of ranks."""

    def __init__(self, summary):
        self.world = summary["world_size"]
        self.block = max(1, -(-self.world // MAX_CELLS))
        self.cells = {}
        for message in summary["messages"]:
            pair = (message["src"] // self.block, message["dst"] // self.block)
            bytes_, count = self.cells.get(pair, (0, 0))
            self.cells[pair] = (bytes_ + message["bytes"], count + 1)
        self.sends, self.receives = {}, {}
        for message in summary["messages"]:
            for side, rank in ((self.sends, message["src"]),
                               (self.receives, message["dst"])):
                bytes_, count = side.get(rank // self.block, (0, 0))
                side[rank // self.block] = (bytes_ + message["bytes"],
                                            count + 1)
        self.ranks = summary["ranks"]
        for side, key in ((self.sends, "send_bytes"),
                          (self.receives, "receive_bytes")):
            for block, (bytes_, _) in side.items():
                total = sum(r[key] for r in self.ranks
                            if r["rank"] // self.block == block)
                if total != bytes_:
                    fail(f"summary: block {block} {key} {total} but its "
                         f"messages carry {bytes_}")

    def block_of(self, first, last):
        """The block that "rank F" or "ranks F-L" names."""
        last = first if last is None else last
        block = first // self.block
        want_last = min((block + 1) * self.block, self.world) - 1
        if first != block * self.block or last != want_last:
            fail(f"ranks {first}-{last} are not block {block}")
        return block


def tooltips(root, kind):
    for rect in root.iter(SVG + "rect"):
        if rect.get("class") == kind:
            title = rect.find(SVG + "title")
            if title is None:
                fail(f"a {kind} without a tooltip")
            yield title.text


def check_cells(root, expected):
    pattern = re.compile(rf"^{WHO} to {WHO}: (\d+) bytes? in {MESSAGES}$")
    found = {}
    for text in tooltips(root, "cell"):
        match = pattern.match(text)
        if not match:
            fail(f"cell tooltip {text!r}")
        sender = expected.block_of(int(match[1]), match[2] and int(match[2]))
        receiver = expected.block_of(int(match[3]),
                                     match[4] and int(match[4]))
        if (sender, receiver) in found:
            fail(f"two cells for {text!r}")
        found[(sender, receiver)] = (int(match[5]), int(match[6]))
    if found != expected.cells:
        fail(f"cells {sorted(found.items())} != {sorted(expected.cells.items())}")
    print(f"cells: {len(found)}, bytes and messages match")


def check_bars(root, expected, kind, verb, totals):
    pattern = re.compile(
        rf"^{WHO} {verb}s? (\d+) bytes? in {MESSAGES}"
        rf"(?:, copies \d+ bytes? locally)?$")
    found = {}
    for text in tooltips(root, kind):
        match = pattern.match(text)
        if not match:
            fail(f"{kind} tooltip {text!r}")
        block = expected.block_of(int(match[1]), match[2] and int(match[2]))
        found[block] = (int(match[3]), int(match[4]))
    if found != totals:
        fail(f"{kind} bars {sorted(found.items())} != {sorted(totals.items())}")
    print(f"{kind} bars: {len(found)}, bytes and messages match")


def busiest(ranks, key):
    """The busiest rank (the lowest of a tie), its bytes, its ratio to the
    average of the ranks that are not idle, and how many those are."""
    active = [r[key] for r in ranks if r[key]]
    top = max(ranks, key=lambda r: (r[key], -r["rank"]))
    return top["rank"], top[key], top[key] * len(active) / sum(active), \
        len(active)


def check_title(root, expected):
    lines = [t.text for t in root.iter(SVG + "text")]
    for role, key in (("sender", "send_bytes"), ("receiver", "receive_bytes")):
        rank, _, ratio, active = busiest(expected.ranks, key)
        want = re.compile(rf"^busiest {role}: rank {rank}, .*, {ratio:.2f}x "
                          rf"the average of {active} {role}s?$")
        if not any(line and want.match(line) for line in lines):
            fail(f"no title line {want.pattern!r}")
        print(f"busiest {role}: rank {rank}, {ratio:.2f}x the average")


def check_svg(root, expected):
    if root.tag != SVG + "svg":
        fail(f"root element {root.tag}")
    for element in root.iter():
        if element.tag in (SVG + "script", SVG + "image", SVG + "use") or \
                element.tag.endswith("foreignObject"):
            fail(f"{element.tag} in a standalone picture")
        for name, value in element.attrib.items():
            if name.startswith("on") or "http" in value:
                fail(f"{element.tag} {name}={value!r}")
    print(f"svg: {root.get('width')} x {root.get('height')}, "
          f"{expected.block} rank(s) per cell")
    check_cells(root, expected)
    check_bars(root, expected, "send", "send", expected.sends)
    check_bars(root, expected, "receive", "receive", expected.receives)
    if expected.cells:
        check_title(root, expected)


def check_step_times(cells, want):
    """The time columns of a step row (busiest, its us, share us, x share,
    loaded us) against check_steps.py's row; the last digit of a time may
    round either way."""
    got = cells[4:9]
    if got[0] == "-":
        got[0] = want[3]  # A step without messages names no rank.
    times = want[3:8]
    if [got[i] for i in (0, 2, 3)] != [times[i] for i in (0, 2, 3)] or \
            any(abs(float(got[i]) - float(times[i])) > 0.0015 for i in (1, 4)):
        fail(f"step row {cells} has the times {got}, not {times}")


def check_html(page, summary, expected, topology):
    svgs = list(page.iter(SVG + "svg"))
    if len(svgs) != 1:
        fail(f"{len(svgs)} pictures in the page")
    check_svg(svgs[0], expected)
    rows = [row for row in page.iter("tr") if row.find("td") is not None]
    if len(rows) != summary["steps"]:
        fail(f"{len(rows)} step rows, {summary['steps']} steps")
    senders = sum(1 for r in summary["ranks"] if r["send_bytes"] > 0)
    receivers = sum(1 for r in summary["ranks"] if r["receive_bytes"] > 0)
    seconds, step_seconds = check_steps.model(topology)
    times = check_steps.expected(summary, seconds, step_seconds)[0] \
        if summary["steps"] else []
    for step, row in enumerate(rows):
        cells = [td.text for td in row.findall("td")]
        check_step_times(cells, times[step])
        messages = [m for m in summary["messages"] if m["step"] == step]
        want = [str(step), str(len(messages)),
                str(sum(m["bytes"] for m in messages))]
        if cells[:3] != want:
            fail(f"step row {cells} starts not with {want}")
        idle = [str(senders - len({m["src"] for m in messages})),
                str(receivers - len({m["dst"] for m in messages}))]
        if cells[-2:] != idle:
            fail(f"step row {cells} ends not with the idle ranks {idle}")
    print(f"html: {len(rows)} step rows match")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("summary")
    parser.add_argument("--svg")
    parser.add_argument("--html")
    parser.add_argument("--topology")
    args = parser.parse_args()
    with open(args.summary) as file:
        summary = json.load(file)
    expected = Expected(summary)
    if args.svg:
        check_svg(ET.parse(args.svg).getroot(), expected)
    if args.html:
        check_html(ET.parse(args.html).getroot(), summary, expected,
                   args.topology)


if __name__ == "__main__":
    main()
