"""Ahead-of-time builds for machines without a compiler (the GPU machines).

Here, where hectorc runs:

    python3 -m hector.aot --target cuda --training --out DIR \\
        rgat:width=64,heads=4 hgt:width=64,heads=4 model.mlir

There, with DIR copied over (no hectorc, no build step):

    HECTOR_CACHE_DIR=DIR python3 train.py     # or hector.compile(..., cache_dir=DIR)

Each model is a spec "model:key=value,..." (hector.models.parse_spec: keys
width, out_width, heads, and model options such as negative_slope) or a path
to an .mlir file. The specs of hector.nn layers are their `model_spec`
attribute. DIR is an ordinary hector cache directory (hector.compiler);
compile() there finds the artifacts by their key, which does not depend on
the compiler, and names the missing key when one was not built.

    python3 -m hector.aot --list --out DIR       # what DIR holds (and what is damaged)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import compiler, models

__all__ = ["build", "source_of", "main"]


def source_of(item: str):
    """(IR text, description) of a model spec or an .mlir path."""
    if item.endswith(".mlir") or os.sep in item:
        with open(item, encoding="utf-8") as f:
            return f.read(), item
    args = models.parse_spec(item)
    text = models.from_spec(item)
    model = args.pop("model")
    return text, models.spec(model, **args)


def build(items, target: str = "cpu", *, training: bool = False, gpu_arch=None,
          flags=(), cache_dir=None, compiler_path=None) -> list:
    """Builds every model spec or .mlir path of `items` into the cache
    directory; returns [(item, CompiledLibrary)]."""
    built = []
    for item in items:
        text, description = source_of(item)
        lib = compiler.compile(text, target, training=training, gpu_arch=gpu_arch,
                               flags=flags, cache_dir=cache_dir, compiler=compiler_path,
                               description=description)
        built.append((item, lib))
    return built


def _list(root: str) -> int:
    index = os.path.join(root, "index")
    keys = sorted(k for k in os.listdir(index) if not k.startswith(".")) \
        if os.path.isdir(index) else []
    if not keys:
        print(f"{root}: no artifacts")
        return 0
    for key in keys:
        with open(os.path.join(index, key), encoding="utf-8") as f:
            entry = json.load(f)
        directory = os.path.join(root, "lib", str(entry.get("artifact_id")))
        state = ""
        if not os.path.exists(os.path.join(directory, "meta.json")):
            state = "  [MISSING]"
        else:
            try:
                compiler.verify_artifact(directory)
            except compiler._Damaged as damaged:
                state = f"  [DAMAGED: {damaged}]"
        print(f"{key}  {entry.get('description')}{state}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m hector.aot",
        description="Build hector libraries into a cache directory, for a machine "
                    "without hectorc.")
    parser.add_argument("models", nargs="*",
                        help="model specs (e.g. rgat:width=64,heads=4) or .mlir files")
    parser.add_argument("--out", help="cache directory to fill (default: "
                        f"${compiler.CACHE_ENV}, else ~/.cache/hector)")
    parser.add_argument("--target", choices=compiler.TARGETS, default="cpu")
    parser.add_argument("--gpu-arch", default=None,
                        help=f"cuda: GPU architecture (default {compiler.DEFAULT_GPU_ARCH})")
    parser.add_argument("--training", action="store_true",
                        help="build the training entries too (hectorc --training); the "
                        "hector.nn layers ask for these when gradients are needed")
    parser.add_argument("--flag", action="append", default=[], metavar="OPTION",
                        help="an extra hectorc option, e.g. --flag=--opt-level=3 "
                        "(part of the key)")
    parser.add_argument("--hectorc", default=None, help="the compiler (default: "
                        "$HECTOR_BUILD_DIR/bin, PATH, build/bin)")
    parser.add_argument("--list", action="store_true", help="list the cache, verifying "
                        "every artifact's recorded sizes and hashes, and exit")
    args = parser.parse_args(argv)
    root = compiler.resolve_cache_dir(args.out)
    if args.list:
        return _list(root)
    if not args.models:
        parser.error("give at least one model spec or .mlir file (or --list)")
    path = compiler.find_compiler(args.hectorc)
    if path is None:
        parser.error("no hectorc found ($HECTOR_BUILD_DIR/bin, PATH, build/bin); "
                     "build it (scripts/build.sh hectorc) or pass --hectorc")
    try:
        built = build(args.models, args.target, training=args.training,
                      gpu_arch=args.gpu_arch, flags=args.flag, cache_dir=root,
                      compiler_path=path)
    except (ValueError, OSError, compiler.CompileError) as err:
        print(f"hector.aot: error: {err}", file=sys.stderr)
        return 1
    for item, lib in built:
        print(f"{lib.key}  {item}  -> {os.path.dirname(lib.path)}")
    print(f"hector.aot: {len(built)} librar{'y' if len(built) == 1 else 'ies'} in {root} "
          f"(use it with {compiler.CACHE_ENV}={root})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
