#!/usr/bin/env python3
"""End-to-end: neighbour-sampled mini-batch training of a 2-layer
GraphSAGE-style model whose node features (>= 40 GB) stay in host memory.

Two ways of getting each mini-batch's feature rows to the GPU:
  cpu     the usual pipeline: the sampled node ids go to the CPU, torch
          index_select gathers the rows into a pinned staging buffer, and a
          non_blocking copy sends them over PCIe
  unified hector.unified(features): the GPU gathers the rows itself, straight
          out of host memory (zero-copy); the only code change is two lines
Everything else (graph on the GPU, sampling on the GPU, the model, the
optimizer) is shared. Reports, per mode: epoch time, time per batch, the time
spent getting features, and CPU utilisation of the process (CPU seconds /
wall seconds, from os.times(); 1.0 = one core busy).

    python3 bench/gather/e2e_sage.py --nodes 20000000 --dim 512 --out e2e.json
"""

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

from hector.unified import host_empty, unified


def make_features(n, dim, backing, seed=0):
    """n x dim float32 in host memory, filled in parallel from random blocks
    (torch spreads each block copy over all cores). backing: 'malloc'
    (torch.empty) or 'thp' (hector.unified.host_empty: 2 MB pages)."""
    if backing == "malloc":
        feats = torch.empty(n, dim)
    elif backing == "thp":
        feats = host_empty((n, dim))
    else:  # "vmm": CUDA VMM host memory, mapped with 2 MB GPU pages
        import ctypes

        from hector import _runtime

        ptr = _runtime.host_alloc_large_pages(n * dim * 4, 0)
        buf = (ctypes.c_ubyte * (n * dim * 4)).from_address(ptr)
        feats = torch.frombuffer(buf, dtype=torch.uint8).view(torch.float32).view(n, dim)
    g = torch.Generator().manual_seed(seed)
    block = torch.randn(1 << 16, dim, generator=g)
    for start in range(0, n, block.shape[0]):
        end = min(n, start + block.shape[0])
        # A per-block offset keeps blocks distinct without new random draws.
        torch.add(block[: end - start], (start // block.shape[0]) % 101 * 0.01,
                  out=feats[start:end])
    return feats


def anon_huge_pages() -> str:
    """AnonHugePages of /proc/meminfo: how much memory THP backs right now."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("AnonHugePages"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def make_graph(n, avg_degree, dev, seed=0):
    """CSR of a random graph on the GPU with skewed popularity: in-neighbours
    of every node drawn with density ~ x^-0.5 over node ids (hot low ids)."""
    g = torch.Generator(device=dev).manual_seed(seed)
    deg = torch.randint(1, 2 * avg_degree, (n,), device=dev, generator=g)
    rowptr = torch.zeros(n + 1, dtype=torch.int64, device=dev)
    torch.cumsum(deg, 0, out=rowptr[1:])
    e = int(rowptr[-1])
    col = torch.empty(e, dtype=torch.int64, device=dev)
    chunk = 1 << 26
    for s in range(0, e, chunk):
        u = torch.rand(min(chunk, e - s), device=dev, generator=g)
        col[s:s + u.numel()] = (u.square() * n).long().clamp_(max=n - 1)
    return rowptr, col


def sample(rowptr, col, nodes, fanout, gen):
    """fanout neighbours of each node, uniformly with replacement: (len, fanout)."""
    start = rowptr[nodes]
    deg = rowptr[nodes + 1] - start
    r = torch.rand(nodes.numel(), fanout, device=nodes.device, generator=gen)
    return col[start.unsqueeze(1) + (r * deg.unsqueeze(1)).long()]


class Sage(torch.nn.Module):
    """2 layers, mean aggregation over sampled neighbours (fixed fanout)."""

    def __init__(self, dim, hidden, classes):
        super().__init__()
        self.self1 = torch.nn.Linear(dim, hidden)
        self.neigh1 = torch.nn.Linear(dim, hidden, bias=False)
        self.self2 = torch.nn.Linear(hidden, classes)
        self.neigh2 = torch.nn.Linear(hidden, classes, bias=False)

    def forward(self, x0, x1, x2, f1, f2):
        b = x0.shape[0]
        h0 = F.relu(self.self1(x0) + self.neigh1(x1.view(b, f1, -1).mean(1)))
        h1 = F.relu(self.self1(x1) + self.neigh1(x2.view(b * f1, f2, -1).mean(1)))
        return self.self2(h0) + self.neigh2(h1.view(b, f1, -1).mean(1))


def run_epoch(mode, feats, ufeats, staging, rowptr, col, labels, train, model, opt, args, dev):
    gen = torch.Generator(device=dev).manual_seed(1)
    perm = train[torch.randperm(train.numel(), device=dev, generator=gen)]
    nbatches = perm.numel() // args.batch
    if args.max_batches:
        nbatches = min(nbatches, args.max_batches)
    f1, f2 = args.fanout
    gather_s = 0.0
    rows_total = 0
    torch.cuda.synchronize()
    cpu0, wall0 = os.times(), time.perf_counter()
    for b in range(nbatches):
        seeds = perm[b * args.batch:(b + 1) * args.batch]
        n1 = sample(rowptr, col, seeds, f1, gen).reshape(-1)
        n2 = sample(rowptr, col, n1, f2, gen).reshape(-1)
        uniq, inv = torch.unique(torch.cat([seeds, n1, n2]), return_inverse=True)
        rows_total += uniq.numel()
        g0 = time.perf_counter()
        if mode == "cpu":
            ids = uniq.cpu()  # waits for the sampler
            stage = staging[: ids.numel()]
            torch.index_select(feats, 0, ids, out=stage)
            x_uniq = stage.to(dev, non_blocking=True)
        else:
            x_uniq = ufeats[uniq]  # zero-copy gather on the GPU
        # Both modes wait for their features here: the cpu mode has to
        # anyway (.cpu() above), and the unified gather checks its indices
        # (the default), which synchronises.
        torch.cuda.synchronize()
        gather_s += time.perf_counter() - g0
        x = x_uniq[inv]
        x0, x1, x2 = x[: seeds.numel()], x[seeds.numel(): seeds.numel() + n1.numel()], \
            x[seeds.numel() + n1.numel():]
        out = model(x0, x1, x2, f1, f2)
        loss = F.cross_entropy(out, labels[seeds])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    wall = time.perf_counter() - wall0
    cpu1 = os.times()
    cpu_s = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    return {
        "mode": mode,
        "batches": nbatches,
        "epoch_s": wall,
        "batch_ms": wall / nbatches * 1e3,
        "feature_ms_per_batch": gather_s / nbatches * 1e3,
        "rows_per_batch": rows_total / nbatches,
        "feature_gb_per_batch": rows_total / nbatches * feats.shape[1] * 4 / 1e9,
        "cpu_seconds": cpu_s,
        "cpu_utilisation_cores": cpu_s / wall,
        "final_loss": float(loss.detach()),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=20_000_000)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--degree", type=int, default=15)
    ap.add_argument("--train", type=int, default=200_000, help="training nodes (one epoch)")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--fanout", type=int, nargs=2, default=[15, 10])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--classes", type=int, default=47)
    ap.add_argument("--max-batches", type=int, default=0, help="cap batches per epoch")
    ap.add_argument("--epochs", type=int, default=1, help="timed epochs per mode")
    ap.add_argument("--backing", choices=["malloc", "thp", "vmm"], default="malloc",
                    help="host memory of the features: plain torch.empty or huge pages")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "e2e.json"))
    args = ap.parse_args()

    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    info = {"gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
            "cpu_threads": torch.get_num_threads(), "args": vars(args)}
    print(f"# {info}", flush=True)

    t = time.perf_counter()
    feats = make_features(args.nodes, args.dim, args.backing)
    info["features_gb"] = feats.numel() * 4 / 1e9
    info["fill_s"] = time.perf_counter() - t
    info["anon_huge_pages"] = anon_huge_pages()
    print(f"# features {info['features_gb']:.2f} GB filled in {info['fill_s']:.1f} s "
          f"({info['anon_huge_pages']} in huge pages)", flush=True)
    t = time.perf_counter()
    rowptr, col = make_graph(args.nodes, args.degree, dev)
    torch.cuda.synchronize()
    info["edges"] = col.numel()
    info["graph_s"] = time.perf_counter() - t
    labels = torch.randint(0, args.classes, (args.nodes,), device=dev)
    train = torch.randperm(args.nodes, device=dev)[: args.train]
    f1, f2 = args.fanout
    max_rows = args.batch * (1 + f1 + f1 * f2)
    staging = torch.empty(max_rows, args.dim).pin_memory()

    t = time.perf_counter()
    ufeats = unified(feats, device=dev)  # line 1 of the two-line change
    info["pin_s"] = time.perf_counter() - t
    print(f"# graph {info['edges']} edges in {info['graph_s']:.1f} s; "
          f"features pinned+mapped in {info['pin_s']:.1f} s", flush=True)

    results = []
    for mode in ("cpu", "unified"):
        torch.manual_seed(0)
        model = Sage(args.dim, args.hidden, args.classes).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        warm = argparse.Namespace(**{**vars(args), "max_batches": 3})
        run_epoch(mode, feats, ufeats, staging, rowptr, col, labels, train, model, opt, warm, dev)
        for _ in range(args.epochs):
            r = run_epoch(mode, feats, ufeats, staging, rowptr, col, labels, train, model, opt,
                          args, dev)
            results.append(r)
            print(f"# {r}", flush=True)

    info["results"] = results
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(info, f, indent=1)
    by = {m: [r for r in results if r["mode"] == m] for m in ("cpu", "unified")}
    print(f"\n## End to end ({info['gpu']}; {info['features_gb']:.1f} GB features in host "
          f"memory ({args.backing}); {args.nodes} nodes, {info['edges']} edges; batch {args.batch}, fanout "
          f"{f1},{f2})\n")
    print("| features via | epoch (s) | per batch (ms) | feature fetch (ms/batch) | "
          "rows/batch | CPU cores busy |")
    print("|---|---|---|---|---|---|")
    for m, rs in by.items():
        med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
        print(f"| {m} | {med('epoch_s'):.2f} | {med('batch_ms'):.1f} | "
              f"{med('feature_ms_per_batch'):.1f} | {med('rows_per_batch'):.0f} | "
              f"{med('cpu_utilisation_cores'):.2f} |")
    speed = statistics.median(r["epoch_s"] for r in by["cpu"]) / statistics.median(
        r["epoch_s"] for r in by["unified"])
    print(f"\nepoch speed-up unified vs cpu: {speed:.2f}x")


if __name__ == "__main__":
    main()
