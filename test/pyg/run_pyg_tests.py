#!/usr/bin/env python3
"""Runs PyTorch Geometric's own unit tests of RGCNConv, FastRGCNConv,
RGATConv and HGTConv with hector.nn's classes swapped in (issue #18's
acceptance check).

PyG's files (scripts/get-pyg-tests.sh puts them in .pyg-tests/; they are
never committed) are copied into a temporary folder, where the one line of
each that imports those classes from torch_geometric.nn is rewritten to
import them from hector.nn; the test bodies run unmodified, under pytest,
with test/pyg/pyg_conftest.py as the folder's conftest.py. It prints the
passed/failed/skipped counts of every file and device, and last a line
`N passed, N failed`; the exit status is 0 only when nothing failed.

    python3 test/pyg/run_pyg_tests.py [--pyg-tests DIR] [--device cpu|cuda|both]
        [--cache DIR|ARCHIVE.tar.xz] [--no-compiler] [--standin] [--full]
        [-- PYTEST ARGS]
    python3 test/pyg/run_pyg_tests.py --prebuild DIR [--standin]   # here, with hectorc

--device: PyG's RGCN tests take a `device` parameter (withDevice/withCUDA:
the CPU, and CUDA device 0 when there is one); cpu or cuda keeps those of
one device type, and with cuda the RGAT and HGT tests, which take none,
run with torch's default device set to CUDA (pyg_conftest.py). Default:
both where CUDA is available, else cpu.

Machines without hectorc (the GPU machines) load the layers' libraries from
a cache built ahead of time: --prebuild DIR runs the tests here on the CPU
(with --standin where torch_geometric is not installed), records the model
spec of every library a layer asks for (with FULL_TEST=1, so that --full
finds its libraries too), builds each of them with training
entries for the CPU and for CUDA (sm_90, hector.aot) into the cache DIR, and
packs DIR into DIR.tar.xz (the runtime library each CUDA artifact carries
compresses to one copy). There, --cache DIR.tar.xz unpacks it and points
HECTOR_CACHE_DIR at it. --no-compiler never runs hectorc (to check a cache
here as a GPU machine would use it).

--standin puts test/pyg/standin (a stand-in for the parts of torch_geometric
these tests import) on the path, for machines without PyG; its results are
indicative only. --full sets FULL_TEST=1 (PyG's slow checks, TorchScript).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FILES = ("test_rgcn_conv.py", "test_rgat_conv.py", "test_hgt_conv.py")
SWAPPED = ("RGCNConv", "FastRGCNConv", "RGATConv", "HGTConv")
STANDIN = os.path.join(HERE, "standin")

_IMPORT = re.compile(r"^from torch_geometric\.nn import (\([^)]*\)|[^\n(]+)$", re.M)


def swap_imports(source: str) -> tuple[str, list]:
    """`source` with the names of SWAPPED imported from hector.nn instead of
    torch_geometric.nn (other names keep their import); and those names."""
    swapped = []

    def rewrite(match):
        names = [n.strip() for n in match.group(1).strip("()").replace("\n", " ").split(",")]
        names = [n for n in names if n]
        ours = [n for n in names if n.split(" as ")[0].strip() in SWAPPED]
        theirs = [n for n in names if n not in ours]
        swapped.extend(ours)
        lines = []
        if theirs:
            lines.append(f"from torch_geometric.nn import {', '.join(theirs)}")
        if ours:
            lines.append(f"from hector.nn import {', '.join(ours)}")
        return "\n".join(lines)

    return _IMPORT.sub(rewrite, source), swapped


def prepare(pyg_tests: str, folder: str) -> None:
    """PyG's test files, with the layers swapped, and our conftest.py in `folder`."""
    for name in FILES:
        path = os.path.join(pyg_tests, name)
        if not os.path.isfile(path):
            sys.exit(f"run_pyg_tests: {path} is missing; get PyG's tests with "
                     "scripts/get-pyg-tests.sh <pyg-git-dir-or-checkout> [ref]")
        with open(path, encoding="utf-8") as f:
            source, swapped = swap_imports(f.read())
        if not swapped:
            sys.exit(f"run_pyg_tests: {path} imports none of {', '.join(SWAPPED)} from "
                     "torch_geometric.nn")
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(source)
    shutil.copy(os.path.join(HERE, "pyg_conftest.py"), os.path.join(folder, "conftest.py"))


def environment(args, extra: dict) -> dict:
    env = dict(os.environ)
    # The checkout's hector last: a PYTHONPATH naming another one wins.
    paths = [STANDIN] if args.standin else []
    paths += [p for p in [env.get("PYTHONPATH"), os.path.join(REPO, "python")] if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if args.full:
        env["FULL_TEST"] = "1"
    if args.no_compiler:
        env["HECTOR_PYG_NO_COMPILER"] = "1"
    env.update(extra)
    return env


def run_pytest(folder: str, device: str, env: dict, pytest_args) -> dict:
    """Runs pytest on the prepared folder for `device`; returns
    {file: {"passed": n, "failed": n, "skipped": n}} from its JUnit report."""
    report = os.path.join(folder, f"report-{device}.xml")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE",
               "--continue-on-collection-errors",
               f"--junitxml={report}", "--rootdir", folder, *FILES, *pytest_args]
    print(f"run_pyg_tests: [{device}] {' '.join(command[1:])}", flush=True)
    subprocess.run(command, cwd=folder, env=dict(env, HECTOR_PYG_DEVICE=device))
    counts = {name: {"passed": 0, "failed": 0, "skipped": 0} for name in FILES}
    if not os.path.exists(report):
        counts[FILES[0]]["failed"] += 1  # pytest did not get as far as a report
        return counts
    for case in ET.parse(report).getroot().iter("testcase"):
        # A collection error (e.g. an import) is a case named after its file.
        module = (case.get("classname") or case.get("name", "")).split(".")[0] + ".py"
        outcome = "passed"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        counts.setdefault(module, {"passed": 0, "failed": 0, "skipped": 0})[outcome] += 1
    return counts


def unpack(archive: str) -> str:
    """A cache folder: `archive` itself, or a .tar.xz unpacked into a temporary folder."""
    if not tarfile.is_tarfile(archive) if os.path.isfile(archive) else True:
        return os.path.abspath(archive)  # a folder (made by the first compile)
    target = tempfile.mkdtemp(prefix="hector-pyg-cache-")
    with tarfile.open(archive) as tar:  # ours: plain files and folders only
        if hasattr(tarfile, "data_filter"):
            tar.extractall(target, filter="data")
        else:
            tar.extractall(target)
    entries = os.listdir(target)  # the archive holds one folder: the cache
    return os.path.join(target, entries[0]) if len(entries) == 1 else target


def prebuild(args, folder: str) -> int:
    """Runs the tests here on the CPU, recording the libraries they ask for,
    then builds each for the CPU and CUDA with training entries into
    args.prebuild, and packs it."""
    from hector_checkout import INSTALLED  # noqa: F401  (hector on sys.path)
    from hector import aot, compiler

    cache = os.path.abspath(args.prebuild)
    os.makedirs(cache, exist_ok=True)
    record = os.path.join(folder, "specs.txt")
    # FULL_TEST=1: PyG's TorchScript checks ask for libraries of their own.
    env = environment(args, {"HECTOR_CACHE_DIR": cache, "HECTOR_PYG_RECORD": record,
                             "FULL_TEST": "1"})
    counts = run_pytest(folder, "cpu", env, args.pytest_args)
    failed = summarize({"cpu": counts})
    if failed:
        print(f"run_pyg_tests: {failed} test(s) failed here: the libraries they would have "
              "asked for after the failure may be missing from the cache")
    with open(record, encoding="utf-8") as f:
        specs = sorted(set(line.strip() for line in f if line.strip()))
    training = compiler.supports_training()
    for target in ("cpu", "cuda"):
        for spec in specs:
            (_, lib), = aot.build([spec], target, training=training, cache_dir=cache)
            print(f"{target:4}  {lib.key[:16]}  {spec}", flush=True)
    archive = cache.rstrip(os.sep) + ".tar.xz"
    with tarfile.open(archive, "w:xz", preset=9) as tar:
        tar.add(cache, arcname=os.path.basename(cache.rstrip(os.sep)))
    print(f"run_pyg_tests: {len(specs)} libraries for cpu and cuda "
          f"({'with' if training else 'WITHOUT'} training entries) in {cache}, packed as "
          f"{archive} ({os.path.getsize(archive) / 2**20:.1f} MiB)")
    return 0


def summarize(results: dict) -> int:
    """Prints the counts per device and file and the total line; returns the failures."""
    passed = failed = skipped = 0
    for device, counts in results.items():
        for name, c in counts.items():
            print(f"  {device:4}  {name:20}  {c['passed']:3} passed  {c['failed']:3} failed"
                  f"  {c['skipped']:3} skipped")
            passed, failed, skipped = (passed + c["passed"], failed + c["failed"],
                                       skipped + c["skipped"])
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return failed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pyg-tests", default=os.path.join(REPO, ".pyg-tests"),
                        help="folder of PyG's test files (default: .pyg-tests)")
    parser.add_argument("--device", choices=("cpu", "cuda", "both"), default=None)
    parser.add_argument("--cache", help="hector cache folder, or .tar.xz of one, "
                        "to load the layers' libraries from (HECTOR_CACHE_DIR)")
    parser.add_argument("--no-compiler", action="store_true",
                        help="never run hectorc: load from the cache only")
    parser.add_argument("--standin", action="store_true",
                        help="use test/pyg/standin for torch_geometric (no PyG here)")
    parser.add_argument("--full", action="store_true", help="FULL_TEST=1")
    parser.add_argument("--prebuild", metavar="DIR",
                        help="build the libraries the tests use into DIR (and DIR.tar.xz)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed on to pytest")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.join(REPO, "test"))

    if not args.standin and importlib.util.find_spec("torch_geometric") is None:
        sys.exit("run_pyg_tests: torch_geometric is not installed here: install PyG 2.8, "
                 "or pass --standin for test/pyg/standin's stand-in (indicative only)")
    folder = tempfile.mkdtemp(prefix="hector-pyg-tests-")
    try:
        prepare(args.pyg_tests, folder)
        if args.prebuild:
            return prebuild(args, folder)
        extra = {}
        if args.cache:
            extra["HECTOR_CACHE_DIR"] = unpack(args.cache)
        import torch

        device = args.device or ("both" if torch.cuda.is_available() else "cpu")
        devices = ("cpu", "cuda") if device == "both" else (device,)
        env = environment(args, extra)
        results = {d: run_pytest(folder, d, env, args.pytest_args) for d in devices}
        source = os.path.join(args.pyg_tests, "SOURCE")  # written by get-pyg-tests.sh
        if os.path.isfile(source):
            with open(source, encoding="utf-8") as f:
                origin = f.read().strip()
        else:
            origin = args.pyg_tests
        print(f"run_pyg_tests: PyG's tests of {origin}, hector.nn's layers swapped in")
        return 1 if summarize(results) else 0
    finally:
        if args.keep:
            print(f"run_pyg_tests: kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
