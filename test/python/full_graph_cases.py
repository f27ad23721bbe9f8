"""The worker side of test_distributed_full_graph.py: tiny heterogeneous
graphs, and the checks each spawned rank runs (gloo, CPU). A check compares
the partitioned computation on this rank with the unpartitioned layer run in
this same process on the whole graph, and raises only after every
collective, so a failing rank never leaves the others waiting."""

from __future__ import annotations

import copy
import datetime
import json
import os
import traceback

import numpy as np
import torch
import torch.distributed as dist

import hector.nn as hnn
from hector.distributed.full_graph import (FullGraphLayer, PartitionedGraph,
                                           all_reduce_gradients)
from hector.distributed.halo import HaloExchange
from hector.distributed.local_graph import local_graph

WIDTH = 8
EDGE_DIM = 3
# Every node type is some edge type's destination (FullGraphLayer needs it for HGT).
METADATA = (["a", "b"], [("a", "r0", "b"), ("b", "r1", "a"), ("a", "r2", "a")])
TOL = {"cpu": dict(rtol=1e-5, atol=1e-5),
       # GPU kernels sum with atomics, in an order that changes between runs.
       "cuda": dict(rtol=1e-4, atol=1e-5)}


def graph(num_a: int = 14, num_b: int = 10, num_edges: int = 90, seed: int = 0):
    """(edge_index [2, E], edge_type [E], node_type [N]): node ids of type a
    first, then b; each edge type joins the node types METADATA gives it."""
    rng = np.random.default_rng(seed)
    ranges = {"a": (0, num_a), "b": (num_a, num_a + num_b)}
    node_type = np.array([0] * num_a + [1] * num_b)
    src, dst, etype = [], [], []
    for r, (s, _, d) in enumerate(METADATA[1]):
        k = num_edges // len(METADATA[1])
        src.append(rng.integers(*ranges[s], k))
        dst.append(rng.integers(*ranges[d], k))
        etype.append(np.full(k, r))
    order = rng.permutation(sum(len(e) for e in etype))  # edges of all types interleaved
    as_t = (lambda a: torch.from_numpy(np.concatenate(a)[order]))  # noqa: E731
    return (torch.stack([as_t(src), as_t(dst)]), as_t(etype),
            torch.from_numpy(node_type))


def two_components(num_parts: int):
    """A graph of `num_parts` disconnected copies of graph(), and the parts
    that give copy i to rank i: no edge crosses ranks, so no halo."""
    ei, et, nt = graph(8, 6, 40, seed=3)
    n = nt.numel()
    edge_index = torch.cat([ei + i * n for i in range(num_parts)], dim=1)
    return (edge_index, et.repeat(num_parts), nt.repeat(num_parts),
            np.repeat(np.arange(num_parts), n))


def make_layer(kind: str, in_width: int = WIDTH, out_width: int = WIDTH, seed: int = 0):
    torch.manual_seed(seed)
    if kind == "rgcn":
        return hnn.RGCNConv(in_width, out_width, num_relations=3)
    if kind == "rgat":
        return hnn.RGATConv(in_width, out_width // 2, num_relations=3, heads=2)
    if kind == "hgt":
        return hnn.HGTConv(in_width, out_width, METADATA, heads=2)
    raise ValueError(kind)


def run_whole(layer, x, edge_index, edge_type, node_type):
    """The unpartitioned layer on the whole graph, output rows in global order."""
    if not isinstance(layer, hnn.HGTConv):
        return layer(x, edge_index, edge_type)
    names = METADATA[0]
    members = [torch.nonzero(node_type == t).view(-1) for t in range(len(names))]
    position = torch.empty_like(node_type)
    for ids in members:
        position[ids] = torch.arange(ids.numel(), device=ids.device)
    edges = {}
    for r, et in enumerate(METADATA[1]):
        mask = edge_type == r
        edges[et] = torch.stack([position[edge_index[0][mask]], position[edge_index[1][mask]]])
    out = layer({names[t]: x[m] for t, m in enumerate(members)}, edges)
    whole = x.new_empty(x.size(0), out[names[0]].size(1))
    for t, m in enumerate(members):
        whole = whole.index_copy(0, m, out[names[t]])
    return whole


def make_attention_layer(seed: int = 0, edge_dim=EDGE_DIM):
    """RGATConv with edge features (the edge_attr / α checks)."""
    torch.manual_seed(seed)
    return hnn.RGATConv(WIDTH, WIDTH // 2, num_relations=3, heads=2, edge_dim=edge_dim)


# The RGATConv variants of the edge_attr / α checks: (edge_attr, α).
ATTENTION_VARIANTS = ((True, False), (False, True), (True, True))


def layer_specs() -> list:
    """The model specs of every layer the checks build (hector.aot builds
    them for the GPU machines, which have no compiler)."""
    specs = {make_layer(kind, WIDTH, out).model_spec
             for kind in ("rgcn", "rgat", "hgt") for out in (WIDTH, 4)}
    specs |= {make_attention_layer().spec_for(ea, alpha) for ea, alpha in ATTENTION_VARIANTS}
    return sorted(specs)


def warm(kinds=("rgcn", "rgat", "hgt")):
    """Compiles (or finds in the cache) the training libraries the checks
    use, once, before ranks start, so they only load them."""
    ei, et, nt = graph()
    x = torch.randn(nt.numel(), WIDTH, requires_grad=True)
    for kind in kinds:
        run_whole(make_layer(kind), x, ei, et, nt).sum().backward()
    for kind in ("rgcn", "hgt"):  # the last layers of the 2-layer stacks
        run_whole(make_layer(kind, WIDTH, 4), x, ei, et, nt).sum().backward()
    ea = torch.randn(ei.size(1), EDGE_DIM)
    for with_attr, alpha in ATTENTION_VARIANTS:
        out = make_attention_layer()(x, ei, et, edge_attr=ea if with_attr else None,
                                     return_attention_weights=alpha or None)
        (out[0].sum() + out[1][1].sum() if alpha else out.sum()).backward()


def _init(rank: int, world: int, port: int) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))


def _compare(failures, what, got, want) -> None:
    tol = TOL[want.device.type] if want is not None else TOL["cpu"]
    if want is None and got is not None and not got.any():
        # all_reduce_gradients gives a parameter no rank has a gradient for
        # zeros: HGTConv's skip where no type's width is out_channels (as in PyG).
        return
    if got is None or want is None:
        if not (got is None and want is None):
            failures.append(f"{what}: one side has no gradient")
        return
    if got.shape != want.shape or not torch.allclose(got, want, **tol):
        diff = (got - want).abs().max().item() if got.shape == want.shape else "shape"
        failures.append(f"{what}: max |diff| {diff}, shapes {tuple(got.shape)} "
                        f"{tuple(want.shape)}")


def check_model(graph_parts, kinds, failures, label, seed=0, device="cpu", group=None,
                ddp=False):
    """One check: a stack of layers `kinds` (ReLU between) partitioned over
    the ranks vs the same stack on the whole graph in this process:
    outputs, input-feature gradients and (summed) weight gradients."""
    edge_index, edge_type, node_type, parts, method = graph_parts
    edge_index, edge_type, node_type = (t.to(device) for t in (edge_index, edge_type,
                                                               node_type))
    pg = PartitionedGraph(edge_index, node_type.numel(), edge_type=edge_type,
                          node_type=node_type, parts=parts, method=method, device=device,
                          group=group)
    n = node_type.numel()
    widths = [WIDTH] * len(kinds) + [4 if len(kinds) > 1 else WIDTH]
    layers = [make_layer(k, widths[i], widths[i + 1], seed=seed + i).to(device)
              for i, k in enumerate(kinds)]
    whole = [copy.deepcopy(layer) for layer in layers]
    wrapped = torch.nn.ModuleList([FullGraphLayer(layer, pg) for layer in layers])
    gen = torch.Generator().manual_seed(seed + 100)
    x = torch.randn(n, WIDTH, generator=gen).to(device)
    weight = torch.randn(n, widths[-1], generator=gen).to(device)  # loss = Σ out ⊙ weight

    xw = x.clone().requires_grad_(True)
    h = xw
    for i, layer in enumerate(whole):
        h = run_whole(layer, h, edge_index, edge_type, node_type)
        h = h.relu() if i + 1 < len(whole) else h
    (h * weight).sum().backward()

    xp = pg.owned_rows(x).clone().requires_grad_(True)
    if ddp:  # DDP averages the weights' gradients: the sum is world size times theirs
        model = torch.nn.parallel.DistributedDataParallel(_Stack(wrapped))
        hp = model(xp)
        (hp * pg.owned_rows(weight)).sum().backward()
        for p in model.parameters():
            p.grad.mul_(dist.get_world_size())
    else:
        hp = _Stack(wrapped)(xp)
        (hp * pg.owned_rows(weight)).sum().backward()
        all_reduce_gradients(wrapped)

    _compare(failures, f"{label}: output", hp.detach(), pg.owned_rows(h.detach()))
    _compare(failures, f"{label}: grad x", xp.grad, pg.owned_rows(xw.grad))
    for i, (mp, mw) in enumerate(zip(wrapped, whole)):
        for (name, p), (_, q) in zip(mp.layer.named_parameters(), mw.named_parameters()):
            _compare(failures, f"{label}: layer {i} grad {name}", p.grad, q.grad)
    return pg


class _Stack(torch.nn.Module):
    """FullGraphLayers with ReLU between."""

    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            x = x.relu() if i + 1 < len(self.layers) else x
        return x


def check_layers(rank: int, world: int, scenario: str, device="cpu", group=None) -> list:
    """Every layer kind, one layer each, and 2-layer stacks, on `scenario`:
    'metis' / 'ranges' (partition_nodes), 'no-halo' (components = ranks),
    'empty-rank' (the last rank owns no node)."""
    failures = []
    if scenario == "no-halo":
        edge_index, edge_type, node_type, parts = two_components(world)
        setup = (edge_index, edge_type, node_type, parts, "auto")
    else:
        edge_index, edge_type, node_type = graph()
        parts = None
        if scenario == "empty-rank":
            parts = np.arange(node_type.numel()) % (world - 1)
        setup = (edge_index, edge_type, node_type, parts,
                 scenario if scenario in ("metis", "ranges") else "auto")
    stacks = [("rgcn",), ("rgat",), ("hgt",), ("rgat", "rgcn")]
    if scenario == "ddp":  # gradients summed by DistributedDataParallel instead
        stacks = [("hgt",), ("rgat", "rgcn")]
    if scenario in ("metis", "empty-rank"):
        stacks.append(("hgt", "hgt"))
    for i, kinds in enumerate(stacks):
        pg = check_model(setup, kinds, failures, f"rank {rank} {scenario} {'+'.join(kinds)}",
                         seed=10 * i, device=device, group=group, ddp=scenario == "ddp")
    stats = pg.exchange.stats
    if scenario == "no-halo" and (stats.bytes_sent or stats.bytes_received or pg.local.num_halo):
        failures.append(f"rank {rank}: no-halo partition moved {stats.bytes_sent} bytes")
    if scenario == "empty-rank" and rank == world - 1 and pg.num_owned != 0:
        failures.append(f"rank {rank} owns {pg.num_owned} nodes, expected none")
    if stats.calls != 4:  # the last stack: 2 layers, forward + backward
        failures.append(f"rank {rank}: {stats.calls} exchanges for a 2-layer step, expected 4")
    return failures


def check_halo(rank: int, world: int, device="cpu", group=None) -> list:
    """The exchange alone against a hand computation: x[v] = (v, 10 v) must
    arrive as the halo rows; with the gradient of halo row v on rank q set to
    (q + 1)(v + 1), owner of v receives Σ over the ranks q whose edges read v
    of (q + 1)(v + 1)."""
    edge_index, edge_type, node_type = graph(seed=7)
    n = node_type.numel()
    parts = np.arange(n) * world // n
    local = local_graph(rank, parts, edge_index, num_parts=world).to(device)
    exchange = HaloExchange(local, group)
    x = torch.stack([torch.arange(n, dtype=torch.float32),
                     10 * torch.arange(n, dtype=torch.float32)], dim=1).to(device)
    x_owned = local.owned_rows(x).requires_grad_(True)
    halo = exchange(x_owned)
    halo_ids = torch.from_numpy(local.halo).to(device)
    grad_halo = ((rank + 1) * (halo_ids + 1)).to(torch.float32).view(-1, 1).expand(-1, 2)
    halo.backward(grad_halo)
    failures = []
    if not torch.equal(halo.detach(), x[halo_ids]):
        failures.append(f"rank {rank}: halo rows {halo.tolist()} != {x[halo_ids].tolist()}")
    src, dst = edge_index[0].numpy(), edge_index[1].numpy()
    expected = np.zeros(n)
    for q in range(world):  # the sources rank q reads from other ranks
        for v in set(src[(parts[dst] == q) & (parts[src] != q)].tolist()):
            expected[v] += (q + 1) * (v + 1)
    want = torch.from_numpy(expected[local.owned]).to(torch.float32).view(-1, 1).expand(
        -1, 2).to(device)
    if not torch.equal(x_owned.grad, want):
        failures.append(f"rank {rank}: owned gradient {x_owned.grad[:, 0].tolist()} != "
                        f"{want[:, 0].tolist()}")
    sent = exchange.stats.bytes_sent
    if sent != 2 * 4 * (local.send_index.numel() + local.num_halo):  # forward + backward
        failures.append(f"rank {rank}: {sent} bytes sent")
    return failures


def check_disagreement(rank: int, world: int, device="cpu", group=None) -> list:
    """Ranks given different partitions: every rank must raise ValueError."""
    edge_index, edge_type, node_type = graph()
    parts = (np.arange(node_type.numel()) + rank) % world
    try:
        PartitionedGraph(edge_index, node_type.numel(), edge_type=edge_type, parts=parts,
                         device=device, group=group)
    except ValueError as err:
        return [] if "disagree" in str(err) else [f"rank {rank}: {err}"]
    return [f"rank {rank}: different partitions were accepted"]


def graph_with_isolated(num_isolated: int = 5, seed: int = 0):
    """graph() and `num_isolated` more nodes (type a, the last ids) that no
    edge touches."""
    edge_index, edge_type, node_type = graph(seed=seed)
    return (edge_index, edge_type,
            torch.cat([node_type, node_type.new_zeros(num_isolated)]))


def check_attention(setup, failures, label, device="cpu", group=None, seed=0):
    """RGATConv's edge_attr and return_attention_weights through
    FullGraphLayer against the layer on the whole graph in this process:
    one layer with edge_attr (the local edges' rows), one returning α
    without edge_attr, and a 2-layer stack with edge_attr (the whole
    graph's tensor, shared by both layers) and α from both
    (return_attention_weights True, then False). Loss = Σ out ⊙ w + Σ α ⊙ w_α;
    compared: outputs, α and its edges, gradients of x, edge_attr and the
    weights (summed over ranks)."""
    edge_index, edge_type, node_type, parts, method = setup
    edge_index, edge_type = edge_index.to(device), edge_type.to(device)
    n, num_edges = node_type.numel(), edge_index.size(1)
    pg = PartitionedGraph(edge_index, n, edge_type=edge_type, parts=parts, method=method,
                          device=device, group=group)
    gen = torch.Generator().manual_seed(seed + 100)
    x, edge_attr, w_out, w_alpha = (
        torch.randn(*shape, generator=gen).to(device)
        for shape in ((n, WIDTH), (num_edges, EDGE_DIM), (n, WIDTH), (num_edges, 2)))

    into_owned = torch.from_numpy(pg.parts).to(device)[edge_index[1]] == pg.rank
    if not torch.equal(pg.edge_ids, torch.nonzero(into_owned).view(-1)):
        failures.append(f"{label}: edge_ids are not the edges into the owned nodes, in order")
    covered = torch.zeros(num_edges, dtype=torch.int64, device=device)
    covered[pg.edge_ids] += 1  # every edge on exactly one rank
    dist.all_reduce(covered, group=group)
    if not bool((covered == 1).all()):
        failures.append(f"{label}: the ranks' local edges do not cover every edge once")
    if not torch.equal(pg.global_edge_index, edge_index[:, pg.edge_ids]):
        failures.append(f"{label}: global_edge_index is not the local edges' global ids")

    # (layers, attr form: None / "local" / "whole", return_attention_weights per layer)
    variants = [(1, "local", (None,)), (1, None, (True,)), (2, "whole", (True, False))]
    for v, (depth, attr_form, attention) in enumerate(variants):
        what = f"{label} {depth} layer(s) edge_attr={attr_form} α={attention}"
        layers = [make_attention_layer(seed + 10 * v + i).to(device) for i in range(depth)]
        whole = [copy.deepcopy(layer) for layer in layers]
        wrapped = torch.nn.ModuleList([FullGraphLayer(layer, pg) for layer in layers])

        xw = x.clone().requires_grad_(True)
        eaw = edge_attr.clone().requires_grad_(True)
        hw, loss, alphas_w = xw, 0, []
        for i, layer in enumerate(whole):
            out = layer(hw, edge_index, edge_type, edge_attr=eaw if attr_form else None,
                        return_attention_weights=attention[i])
            if isinstance(out, tuple):
                out, (_, alpha) = out
                alphas_w.append(alpha)
                loss = loss + (alpha * w_alpha).sum()
            hw = out.relu() if i + 1 < depth else out
        (loss + (hw * w_out).sum()).backward()

        xp = pg.owned_rows(x).clone().requires_grad_(True)
        eap = (pg.edge_rows(edge_attr) if attr_form == "local" else edge_attr
               ).clone().requires_grad_(True)
        h, loss, alphas_p = xp, 0, []
        for i, layer in enumerate(wrapped):
            out = layer(h, edge_attr=eap if attr_form else None,
                        return_attention_weights=attention[i])
            if isinstance(out, tuple):
                out, (edges, alpha) = out
                if not torch.equal(edges, edge_index[:, pg.edge_ids]):
                    failures.append(f"{what}: layer {i}'s α edges are not the local edges")
                alphas_p.append(alpha)
                loss = loss + (alpha * pg.edge_rows(w_alpha)).sum()
            h = out.relu() if i + 1 < depth else out
        (loss + (h * pg.owned_rows(w_out)).sum()).backward()
        all_reduce_gradients(wrapped)

        _compare(failures, f"{what}: output", h.detach(), pg.owned_rows(hw.detach()))
        if len(alphas_p) != len(alphas_w):
            failures.append(f"{what}: {len(alphas_p)} α returned, expected {len(alphas_w)}")
        for i, (got, want) in enumerate(zip(alphas_p, alphas_w)):
            _compare(failures, f"{what}: α {i}", got.detach(), pg.edge_rows(want.detach()))
        _compare(failures, f"{what}: grad x", xp.grad, pg.owned_rows(xw.grad))
        if attr_form == "local":
            _compare(failures, f"{what}: grad edge_attr", eap.grad, pg.edge_rows(eaw.grad))
        elif attr_form == "whole":  # each rank's part of the gradient; their sum is whole
            grad = eap.grad.clone()
            dist.all_reduce(grad, group=group)
            _compare(failures, f"{what}: grad edge_attr (summed)", grad, eaw.grad)
        for i, (mp, mw) in enumerate(zip(wrapped, whole)):
            for (name, p), (_, q) in zip(mp.layer.named_parameters(), mw.named_parameters()):
                _compare(failures, f"{what}: layer {i} grad {name}", p.grad, q.grad)
    return pg


def check_edge_attr(rank: int, world: int, scenario: str, device="cpu", group=None) -> list:
    """check_attention on graph_with_isolated: 'attr-metis' / 'attr-ranges'
    (partition_nodes), 'attr-isolated' (the last rank owns only isolated
    nodes, so no edge and no halo; then, with 2 ranks or more, it owns no
    node at all)."""
    failures = []
    edge_index, edge_type, node_type = graph_with_isolated()
    n = node_type.numel()
    label = f"rank {rank} {scenario}"
    if scenario in ("attr-metis", "attr-ranges"):
        check_attention((edge_index, edge_type, node_type, None, scenario[5:]), failures,
                        label, device, group)
        return failures
    if scenario != "attr-isolated":
        raise ValueError(scenario)
    isolated = np.zeros(n, bool)
    isolated[~np.isin(np.arange(n), edge_index.numpy())] = True
    others = max(world - 1, 1)
    parts = np.where(isolated, world - 1, np.arange(n) % others)
    pg = check_attention((edge_index, edge_type, node_type, parts, "auto"), failures,
                         f"{label} isolated-only", device, group, seed=1)
    if rank == world - 1 and (pg.num_owned != int(isolated.sum()) or pg.num_local_edges):
        failures.append(f"{label}: the last rank owns {pg.num_owned} nodes and "
                        f"{pg.num_local_edges} edges, expected only the isolated ones")
    if world >= 2:
        parts = np.arange(n) % (world - 1)
        pg = check_attention((edge_index, edge_type, node_type, parts, "auto"), failures,
                             f"{label} empty", device, group, seed=2)
        if rank == world - 1 and pg.num_owned:
            failures.append(f"{label}: the last rank owns {pg.num_owned} nodes, expected none")
    return failures


def check_bad_edge_input(rank: int, world: int, device="cpu", group=None) -> list:
    """Bad input to FullGraphLayer: a clear error on every rank, raised
    before the exchange, so that the ranks stay in step (a good forward
    afterwards still matches the whole graph)."""
    failures = []
    edge_index, edge_type, node_type = graph_with_isolated()
    n, num_edges = node_type.numel(), edge_index.size(1)
    pg = PartitionedGraph(edge_index, n, edge_type=edge_type, method="ranges",
                          device=device, group=group)
    layer = make_attention_layer().to(device)
    wrapped = FullGraphLayer(layer, pg)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(n, WIDTH, generator=gen).to(device)
    edge_attr = torch.randn(num_edges, EDGE_DIM, generator=gen).to(device)
    x_owned = pg.owned_rows(x)
    cases = [
        ("edge_attr with E + 1 rows", ValueError, "rows",
         lambda: wrapped(x_owned, edge_attr=torch.cat([edge_attr, edge_attr[:1]]))),
        ("edge_attr, one row per relation", ValueError, "per relation",
         lambda: wrapped(x_owned, edge_attr=edge_attr[:3] if pg.num_local_edges != 3
                         else edge_attr[:4])),
        ("edge_attr of one dimension too many", ValueError, "[E, edge_dim]",
         lambda: wrapped(x_owned, edge_attr=edge_attr.unsqueeze(0))),
        ("edge_attr without edge_dim", ValueError, "edge_dim",
         lambda: FullGraphLayer(make_layer("rgat").to(device), pg)(x_owned,
                                                                    edge_attr=edge_attr)),
        ("edge_attr to RGCNConv", TypeError, "only RGATConv",
         lambda: FullGraphLayer(make_layer("rgcn").to(device), pg)(x_owned,
                                                                    edge_attr=edge_attr)),
        ("α from RGCNConv", TypeError, "return_attention_weights",
         lambda: FullGraphLayer(make_layer("rgcn").to(device), pg)(
             x_owned, return_attention_weights=True)),
        ("x with every node's rows", ValueError, "owned rows",
         lambda: wrapped(torch.cat([x_owned, x[:1]]))),
        ("edge_rows of local rows", ValueError, "one per edge of the whole graph",
         lambda: pg.edge_rows(edge_attr[:-1])),
    ]
    for what, error, match, call in cases:
        try:
            call()
        except error as err:
            if match not in str(err):
                failures.append(f"rank {rank} {what}: message {str(err)!r} lacks {match!r}")
        else:
            failures.append(f"rank {rank} {what}: accepted")
    whole = copy.deepcopy(layer)(x, edge_index.to(device), edge_type.to(device),
                                 edge_attr=edge_attr)
    _compare(failures, f"rank {rank} after the errors: output",
             wrapped(x_owned, edge_attr=edge_attr).detach(), pg.owned_rows(whole.detach()))
    return failures


def run_checks(rank: int, world: int, scenarios, device="cpu") -> dict:
    """{scenario: failures} of the checks `scenarios`, run in order (all
    ranks run the same, in an initialized process group). A check that
    raises is a failure of its scenario; the next ones still run. One
    process group serves every exchange (NCCL communicators are costly)."""
    group = dist.new_group()
    results = {}
    for scenario in scenarios:
        try:
            if scenario == "halo":
                results[scenario] = check_halo(rank, world, device, group)
            elif scenario == "disagree":
                results[scenario] = check_disagreement(rank, world, device, group)
            elif scenario == "attr-errors":
                results[scenario] = check_bad_edge_input(rank, world, device, group)
            elif scenario.startswith("attr-"):
                results[scenario] = check_edge_attr(rank, world, scenario, device, group)
            else:
                results[scenario] = check_layers(rank, world, scenario, device, group)
        except Exception:  # noqa: BLE001 -- reported to the test, which fails
            results[scenario] = [f"rank {rank}: " + traceback.format_exc()]
    return results


def worker(rank: int, world: int, port: int, scenarios, out_dir: str) -> None:
    """A spawned CPU rank (gloo): run_checks, written to out_dir/rank<rank>.json."""
    _init(rank, world, port)
    results = run_checks(rank, world, scenarios)
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)
