"""The graph, models and per-rank work of test_distributed_data_parallel.py.

A module of its own so that the spawned ranks import it by name (the spawn
start method pickles functions by module and name). Everything is seeded:
every rank and the single-process reference build the same graph, features,
labels and initial weights.
"""

from __future__ import annotations

import os
import time

import torch
import torch.nn.functional as F

import hector.nn as hnn
from hector.distributed import data_parallel, sampler, shared_features

N, E, R, WIDTH, CLASSES = 60, 420, 3, 8, 8
NODE_TYPES = ["a", "b"]
# edge type r joins (source type, destination type) = ENDPOINTS[r]
ENDPOINTS = [(0, 1), (1, 0), (0, 0)]
EDGE_TYPES = [(NODE_TYPES[s], f"r{r}", NODE_TYPES[d]) for r, (s, d) in enumerate(ENDPOINTS)]
FANOUTS = [4, 3]
BATCH = 5
LR = 0.5
KINDS = ("rgcn", "rgat", "hgt")


def graph():
    """(node_type, src, dst, etype, x, labels, train seeds): nodes 0..29 of
    type a, 30..59 of type b; every edge joins its type's endpoints."""
    gen = torch.Generator().manual_seed(20)
    node_type = (torch.arange(N) >= N // 2).to(torch.int64)
    by_type = [torch.nonzero(node_type == t).flatten() for t in range(len(NODE_TYPES))]
    etype = torch.randint(0, R, (E,), generator=gen)
    src, dst = torch.empty(E, dtype=torch.int64), torch.empty(E, dtype=torch.int64)
    for r, (s, d) in enumerate(ENDPOINTS):
        m = etype == r
        k = int(m.sum())
        # skewed sources, so that some nodes have more in-edges than the fan-out
        src[m] = by_type[s][(torch.rand(k, generator=gen) ** 2 * by_type[s].numel()).long()]
        dst[m] = by_type[d][(torch.rand(k, generator=gen) ** 3 * by_type[d].numel()).long()]
    x = torch.randn(N, WIDTH, generator=gen)
    labels = torch.randint(0, CLASSES, (N,), generator=gen)
    seeds = torch.randperm(N, generator=gen)[:44]
    return node_type, src, dst, etype, x, labels, seeds


class TwoLayers(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        if kind == "rgcn":
            self.conv1, self.conv2 = hnn.RGCNConv(WIDTH, WIDTH, R), hnn.RGCNConv(WIDTH, CLASSES, R)
        elif kind == "rgat":
            self.conv1 = hnn.RGATConv(WIDTH, WIDTH // 2, R, heads=2)
            self.conv2 = hnn.RGATConv(WIDTH, CLASSES // 2, R, heads=2)
        else:
            meta = (NODE_TYPES, EDGE_TYPES)
            self.conv1 = hnn.HGTConv(WIDTH, WIDTH, meta, heads=2)
            self.conv2 = hnn.HGTConv(WIDTH, CLASSES, meta, heads=2)

    def forward(self, *inputs):
        if self.kind == "hgt":
            x_dict, edge_index_dict = inputs
            h = {nt: F.relu(v) for nt, v in self.conv1(x_dict, edge_index_dict).items()}
            return self.conv2(h, edge_index_dict)
        x, edge_index, edge_type = inputs
        return self.conv2(F.relu(self.conv1(x, edge_index, edge_type)), edge_index, edge_type)


def model(kind):
    torch.manual_seed(1234)
    return TwoLayers(kind)


def loss_of(kind, net, x, labels, node_type, sub, seed_pos):
    """Mean cross-entropy over the seeds (local ids `seed_pos` of `sub`)."""
    if kind == "hgt":
        hb = sampler.hetero(sub, node_type, NODE_TYPES, EDGE_TYPES)
        present = [nt for nt in NODE_TYPES if hb.node_ids[nt].numel()]
        dev = x.device
        out = net({nt: x[hb.node_ids[nt].to(dev)] for nt in present},
                  {et: ei.to(dev) for et, ei in hb.edge_index_dict.items()})
        # back to the subgraph's local order (differentiably)
        flat = torch.cat([out[nt] for nt in present])
        out_all = flat.new_zeros(sub.node_ids.numel(), CLASSES).index_copy(
            0, torch.cat([hb.local_ids[nt] for nt in present]).to(dev), flat)
    else:
        dev = x.device
        out_all = net(x[sub.node_ids.to(dev)], sub.edge_index.to(dev), sub.edge_type.to(dev))
    return F.cross_entropy(out_all[seed_pos.to(dev)], labels[sub.node_ids[seed_pos]].to(dev))


def batch_of(split, the_sampler, step, rank=None):
    seeds = split.batches(0, BATCH, rank)[step]
    return the_sampler.sample(seeds, seed=split.sample_seed(0, step, rank))


def parts():
    node_type, src, dst, etype, x, labels, seeds = graph()
    return node_type, x, labels, seeds, sampler.NeighborSampler(src, dst, N, FANOUTS,
                                                                edge_type=etype)


def ddp_steps(ctx, kinds, steps, out_dir):
    """Each rank: `steps` DDP steps (SGD) per model kind; saves the
    gradients and the parameters after each step. With 2+ ranks also checks
    the host's shared feature table."""
    node_type, x, labels, seeds, the_sampler = parts()
    if ctx.world_size > 1:
        shared_table_check(ctx, x, out_dir)
    split = sampler.SeedSplit(seeds, ctx.rank, ctx.world_size, seed=7)
    for kind in kinds:
        net = data_parallel.wrap(model(kind), ctx)
        opt = torch.optim.SGD(net.parameters(), lr=LR)
        record = []
        for step in range(steps):
            sub = batch_of(split, the_sampler, step)
            opt.zero_grad()
            loss_of(kind, net, x, labels, node_type, sub, torch.arange(sub.num_seeds)).backward()
            grads = {n: p.grad.clone() for n, p in net.module.named_parameters()}
            opt.step()
            record.append((grads, {n: p.detach().clone()
                                   for n, p in net.module.named_parameters()}))
        torch.save(record, os.path.join(out_dir, f"{kind}-{ctx.world_size}-{ctx.rank}.pt"))


def shared_table_check(ctx, x, out_dir):
    import torch.distributed as dist

    def build():
        open(os.path.join(out_dir, f"built-by-{ctx.rank}"), "w").close()
        return x.clone()

    table = shared_features.shared_table(build, name="test")
    same = bool(torch.equal(table, x))
    dist.barrier()
    if ctx.rank == 1:
        table[3, 2] = 1234.5  # seen by every rank of the host: one copy
    dist.barrier()
    seen = float(table[3, 2])
    dist.barrier()
    with open(os.path.join(out_dir, f"shared-{ctx.rank}"), "w") as f:
        f.write(f"{same} {seen}")


def failing_rank(rank, world, port, mode, timeout_s, out_dir):
    """A rank of a 2-rank RGCN job whose rank 1 fails at step 1, after its
    forward: mode 'raise' (the process dies) or 'stall' (it stops
    answering). Rank 0 writes what happened to it and how long it waited."""
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    ctx = data_parallel.init("gloo", timeout_s, "cpu")
    node_type, x, labels, seeds, the_sampler = parts()
    split = sampler.SeedSplit(seeds, ctx.rank, ctx.world_size, seed=7)
    net = data_parallel.wrap(model("rgcn"), ctx)
    outcome = "finished"
    start = time.monotonic()
    try:
        for step in range(3):
            sub = batch_of(split, the_sampler, step)
            loss = loss_of("rgcn", net, x, labels, node_type, sub, torch.arange(sub.num_seeds))
            if rank == 1 and step == 1:
                if mode == "raise":
                    raise RuntimeError("rank 1 fails on purpose")
                time.sleep(3600)
            start = time.monotonic()
            loss.backward()  # rank 0 waits in DDP's all-reduce here
    except Exception as err:  # noqa: BLE001 - the test reads what rank 0 saw
        outcome = f"error {type(err).__name__}: {err}".replace("\n", " ")
        if rank == 1:
            raise
    finally:
        if rank == 0:
            with open(os.path.join(out_dir, "rank0"), "w") as f:
                f.write(f"{time.monotonic() - start:.2f} {outcome}")
