"""Hector: a compiler for relational graph neural networks (RGCN, RGAT, HGT)."""

__version__ = "0.1.0"

# Zero-copy gathers from pinned host memory: `hector.unified(t)`.
from .unified import UnifiedTensor, host_empty, unified  # noqa: E402,F401
