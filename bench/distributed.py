"""Multi-GPU training benchmarks on torch.distributed (issue #20, measured by #21).

--mode data-parallel: DistributedDataParallel copies of a 2-layer RGCN, RGAT
or HGT (hector.nn) train on neighbour-sampled mini-batches of a synthetic
graph shaped like mag or wikikg2 (hector.datasets.synthetic), one rank per
GPU, for each world size of --nprocs (weak scaling: --batch-size seeds per
rank and step). Per (model, dataset, world size) it records:

- step_ms: the median training step (feature gather, forward with the
  per-batch graph preprocessing, loss, backward with DDP's all-reduce,
  SGD step), the slowest rank's; the batches are sampled before timing
  (sample_ms: the CPU sampler's time per batch, for reference);
- nosync_ms: the same steps under DDP's no_sync() (no all-reduce);
  exposed_comm_ms = step_ms - nosync_ms, comm_share = exposed / step;
- allreduce_ms: one all-reduce of all the gradients (a flat buffer of
  grad_bytes) alone, the cost if nothing overlapped it;
- throughput (seeds/s, all ranks) and scaling_efficiency = throughput /
  (world size x the 1-rank throughput of the same case, when measured).

    python3 bench/distributed.py --nprocs 1,2,4,8 --out dp.json       # self-spawns each size
    torchrun --nproc_per_node=4 bench/distributed.py --out dp.json --append   # one size
    python3 bench/distributed.py --device cpu --tiny --out /tmp/dp.json      # plumbing, gloo

--mode full-graph runs bench/distributed_full_graph.py with the other
arguments (full-graph training of a partitioned graph: step time, halo
bytes, compute / communication split; its --help lists its options):

    python3 bench/distributed.py --mode full-graph --nproc 2 --model rgat --width 256

The GPU machines have no compiler: build the cases' cuda libraries here
with --build DIR (either mode, same other arguments) and run there with
HECTOR_CACHE_DIR=DIR.

--features host (default on GPUs) keeps one feature table per host in
shared memory, registered as pinned memory by every rank and gathered
zero-copy (hector.distributed.shared_features); --features device copies
it to every GPU. Results: JSON (--out) and a table printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import repo_paths  # noqa: F401  (sets the import paths)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MODELS = ("rgcn", "rgat", "hgt")


# ---- data-parallel mode ---------------------------------------------------------------

class TwoLayers(torch.nn.Module):
    """Two layers of `kind` at `width` (the second one's output: the classes)."""

    def __init__(self, kind, width, heads, relations, metadata):
        super().__init__()
        import hector.nn as hnn

        self.kind = kind
        if kind == "rgcn":
            self.conv1, self.conv2 = (hnn.RGCNConv(width, width, relations) for _ in range(2))
        elif kind == "rgat":
            self.conv1, self.conv2 = (hnn.RGATConv(width, width // heads, relations, heads=heads)
                                      for _ in range(2))
        else:
            self.conv1, self.conv2 = (hnn.HGTConv(width, width, metadata, heads=heads)
                                      for _ in range(2))

    def forward(self, *inputs):
        if self.kind == "hgt":
            x_dict, edge_index_dict = inputs
            h = {nt: F.relu(v) for nt, v in self.conv1(x_dict, edge_index_dict).items()}
            # node types that are never destinations (mag's authors, without
            # reverse edges) keep their input features for the second layer
            h.update({nt: x for nt, x in x_dict.items() if nt not in h})
            return self.conv2(h, edge_index_dict)
        x, edge_index, edge_type = inputs
        return self.conv2(F.relu(self.conv1(x, edge_index, edge_type)), edge_index, edge_type)


def _prepared_batch(kind, sub, node_type, metadata, device):
    """What one step needs on the device: feature rows to gather, the
    layer's graph arguments, the seeds' positions in the output."""
    from hector.distributed import sampler

    if kind != "hgt":
        return {"ids": sub.node_ids.to(device),
                "graph": (sub.edge_index.to(device), sub.edge_type.to(device)),
                "num_seeds": sub.num_seeds}
    hb = sampler.hetero(sub, node_type, *metadata)
    present = [nt for nt in metadata[0] if hb.node_ids[nt].numel()]
    if present[0] != metadata[0][0] or hb.seeds[present[0]].numel() != sub.num_seeds:
        raise ValueError("the seeds must be nodes of the first node type")
    return {"ids": {nt: hb.node_ids[nt].to(device) for nt in present},
            "graph": {et: ei.to(device) for et, ei in hb.edge_index_dict.items()},
            "present": present, "num_seeds": sub.num_seeds}


def _loss(kind, model, features, batch, labels):
    if kind == "hgt":
        # the seeds are nodes of the first type, first in its block (hetero())
        out = model({nt: features[ids] for nt, ids in batch["ids"].items()}, batch["graph"])
        out_all = out[batch["present"][0]]
    else:
        out_all = model(features[batch["ids"]], *batch["graph"])
    return F.cross_entropy(out_all[:batch["num_seeds"]], labels[:batch["num_seeds"]])


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_ms(fn, batches, device):
    times = []
    for b in batches:
        _sync(device)
        start = time.perf_counter()
        fn(b)
        _sync(device)
        times.append(1e3 * (time.perf_counter() - start))
    return statistics.median(times)


def data_parallel_rank(ctx, cfg):
    """One rank: every (model, dataset) case at this world size; rank 0
    returns the records."""
    import torch.distributed as dist
    from hector.datasets.synthetic import generate
    from hector.distributed import data_parallel, sampler, shared_features

    device, records = ctx.device, []
    for dataset in cfg["datasets"]:
        g = generate(dataset, scale=cfg["scale"], seed=cfg["seed"])
        metadata = g.metadata()
        node_type = torch.as_tensor(g.node_type).long()
        gen = torch.Generator().manual_seed(cfg["seed"])
        table = shared_features.shared_table(
            lambda: torch.randn(g.num_nodes, cfg["width"], generator=gen),
            name=f"bench-{dataset}")
        if device.type == "cuda":
            features = (shared_features.pinned_for(table, device) if cfg["features"] == "host"
                        else table.to(device))
        else:
            features = table
        the_sampler = sampler.NeighborSampler(g.src, g.dst, g.num_nodes, cfg["fanouts"],
                                              edge_type=g.etype)
        # seeds: the nodes of type 0 (mag's papers), as node classification does
        seeds = torch.nonzero(node_type == 0).flatten()
        split = sampler.SeedSplit(seeds, ctx.rank, ctx.world_size, seed=cfg["seed"])
        steps, warmup = cfg["steps"], cfg["warmup"]
        need = warmup + 2 * steps  # distinct batches: no step reuses a cached graph
        seed_batches = []
        epoch = 0
        while len(seed_batches) < need:
            seed_batches += split.batches(epoch, cfg["batch_size"])
            epoch += 1
        start = time.perf_counter()
        subs = [the_sampler.sample(s, seed=split.sample_seed(0, i))
                for i, s in enumerate(seed_batches[:need])]
        sample_ms = 1e3 * (time.perf_counter() - start) / need
        labels = torch.randint(0, cfg["width"], (cfg["batch_size"],), generator=gen).to(device)
        for kind in cfg["models"]:
            batches = [_prepared_batch(kind, s, node_type, metadata, device) for s in subs]
            torch.manual_seed(cfg["seed"])
            model = TwoLayers(kind, cfg["width"], cfg["heads"], g.num_edge_types,
                              metadata).to(device)
            ddp = data_parallel.wrap(model, ctx)
            opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)

            def step(batch, sync=True):
                opt.zero_grad(set_to_none=True)
                if sync:
                    _loss(kind, ddp, features, batch, labels).backward()
                else:
                    with ddp.no_sync():
                        _loss(kind, ddp, features, batch, labels).backward()
                opt.step()

            for b in batches[:warmup]:  # compiles/loads the layers, warms allocators
                step(b)
            dist.barrier()
            step_ms = _median_ms(step, batches[warmup:warmup + steps], device)
            dist.barrier()
            nosync_ms = _median_ms(lambda b: step(b, sync=False),
                                   batches[warmup + steps:], device)
            grads = torch.zeros(sum(p.numel() for p in model.parameters()), device=device)
            dist.barrier()
            allreduce_ms = _median_ms(lambda _: dist.all_reduce(grads), range(10), device)
            mine = {"step_ms": step_ms, "nosync_ms": nosync_ms, "allreduce_ms": allreduce_ms,
                    "sample_ms": sample_ms,
                    "batch_nodes": statistics.mean(s.node_ids.numel() for s in subs),
                    "batch_edges": statistics.mean(s.edge_ids.numel() for s in subs)}
            every = [None] * ctx.world_size
            dist.all_gather_object(every, mine)
            slowest = max(every, key=lambda m: m["step_ms"])
            exposed = max(0.0, slowest["step_ms"] - slowest["nosync_ms"])
            records.append({
                "mode": "data-parallel", "model": kind, "dataset": dataset,
                "world_size": ctx.world_size, "backend": ctx.backend,
                "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                "features": cfg["features"] if device.type == "cuda" else "shared-cpu",
                "scale": cfg["scale"], "nodes": g.num_nodes, "edges": g.num_edges,
                "width": cfg["width"], "heads": cfg["heads"], "batch_size": cfg["batch_size"],
                "fanouts": cfg["fanouts"], "steps": steps,
                "step_ms": slowest["step_ms"], "nosync_ms": slowest["nosync_ms"],
                "exposed_comm_ms": exposed, "comm_share": exposed / slowest["step_ms"],
                "allreduce_ms": max(m["allreduce_ms"] for m in every),
                "grad_bytes": grads.numel() * 4,
                "sample_ms": max(m["sample_ms"] for m in every),
                "batch_nodes": statistics.mean(m["batch_nodes"] for m in every),
                "batch_edges": statistics.mean(m["batch_edges"] for m in every),
                "throughput": ctx.world_size * cfg["batch_size"] / (slowest["step_ms"] / 1e3),
                "per_rank_step_ms": [m["step_ms"] for m in every],
            })
            if ctx.rank == 0:
                print(f"  {kind} {dataset} x{ctx.world_size}: step {slowest['step_ms']:.2f} ms, "
                      f"no_sync {slowest['nosync_ms']:.2f} ms", flush=True)
            del ddp, model, opt
    return records if ctx.rank == 0 else None


def run_data_parallel(args):
    """Every world size of --nprocs (self-spawned), or torchrun's one."""
    from hector.distributed import data_parallel

    cfg = {"datasets": args.datasets, "models": args.models, "scale": args.scale,
           "seed": args.seed, "width": args.width, "heads": args.heads,
           "batch_size": args.batch_size, "fanouts": args.fanouts, "steps": args.steps,
           "warmup": args.warmup, "features": args.features}
    if data_parallel.under_torchrun():
        return data_parallel.launch(data_parallel_rank, args=(cfg,), device=args.device) or []
    records = []
    for n in args.nprocs:
        print(f"world size {n} ...", flush=True)
        records += data_parallel.launch(data_parallel_rank, nproc=n, args=(cfg,),
                                        device=args.device) or []
    return records


def build_data_parallel(args):
    """The cuda libraries (with training entries) of every model of the cases,
    into args.build: the GPU machines have no compiler (HECTOR_CACHE_DIR=DIR
    there)."""
    from hector import aot
    from hector.datasets.synthetic import generate

    specs = set()
    for dataset in args.datasets:
        g = generate(dataset, scale=1e-3, seed=args.seed)  # only its types
        for kind in args.models:
            model = TwoLayers(kind, args.width, args.heads, g.num_edge_types, g.metadata())
            specs |= {m.model_spec for m in (model.conv1, model.conv2)}
    for spec in sorted(specs):
        (_, lib), = aot.build([spec], "cuda", training=True, cache_dir=args.build)
        print(f"{lib.key}  {spec}")
    return []


def run_full_graph(argv):
    """--mode full-graph: bench/distributed_full_graph.py with the other
    arguments (its own options: --dataset, --nproc, --width, ...)."""
    import distributed_full_graph

    return distributed_full_graph.main(argv)


MODES = {"data-parallel": run_data_parallel}


# ---- results ----------------------------------------------------------------------------

def with_efficiency(records):
    """scaling_efficiency of every record whose case has a 1-rank record."""
    def case(r):
        return tuple(r.get(k) for k in ("mode", "model", "dataset", "scale", "width", "heads",
                                        "batch_size", "device", "features"))
    single = {case(r): r["throughput"] for r in records if r["world_size"] == 1}
    for r in records:
        base = single.get(case(r))
        r["scaling_efficiency"] = (r["throughput"] / (r["world_size"] * base)
                                   if base else None)
    return records


def table(records) -> str:
    head = ("model", "dataset", "N", "step ms", "no_sync ms", "comm share", "allreduce ms",
            "seeds/s", "efficiency")
    rows = [head]
    for r in records:
        eff = r.get("scaling_efficiency")
        rows.append((r["model"], r["dataset"], str(r["world_size"]), f"{r['step_ms']:.2f}",
                     f"{r['nosync_ms']:.2f}", f"{r['comm_share']:.1%}",
                     f"{r['allreduce_ms']:.2f}", f"{r['throughput']:.0f}",
                     "-" if eff is None else f"{eff:.2f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=sorted(MODES) + ["full-graph"], default="data-parallel",
                   help="full-graph: the options of bench/distributed_full_graph.py follow")
    p.add_argument("--models", default="rgat,hgt,rgcn")
    p.add_argument("--datasets", default="mag,wikikg2")
    p.add_argument("--nprocs", default=None, help="world sizes to spawn, e.g. 1,2,4,8 "
                   "(default: 1, 2, 4, 8 up to the GPUs present; ignored under torchrun)")
    p.add_argument("--device", choices=("cpu", "cuda"),
                   default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--scale", type=float, default=1.0, help="graph size × the published counts")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=1024, help="seeds per rank and step")
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--steps", type=int, default=20, help="timed steps (each phase)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--features", choices=("host", "device"), default="host",
                   help="GPU: one pinned shared host table read zero-copy, or a copy per GPU")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tiny", action="store_true", help="a plumbing check: tiny graphs and "
                   "batches, 2 timed steps, world sizes 1 and 2")
    p.add_argument("--out", default="distributed.json")
    p.add_argument("--append", action="store_true", help="add to the records of --out")
    p.add_argument("--build", default=None, metavar="DIR",
                   help="only build the cases' cuda libraries into DIR (a hector cache)")
    args = p.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    if set(args.models) - set(MODELS):
        p.error(f"--models: unknown {sorted(set(args.models) - set(MODELS))}")
    args.datasets = [d for d in args.datasets.split(",") if d]
    args.fanouts = [int(f) for f in args.fanouts.split(",")]
    if args.tiny:
        args.scale, args.width, args.batch_size = 2e-4, 8, 8
        args.fanouts, args.steps, args.warmup = [3, 2], 2, 1
        args.nprocs = args.nprocs or "1,2"
    if args.nprocs is None:
        gpus = torch.cuda.device_count() if args.device == "cuda" else 2
        args.nprocs = ",".join(str(n) for n in (1, 2, 4, 8) if n <= max(gpus, 1))
    args.nprocs = [int(n) for n in args.nprocs.split(",")]
    if args.width % args.heads:
        p.error("--width must be a multiple of --heads")
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    mode_parser = argparse.ArgumentParser(add_help=False)
    mode_parser.add_argument("--mode", default="data-parallel")
    mode, rest = mode_parser.parse_known_args(argv)
    if mode.mode == "full-graph":
        return run_full_graph(rest)
    args = parse_args(argv)
    if args.build:
        build_data_parallel(args)
        return 0
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    records = MODES[args.mode](args)
    from hector.distributed import data_parallel

    if data_parallel.under_torchrun() and int(os.environ["RANK"]) != 0:
        return 0
    for r in records:
        r.update(started=started, host=platform.node(), torch=torch.__version__,
                 command=" ".join([os.path.basename(sys.executable)] + sys.argv))
    if args.append and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as f:
            records = json.load(f)["records"] + records
    records = with_efficiency(records)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"records": records}, f, indent=1)
    print(table(records))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
