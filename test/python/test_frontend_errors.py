"""The errors of the Python DSL frontend: one test per error class.

Each case is a small model module; the line marked `# <--` is where the error
must point, and the message must start with `path:line:col:` and say what is
wrong.
"""

from __future__ import annotations

import textwrap

import pytest

from hector.frontend import FrontendError, emit, emit_source
from test_frontend_support import load_module

HEADER = "from __future__ import annotations\nfrom math import sqrt\n\n\n"


def module(params: str, body: str, sizes: str = "") -> str:
    kw = f", *, {sizes}" if sizes else ""
    return (HEADER + f"def m(g: Graph, {params}{kw}):\n"
            + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n")


P = "h: NodeFeature[8], W: EdgeWeight[8, 8], K: NodeWeight[8, 8], a: EdgeWeight[8]"
RET = "return g.ndata['h']"

CASES = {
    # -- statements and control flow
    "while_loop": (P, f"""
        while True:  # <--
            pass
        {RET}""", "only `for` loops over g.edges()"),
    "if_on_data": (P, f"""
        for n in g.nodes():
            if n["h"]:  # <--
                pass
        {RET}""", "conditions must depend only on sizes"),
    "loop_over_something_else": (P, f"""
        for i in range(3):  # <--
            pass
        {RET}""", "a loop runs over g.edges(), g.nodes(), g.dst_nodes()"),
    "nested_graph_loop": (P, f"""
        for n in g.nodes():
            for e in g.edges():  # <--
                pass
        {RET}""", "cannot be nested"),
    "unsupported_statement": (P, f"""
        import os  # <--
        {RET}""", "unsupported statement (Import)"),
    "expression_statement": (P, f"""
        for n in g.nodes():
            relu(n["h"])  # <--
        {RET}""", "computed and thrown away"),
    "missing_return": (P, """
        for n in g.nodes():  # <--
            n["o"] = relu(n["h"])
        """, "a model ends with `return"),
    "return_in_loop": (P, f"""
        for n in g.nodes():
            return n["h"]  # <--
        {RET}""", "return must be the last statement"),
    "failed_assert": (P, f"""
        assert D % 3 == 0, "D must be a multiple of 3"  # <--
        {RET}""", "assertion failed: D must be a multiple of 3", "D: int = 8"),
    "tuple_assignment": (P, f"""
        for n in g.nodes():
            x, y = n["h"], n["h"]  # <--
        {RET}""", "no tuple unpacking"),
    # -- names, attributes, calls
    "unknown_function": (P, f"""
        for n in g.nodes():
            n["o"] = softplus(n["h"])  # <--
        {RET}""", "unknown function 'softplus'"),
    "unknown_name": (P, f"""
        for n in g.nodes():
            n["o"] = relu(x)  # <--
        {RET}""", "unknown name 'x'"),
    "unknown_attribute": (P, f"""
        for e in g.edges():
            e["o"] = e.weight  # <--
        {RET}""", "unknown attribute 'weight' of e"),
    "edge_attribute_on_node": (P, f"""
        for n in g.nodes():
            n["o"] = n.src["h"]  # <--
        {RET}""", "'n' is a node; src is an edge attribute"),
    "feature_by_bare_name": (P, f"""
        for n in g.nodes():
            n["o"] = relu(h)  # <--
        {RET}""", "'h' is a node-wise feature; read it through a loop variable"),
    "undefined_feature": (P, f"""
        for n in g.nodes():
            n["o"] = relu(n["x"])  # <--
        {RET}""", "no node-wise feature 'x' is defined here"),
    "feature_key_not_a_string": (P, f"""
        for n in g.nodes():
            n["o"] = relu(n[0])  # <--
        {RET}""", "feature names are string literals"),
    "loop_variable_after_loop": (P, f"""
        for n in g.nodes():
            n["o"] = relu(n["h"])
        x = n  # <--
        {RET}""", "only bound inside its loop"),
    "loop_variable_hides_parameter": (P, f"""
        for h in g.nodes():  # <--
            pass
        {RET}""", "loop variable 'h' hides the parameter 'h'"),
    "indexing_a_weight": (P, f"""
        for e in g.edges():
            e["o"] = typed_linear(W[e.etype], e.src["h"])  # <--
        {RET}""", "weights are used whole"),
    "selector_as_value": (P, f"""
        for e in g.edges():
            e["o"] = relu(e.etype)  # <--
        {RET}""", "e.etype selects weight slices"),
    "bad_argument": (P, f"""
        for n in g.nodes():
            n["o"] = leaky_relu(n["h"], slope=0.1)  # <--
        {RET}""", "leaky_relu() has no argument 'slope'"),
    "non_constant_slope": (P, f"""
        for n in g.nodes():
            n["o"] = leaky_relu(n["h"], n["h"])  # <--
        {RET}""", "the slope of leaky_relu must be a constant expression"),
    "unsupported_expression": (P, f"""
        for n in g.nodes():
            n["o"] = [n["h"]]  # <--
        {RET}""", "unsupported expression (List)"),
    "unsupported_operator": (P, f"""
        for n in g.nodes():
            n["o"] = n["h"] ** 2  # <--
        {RET}""", "unsupported operator (Pow) on values"),
    "constant_added_to_value": (P, f"""
        for n in g.nodes():
            n["o"] = n["h"] + 1.0  # <--
        {RET}""", "`+` between a value and a constant is not supported"),
    "infinite_constant": (P, f"""
        for n in g.nodes():
            n["o"] = n["h"] * (1e308 * 10)  # <--
        {RET}""", "the constant inf is not a finite float"),
    "huge_exponent": (P, f"""
        for n in g.nodes():
            n["o"] = n["h"] * 10 ** 400  # <--
        {RET}""", "constant exponents are limited to 64"),
    "string_as_number": (P, f"""
        for n in g.nodes():
            n["o"] = n["h"] * -"a"  # <--
        {RET}""", "strings are not numbers"),
    # -- types: widths, heads, domains
    "width_mismatch": (P + ", x: NodeFeature[4]", f"""
        for n in g.nodes():
            n["o"] = n["h"] + n["x"]  # <--
        {RET}""", "operands of `+` differ: node-wise[8] and node-wise[4]"),
    "heads_mismatch": (P + ", x: NodeFeature[8, 2]", f"""
        for n in g.nodes():
            n["o"] = dot(n["h"], n["x"])  # <--
        {RET}""", "dot(): operands differ"),
    "bad_scale": (P + ", x: NodeFeature[8, 4]", f"""
        for n in g.nodes():
            s = dot(n["x"], n["x"])
            n["o"] = scale(s, n["h"])  # <--
        {RET}""", "must hold one scalar per head"),
    "heads_do_not_divide": (P, f"""
        for e in g.edges():
            e["z"] = typed_linear(W, e.src["h"], e.etype, heads=3)  # <--
        {RET}""", "3 heads do not divide the output width 8"),
    "typed_linear_input_width": ("h: NodeFeature[4], W: EdgeWeight[8, 8]", f"""
        for e in g.edges():
            e["z"] = typed_linear(W, e.src["h"], e.etype)  # <--
        {RET}""", "the input has width 4 but 'W'"),
    "per_head_weight_heads": ("h: NodeFeature[8], P: EdgeWeight[2, 4, 4]", f"""
        for e in g.edges():
            e["z"] = typed_linear(P, e.src["h"], e.etype)  # <--
        {RET}""", "the per-head weight 'P' has 2 heads, the input 1"),
    "edge_weight_in_node_loop": (P, f"""
        for n in g.nodes():
            n["z"] = typed_linear(W, n["h"])  # <--
        {RET}""", "'W' is edge-typed and cannot be applied in a node loop"),
    "node_weight_on_edge_value": (P + ", x: EdgeFeature[8]", f"""
        for e in g.edges():
            e["z"] = typed_linear(K, e["x"])  # <--
        {RET}""", "'K' is node-typed but the input is edge-wise"),
    "wrong_type_selector": (P, f"""
        for e in g.edges():
            e["z"] = typed_linear(K, e.src["h"], e.dst.ntype)  # <--
        {RET}""", "its slice is chosen by e.src.ntype, not e.dst.ntype"),
    "vector_weight_in_typed_linear": (P, f"""
        for e in g.edges():
            e["z"] = typed_linear(a, e.src["h"], e.etype)  # <--
        {RET}""", "typed_linear() needs a matrix or per-head weight"),
    "matrix_weight_in_typed_vector": (P, f"""
        for e in g.edges():
            e["z"] = dot(e.src["h"], typed_vector(W, e.etype))  # <--
        {RET}""", "typed_vector() needs a vector weight"),
    "node_value_in_edge_loop": (P, f"""
        for n in g.nodes():
            y = relu(n["h"])
        for e in g.edges():
            e["o"] = y  # <--
        {RET}""", "'y' is node-wise; in an edge loop read it at an endpoint"),
    "edge_value_in_node_loop": (P, f"""
        for e in g.edges():
            y = relu(e.src["h"])
        for n in g.nodes():
            n["o"] = y  # <--
        {RET}""", "'y' is edge-wise; a node loop reads edges through sum/mean/max"),
    "aggregate_outside_node_loop": (P, f"""
        for e in g.edges():
            e["o"] = sum(e.src["h"] for e in n.incoming_edges())  # <--
        {RET}""", "belongs in a node loop"),
    "aggregate_with_filter": (P, f"""
        for n in g.nodes():
            n["o"] = max(e.src["h"] for e in n.incoming_edges() if True)  # <--
        {RET}""", "without if"),
    "aggregate_without_generator": (P, f"""
        for n in g.nodes():
            n["o"] = sum(n["h"])  # <--
        {RET}""", "sum() takes one generator over incoming edges"),
    "edge_softmax_on_nodes": (P, f"""
        for n in g.nodes():
            n["o"] = edge_softmax(n["h"])  # <--
        {RET}""", "edge_softmax() normalizes edge-wise values"),
    "edge_softmax_by_type_not_bool": (P, f"""
        for e in g.edges():
            e["o"] = edge_softmax(e.src["h"], by_type=1)  # <--
        {RET}""", "edge_softmax(by_type=...) takes True or False"),
    "assign_destination_in_incoming_loop": (P, f"""
        for n in g.dst_nodes():
            for e in n.incoming_edges():
                n["o"] = e.src["h"]  # <--
        {RET}""", "cannot be assigned inside its incoming-edge loop"),
    "read_while_summing": (P, f"""
        for n in g.dst_nodes():
            for e in n.incoming_edges():
                n["o"] += e.src["h"]
                e["x"] = e.src["h"] + n["o"]  # <--
        {RET}""", "is being summed by this loop; read it after the loop"),
    "incoming_edges_outside_node_loop": (P, f"""
        for e in g.edges():
            for f in e.incoming_edges():  # <--
                pass
        {RET}""", "belongs directly in a node loop"),
    "weight_product_needs_node_of": (P, f"""
        KW = weight_product(K, W)  # <--
        {RET}""", "needs node_of=\"src\" or \"dst\""),
    "weight_product_shapes": (P + ", B: EdgeWeight[4, 4]", f"""
        WB = weight_product(W, B)  # <--
        {RET}""", "inner dimensions do not match (8 vs 4)"),
    "returning_a_weight": (P, """
        return W  # <--
        """, "not weights"),
    "undefined_result": (P, """
        return g.ndata["out"]  # <--
        """, "no node-wise feature 'out' is defined here"),
}


def expected_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "# <--" in line)


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_points_at_the_construct(case):
    params, body, match, *sizes = CASES[case]
    text = module(params, body, sizes[0] if sizes else "")
    with pytest.raises(FrontendError) as info:
        emit_source(text, filename="/models/bad.py")
    message = str(info.value)
    assert message.startswith(f"/models/bad.py:{expected_line(text)}:"), message
    assert match in message


# ---- signature and sizes -----------------------------------------------------

SIGNATURES = {
    "missing_annotation": ("def m(g: Graph, h):  # <--", {}, "needs an annotation"),
    "no_graph": ("def m(h: NodeFeature[8]):  # <--", {}, "exactly one parameter annotated "
                 "`Graph`"),
    "two_graphs": ("def m(g: Graph, g2: Graph):  # <--", {}, "exactly one Graph"),
    "bad_annotation": ("def m(g: Graph, h: Tensor[8]):  # <--", {},
                       "cannot read the annotation of 'h'"),
    "feature_rank": ("def m(g: Graph, h: NodeFeature[8, 2, 2]):  # <--", {},
                     "NodeFeature[width] or NodeFeature[width, heads]"),
    "feature_heads": ("def m(g: Graph, h: NodeFeature[8, 3]):  # <--", {},
                      "3 heads do not divide the width 8"),
    "weight_rank": ("def m(g: Graph, W: EdgeWeight[2, 2, 2, 2]):  # <--", {},
                    "a weight slice is a vector"),
    "size_without_value": ("def m(g: Graph, h: NodeFeature[D], *, D: int):  # <--", {},
                           "size 'D' has no value"),
    "unknown_size": ("def m(g: Graph, h: NodeFeature[D], *, D: int = 4):  # <--", {"E": 2},
                     "m has no size parameter 'E' (its sizes: D)"),
    "bad_size_value": ("def m(g: Graph, h: NodeFeature[D], *, D: int = 4):  # <--", {"D": 0},
                       "size 'D' must be an integer in [1, 16777216], got 0"),
    "size_expression": ("def m(g: Graph, h: NodeFeature[D // 3], *, D: int = 2):  # <--", {},
                        "sizes must be integers in [1, 16777216], got 0"),
    "default_on_feature": ("def m(g: Graph, h: NodeFeature[8] = None):  # <--", {},
                           "take no default"),
    "varargs": ("def m(g: Graph, *hs):  # <--", {}, "no *args or **kwargs"),
    "reserved_size": ("def m(g: Graph, *, locations: int = 1):  # <--", {}, "is reserved"),
}


@pytest.mark.parametrize("case", sorted(SIGNATURES))
def test_signature_errors(case):
    line, sizes, match = SIGNATURES[case]
    text = HEADER + line + "\n    return g.ndata['h']\n"
    with pytest.raises(FrontendError) as info:
        emit_source(text, filename="sig.py", **sizes)
    assert str(info.value).startswith(f"sig.py:{expected_line(text)}:"), str(info.value)
    assert match in str(info.value)


def test_result_annotation_mismatch():
    text = HEADER + ("def m(g: Graph, h: NodeFeature[8]) -> NodeFeature[8, 2]:  # <--\n"
                     "    return g.ndata['h']\n")
    with pytest.raises(FrontendError, match=r"^r.py:5:.*declared node-wise\[8, heads=2\] but "
                       r"the model returns node-wise\[8\]"):
        emit_source(text, filename="r.py")


def test_unparsable_module():
    with pytest.raises(FrontendError, match=r"^s.py:2:\d+: cannot parse the module"):
        emit_source("def m(g: Graph):\n    return )\n", filename="s.py")


# ---- long programs (issue 16) ---------------------------------------------------


def test_long_sum_is_a_located_error():
    # `v + v + ... + v` nests one level per term: too deep to translate (a
    # RecursionError before), or for Python's own parser.
    terms = " + ".join(["v"] * 1000)
    text = module(P, f"""
        for e in g.edges():
            v = typed_linear(W, e.src["h"], e.etype)
            e["m"] = {terms}  # <--
        {RET}""")
    with pytest.raises(FrontendError) as info:
        emit_source(text, filename="long.py")
    assert str(info.value).startswith(f"long.py:{expected_line(text)}:"), str(info.value)
    assert "nests too deeply to translate; split it over several statements" in str(info.value)
    terms = " + ".join(["v"] * 200000)
    with pytest.raises(FrontendError, match=r"^long.py:1:1: cannot parse the module: an "
                       r"expression nests too deeply for Python's parser"):
        emit_source(text.replace("v + v", terms, 1), filename="long.py")


def test_long_chain_emits_in_linear_time():
    # 20,000 statements re-binding one variable: every op result is named
    # from the hint "v" (v, v_1, v_2, ...); finding the next free suffix
    # from 1 each time took 30 s.
    import time

    body = ("for e in g.edges():\n    v = typed_linear(W, e.src['h'], e.etype)\n"
            + "    v = tanh(v)\n" * 20000 + "    e['m'] = v\n" + RET)
    text = module(P, body)
    start = time.perf_counter()
    ir = emit_source(text)
    assert time.perf_counter() - start < 10
    assert "%v_20000 = hgraph.tanh %v_19999" in ir


def test_which_function():
    two = HEADER + "def a(g: Graph):\n    pass\n\ndef b(g: Graph):\n    pass\n"
    with pytest.raises(FrontendError, match="name the model to emit: the module holds 2"):
        emit_source(two)
    with pytest.raises(FrontendError, match="no function 'c' in the module"):
        emit_source(two, function="c")


def test_errors_in_an_imported_model_point_into_its_file(tmp_path):
    # emit(function) reads the source with inspect: lines are those of the file,
    # columns those of the (indented) source.
    path = tmp_path / "models_with_error.py"
    path.write_text(HEADER + textwrap.dedent("""\
        from hector.frontend import model


        class Layers:
            @model
            def layer(g: Graph, h: NodeFeature[8]):
                for n in g.nodes():
                    n["o"] = relu(n["h"]) + n["h"] * n["q"]
                return g.ndata["o"]
        """))
    layer = load_module(str(path), "dsl_models_with_error").Layers.layer
    with pytest.raises(FrontendError) as info:
        emit(layer)
    err = info.value
    assert (err.filename, err.line, err.col) == (str(path), 12, 46)
    assert str(err).startswith(f"{path}:12:46: no node-wise feature 'q'")
