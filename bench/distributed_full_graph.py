"""Full-graph training of a graph partitioned across ranks (issue #20): step
time, halo bytes per step, and the step split into compute and communication.

Every rank generates the same synthetic graph (hector.datasets, the published
shapes), partitions it (hector.distributed.partition: METIS where libmetis
loads, else balanced ranges; --partition), keeps its owned rows, and trains a
stack of --layers hector.nn layers through FullGraphLayer: a step is the
forward, the BRIEF.md §4 loss (mean NLL of log_softmax over all nodes, each
rank summing its owned nodes' terms / N), the backward, the gradient
all-reduce (all_reduce_gradients) and an SGD step.

Measured per rank, then gathered on rank 0:
- step_ms: the median step (device synchronized, ranks aligned by a
  barrier before each step; the slowest rank sets the step time).
- split: a second run of --steps with the halo exchange and the gradient
  all-reduce timed on their own (device synchronized around each, which
  also serializes them with the compute): comm_ms = halo_ms + allreduce_ms,
  compute_ms = step - comm.
- halo_bytes_per_step: bytes each rank sends (forward rows and backward
  gradients); received is the mirror. The total over ranks is what crossed
  the interconnect.
- peak memory per rank (CUDA), partition balance (owned nodes, in-edges,
  halo nodes per rank), graph generation and partition times.
A rank that runs out of memory reports "oom" (with one rank: the
configuration does not fit one GPU).

--check: a smaller configuration's partitioned forward and gradients (input
features and weights) against the same model run unpartitioned on each
rank's device in one process (max |diff| / max |reference| <= --check-tol).

Under torchrun (one rank per GPU, NCCL; NCCL_NVLS_ENABLE=0 is set):
    torchrun --nproc_per_node=2 bench/distributed_full_graph.py --dataset mag \\
        --model rgat --width 256 --heads 4 --layers 2 --out r/full_graph_mag.json
    torchrun --nproc_per_node=2 bench/distributed_full_graph.py --check --dataset mag \\
        --scale 0.01 --width 64
Alone, it starts --nproc ranks itself (the plumbing check here, gloo on the CPU):
    python3 bench/distributed_full_graph.py --device cpu --nproc 2 --dataset mag \\
        --scale 0.001 --width 16 --steps 3
The GPU machines have no hectorc: build the configuration's libraries first,
    python3 bench/distributed_full_graph.py --build DIR --model rgat --width 256 --heads 4
and run with HECTOR_CACHE_DIR=DIR. `bench/distributed.py --mode full-graph`
runs main() with its other arguments. Ranks are started and joined by
hector.distributed.data_parallel.launch (torchrun's, or --nproc spawned).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import statistics
import sys
import time

import repo_paths  # noqa: F401  (sets the import paths)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import hector.nn as hnn  # noqa: E402
from hector.datasets.synthetic import generate  # noqa: E402
from hector.distributed.full_graph import (FullGraphLayer, PartitionedGraph,  # noqa: E402
                                           all_reduce_gradients)
from hector.distributed.partition import METHODS, partition_stats  # noqa: E402

MODELS = ("rgcn", "rgat", "hgt")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Adds this benchmark's options to `parser`."""
    add = parser.add_argument
    add("--dataset", default="mag", help="a hector.datasets shape (default mag)")
    add("--scale", type=float, default=1.0, help="multiplies nodes and edges (default 1)")
    add("--seed", type=int, default=0)
    add("--model", choices=MODELS, default="rgat")
    add("--width", type=int, default=256, help="input = hidden = output width (default 256)")
    add("--heads", type=int, default=1, help="RGAT/HGT heads (default 1)")
    add("--layers", type=int, default=2)
    add("--partition", choices=METHODS, default="auto")
    add("--steps", type=int, default=5, help="timed steps (default 5)")
    add("--warmup", type=int, default=2)
    add("--device", choices=("cuda", "cpu"), default="cuda" if torch.cuda.is_available()
        else "cpu")
    add("--nproc", type=int, default=1, help="ranks to start when not under torchrun")
    add("--check", action="store_true",
        help="compare partitioned gradients with an unpartitioned run (a small config)")
    add("--check-tol", type=float, default=1e-4)
    add("--timeout-s", type=int, default=600, help="collectives' timeout")
    add("--out", default=None, help="write the JSON results here (rank 0)")
    add("--build", default=None, metavar="DIR",
        help="only build the configuration's cuda libraries into DIR (no ranks)")
    return parser


# ---- the model ---------------------------------------------------------------------------

def make_layers(args, graph) -> list:
    """The stack: width -> width every layer (the loss classifies into `width` classes)."""
    w, h, r = args.width, args.heads, graph.num_edge_types
    if args.model == "rgat" and w % h:
        raise ValueError(f"--width {w} must be a multiple of --heads {h}")
    torch.manual_seed(args.seed)  # the same weights on every rank
    make = {"rgcn": lambda: hnn.RGCNConv(w, w, r),
            "rgat": lambda: hnn.RGATConv(w, w // h, r, heads=h),
            "hgt": lambda: hnn.HGTConv(w, w, graph.metadata(), heads=h)}[args.model]
    return [make() for _ in range(args.layers)]


def _stack(layers, x):
    for i, layer in enumerate(layers):
        x = layer(x)
        x = x.relu() if i + 1 < len(layers) else x
    return x


def _loss(out, labels, num_nodes):
    """This rank's share of the mean NLL over all num_nodes nodes."""
    logp = torch.log_softmax(out, dim=1)
    return -logp.gather(1, labels.view(-1, 1)).sum() / num_nodes


def _whole_layer(layer, graph_tensors):
    """The layer on the whole graph, one process: x [N, w] -> [N, w]."""
    edge_index, edge_type, node_type = graph_tensors
    if not isinstance(layer, hnn.HGTConv):
        return lambda x: layer(x, edge_index, edge_type)
    names = layer.node_types
    members = [torch.nonzero(node_type == t).view(-1) for t in range(len(names))]
    position = torch.empty_like(node_type)
    for ids in members:
        position[ids] = torch.arange(ids.numel(), device=ids.device)
    edges = {et: torch.stack([position[edge_index[0][edge_type == j]],
                              position[edge_index[1][edge_type == j]]])
             for j, et in enumerate(layer.edge_types)}
    order = torch.cat(members)

    def run(x):
        out = layer({names[t]: x[m] for t, m in enumerate(members)}, edges)
        return torch.empty_like(x[:, :out[names[0]].size(1)]).index_copy(
            0, order, torch.cat([out[nt] for nt in names]))
    return run


# ---- one rank -----------------------------------------------------------------------------

def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _is_oom(err: BaseException) -> bool:
    return isinstance(err, getattr(torch.cuda, "OutOfMemoryError", ())) or \
        "out of memory" in str(err)


def _graph(args, device):
    start = time.perf_counter()
    g = generate(args.dataset, scale=args.scale, seed=args.seed)
    tensors = tuple(torch.from_numpy(a.astype(np.int64)).to(device) for a in (
        np.stack([g.src, g.dst]), g.etype, g.node_type))
    return g, tensors, time.perf_counter() - start


def _timed_steps(step, n, device):
    times = []
    for _ in range(n):
        dist.barrier()
        _sync(device)
        start = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - start)
    return times


def _train(args, rank, world, device, g, tensors, pg) -> dict:
    layers = [layer.to(device) for layer in make_layers(args, g)]
    model = torch.nn.ModuleList([FullGraphLayer(layer, pg) for layer in layers])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(args.seed * 1000 + rank + 1)
    x = torch.randn(pg.num_owned, args.width, generator=gen).to(device)
    labels = torch.randint(0, args.width, (pg.num_owned,), generator=gen).to(device)
    allreduce_s = [0.0]
    timed = [False]

    def step():
        opt.zero_grad(set_to_none=True)
        _loss(_stack(model, x), labels, g.num_nodes).backward()
        if timed[0]:
            _sync(device)
            start = time.perf_counter()
        all_reduce_gradients(model)
        if timed[0]:
            _sync(device)
            allreduce_s[0] += time.perf_counter() - start
        opt.step()

    stats = pg.exchange.stats
    _timed_steps(step, args.warmup, device)
    stats.reset()
    steps = _timed_steps(step, args.steps, device)
    halo_bytes = stats.bytes_sent // max(args.steps, 1)
    # The split: the same steps with the communication timed on its own.
    stats.reset()
    stats.timed, timed[0] = True, True
    split = _timed_steps(step, args.steps, device)
    n = max(args.steps, 1)
    step_ms, split_ms = 1e3 * statistics.median(steps), 1e3 * sum(split) / n
    halo_ms, allreduce_ms = 1e3 * stats.seconds / n, 1e3 * allreduce_s[0] / n
    return {"step_ms": step_ms, "steps_ms": [1e3 * t for t in steps],
            "split_step_ms": split_ms, "halo_ms": halo_ms, "allreduce_ms": allreduce_ms,
            "comm_ms": halo_ms + allreduce_ms, "compute_ms": split_ms - halo_ms - allreduce_ms,
            "halo_bytes_per_step": halo_bytes,
            "halo_rows": pg.local.num_halo, "rows_sent": pg.exchange.rows_sent}


def _check(args, rank, world, device, g, tensors, pg) -> dict:
    """Partitioned vs unpartitioned (this device, one process) forward and gradients."""
    layers = [layer.to(device) for layer in make_layers(args, g)]
    whole = [copy.deepcopy(layer) for layer in layers]
    model = torch.nn.ModuleList([FullGraphLayer(layer, pg) for layer in layers])
    gen = torch.Generator().manual_seed(args.seed + 7)  # the same global inputs everywhere
    x = torch.randn(g.num_nodes, args.width, generator=gen).to(device)
    labels = torch.randint(0, args.width, (g.num_nodes,), generator=gen).to(device)

    xw = x.clone().requires_grad_(True)
    out_whole = _stack([_whole_layer(layer, tensors) for layer in whole], xw)
    _loss(out_whole, labels, g.num_nodes).backward()
    xp = pg.owned_rows(x).clone().requires_grad_(True)
    out = _stack(model, xp)
    _loss(out, pg.owned_rows(labels), g.num_nodes).backward()
    all_reduce_gradients(model)

    def rel(got, want):
        scale = want.abs().max().item() if want.numel() else 0.0
        diff = (got - want).abs().max().item() if want.numel() else 0.0
        return diff / scale if scale else diff

    errors = {"output": rel(out.detach(), pg.owned_rows(out_whole.detach())),
              "grad_x": rel(xp.grad, pg.owned_rows(xw.grad))}
    for i, (mp, mw) in enumerate(zip(model, whole)):
        for (name, p), (_, q) in zip(mp.layer.named_parameters(), mw.named_parameters()):
            errors[f"layer{i}.{name}"] = rel(p.grad, q.grad)
    worst = max(errors.values())
    return {"check_errors": errors, "check_max_rel_err": worst,
            "check_passed": worst <= args.check_tol}


def run_full_graph(ctx, args) -> dict:
    """One rank of the benchmark (ctx: its hector.distributed Context).
    Returns the results gathered on every rank: {"config", "ranks":
    [per-rank dict], "summary"}; rank 0 prints them and writes --out."""
    rank, world, device = ctx.rank, ctx.world_size, ctx.device
    if device.type == "cpu":  # the ranks share the host's cores
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    g, tensors, gen_s = _graph(args, device)
    start = time.perf_counter()
    pg = PartitionedGraph(tensors[0], g.num_nodes, edge_type=tensors[1], node_type=tensors[2],
                          method=args.partition, seed=args.seed, device=device,
                          timeout=datetime.timedelta(seconds=args.timeout_s))
    part_s = time.perf_counter() - start
    mine = {"rank": rank, "owned_nodes": pg.num_owned,
            "owned_edges": int(pg.local.edge_ids.size), "graph_s": gen_s, "partition_s": part_s}
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    try:
        mine.update((_check if args.check else _train)(args, rank, world, device, g, tensors,
                                                       pg))
    except RuntimeError as err:  # a rank out of memory: its peers time out in a collective
        if not _is_oom(err):
            raise
        mine["oom"] = str(err).splitlines()[0]
    if device.type == "cuda":
        mine["peak_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    ranks = [None] * world
    dist.all_gather_object(ranks, mine)
    stats = partition_stats(pg.parts, tensors[0].cpu(), world)
    config = {k: getattr(args, k) for k in ("dataset", "scale", "seed", "model", "width",
                                             "heads", "layers", "partition", "steps",
                                             "warmup", "check")}
    config.update(world_size=world, device=torch.cuda.get_device_name(device)
                  if device.type == "cuda" else "cpu", nodes=g.num_nodes, edges=g.num_edges,
                  torch=torch.__version__,
                  time=datetime.datetime.now().isoformat(timespec="seconds"))
    result = {"config": config, "ranks": ranks, "summary": _summary(ranks, stats, args)}
    if rank == 0:
        print(json.dumps(result["summary"], indent=1))
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
    return result


def _summary(ranks, stats, args) -> dict:
    summary = {"edge_cut": stats.cut_edges, "edge_imbalance": stats.imbalance("edges"),
               "halo_nodes": stats.halo.tolist()}
    if any("oom" in r for r in ranks):
        summary["oom_ranks"] = [r["rank"] for r in ranks if "oom" in r]
        return summary
    if args.check:
        summary.update(check_max_rel_err=max(r["check_max_rel_err"] for r in ranks),
                       check_passed=all(r["check_passed"] for r in ranks))
        return summary
    slowest = max(ranks, key=lambda r: r["step_ms"])
    summary.update(
        step_ms=slowest["step_ms"],
        compute_ms_max=max(r["compute_ms"] for r in ranks),
        comm_ms_max=max(r["comm_ms"] for r in ranks),
        halo_ms_max=max(r["halo_ms"] for r in ranks),
        allreduce_ms_max=max(r["allreduce_ms"] for r in ranks),
        halo_bytes_per_step_total=sum(r["halo_bytes_per_step"] for r in ranks),
        halo_bytes_per_step_max=max(r["halo_bytes_per_step"] for r in ranks))
    if "peak_gib" in ranks[0]:
        summary["peak_gib_max"] = max(r["peak_gib"] for r in ranks)
    return summary


# ---- launching ---------------------------------------------------------------------------

def build(args) -> None:
    """The cuda libraries (with training entries) of the configuration, into args.build."""
    from hector import aot

    g = generate(args.dataset, scale=min(args.scale, 1e-3), seed=args.seed)  # only the types
    specs = sorted({layer.model_spec for layer in make_layers(args, g)})
    for spec in specs:
        (_, lib), = aot.build([spec], "cuda", training=True, cache_dir=args.build)
        print(f"{lib.key}  {spec}")


def main(argv=None) -> int:
    args = add_arguments(argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)).parse_args(argv)
    if args.build:
        build(args)
        return 0
    from hector.distributed import data_parallel

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # the GPU machines' rule (KINDS.md)
    # Every rank gathers the same summary; launch returns rank 0's.
    result = data_parallel.launch(
        run_full_graph, nproc=None if data_parallel.under_torchrun() else args.nproc,
        args=(args,), device=args.device, timeout_s=args.timeout_s)
    return 1 if result["summary"].get("check_passed") is False else 0


if __name__ == "__main__":
    sys.exit(main())
