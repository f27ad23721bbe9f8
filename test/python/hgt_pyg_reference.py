"""PyTorch Geometric 2.8's HGTConv as plain float64 torch, written from its
documented math and parameter layout (not from hector's IR or layer), for
the CPU tests of hector.nn.HGTConv.

With d = out_channels, H heads of D = d/H features, a node type τ, an edge
type φ = (source type, relation, destination type) and an edge e = (s → t):

    [k | q | v]_s = x_s · W_kqv,τᵀ + b_kqv,τ             (kqv_lin, split in thirds)
    score_e,h = (k_s,h · k_rel[h·R + φ]) · q_t,h · p_rel[φ][h] / √D
    α_e,h     = softmax of score over every incoming edge of t (all edge types)
    m_t       = Σ_e α_e,h · (v_s,h · v_rel[h·R + φ])     (0 without incoming edges)
    a_t       = GELU(m_t) · W_out,τᵀ + b_out,τ           (exact erf GELU; out_lin)
    out_t     = σ(skip_τ)·a_t + (1 − σ(skip_τ))·x_t      where x_t's width is d,
                a_t                                      otherwise

The result holds the node types of x_dict that are the destination of some
edge type of the metadata; edge types missing from edge_index_dict add
nothing. `params` is keyed like PyG's state_dict:

    kqv_lin.lins.<τ>.weight [3d, in_τ]   kqv_lin.lins.<τ>.bias [3d]
    out_lin.lins.<τ>.weight [d, d]       out_lin.lins.<τ>.bias [d]
    k_rel.weight, v_rel.weight [H·R, D, D] (applied as x · W)
    skip.<τ> [1]                         p_rel.<src>__<rel>__<dst> [1, H]
"""

from __future__ import annotations

import math

import torch


def gelu(x):
    """The exact GELU x·Φ(x), Φ(x) = (1 + erf(x/√2))/2."""
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def hgt_pyg(x_dict, edge_index_dict, params, metadata, heads):
    """{destination node type: out_t}; see the module docstring."""
    node_types, edge_types = metadata
    num_relations = len(edge_types)
    d = params[f"out_lin.lins.{node_types[0]}.weight"].shape[0]
    dh = d // heads
    k, q, v = {}, {}, {}
    for t, x in x_dict.items():
        kqv = x @ params[f"kqv_lin.lins.{t}.weight"].t() + params[f"kqv_lin.lins.{t}.bias"]
        k[t], q[t], v[t] = (kqv[:, i * d:(i + 1) * d].reshape(-1, heads, dh) for i in range(3))
    incoming = {t: [] for t in x_dict}
    for et, (src, dst) in edge_index_dict.items():
        s, _, t = et
        r = edge_types.index(et)
        rel = [r + h * num_relations for h in range(heads)]  # PyG's type h·R + φ
        k_att = torch.einsum("ehi,hio->eho", k[s][src], params["k_rel.weight"][rel])
        prior = params["p_rel." + "__".join(et)].reshape(heads)
        score = (k_att * q[t][dst]).sum(-1) * prior / math.sqrt(dh)
        message = torch.einsum("ehi,hio->eho", v[s][src], params["v_rel.weight"][rel])
        incoming[t].append((dst, score, message))
    destinations = {et[2] for et in edge_types}
    out = {}
    for t, x in x_dict.items():
        if t not in destinations:
            continue
        n = x.shape[0]
        agg = x.new_zeros(n, heads, dh)
        if incoming[t]:
            dst = torch.cat([e[0] for e in incoming[t]])
            score = torch.cat([e[1] for e in incoming[t]])
            message = torch.cat([e[2] for e in incoming[t]])
            peak = x.new_full((n, heads), -math.inf).scatter_reduce(
                0, dst[:, None].expand_as(score), score.detach(), reduce="amax")
            ex = torch.exp(score - peak[dst])
            total = x.new_zeros(n, heads).index_add(0, dst, ex)
            agg = agg.index_add(0, dst, (ex / total[dst])[:, :, None] * message)
        a = gelu(agg.reshape(n, d)) @ params[f"out_lin.lins.{t}.weight"].t() \
            + params[f"out_lin.lins.{t}.bias"]
        if x.shape[1] == d:
            gate = torch.sigmoid(params[f"skip.{t}"])
            a = gate * a + (1 - gate) * x
        out[t] = a
    return out


def pyg_params_of(conv_params, metadata, heads, in_widths):
    """PyG's state_dict layout (see the module docstring) from hector's
    HGTConv parameters `conv_params` {name: tensor} (differentiable: the
    gradients flow back to them), as docs/python.md maps the names.
    in_widths: {node type: input width} of the materialized types."""
    node_types, edge_types = metadata
    d = conv_params["a_weight"].shape[-1]
    r, dh = len(edge_types), d // heads

    def typed(name, i):  # stacked [T, ...] or one per node type (name.i)
        return conv_params[name][i] if name in conv_params else conv_params[f"{name}.{i}"]

    out = {}
    for i, t in enumerate(node_types):
        if t in in_widths:
            out[f"kqv_lin.lins.{t}.weight"] = torch.cat(
                [typed(n, i) for n in ("k_weight", "q_weight", "v_weight")], 1).t()
        out[f"kqv_lin.lins.{t}.bias"] = torch.cat(
            [conv_params[n][i] for n in ("k_bias", "q_bias", "v_bias")])
        out[f"out_lin.lins.{t}.weight"] = conv_params["a_weight"][i].t()
        out[f"out_lin.lins.{t}.bias"] = conv_params["a_bias"][i]
        out[f"skip.{t}"] = conv_params["skip"][i:i + 1]
    for name in ("k_rel", "v_rel"):  # [R, H, D, D] -> [H·R, D, D], type h·R + φ
        out[f"{name}.weight"] = conv_params[name].transpose(0, 1).reshape(heads * r, dh, dh)
    for j, et in enumerate(edge_types):
        out["p_rel." + "__".join(et)] = conv_params["p_rel"][j][None]
    return out


def no_message_rows(conv, node_type_index, x, out_channels):
    """What PyG's HGTConv gives the rows of a node type that receives no
    message: the aggregate is 0 and GELU(0) = 0, so out_lin's bias, gated
    with the input where its width is out_channels."""
    bias = conv.a_bias[node_type_index].detach().expand(x.shape[0], out_channels)
    if x.shape[1] != out_channels:
        return bias
    gate = torch.sigmoid(conv.skip[node_type_index].detach())
    return gate * bias + (1 - gate) * x.detach()
