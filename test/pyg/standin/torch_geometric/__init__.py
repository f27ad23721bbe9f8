"""A stand-in for the few parts of torch_geometric (PyG 2.8) that PyG's
RGCN, RGAT and HGT unit tests import, written from PyG's documentation, for
machines without PyG (the development machine: Debian's torch 1.13, no
PyPI). test/pyg/run_pyg_tests.py puts it on the path only with --standin.

It is not PyG: a result under it only says how the tests would go, and the
acceptance check runs them with the real torch_geometric. Only what those
tests touch is here; anything else raises AttributeError or ImportError.
"""

__version__ = "2.8.0+hector-standin"
STANDIN = True
