"""Hector: a compiler for relational graph neural networks (RGCN, RGAT, HGT)."""

__version__ = "0.1.0"

# Compile hgraph IR through the shared cache: `hector.compile(text, target=...)`.
from .compiler import (CompileError, DamagedArtifactError, MissingArtifactError,  # noqa: E402,F401
                       compile)

# Zero-copy gathers from pinned host memory: `hector.unified(t)`.
from .unified import UnifiedTensor, host_empty, unified  # noqa: E402,F401
