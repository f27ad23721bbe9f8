"""Data-parallel hector.nn on GPUs with NCCL (issue #20): DDP gradients and
parameters after SGD steps equal one process computing on the union of
the ranks' batches (RGCN, RGAT, HGT; the cases of
test/python/distributed_cases.py), and the host's shared feature table,
registered as pinned memory by every rank, gathers zero-copy the rows
that indexing it gives.

The GPU machines have no compiler: build the layers' CUDA libraries here
first, then run there (one rank per GPU; world size 1 also runs):

    python3 test/gpu/test_distributed_gpu.py --build test/gpu/dist-cache     # here
    HECTOR_CACHE_DIR=test/gpu/dist-cache PYTHONPATH=python \\
        torchrun --nproc_per_node=2 test/gpu/test_distributed_gpu.py           # there
    HECTOR_CACHE_DIR=test/gpu/dist-cache PYTHONPATH=python \\
        python3 test/gpu/test_distributed_gpu.py                               # 1 rank

Exits 0 and prints "OK" on rank 0 when every comparison holds.
"""

from __future__ import annotations

import sys

import gpu_paths  # noqa: F401  (import paths)

import torch  # noqa: E402

TOL = 1e-5


def rank_main(ctx, steps=2):
    import torch.distributed as dist
    import distributed_cases as cases
    from hector.distributed import data_parallel, sampler, shared_features

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = ctx.device
    node_type, x_cpu, labels, seeds, the_sampler = cases.parts()
    # one pinned host table per host, gathered zero-copy on every rank
    table = shared_features.shared_table(lambda: x_cpu.clone(), name="gpu-test")
    pinned = shared_features.pinned_for(table, device)
    ids = torch.randint(0, cases.N, (37,))
    assert torch.equal(pinned[ids.to(device)].cpu(), x_cpu[ids]), "zero-copy gather differs"
    x = x_cpu.to(device)
    failures = []
    for kind in cases.KINDS:
        split = sampler.SeedSplit(seeds, ctx.rank, ctx.world_size, seed=7)
        net = data_parallel.wrap(cases.model(kind).to(device), ctx)
        opt = torch.optim.SGD(net.parameters(), lr=cases.LR)
        got = []
        for step in range(steps):
            sub = cases.batch_of(split, the_sampler, step)
            opt.zero_grad()
            cases.loss_of(kind, net, x, labels, node_type, sub,
                          torch.arange(sub.num_seeds)).backward()
            grads = {n: p.grad.detach().cpu() for n, p in net.module.named_parameters()}
            opt.step()
            got.append((grads, {n: p.detach().cpu() for n, p in net.module.named_parameters()}))
        # the reference: rank 0 alone, on the same GPU, on the union of the batches
        if ctx.rank == 0:
            splits = [sampler.SeedSplit(seeds, r, ctx.world_size, seed=7)
                      for r in range(ctx.world_size)]
            ref = cases.model(kind).to(device)
            ref_opt = torch.optim.SGD(ref.parameters(), lr=cases.LR)
            for step in range(steps):
                subs = [cases.batch_of(s, the_sampler, step) for s in splits]
                ref_opt.zero_grad()
                cases.loss_of(kind, ref, x, labels, node_type, sampler.union(subs),
                              sampler.seed_positions(subs)).backward()
                for name, p in ref.named_parameters():
                    if not torch.allclose(got[step][0][name], p.grad.cpu(), rtol=TOL, atol=TOL):
                        failures.append(f"{kind} step {step}: gradient of {name}")
                ref_opt.step()
                for name, p in ref.named_parameters():
                    if not torch.allclose(got[step][1][name], p.detach().cpu(), rtol=TOL,
                                          atol=TOL):
                        failures.append(f"{kind} step {step}: parameter {name}")
        # every rank holds the same parameters (DDP averaged the same gradients)
        mine = [got[-1][1]]
        every = [None] * ctx.world_size
        dist.all_gather_object(every, mine[0])
        for r, params in enumerate(every):
            for name, p in params.items():
                if not torch.equal(p, got[-1][1][name]):
                    failures.append(f"{kind}: rank {r}'s {name} differs from rank {ctx.rank}'s")
    if failures:
        raise AssertionError("; ".join(failures))
    if ctx.rank == 0:
        print(f"OK: DDP over {ctx.world_size} GPU rank(s) ({ctx.backend}) equals one process "
              f"on the union of the batches for {', '.join(cases.KINDS)}", flush=True)
    return 0


def build(directory):
    """The CUDA training libraries of every layer of the cases, into `directory`."""
    import distributed_cases as cases
    from hector import aot

    specs = sorted({conv.model_spec for kind in cases.KINDS
                    for conv in (cases.model(kind).conv1, cases.model(kind).conv2)})
    return aot.main(["--target", "cuda", "--training", "--out", directory, *specs])


def test_distributed_gpu():
    """Under pytest: one rank per GPU, at most 2, spawned."""
    import pytest

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from hector.distributed import data_parallel

    data_parallel.launch(rank_main, nproc=min(2, torch.cuda.device_count()), device="cuda")


def main(argv) -> int:
    if len(argv) == 3 and argv[1] == "--build":
        return build(argv[2])
    if len(argv) != 1:
        sys.exit(f"usage: {argv[0]} [--build DIR]")
    from hector.distributed import data_parallel

    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    nproc = None if data_parallel.under_torchrun() else 1
    return data_parallel.launch(rank_main, nproc=nproc, device="cuda") or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
