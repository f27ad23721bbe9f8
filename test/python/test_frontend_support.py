"""Helpers of the frontend tests (no tests here): loading the DSL models of
examples/models and reading the IR they emit."""

from __future__ import annotations

import collections
import importlib.util
import os
import re

from hectorc_support import REPO

MODELS_DIR = os.path.join(REPO, "examples", "models")


def load_module(path: str, name: str):
    """Imports a Python file as a module (the DSL models and examples/generate.py)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_model(name: str):
    """The @model function of examples/models/<name>.py."""
    module = load_module(os.path.join(MODELS_DIR, f"{name}.py"), f"dsl_example_{name}")
    return getattr(module, name)


def generated_ir(name: str, width_in: int, width_out: int, heads: int) -> str:
    """The hand-written IR of hector.models (examples/generate.py) for the same model."""
    from hector import models
    return models.generate(name, width_in, width_out, heads)


def signature(ir: str) -> str:
    """The `hgraph.func @name(...) -> type` line, whitespace normalised."""
    match = re.search(r"hgraph\.func\s.*?\)\s*->\s*[^{]*", ir, re.S)
    assert match, ir
    return re.sub(r"\s+", " ", match.group(0)).strip()


def op_lines(ir: str):
    """Body lines with SSA names replaced by `%` and float literals normalised:
    a canonical form in which two IRs of one computation can be compared as
    multisets even though their value names and op order differ."""
    lines = []
    for line in ir.splitlines():
        line = line.strip()
        if not (line.startswith("%") and " = hgraph." in line
                or line.startswith("hgraph.return")):
            continue
        line = re.sub(r"%[A-Za-z0-9_$.]+", "%", line)
        line = re.sub(r"(alpha|by) (\S+)", lambda m: f"{m.group(1)} {float(m.group(2))!r}", line)
        lines.append(line)
    return lines


def op_names(ir: str):
    """The hgraph op of every body line, in order."""
    return [re.search(r"hgraph\.(\w+)", line).group(1) for line in op_lines(ir)]


def op_multiset(ir: str):
    return collections.Counter(op_lines(ir))
