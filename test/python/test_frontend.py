"""The Python DSL frontend (hector.frontend): the IR it emits.

1. RGCN, RGAT and HGT written in the DSL (examples/models) emit, for several
   widths and head counts, the same signature and the same multiset of ops
   (up to value names and order) as the hand-written IR of
   examples/generate.py, and the IR verifies with hectorc / hector-opt.
2. Every DSL construct of docs/frontend.md maps to its hgraph op (golden
   lines), and all of it verifies with hectorc.
Numerical checks are in test_frontend_models.py, errors in
test_frontend_errors.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from hector import frontend
from hector.frontend import FrontendError, emit, emit_source
from hectorc_support import REPO, hectorc, tool
from test_frontend_support import (example_model, generated_ir, op_multiset, op_names,
                                   signature)

# (model, sizes for the DSL, (width_in, width_out, heads) for generate.py)
CASES = [
    ("rgcn", {}, (64, 64, 1)),
    ("rgcn", {"IN": 16, "OUT": 128}, (16, 128, 1)),
    ("rgat", {}, (64, 64, 1)),
    ("rgat", {"IN": 32, "OUT": 32, "H": 4}, (32, 32, 4)),
    ("rgat", {"IN": 128, "OUT": 64, "H": 8}, (128, 64, 8)),
    ("hgt", {}, (64, 64, 1)),
    ("hgt", {"D": 128, "H": 4}, (128, 128, 4)),
    ("hgt", {"D": 32, "H": 2}, (32, 32, 2)),
]


def verify(ir: str) -> str:
    """hectorc --emit=hgraph on `ir`; returns the verified IR."""
    result = subprocess.run([hectorc(), "-", "--emit=hgraph"], input=ir,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr + "\n" + ir
    return result.stdout


def source(body: str, params: str = "h: NodeFeature[8]", sizes: str = "") -> str:
    """A model module with `body` as the body of `m(g, <params>)`."""
    return ("from __future__ import annotations\n"
            f"def m(g: Graph, {params}{', *, ' + sizes if sizes else ''}):\n"
            + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n")


@pytest.mark.parametrize("name,sizes,generate", CASES)
def test_models_match_the_hand_written_ir(name, sizes, generate):
    ir = emit(example_model(name), **sizes)
    reference = generated_ir(name, *generate)
    assert signature(ir) == signature(reference)
    assert op_multiset(ir) == op_multiset(reference)


@pytest.mark.parametrize("name,sizes,generate", CASES)
def test_models_verify(name, sizes, generate):
    verified = verify(emit(example_model(name), **sizes))
    assert f"hgraph.func @{name}(" in verified


def test_models_parse_with_hector_opt():
    ir = "\n".join(emit(example_model(name)) for name in ("rgcn", "rgat", "hgt"))
    result = subprocess.run([tool("hector-opt"), "-"], input=ir, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_rgat_golden_structure():
    ir = emit(example_model("rgat"), IN=32, OUT=16, H=4)
    assert op_names(ir) == ["typed_linear", "typed_linear", "typed_vector", "dot",
                            "typed_vector", "dot", "add", "leaky_relu", "edge_softmax",
                            "scale", "aggregate", "return"]
    z, s = "!hgraph.edge<16xf32, heads = 4>", "!hgraph.edge<4xf32, heads = 4>"
    assert ("%z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 32x16xf32>, "
            f"!hgraph.node<32xf32> -> {z}") in ir
    assert ("%zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 32x16xf32>, "
            f"!hgraph.node<32xf32> -> {z}") in ir
    assert f"hgraph.typed_vector %a : !hgraph.weight<edge, 16xf32> -> {z}" in ir
    assert f"hgraph.leaky_relu %score alpha 0.2 : {s}" in ir
    assert "%alpha = hgraph.edge_softmax %" in ir
    assert f"hgraph.scale %alpha, %z : {s}, {z} -> {z}" in ir
    assert "%out = hgraph.aggregate sum %" in ir
    assert "-> !hgraph.node<16xf32, heads = 4> {" in ir


def test_hgt_golden_structure():
    ir = emit(example_model("hgt"), D=32, H=4)
    nh, eh = "!hgraph.node<32xf32, heads = 4>", "!hgraph.edge<32xf32, heads = 4>"
    assert f"%k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 32x32xf32>, " \
           f"!hgraph.node<32xf32> -> {nh}" in ir
    assert f"hgraph.typed_linear %Watt, %k from src : !hgraph.weight<edge, 4x8x8xf32>, " \
           f"{nh} -> {eh}" in ir
    assert f"%q_dst = hgraph.gather %q from dst : {nh} -> {eh}" in ir
    assert "hgraph.const_scale %" in ir and f"by {1 / 8 ** 0.5!r}" in ir
    assert f"hgraph.typed_linear %A, %agg from node : !hgraph.weight<node, 32x32xf32>, {nh} " \
           "-> !hgraph.node<32xf32>" in ir
    assert ir.rstrip().endswith("hgraph.return %out : !hgraph.node<32xf32>\n}")


def test_rgcn_golden_structure():
    ir = emit(example_model("rgcn"), IN=16, OUT=32)
    assert op_names(ir) == ["relation_norm", "typed_linear", "scale", "typed_linear",
                            "aggregate", "add", "return"]
    assert "%norm = hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32>" in ir
    assert "hgraph.typed_linear %W0, %h from node : !hgraph.weight<single, 16x32xf32>" in ir


# ---- every construct -> its op ------------------------------------------------

CONSTRUCTS = {
    # name: (params, body, sizes, expected lines)
    "gather_src_dst": (
        "h: NodeFeature[8]", """
        for e in g.edges():
            e["s"] = e.src["h"]
            e["d"] = e.dst["h"] + e.src["h"]
        return g.edata["d"]
        """, {}, ["%h_src = hgraph.gather %h from src : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>",
                  "%h_dst = hgraph.gather %h from dst : !hgraph.node<8xf32> -> !hgraph.edge<8xf32>",
                  "%d = hgraph.add %h_dst, %h_src : !hgraph.edge<8xf32>"]),
    "typed_linear_all_endpoints": (
        "h: NodeFeature[8], x: EdgeFeature[4], K: NodeWeight[8, 4], W: EdgeWeight[4, 4], "
        "S: Weight[8, 4]", """
        for n in g.nodes():
            n["k"] = typed_linear(K, n["h"], n.ntype)
        for e in g.edges():
            e["a"] = typed_linear(K, e.src["h"], e.src.ntype)
            e["b"] = typed_linear(K, e.dst["h"], e.dst.ntype)
            e["c"] = typed_linear(W, e["x"], e.etype)
            e["d"] = typed_linear(S, e.src["h"])
        return g.ndata["k"], g.edata["a"], g.edata["b"], g.edata["c"], g.edata["d"]
        """, {}, ["%k = hgraph.typed_linear %K, %h from node : !hgraph.weight<node, 8x4xf32>, "
                  "!hgraph.node<8xf32> -> !hgraph.node<4xf32>",
                  "%a = hgraph.typed_linear %K, %h from src",
                  "%b = hgraph.typed_linear %K, %h from dst",
                  "%c = hgraph.typed_linear %W, %x from edge : !hgraph.weight<edge, 4x4xf32>, "
                  "!hgraph.edge<4xf32> -> !hgraph.edge<4xf32>",
                  "%d = hgraph.typed_linear %S, %h from src : !hgraph.weight<single, 8x4xf32>"]),
    "typed_vector_domains_and_heads": (
        "h: NodeFeature[8, 2], nb: NodeWeight[8], eb: EdgeWeight[2], sb: Weight[8]", """
        for n in g.nodes():
            n["x"] = n["h"] + typed_vector(nb, n.ntype)
            n["y"] = n["h"] * typed_vector(sb)
        for e in g.edges():
            e["s"] = dot(e.src["h"], e.dst["h"]) * typed_vector(eb, e.etype)
            e["t"] = typed_vector(sb, heads=4) * 2.0
        return g.ndata["x"], g.ndata["y"], g.edata["s"], g.edata["t"]
        """, {}, ["%nb_v = hgraph.typed_vector %nb : !hgraph.weight<node, 8xf32> -> "
                  "!hgraph.node<8xf32, heads = 2>",
                  "%sb_v = hgraph.typed_vector %sb : !hgraph.weight<single, 8xf32> -> "
                  "!hgraph.node<8xf32, heads = 2>",
                  "%eb_v = hgraph.typed_vector %eb : !hgraph.weight<edge, 2xf32> -> "
                  "!hgraph.edge<2xf32, heads = 2>",
                  "%sb_v_1 = hgraph.typed_vector %sb : !hgraph.weight<single, 8xf32> -> "
                  "!hgraph.edge<8xf32, heads = 4>"]),
    "aggregates": (
        "h: NodeFeature[8]", """
        for n in g.dst_nodes():
            n["s"] = sum(e.src["h"] for e in n.incoming_edges())
            n["m"] = mean(e.src["h"] for e in n.incoming_edges())
            n["x"] = max(e.src["h"] for e in n.incoming_edges())
        return g.ndata["s"], g.ndata["m"], g.ndata["x"]
        """, {}, ["%s = hgraph.aggregate sum %h_src : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>",
                  "%m = hgraph.aggregate mean %h_src",
                  "%x = hgraph.aggregate max %h_src"]),
    "accumulate": (
        "h: NodeFeature[8]", """
        for n in g.dst_nodes():
            n["acc"] = n["h"]
            for e in n.incoming_edges():
                n["acc"] += e.src["h"]
                n["acc"] += relu(e.src["h"])
                n["new"] += e.src["h"] * n["h"]
        return g.ndata["acc"], g.ndata["new"]
        """, {}, ["%0 = hgraph.relu %h_src : !hgraph.edge<8xf32>",
                  "%h_dst = hgraph.gather %h from dst",
                  "%2 = hgraph.add %h_src, %0 : !hgraph.edge<8xf32>",
                  "%3 = hgraph.aggregate sum %2 : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>",
                  "%acc = hgraph.add %h, %3 : !hgraph.node<8xf32>",
                  "%new = hgraph.aggregate sum %1"]),
    "elementwise": (
        "h: NodeFeature[8]", """
        for n in g.nodes():
            x = n["h"]
            n["o"] = exp(x) - relu(x) * tanh(x) / sigmoid(-x) + neg(leaky_relu(x)) \\
                + leaky_relu(x, 0.5)
        return g.ndata["o"]
        """, {}, ["%0 = hgraph.exp %h : !hgraph.node<8xf32>",
                  "%1 = hgraph.relu %h", "%2 = hgraph.tanh %h", "%3 = hgraph.mul %1, %2",
                  "%4 = hgraph.neg %h", "%5 = hgraph.sigmoid %4", "%6 = hgraph.div %3, %5",
                  "%7 = hgraph.sub %0, %6", "%8 = hgraph.leaky_relu %h alpha 0.01",
                  "%9 = hgraph.neg %8", "%11 = hgraph.leaky_relu %h alpha 0.5",
                  "%o = hgraph.add %10, %11"]),
    "gelu": (
        "h: NodeFeature[8]", """
        for n in g.nodes():
            n["o"] = gelu(n["h"]) * gelu(1.5)
        return g.ndata["o"]
        """, {}, ["%0 = hgraph.gelu %h : !hgraph.node<8xf32>",
                  "%o = hgraph.const_scale %0 by 1.399789198096713"]),
    "scale_and_constants": (
        "h: NodeFeature[8, 4]", """
        for e in g.edges():
            e["s"] = edge_softmax(dot(e.src["h"], e.dst["h"]) / sqrt(D))
            e["a"] = scale(e["s"], e.src["h"])
            e["b"] = e.src["h"] * e["s"] * 2 / 4
            e["c"] = relation_norm(e) * e.src["h"]
        return g.edata["a"], g.edata["b"], g.edata["c"]
        """, {"sizes": "D: int = 4"}, [
            "%1 = hgraph.const_scale %0 by 0.5 : !hgraph.edge<4xf32, heads = 4>",
            "%a = hgraph.scale %s, %h_src : !hgraph.edge<4xf32, heads = 4>, "
            "!hgraph.edge<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>",
            "%2 = hgraph.scale %s, %h_src",
            "%3 = hgraph.const_scale %2 by 2.0",
            "%b = hgraph.const_scale %3 by 0.25",
            "%c = hgraph.scale %norm, %h_src : !hgraph.edge<1xf32>, "
            "!hgraph.edge<8xf32, heads = 4> -> !hgraph.edge<8xf32, heads = 4>"]),
    "softmax_by_type": (
        "h: NodeFeature[8, 4]", """
        for e in g.edges():
            e["s"] = edge_softmax(dot(e.src["h"], e.dst["h"]), by_type=True)
            e["a"] = scale(e["s"], e.src["h"])
        return g.edata["a"]
        """, {}, ["%s = hgraph.edge_softmax %0 by_type : !hgraph.edge<4xf32, heads = 4>"]),
    "concat": (
        "h: NodeFeature[8, 2], x: NodeFeature[4, 2]", """
        for n in g.nodes():
            n["c"] = concat(n["h"], n["x"], n["h"])
        return g.ndata["c"]
        """, {}, ["%c = hgraph.concat %h, %x, %h : !hgraph.node<8xf32, heads = 2>, "
                  "!hgraph.node<4xf32, heads = 2>, !hgraph.node<8xf32, heads = 2> -> "
                  "!hgraph.node<20xf32, heads = 2>"]),
    "weight_product": (
        "h: NodeFeature[8], W: EdgeWeight[8, 8], a: EdgeWeight[8], K: NodeWeight[8, 8]", """
        Wa = weight_product(W, a)
        KW = weight_product(K, W, node_of="src")
        for e in g.edges():
            e["s"] = dot(e.src["h"], typed_vector(Wa, e.etype))
            e["k"] = typed_linear(KW, e.src["h"], e.etype)
        return g.edata["s"], g.edata["k"]
        """, {}, ["%Wa = hgraph.weight_product %W, %a : !hgraph.weight<edge, 8x8xf32>, "
                  "!hgraph.weight<edge, 8xf32> -> !hgraph.weight<edge, 8xf32>",
                  "%KW = hgraph.weight_product %K, %W node_of src : "
                  "!hgraph.weight<node, 8x8xf32>, !hgraph.weight<edge, 8x8xf32> -> "
                  "!hgraph.weight<edge, 8x8xf32>",
                  "%Wa_v = hgraph.typed_vector %Wa : !hgraph.weight<edge, 8xf32> -> "
                  "!hgraph.edge<8xf32>"]),
    "static_control_flow": (
        "h: NodeFeature[8]", """
        assert H >= 1, "H is positive"
        for n in g.nodes():
            if H > 1:
                n["o"] = relu(n["h"])
            else:
                n["o"] = tanh(n["h"])
            n["p"] = exp(n["o"]) if H == 1 else n["o"]
        return g.ndata["p"]
        """, {"sizes": "H: int = 1"}, ["%o = hgraph.tanh %h", "%p = hgraph.exp %o"]),
    "string_annotations_and_results": (
        "h: 'NodeFeature[D]', x: \"EdgeFeature[D]\"", """
        for e in g.edges():
            y = e["x"] + e.src["h"]
            e["x"] = y * y
        return y, g.edata["x"]
        """, {"sizes": "D=2"}, ["%y = hgraph.add %x, %h_src : !hgraph.edge<2xf32>",
                                 "%x_1 = hgraph.mul %y, %y",
                                 "hgraph.return %y, %x_1 : !hgraph.edge<2xf32>, "
                                 "!hgraph.edge<2xf32>"]),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_construct_emits_its_op(name):
    params, body, extra, expected = CONSTRUCTS[name]
    ir = emit_source(source(body, params, extra.get("sizes", "")))
    for line in expected:
        assert line in ir, f"{line!r} not in\n{ir}"


def test_all_constructs_verify():
    for name, (params, body, extra, _) in sorted(CONSTRUCTS.items()):
        ir = emit_source(source(body, params, extra.get("sizes", "")))
        verify(ir)


def test_every_hgraph_op_is_reachable():
    ops = set()
    for params, body, extra, _ in CONSTRUCTS.values():
        ops.update(op_names(emit_source(source(body, params, extra.get("sizes", "")))))
    documented = {"add", "aggregate", "concat", "const_scale", "div", "dot", "edge_softmax",
                  "exp", "gather", "leaky_relu", "mul", "neg", "relation_norm", "relu",
                  "return", "scale", "sigmoid", "gelu", "sub", "tanh", "typed_linear", "typed_vector",
                  "weight_product"}
    assert documented <= ops


def test_locations_point_into_the_python_file():
    model = example_model("rgcn")
    ir = emit(model, locations=True)
    path = model.function.__code__.co_filename
    first = model.function.__code__.co_firstlineno  # the decorator line
    assert f'hgraph.relation_norm %g : !hgraph.graph -> !hgraph.edge<1xf32> ' \
           f'loc("{path}":{first + 4}:' in ir
    verify(ir)


def test_emit_for_a_model_in_a_file(tmp_path):
    path = tmp_path / "layer.py"
    path.write_text("from __future__ import annotations\n"
                    "from hector.frontend import *\n\n"
                    "@model\n"
                    "def layer(g: Graph, h: NodeFeature[D], W: EdgeWeight[D, D], *, D: int):\n"
                    "    for e in g.edges():\n"
                    "        e['m'] = typed_linear(W, e.src['h'], e.etype)\n"
                    "    for n in g.dst_nodes():\n"
                    "        n['o'] = sum(e['m'] for e in n.incoming_edges())\n"
                    "    return g.ndata['o']\n")
    from test_frontend_support import load_module
    layer = load_module(str(path), "dsl_test_layer").layer
    assert isinstance(layer, frontend.Model)
    ir = layer.emit(D=12)
    assert "!hgraph.weight<edge, 12x12xf32>" in ir
    assert emit_source(path.read_text(), D=12).split("\n", 1)[1] == ir.split("\n", 1)[1]
    with pytest.raises(TypeError, match="is a Hector model"):
        layer(None)
    with pytest.raises(RuntimeError, match="part of the Hector model DSL"):
        frontend.typed_linear(None, None)


def test_command_line(tmp_path):
    out = tmp_path / "rgat.mlir"
    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}   # hector as this process finds it
    result = subprocess.run([sys.executable, "-m", "hector.frontend",
                             f"{REPO}/examples/models/rgat.py", "H=4", "-o", str(out)],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    # The same text as emit(): it depends on the model's source and sizes only.
    assert out.read_text() == emit(example_model("rgat"), H=4)
    bad = tmp_path / "bad.py"
    bad.write_text("def m(g: Graph):\n    while True:\n        pass\n    return g.ndata['h']\n")
    result = subprocess.run([sys.executable, "-m", "hector.frontend", str(bad)],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 1
    assert result.stderr.startswith(f"{bad}:2:5: error: only `for` loops")


def test_frontend_needs_only_the_standard_library():
    # The frontend must import and emit with numpy and torch unavailable.
    code = ("import sys; sys.modules['numpy'] = None; sys.modules['torch'] = None\n"
            "import hector.frontend as f\n"
            f"print(f.emit_source(open('{REPO}/examples/models/hgt.py').read(), H=4))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    assert result.returncode == 0, result.stderr
    assert "hgraph.func @hgt(" in result.stdout


def test_frontend_error_is_located():
    with pytest.raises(FrontendError) as info:
        emit_source(source("while True:\n    pass\nreturn g.ndata['h']"), filename="x.py")
    err = info.value
    assert (err.filename, err.line, err.col) == ("x.py", 3, 5)
    assert str(err) == f"x.py:3:5: {err.message}"


def test_docs_example_emits():
    # docs/frontend.md stays true: its first model emits and verifies.
    import re
    with open(f"{REPO}/docs/frontend.md", encoding="utf-8") as f:
        example = re.findall(r"```python\n(.*?)```", f.read(), re.S)[0]
    ir = emit_source(example, IN=32, OUT=32, H=4)
    assert op_multiset(ir) == op_multiset(generated_ir("rgat", 32, 32, 4))
    verify(ir)
