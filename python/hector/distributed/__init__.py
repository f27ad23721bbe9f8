"""Multi-process training of hector.nn layers on torch.distributed (NCCL on
GPUs, gloo on CPUs, launched with torchrun): data-parallel mini-batches and
full-graph training of a graph partitioned across ranks. docs/distributed.md
describes both."""
