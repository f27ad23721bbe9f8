"""torch_geometric.nn: the stand-in has no layers. run_pyg_tests.py rewrites
the tests' import of RGCNConv, FastRGCNConv, RGATConv and HGTConv to
hector.nn, so nothing here is imported by name."""
