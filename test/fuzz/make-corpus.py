#!/usr/bin/env python3
"""Writes the seed corpus of hectorc-fuzzer (test/fuzz/corpus/).

The seeds are the hgraph models the repository already has: examples/*.mlir,
the models of examples/generate.py at small widths, every `// -----` case of
the hgraph lit tests (test/Dialect/HGraph, test/Transforms, test/hectorc)
with their comment lines removed, and a few programs of
test/python/program_generator.py. Deterministic: running it again writes the
same files.

    python3 test/fuzz/make-corpus.py            # rewrites test/fuzz/corpus
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The test helpers (program_generator), and hector as installed, else this
# checkout's python/, also for examples/generate.py (test/hector_checkout.py).
sys.path[:0] = [os.path.join(ROOT, "test"), os.path.join(ROOT, "test", "python")]
import hector_checkout  # noqa: E402,F401

CORPUS = os.path.join(ROOT, "test", "fuzz", "corpus")
LIT_DIRS = ("test/Dialect/HGraph", "test/Transforms", "test/hectorc")
GENERATED = [("rgcn", 8, 1), ("rgat", 8, 2), ("hgt", 8, 2), ("rgat", 4, 4), ("hgt", 3, 1)]
RANDOM_PROGRAMS = 24
MAX_BYTES = 16 * 1024   # hectorc-fuzzer skips larger inputs


def strip_comments(text):
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    return "\n".join(lines).strip() + "\n"


def seeds():
    for name in ("rgcn", "rgat", "hgt"):
        with open(os.path.join(ROOT, "examples", name + ".mlir")) as f:
            yield f"example-{name}", strip_comments(f.read())
    for model, width, heads in GENERATED:
        text = subprocess.run(
            [sys.executable, os.path.join(ROOT, "examples", "generate.py"), model,
             "--width", str(width), "--heads", str(heads)],
            check=True, capture_output=True, text=True).stdout
        yield f"generated-{model}-{width}x{heads}", strip_comments(text)
    for directory in LIT_DIRS:
        for file in sorted(os.listdir(os.path.join(ROOT, directory))):
            if not file.endswith(".mlir"):
                continue
            with open(os.path.join(ROOT, directory, file)) as f:
                cases = re.split(r"^// -----\s*$", f.read(), flags=re.M)
            stem = os.path.splitext(file)[0]
            for index, case in enumerate(cases):
                text = strip_comments(case)
                if "hgraph." in text:
                    yield f"{stem}-{index:02d}", text
    if not RANDOM_PROGRAMS:
        return
    import program_generator
    for seed in range(RANDOM_PROGRAMS):
        program = program_generator.generate(seed, training=seed % 2 == 0)
        yield f"random-{seed:02d}", program.text


def main():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    os.makedirs(CORPUS)
    seen = set()
    total = 0
    for name, text in seeds():
        data = text.encode()
        digest = hashlib.sha1(data).hexdigest()
        if digest in seen or len(data) > MAX_BYTES:
            continue
        seen.add(digest)
        with open(os.path.join(CORPUS, name + ".mlir"), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"{len(seen)} seeds, {total} bytes in {os.path.relpath(CORPUS, ROOT)}")


if __name__ == "__main__":
    main()
