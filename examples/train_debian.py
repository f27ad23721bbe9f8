#!/usr/bin/env python3
"""The main job: trains a 2-layer RGAT, compiled by hectorc, to predict a
Debian package's archive section from the bundled package graph
(examples/data/debian-packages.npz; docs/debian-graph.md), on the GPU when
torch sees one, else with the CPU backend.

    python3 examples/train_debian.py [--epochs 40] [--hidden 16] [--heads 4] [--device cpu|cuda]
    python3 examples/train_debian.py --aot-dir DIR   # build the CUDA layers here, for a
                                                     # GPU machine without hectorc
    python3 examples/train_debian.py --nproc 2       # data-parallel mini-batches, 2 ranks
    torchrun --nproc_per_node=2 examples/train_debian.py   # the same, launched by torchrun

The layers are hector.nn.RGATConv (PyG's RGATConv arguments); hectorc builds
their forward and backward once (hector.compile caches the libraries). Every
epoch is one full-graph training step (Adam) and shows a progress line with
the loss and the train/validation accuracy; at the end the test accuracy is
printed next to the majority-class baseline, and a PNG of the loss and the
accuracies per epoch is written (--plot, default train_debian.png in the
current directory; its path is printed). Exits 1 if the test accuracy is
not above the baseline.

With --nproc N (or under torchrun) it trains data-parallel instead
(examples/debian_data_parallel.py, docs/distributed.md): N ranks (gloo on
the CPU, NCCL on GPUs, one GPU per rank) each train a
DistributedDataParallel copy on neighbour-sampled mini-batches
(--batch-size, --fanouts) of their share of the training packages; rank 0
evaluates on the full graph after every epoch. No plot is written there.

It imports hector as a user does: pip install ./python (docs/python.md); in a
checkout, scripts/python-env.sh installs it into .venv (scripts/main.sh runs
this file with that Python).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

import torch
import torch.nn.functional as F

import hector.nn
from hector.distributed.data_parallel import under_torchrun
from hector.datasets.debian import load_debian_graph
from training_plot import TrainingHistory, write_training_plot


class RGAT(torch.nn.Module):
    """Two RGAT layers: features → heads × hidden (ReLU) → one score per section."""

    def __init__(self, in_width, hidden, heads, classes, relations):
        super().__init__()
        self.conv1 = hector.nn.RGATConv(in_width, hidden, relations, heads=heads)
        self.conv2 = hector.nn.RGATConv(hidden * heads, classes, relations)

    def forward(self, x, edge_index, edge_type):
        x = F.relu(self.conv1(x, edge_index, edge_type))
        return self.conv2(x, edge_index, edge_type)


def make_model(args, g):
    """The RGAT for graph `g` (module level: data-parallel ranks unpickle it)."""
    return RGAT(args.features, args.hidden, args.heads, g.num_classes, g.num_edge_types)


def progress(epoch, epochs, text, width=24):
    """One progress line per epoch, redrawn in place on a terminal."""
    done = int(width * epoch / epochs)
    line = f"[{'#' * done}{'.' * (width - done)}] epoch {epoch:3d}/{epochs} {text}"
    if sys.stdout.isatty():
        print("\r" + line, end="" if epoch < epochs else "\n", flush=True)
    else:
        print(line, flush=True)


def accuracy(logits, labels, index):
    return float((logits[index].argmax(1) == labels[index]).float().mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--features", type=int, default=64,
                        help="width of the hashed bag-of-words features")
    parser.add_argument("--hidden", type=int, default=16, help="features per head, layer 1")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("cpu", "cuda"),
                        default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--plot", default="train_debian.png",
                        help="PNG of the loss and the accuracies per epoch (written at the end)")
    parser.add_argument("--aot-dir", help="only build the two layers' CUDA libraries into "
                        "this cache directory (use it there as HECTOR_CACHE_DIR)")
    parser.add_argument("--nproc", type=int, default=None,
                        help="train data-parallel on N ranks (spawned here; under torchrun "
                             "its ranks are used and this may be left out)")
    parser.add_argument("--batch-size", type=int, default=1024,
                        help="data-parallel: training packages per rank and step")
    parser.add_argument("--fanouts", default="10,10",
                        help="data-parallel: sampled in-edges per node, per hop (-1: all)")
    args = parser.parse_args()
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if args.nproc is not None and args.nproc < 1:
        parser.error("--nproc must be at least 1")
    if (args.nproc is not None or under_torchrun()) and not args.aot_dir:
        import debian_data_parallel
        return debian_data_parallel.run(args, functools.partial(make_model, args), progress)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    g = load_debian_graph(feature_dim=args.features)
    print(f"graph: Debian packages, {g.num_nodes} nodes ({g.num_node_types} types), "
          f"{g.num_edges} edges ({g.num_edge_types} types), {g.num_classes} sections; "
          f"train/val/test {len(g.train_idx)}/{len(g.val_idx)}/{len(g.test_idx)} packages")
    x = torch.as_tensor(g.features, dtype=torch.float32, device=device)
    edge_index = torch.stack([torch.as_tensor(g.src), torch.as_tensor(g.dst)]).long().to(device)
    edge_type = torch.as_tensor(g.etype).long().to(device)
    labels = torch.as_tensor(g.labels).long().to(device)
    train, val, test = (torch.as_tensor(i).long().to(device)
                        for i in (g.train_idx, g.val_idx, g.test_idx))

    model = RGAT(args.features, args.hidden, args.heads, g.num_classes,
                 g.num_edge_types).to(device)
    if args.aot_dir:
        from hector import aot
        specs = sorted({model.conv1.model_spec, model.conv2.model_spec})
        return aot.main(["--target", "cuda", "--training", "--out", args.aot_dir, *specs])
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    # The first step compiles both layers (forward and backward) with hectorc,
    # or loads them from the cache.
    start = time.perf_counter()
    print(f"compiling 2 RGAT layers for {args.device} (hectorc --training, cached) ...",
          flush=True)
    model.train()
    best_val, best_state = -1.0, None
    history = TrainingHistory()
    for epoch in range(1, args.epochs + 1):
        optimizer.zero_grad()
        logits = model(x, edge_index, edge_type)
        loss = F.cross_entropy(logits[train], labels[train])
        loss.backward()
        optimizer.step()
        if epoch == 1:
            print(f"first step (with compilation): {time.perf_counter() - start:.1f} s",
                  flush=True)
            start = time.perf_counter()
        logits = logits.detach()
        train_acc, val_acc = accuracy(logits, labels, train), accuracy(logits, labels, val)
        if val_acc > best_val:
            best_val = val_acc
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        history.record(float(loss), train_acc, val_acc)
        progress(epoch, args.epochs, f"loss {float(loss):.4f}  train acc {train_acc:.3f}  "
                 f"val acc {val_acc:.3f}")
    seconds = time.perf_counter() - start
    step = ""
    if args.epochs > 1:
        step = f"{1e3 * seconds / (args.epochs - 1):.0f} ms per training step"
        print(f"{(args.epochs - 1) / seconds:.2f} epochs/s after the first ({step})")

    model.load_state_dict(best_state)
    with torch.no_grad():
        test_acc = accuracy(model(x, edge_index, edge_type), labels, test)
    baseline = g.majority_baseline("test")
    print(f"test accuracy {test_acc:.4f} (best validation epoch) vs majority-class "
          f"baseline {baseline:.4f}")
    plot = os.path.abspath(args.plot)
    try:
        write_training_plot(history, plot, baseline=baseline, test_acc=test_acc,
                            title=f"2-layer RGAT (Hector, {args.device}) on the Debian "
                                  f"package graph" + (f", {step}" if step else ""))
        print(f"plot of loss and accuracy per epoch: {plot}")
    except ImportError:
        print("plot not written: this Python has no matplotlib "
              "(scripts/install-deps.sh installs Debian's python3-matplotlib)")
    return 0 if test_acc > baseline else 1


if __name__ == "__main__":
    sys.exit(main())
