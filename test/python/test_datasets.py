"""Synthetic benchmark graphs: published counts, compaction knob, skew, determinism, errors."""

import json

import numpy as np
import pytest

from hector.datasets.heterograph import HeteroGraph, gini
from hector.datasets.shapes import DATASETS, GraphSpec
from hector.datasets.synthetic import custom_spec, generate, main, scale_spec

# BRIEF.md section 5, typed in again here so a typo in shapes.py cannot hide.
PUBLISHED = {
    "aifb": (7_262, 48_810, 7, 104),
    "mutag": (27_163, 148_100, 5, 50),
    "bgs": (94_806, 672_884, 27, 122),
    "am": (881_680, 5_668_682, 7, 96),
    "fb15k": (14_541, 620_232, 1, 474),
    "biokg": (93_773, 4_762_678, 5, 51),
    "wikikg2": (2_500_604, 16_109_182, 1, 535),
    "mag": (1_939_743, 21_111_007, 4, 4),
}
# Scales that keep CI fast for the big shapes.
SCALES = {"aifb": 1.0, "mutag": 1.0, "fb15k": 1.0, "bgs": 0.1, "am": 0.01,
          "biokg": 0.01, "wikikg2": 0.002, "mag": 0.002}


def unique_pair_ratio(g):
    """Independent count of distinct (src, etype) pairs per edge, with Python sets."""
    return len(set(zip(g.src.tolist(), g.etype.tolist()))) / g.num_edges


def check_endpoints(g):
    ends = g.edge_type_endpoints
    assert np.array_equal(g.node_type[g.src], ends[g.etype, 0])
    assert np.array_equal(g.node_type[g.dst], ends[g.etype, 1])


def test_spec_table_holds_published_numbers():
    assert set(DATASETS) == set(PUBLISHED)
    for name, (n, e, t, r) in PUBLISHED.items():
        s = DATASETS[name]
        assert (s.num_nodes, s.num_edges, s.num_node_types, s.num_edge_types) == (n, e, t, r), name
    assert DATASETS["am"].compaction == 0.57
    assert DATASETS["fb15k"].compaction == 0.26


@pytest.mark.parametrize("name", ["aifb", "mutag", "fb15k"])
def test_small_datasets_full_size_counts(name):
    n, e, t, r = PUBLISHED[name]
    g = generate(name, seed=1)
    assert (g.num_nodes, g.num_edges, g.num_node_types, g.num_edge_types) == (n, e, t, r)
    assert g.node_type.dtype == g.src.dtype == g.dst.dtype == g.etype.dtype == np.int32
    assert g.edge_type_endpoints.shape == (r, 2) and g.edge_type_endpoints.dtype == np.int32
    assert np.bincount(g.node_type, minlength=t).min() >= 1  # every node type non-empty
    assert np.bincount(g.etype, minlength=r).min() >= 1  # every edge type used
    check_endpoints(g)
    assert abs(unique_pair_ratio(g) - DATASETS[name].compaction) <= 0.02


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_every_dataset_at_scale(name):
    n, e, t, r = PUBLISHED[name]
    scale = SCALES[name]
    g = generate(name, scale=scale, seed=3)
    assert g.num_nodes == max(t, round(n * scale))
    assert g.num_edges == max(r, round(e * scale))
    assert (g.num_node_types, g.num_edge_types) == (t, r)
    check_endpoints(g)
    st = g.stats()
    assert abs(st["compaction_ratio"] - DATASETS[name].compaction) <= 0.02
    assert abs(unique_pair_ratio(g) - st["compaction_ratio"]) < 1e-12
    assert st["empty_edge_types"] == 0


def test_mag_and_biokg_keep_their_public_schema():
    g = generate("mag", scale=0.001)
    assert g.edge_type_endpoints.tolist() == [[1, 0], [0, 0], [0, 3], [1, 2]]
    sizes = np.bincount(g.node_type, minlength=4)
    assert sizes.argmax() == 1 and sizes.argmin() == 2  # authors most, institutions fewest
    full = np.array(DATASETS["biokg"].node_type_sizes)
    assert full.sum() == PUBLISHED["biokg"][0]
    assert np.array_equal(np.bincount(generate("biokg", scale=0.01).node_type),
                          np.array(scale_spec(DATASETS["biokg"], 0.01).node_type_sizes))


def test_deterministic_per_seed():
    a = generate("aifb", seed=7)
    b = generate("aifb", seed=7)
    c = generate("aifb", seed=8)
    for field in ("node_type", "src", "dst", "etype", "edge_type_endpoints"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert not np.array_equal(a.dst, c.dst)


@pytest.mark.parametrize("target", [0.05, 0.26, 0.57, 0.8])
@pytest.mark.parametrize("shape", [(30_000, 40_000, 3, 20), (20_000, 60_000, 1, 7), (100_000, 40_000, 2, 6)])
def test_compaction_ratio_hits_target(target, shape):
    g = generate(custom_spec(*shape), compaction=target, seed=11)
    assert abs(unique_pair_ratio(g) - target) <= 0.02
    check_endpoints(g)


def test_compaction_ratio_one_means_no_shared_pairs():
    g = generate(custom_spec(100_000, 40_000, 2, 6), compaction=1.0, seed=1)
    assert unique_pair_ratio(g) == 1.0


def test_degrees_follow_power_law():
    g = generate(custom_spec(50_000, 500_000, 2, 8, 0.2), degree_exponent=2.5, seed=5)
    deg = np.bincount(g.dst, minlength=g.num_nodes).astype(np.float64)
    st = g.stats()
    assert st["max_in_degree"] > 50 * st["mean_in_degree"]
    assert st["in_degree_gini"] > 0.3
    # Hill estimator of the tail exponent of P(deg = k) ~ k^-gamma.
    tail = deg[deg >= 20]
    gamma = 1 + tail.size / np.log(tail / 19.5).sum()
    assert abs(gamma - 2.5) < 0.3
    # A steeper law gives a lighter tail.
    steep = generate(custom_spec(50_000, 500_000, 2, 8, 0.2), degree_exponent=4.0, seed=5).stats()
    assert steep["max_in_degree"] < st["max_in_degree"]
    assert steep["in_degree_gini"] < st["in_degree_gini"]


def test_every_node_gets_an_in_edge_when_edges_suffice():
    g = generate(custom_spec(5_000, 50_000, 1, 5, 0.3), seed=2)
    assert g.stats()["nodes_without_in_edges"] == 0


def test_empty_edge_types_when_asked():
    g = generate("aifb", empty_edge_types=5, seed=4)
    counts = np.bincount(g.etype, minlength=g.num_edge_types)
    assert np.count_nonzero(counts == 0) == 5
    assert g.stats()["empty_edge_types"] == 5
    assert g.num_edges == PUBLISHED["aifb"][1]
    assert abs(unique_pair_ratio(g) - 0.6) <= 0.02


def test_isolated_nodes_when_asked():
    g = generate("mutag", isolated_fraction=0.25, seed=4)
    touched = np.zeros(g.num_nodes, bool)
    touched[g.src] = True
    touched[g.dst] = True
    sizes = np.bincount(g.node_type)
    expected = np.floor(0.25 * sizes).astype(int).sum()
    assert g.num_nodes - touched.sum() == expected == g.stats()["isolated_nodes"]


def test_self_loops_and_duplicates_are_counted():
    g = HeteroGraph(3, np.zeros(3, np.int32), np.array([0, 0, 1, 2], np.int32),
                    np.array([0, 1, 1, 2], np.int32), np.zeros(4, np.int32), 1, 1,
                    np.zeros((1, 2), np.int32)).validate()
    st = g.stats()
    assert st["self_loops"] == 3 and st["duplicate_edges"] == 0
    assert st["compaction_ratio"] == 0.75
    assert st["max_in_degree"] == 2 and st["isolated_nodes"] == 0


def test_gini():
    assert gini(np.array([3, 3, 3, 3])) == 0.0
    assert gini(np.array([0, 0, 0, 4])) == pytest.approx(0.75)
    assert gini(np.array([], dtype=np.int64)) == 0.0


def test_save_load_roundtrip(tmp_path):
    g = generate("aifb", scale=0.2, seed=9)
    path = str(tmp_path / "g.npz")
    g.save(path)
    h = HeteroGraph.load(path)
    assert h.name == "aifb" and h.num_nodes == g.num_nodes
    for field in ("node_type", "src", "dst", "etype", "edge_type_endpoints"):
        assert np.array_equal(getattr(g, field), getattr(h, field))
    np.savez(str(tmp_path / "bad.npz"), x=np.zeros(3))
    with pytest.raises(ValueError, match="not a HeteroGraph"):
        HeteroGraph.load(str(tmp_path / "bad.npz"))


def _graph(**over):
    fields = dict(num_nodes=3, node_type=np.array([0, 0, 1], np.int32), src=np.array([0, 1], np.int32),
                  dst=np.array([2, 2], np.int32), etype=np.array([0, 0], np.int32), num_node_types=2,
                  num_edge_types=1, edge_type_endpoints=np.array([[0, 1]], np.int32))
    fields.update(over)
    return HeteroGraph(**fields)


@pytest.mark.parametrize("over, message", [
    (dict(src=np.array([0, 1], np.int64)), "dtype int32"),
    (dict(dst=np.array([2, 3], np.int32)), r"dst values must lie in \[0, 3\)"),
    (dict(etype=np.array([0, 1], np.int32)), "etype values"),
    (dict(dst=np.array([2], np.int32)), "one length"),
    (dict(node_type=np.array([0, 0], np.int32)), "shape"),
    (dict(src=np.array([0, 2], np.int32)), "edge 1 .* starts at node 2 of type 1"),
    (dict(dst=np.array([2, 0], np.int32)), "edge 1 .* ends at node 0 of type 0"),
    (dict(edge_type_endpoints=np.array([[0, 2]], np.int32)), "edge_type_endpoints values"),
    (dict(src=[0, 1]), "numpy array"),
])
def test_validate_rejects_broken_graphs(over, message):
    _graph().validate()
    with pytest.raises(ValueError, match=message):
        _graph(**over).validate()


@pytest.mark.parametrize("kwargs, message", [
    (dict(dataset="nope"), "unknown dataset 'nope'"),
    (dict(dataset="aifb", scale=0), "scale must be a positive"),
    (dict(dataset="aifb", compaction=0.0), "compaction ratio must lie"),
    (dict(dataset="aifb", compaction=1.5), "compaction ratio must lie"),
    (dict(dataset="fb15k", compaction=0.0001), "out of reach"),
    (dict(dataset="mag", scale=0.001, compaction=0.9), "out of reach"),
    (dict(dataset="aifb", degree_exponent=1.0), "degree_exponent must be > 1"),
    (dict(dataset="aifb", empty_edge_types=104), "empty_edge_types"),
    (dict(dataset="aifb", isolated_fraction=1.0), "isolated_fraction"),
    (dict(dataset="aifb", relation_skew=-1), "relation_skew"),
])
def test_bad_arguments_raise_clear_errors(kwargs, message):
    dataset = kwargs.pop("dataset")
    with pytest.raises(ValueError, match=message):
        generate(dataset, **kwargs)


def test_bad_specs_raise_clear_errors():
    with pytest.raises(ValueError, match="cannot fill 5 non-empty node types"):
        custom_spec(4, 10, 5, 2)
    with pytest.raises(ValueError, match="at least one node type"):
        custom_spec(4, 10, 0, 2)
    with pytest.raises(ValueError, match="node_type_sizes"):
        GraphSpec("x", 10, 10, 2, 1, 0.5, node_type_sizes=(3, 3))
    with pytest.raises(ValueError, match="cannot fill 10 non-empty edge types"):
        generate(custom_spec(100, 5, 2, 10))


def test_cli_prints_stats_and_writes_npz(tmp_path, capsys):
    out = str(tmp_path / "a.npz")
    assert main(["aifb", "--scale", "0.5", "--seed", "2", "--stats", "--out", out]) == 0
    text = capsys.readouterr().out
    assert "compaction_ratio" in text and "in_degree_gini" in text
    assert HeteroGraph.load(out).num_edges == round(48_810 * 0.5)
    assert main(["custom", "--nodes", "500", "--edges", "4000", "--node-types", "2",
                 "--edge-types", "3", "--compaction", "0.15", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["edges"] == 4000 and abs(st["compaction_ratio"] - 0.15) <= 0.02
    assert main(["nope"]) == 2
    assert "unknown dataset" in capsys.readouterr().err
