#!/usr/bin/env python3
"""Collects the seed corpora of the spec and IR fuzzers from the sources.

Usage: make_seeds.py TOP OUT [M2N_OPT]. Writes OUT/spec/*.json, the
example specs, the end-to-end test inputs and the specs split-file tests
hold (valid and invalid), and OUT/ir/*.mlir, the cases of the dialect, pass
and export tests, one file per `// -----` case, without their comments.
Given an m2n-opt, each case of reshards that m2n-compile compiles is a seed
compiled too, so that the IR fuzzer starts from real messages and
schedules. Seeds are named by where they come from, so reruns replace them.
"""

import pathlib
import re
import subprocess
import sys


def spec_seeds(top):
    for path in sorted(top.glob("examples/*.json")):
        yield path.stem, path.read_text()
    for path in sorted(top.glob("test/**/Inputs/*.json")):
        yield path.stem, path.read_text()
    # Tests that hold their specs as split-file parts: `#--- name.json`.
    for path in sorted(top.glob("test/**/*.test")):
        parts = re.split(r"^#--- (\S+)\n", path.read_text(), flags=re.M)
        for name, body in zip(parts[1::2], parts[2::2]):
            if name.endswith(".json"):
                yield f"{path.stem}-{name[:-5]}", body


def ir_seeds(top):
    for path in sorted(top.glob("test/**/*.mlir")):
        cases = re.split(r"^// -----\s*$", path.read_text(), flags=re.M)
        for index, case in enumerate(cases):
            lines = [line for line in case.splitlines()
                     if not line.lstrip().startswith("//")]
            text = "\n".join(lines).strip()
            if text:
                yield f"{path.stem}-{index}", text + "\n"


def compiled(seeds, m2n_opt):
    """The seeds, and what m2n-opt compiles of those that hold reshards."""
    for name, text in seeds:
        yield name, text
        if "m2n.reshard" not in text or "m2n.transfers" in text:
            continue
        result = subprocess.run([m2n_opt, "-m2n-compile"], input=text,
                                capture_output=True, text=True, timeout=60)
        if result.returncode == 0:
            yield f"{name}-compiled", result.stdout


def write(out, seeds, suffix):
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, text in seeds:
        (out / f"{name}{suffix}").write_text(text)
        count += 1
    return count


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: make_seeds.py TOP OUT [M2N_OPT]")
    top, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    specs = write(out / "spec", spec_seeds(top), ".json")
    seeds = ir_seeds(top)
    if len(sys.argv) == 4:
        seeds = compiled(seeds, sys.argv[3])
    ir = write(out / "ir", seeds, ".mlir")
    print(f"{specs} spec seeds, {ir} IR seeds in {out}")


if __name__ == "__main__":
    main()
