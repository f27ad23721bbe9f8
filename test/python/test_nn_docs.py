"""Runs the examples of docs/python.md: every ```python block, in order, in
one namespace, with a fresh cache."""

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
    namespace = {}
    for i, code in enumerate(blocks()):
        exec(compile(code, f"{PAGE} block {i + 1}", "exec"), namespace)
    assert len(namespace["lib"].key) == 64
