"""torch_geometric.profile: only imported by the tests (their __main__ benchmarks)."""


def benchmark(*args, **kwargs):
    raise NotImplementedError("the torch_geometric stand-in has no benchmark()")
