"""Data-parallel mini-batch training of train_debian.py's RGAT
(train_debian.py --nproc N, or under torchrun): every rank trains
DistributedDataParallel copies of the model on neighbour-sampled
mini-batches of its share of the training packages; one feature table per
host (hector.distributed.shared_features), read zero-copy from pinned host
memory on GPUs. docs/distributed.md describes it.
"""

from __future__ import annotations

import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from hector.datasets.debian import load_debian_graph
from hector.distributed import data_parallel, sampler, shared_features


def _accuracy(logits, labels, index):
    return float((logits[index].argmax(1) == labels[index]).float().mean())


def train_rank(ctx, args, make_model, progress):
    """One rank's training (launch() calls it); returns the exit status on rank 0."""
    torch.manual_seed(args.seed)
    device = ctx.device
    g = load_debian_graph(feature_dim=args.features)
    # One copy of the features per host; only the host's first rank builds it.
    table = shared_features.shared_table(
        lambda: torch.as_tensor(g.features, dtype=torch.float32), name="debian-features")
    features = shared_features.pinned_for(table, device) if device.type == "cuda" else table
    labels = torch.as_tensor(g.labels).long()
    fanouts = [int(f) for f in args.fanouts.split(",")]
    the_sampler = sampler.NeighborSampler(g.src, g.dst, g.num_nodes, fanouts,
                                          edge_type=g.etype)
    split = sampler.SeedSplit(torch.as_tensor(g.train_idx), ctx.rank, ctx.world_size,
                              seed=args.seed)
    model = data_parallel.wrap(make_model(g).to(device), ctx)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    lead = ctx.rank == 0
    if lead:
        print(f"data-parallel: {ctx.world_size} ranks ({ctx.backend}, {device.type}), "
              f"{len(split)} training packages per rank and epoch, batches of "
              f"{args.batch_size}, fan-outs {fanouts}", flush=True)
    full = None
    if lead:  # full-graph evaluation on rank 0
        full = (torch.stack([torch.as_tensor(g.src), torch.as_tensor(g.dst)]).long().to(device),
                torch.as_tensor(g.etype).long().to(device))
    val, test = torch.as_tensor(g.val_idx).long(), torch.as_tensor(g.test_idx).long()
    best_val, best_state, history = -1.0, None, []
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        total = torch.zeros(2, dtype=torch.float64)
        for step, seeds in enumerate(split.batches(epoch, args.batch_size)):
            sub = the_sampler.sample(seeds, seed=split.sample_seed(epoch, step))
            x = features[sub.node_ids.to(device)]
            out = model(x, sub.edge_index.to(device), sub.edge_type.to(device))
            loss = F.cross_entropy(out[:sub.num_seeds], labels[seeds].to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += torch.tensor([float(loss) * sub.num_seeds, sub.num_seeds],
                                  dtype=torch.float64)
        dist.all_reduce(total)  # the epoch's mean loss over every rank's seeds
        if lead:
            model.eval()
            with torch.no_grad():
                x_all = table.to(device)
                logits = model.module(x_all, *full).cpu()
            val_acc = _accuracy(logits, labels, val)
            train_loss = float(total[0] / total[1])
            if val_acc > best_val:
                best_val = val_acc
                best_state = {k: v.detach().clone() for k, v in model.module.state_dict().items()}
            history.append((train_loss, val_acc))
            progress(epoch, args.epochs, f"loss {train_loss:.4f}  val acc {val_acc:.3f}")
        dist.barrier()
    if not lead:
        return 0
    seconds = time.perf_counter() - start
    print(f"{args.epochs / seconds:.2f} epochs/s ({1e3 * seconds / args.epochs:.0f} ms per "
          f"epoch, {ctx.world_size} ranks, evaluation included)")
    model.module.load_state_dict(best_state)
    with torch.no_grad():
        test_acc = _accuracy(model.module(table.to(device), *full).cpu(), labels, test)
    baseline = g.majority_baseline("test")
    print(f"test accuracy {test_acc:.4f} (best validation epoch) vs majority-class "
          f"baseline {baseline:.4f}")
    return 0 if test_acc > baseline else 1


def run(args, make_model, progress) -> int:
    """Spawns args.nproc ranks (or joins torchrun's) and trains; rank 0's status."""
    device = args.device
    if not data_parallel.under_torchrun():
        # Compile (or load) both layers once here, so that the ranks only
        # load them from the cache instead of all running hectorc at once.
        g = load_debian_graph(feature_dim=args.features)
        model = make_model(g)
        print("compiling 2 RGAT layers (hectorc --training, cached) ...", flush=True)
        for conv in (model.conv1, model.conv2):
            conv.library(device, True)
    status = data_parallel.launch(train_rank, nproc=args.nproc,
                                  args=(args, make_model, progress), device=device)
    return int(status or 0)


__all__ = ["run", "train_rank"]
