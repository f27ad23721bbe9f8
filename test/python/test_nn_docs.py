"""Runs the examples of docs/python.md: every ```python block, in order, in
one namespace, with a fresh cache. Blocks that say `needs: hectorc
--training` run once hectorc --training builds the example's model."""

from __future__ import annotations

import os
import re

import pytest

pytest.importorskip("torch")

from hector import compiler  # noqa: E402
from hectorc_support import REPO, hectorc  # noqa: E402

PAGE = os.path.join(REPO, "docs", "python.md")


def blocks():
    with open(PAGE, encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), re.M | re.S)


def test_the_page_has_examples():
    assert len(blocks()) >= 4


def test_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv(compiler.BUILD_DIR_ENV, os.path.dirname(os.path.dirname(hectorc())))
    training = compiler.supports_training()
    namespace, skipped = {}, []
    for i, code in enumerate(blocks()):
        if "needs: hectorc --training" in code:
            why = None if training else "hectorc has no --training"
            if why is None:  # hectorc --training may not build every model yet
                try:
                    compiler.compile(namespace["ir"], training=True)
                except compiler.CompileError as err:
                    why = f"hectorc --training cannot build the example: {err}"
            if why:
                skipped.append(why)
                continue
        exec(compile(code, f"{PAGE} block {i + 1}", "exec"), namespace)
    assert len(namespace["lib"].key) == 64
    if skipped:
        pytest.skip(f"{len(skipped)} example(s) skipped (the rest ran): {skipped[0]}")
