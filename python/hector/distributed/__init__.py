"""Multi-process training of hector.nn layers on torch.distributed (NCCL on
GPUs, gloo on CPUs, launched with torchrun): data-parallel mini-batches and
full-graph training of a graph partitioned across ranks. docs/distributed.md
describes both."""

from . import data_parallel, full_graph, halo, local_graph, partition, sampler, shared_features
from .data_parallel import Context, init, launch, under_torchrun, wrap
from .full_graph import (FullGraphLayer, PartitionedGraph, all_reduce_gradients,
                         broadcast_parameters)
from .halo import HaloExchange, HaloStats
from .partition import metis_available, partition_nodes, partition_stats
from .sampler import NeighborSampler, SeedSplit, Subgraph

__all__ = [
    "data_parallel", "full_graph", "halo", "local_graph", "partition", "sampler",
    "shared_features", "Context", "init", "launch", "under_torchrun", "wrap",
    "FullGraphLayer", "PartitionedGraph", "all_reduce_gradients", "broadcast_parameters",
    "HaloExchange", "HaloStats", "metis_available", "partition_nodes", "partition_stats",
    "NeighborSampler", "SeedSplit", "Subgraph",
]
