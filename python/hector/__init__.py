"""Hector: a compiler for relational graph neural networks (RGCN, RGAT, HGT)."""

__version__ = "0.1.0"
