"""The minimum bytes one layer must move to or from memory: a lower bound for any implementation.

Assumptions (written out in docs/benchmarks-peers.md):
* float32 features and weights (4 B); int32 graph indices (4 B); int64 labels (8 B, as nll_loss takes).
* The graph is read once per pass as CSR by destination: per edge a source id
  and an edge type, per node a row offset. Everything edge-wise (messages,
  attention scores, softmax terms) can live on chip in a fused kernel, so it
  costs nothing here. Node types (HGT) are T + 1 offsets over type-sorted nodes.
* inference: read h, the weights and the graph; write out.
* training step: the forward as above, with out replaced by dL/dout (the loss
  gradient of a node needs only its own row); then the backward reads dL/dout,
  the graph, h and the weights again and writes dL/dh and dL/dweights. Labels
  are read once.
"""

from __future__ import annotations

F32, IDX, LABEL = 4, 4, 8


def weight_elements(model: str, din: int, dout: int, heads: int, num_node_types: int, num_edge_types: int) -> int:
    r, t = num_edge_types, num_node_types
    if model == "rgcn":
        return r * din * dout + din * dout  # W, W0
    if model == "rgat":
        return r * din * dout + 2 * r * dout  # W, a, b
    if model == "hgt":
        dh = dout // heads
        return 4 * t * din * dout + 2 * r * heads * dh * dh + r * heads  # K, Q, V, A, Watt, Wmsg, mu
    raise ValueError(f"unknown model {model!r}")


def graph_bytes(num_nodes: int, num_edges: int, num_node_types: int) -> int:
    return num_edges * 2 * IDX + (num_nodes + 1) * IDX + (num_node_types + 1) * IDX


def min_bytes(model: str, mode: str, *, num_nodes: int, num_edges: int, num_node_types: int,
              num_edge_types: int, din: int, dout: int, heads: int = 1) -> int:
    feats_in = num_nodes * din * F32
    feats_out = num_nodes * dout * F32
    weights = weight_elements(model, din, dout, heads, num_node_types, num_edge_types) * F32
    graph = graph_bytes(num_nodes, num_edges, num_node_types)
    one_pass = feats_in + weights + graph
    if mode == "inference":
        return one_pass + feats_out
    if mode == "training":
        labels = num_nodes * LABEL
        return 2 * one_pass + labels + 2 * feats_out + feats_in + weights  # + dL/dout, dL/dh, dL/dW
    raise ValueError(f"unknown mode {mode!r}")
