"""The bundled Debian package graph: the committed snapshot, the builder's parsers, the loader."""

import hashlib
import importlib.util
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hector.datasets import debian
from hector.datasets.debian import DebianGraphError, hash_token, hashed_features, load_debian_graph

REPO = Path(__file__).resolve().parents[2]


def _load_builder():
    spec = importlib.util.spec_from_file_location("build_debian_graph", REPO / "scripts" / "build-debian-graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


builder = _load_builder()

# ---------------------------------------------------------------------------
# The committed snapshot


@pytest.fixture(scope="module")
def graph():
    return load_debian_graph()


def test_snapshot_is_small():
    assert debian.DEFAULT_PATH.stat().st_size <= 6_000_000


def test_snapshot_shapes_and_metadata(graph):
    g = graph
    assert g.num_node_types == 4 and g.num_edge_types == 26
    assert g.node_type_names == ["binary_package", "source_package", "maintainer", "debtag"]
    assert g.edge_type_names[:13] == [f[0] for f in builder.FORWARD]
    assert g.edge_type_names[13:] == ["rev-" + f[0] for f in builder.FORWARD]
    for arr in (g.node_type, g.src, g.dst, g.etype, g.edge_type_endpoints):
        assert arr.dtype == np.int32
    assert g.node_type.shape == (g.num_nodes,)
    assert g.src.shape == g.dst.shape == g.etype.shape
    assert g.edge_type_endpoints.shape == (26, 2)
    assert g.features.dtype == np.float32 and g.features.shape == (g.num_nodes, 256)
    assert g.labels.dtype == np.int64 and g.labels.shape == (g.num_nodes,)
    assert len(g.node_names) == g.num_nodes
    assert g.meta["release"]["Origin"] == "Debian" and "Date" in g.meta["release"]
    counts = np.bincount(g.node_type, minlength=4)
    assert [g.meta["node_counts"][t] for t in g.node_type_names] == counts.tolist()
    assert g.num_nodes > 50_000 and g.src.size > 500_000  # a real archive, not a toy


def test_snapshot_edges_are_well_typed(graph):
    g = graph
    assert g.src.min() >= 0 and g.dst.min() >= 0
    assert g.src.max() < g.num_nodes and g.dst.max() < g.num_nodes
    assert np.all(np.diff(g.etype) >= 0)
    np.testing.assert_array_equal(g.node_type[g.src], g.edge_type_endpoints[g.etype, 0])
    np.testing.assert_array_equal(g.node_type[g.dst], g.edge_type_endpoints[g.etype, 1])
    # No duplicate (src, dst, type) triples and no self-loops.
    key = (g.etype.astype(np.int64) * g.num_nodes + g.src) * g.num_nodes + g.dst
    assert np.unique(key).size == key.size
    assert not np.any(g.src == g.dst)


def test_snapshot_every_edge_type_has_its_reverse(graph):
    g = graph
    counts = np.bincount(g.etype, minlength=26)
    for r in range(13):
        rev = g.reverse_edge_type(r)
        assert rev == r + 13 and g.reverse_edge_type(rev) == r
        assert counts[r] == counts[rev] > 0, g.edge_type_names[r]
        np.testing.assert_array_equal(g.edge_type_endpoints[rev], g.edge_type_endpoints[r][::-1])
        fwd = g.src[g.etype == r].astype(np.int64) * g.num_nodes + g.dst[g.etype == r]
        bwd = g.dst[g.etype == rev].astype(np.int64) * g.num_nodes + g.src[g.etype == rev]
        np.testing.assert_array_equal(np.sort(fwd), np.sort(bwd))


def test_snapshot_labels_and_splits(graph):
    g = graph
    assert np.all(g.labels[g.node_type != 0] == -1)
    assert np.all(g.labels[g.node_type == 0] >= 0)  # every binary package in the index has a Section
    assert g.labels.max() == g.num_classes - 1
    splits = [g.train_idx, g.val_idx, g.test_idx]
    for idx in splits:
        assert np.all(np.diff(idx) > 0)
    joined = np.concatenate(splits)
    assert np.unique(joined).size == joined.size  # disjoint
    np.testing.assert_array_equal(np.sort(joined), np.flatnonzero(g.labels >= 0))  # cover
    # Stratified: every class in every split, train share near 60% everywhere.
    for idx in splits:
        assert np.unique(g.labels[idx]).size == g.num_classes
    per_class = np.bincount(g.labels[g.labels >= 0])
    share = np.bincount(g.labels[g.train_idx], minlength=g.num_classes) / per_class
    assert np.all(np.abs(share - 0.6) < 0.01)


def test_snapshot_features(graph):
    norms = np.linalg.norm(graph.features, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))
    assert np.all(norms[graph.node_type == 0] > 0)  # every binary package has a description


def test_snapshot_feature_dim_is_a_parameter():
    g = load_debian_graph(feature_dim=32)
    assert g.features.shape == (g.num_nodes, 32)
    with pytest.raises(ValueError, match="positive"):
        load_debian_graph(feature_dim=0)


def test_majority_baseline_and_stats(graph):
    g = graph
    majority = np.bincount(g.labels[g.train_idx]).argmax()
    expected = np.mean(g.labels[g.test_idx] == majority)
    assert g.majority_baseline() == pytest.approx(expected)
    assert 0 < g.majority_baseline() < 0.5
    with pytest.raises(ValueError, match="split"):
        g.majority_baseline("dev")
    s = g.stats()
    assert sum(s["nodes"].values()) == g.num_nodes
    assert sum(e["count"] for e in s["edges"].values()) == g.src.size
    assert sum(s["labels"].values()) == np.sum(g.labels >= 0)
    report = debian.format_stats(s)
    assert "majority baseline" in report and "rev-tagged" in report


# ---------------------------------------------------------------------------
# Field parsers


def test_relation_field_strips_versions_arches_profiles_qualifiers():
    value = "libc6 (>= 2.34), python3:any | python3-dev (<< 3.12) , foo [amd64 i386] <!nocheck>,\n bar:amd64 (= 1:2.0-1)"
    assert builder.parse_relation_field(value) == [["libc6"], ["python3", "python3-dev"], ["foo"], ["bar"]]
    assert builder.relation_names("aa | bb | cc, dd") == ["aa", "bb", "cc", "dd"]
    assert builder.parse_relation_field("") == []
    assert builder.parse_relation_field("g++-12, libstdc++6 (>= 12), x.org") == [["g++-12"], ["libstdc++6"], ["x.org"]]


@pytest.mark.parametrize("bad", ["foo (>= 1", "Foo", "foo bar", "foo | | bar", "foo)"])
def test_relation_field_rejects_garbage(bad):
    with pytest.raises(ValueError, match="pkg Depends"):
        builder.parse_relation_field(bad, "pkg Depends")


def test_stanzas_multiline_and_errors():
    text = "Package: a\nDescription: short\n line one\n .\n line two\nTag: x::y,\n z::w\n\n\nPackage: b\n"
    st = builder.parse_stanzas(text)
    assert st == [
        {"Package": "a", "Description": "short\n line one\n .\n line two", "Tag": "x::y,\n z::w"},
        {"Package": "b"},
    ]
    assert builder.parse_tags(st[0]["Tag"]) == ["x::y", "z::w"]
    with pytest.raises(ValueError, match="continuation"):
        builder.parse_stanzas(" orphan\n")
    with pytest.raises(ValueError, match=":2: malformed"):
        builder.parse_stanzas("Package: a\nno colon here\n")


def test_release_clearsigned():
    text = (
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\nOrigin: Debian\nSuite: stable\nCodename: x\n"
        "Date: Sat, 01 Jan 2000 00:00:00 UTC\nSHA256:\n abc 12 main/binary-amd64/Packages\n"
        "-----BEGIN PGP SIGNATURE-----\n\nxyz\n-----END PGP SIGNATURE-----\n"
    )
    rel = builder.parse_release(text)
    assert rel["fields"] == {"Origin": "Debian", "Suite": "stable", "Codename": "x", "Date": "Sat, 01 Jan 2000 00:00:00 UTC"}
    assert rel["sha256"] == {"main/binary-amd64/Packages": ("abc", 12)}


@pytest.mark.parametrize(
    "older,newer",
    [("1.0", "1.0-1"), ("1.0~rc1", "1.0"), ("2.0", "1:0.1"), ("1.2.9", "1.2.10"), ("1.0", "1.0a"),
     ("1.0-1", "1.0-1+b1"), ("1.0+dfsg~1", "1.0+dfsg"), ("0.0.26-1", "0.0.26-3")],
)  # fmt: skip
def test_compare_versions(older, newer):
    assert builder.compare_versions(older, newer) < 0
    assert builder.compare_versions(newer, older) > 0
    assert builder.compare_versions(newer, newer) == 0


def test_tokenize_and_maintainer():
    assert builder.tokenize("The GNU C++ compiler, version 12 (for x86-64)!") == ["gnu", "c++", "compiler", "version", "x86"]
    assert builder.parse_maintainer('"Doe, Jane" <Jane@Example.ORG>') == ("Doe, Jane", "jane@example.org")
    assert builder.parse_maintainer("no address") == ("no address", "")
    assert builder.name_tokens(builder.MNT, "Debian Python Team", "team+python@tracker.debian.org") == [
        "debian", "python", "team", "tracker", "debian", "org"
    ]  # fmt: skip
    assert builder.name_tokens(builder.TAG, "implemented-in::c++") == ["implemented", "c++"]


# ---------------------------------------------------------------------------
# A whole build from hand-written stanzas

PACKAGES = """\
Package: alpha
Version: 1.0-1
Maintainer: Jane Doe <Jane@Example.org>
Depends: libbeta1 (>= 1.2), gamma:any | delta (<< 2.0), mta, missing-pkg
Recommends: epsilon [amd64], zeta <!nocheck>
Provides: mta
Conflicts: mta
Description: the alpha tool
Description-md5: 00000000000000000000000000000001
Tag: role::program, interface::commandline,
 use::editing
Section: utils

Package: libbeta1
Source: beta (1.2-3)
Version: 1.2-3
Maintainer: Beta Team <beta@lists.example.com>
Pre-Depends: libc6 (>= 2.34)
Built-Using: gcc-12 (= 12.2.0-14), rustc (= 1.63.0+dfsg1-2)
Description: shared library for beta
Description-md5: 00000000000000000000000000000002
Section: contrib/libs

Package: gamma
Version: 2:0.5
Maintainer: Jane Doe <jane@example.org>
Provides: mta (= 1.0), delta
Breaks: alpha (<< 0.9)
Section: non-free/utils
Description: gamma mail transport agent

Package: gamma
Version: 1:9.9
Maintainer: Someone Else <else@example.net>
Section: games
Description: an older gamma that must lose to epoch 2

Package: delta
Version: 1
Description: the real delta
Section: misc

Package: epsilon
Version: 1
Maintainer: Jane Doe <jane@example.org>
Enhances: alpha
Replaces: alpha
Suggests: libbeta1
"""

TRANSLATIONS = """\
Package: alpha
Description-md5: 00000000000000000000000000000001
Description-en: the alpha tool
 Alpha edits text files. Alpha is fast.
 .
 Second paragraph about editing.

Package: libbeta1
Description-md5: ffffffffffffffffffffffffffffffff
Description-en: stale translation that must not be used
 zebra zebra zebra
"""

EXPECTED_EDGES = {
    "depends": {("alpha", "libbeta1"), ("alpha", "gamma"), ("alpha", "delta")},  # mta -> gamma only (no self-loop)
    "pre-depends": set(),  # libc6 is not in the index
    "recommends": {("alpha", "epsilon")},
    "suggests": {("epsilon", "libbeta1")},
    "enhances": {("epsilon", "alpha")},
    "breaks": {("gamma", "alpha")},
    "conflicts": {("alpha", "gamma")},
    "replaces": {("epsilon", "alpha")},
    "provides": {("gamma", "delta")},  # "mta" is purely virtual: no provides edge
    "built-using": {("libbeta1", "gcc-12"), ("libbeta1", "rustc")},
    "built-from-source": {("alpha", "alpha"), ("libbeta1", "beta"), ("gamma", "gamma"), ("delta", "delta"), ("epsilon", "epsilon")},
    "maintained-by": {
        ("alpha", "Jane Doe <jane@example.org>"),
        ("gamma", "Jane Doe <jane@example.org>"),
        ("epsilon", "Jane Doe <jane@example.org>"),
        ("libbeta1", "Beta Team <beta@lists.example.com>"),
    },
    "tagged": {("alpha", "interface::commandline"), ("alpha", "role::program"), ("alpha", "use::editing")},
}


def _build(tmp_path, name="g.npz", stanzas=None, **kw):
    stanzas = stanzas if stanzas is not None else builder.parse_stanzas(PACKAGES)
    arrays = builder.build_snapshot(stanzas, builder.parse_stanzas(TRANSLATIONS), **kw)
    path = tmp_path / name
    builder.write_npz(path, arrays)
    return path, arrays


def _named_edges(g):
    out = {}
    for r, rel in enumerate(g.edge_type_names):
        sel = g.etype == r
        out[rel] = {(g.node_names[s], g.node_names[d]) for s, d in zip(g.src[sel], g.dst[sel])}
    return out


def test_fixture_graph_edges(tmp_path):
    path, _ = _build(tmp_path, min_section_size=1)
    g = load_debian_graph(path, feature_dim=64)
    edges = _named_edges(g)
    for rel, expected in EXPECTED_EDGES.items():
        assert edges[rel] == expected, rel
        assert edges["rev-" + rel] == {(d, s) for s, d in expected}, rel
    assert g.meta["unresolved_relation_targets"] == {"depends": 1, "pre-depends": 1, "recommends": 1}


def test_fixture_graph_nodes_labels_features(tmp_path):
    path, arrays = _build(tmp_path, min_section_size=1)
    g = load_debian_graph(path, feature_dim=64)
    by_type = {t: [n for n, k in zip(g.node_names, g.node_type) if k == i] for i, t in enumerate(g.node_type_names)}
    assert by_type == {
        "binary_package": ["alpha", "delta", "epsilon", "gamma", "libbeta1"],
        "source_package": ["alpha", "beta", "delta", "epsilon", "gamma", "gcc-12", "rustc"],
        "maintainer": ["Beta Team <beta@lists.example.com>", "Jane Doe <jane@example.org>"],
        "debtag": ["interface::commandline", "role::program", "use::editing"],
    }
    label = {n: (g.label_names[l] if l >= 0 else None) for n, l in zip(g.node_names[:5], g.labels[:5])}
    # gamma's newer stanza wins; archive-area prefixes are stripped; epsilon has no Section.
    assert label == {"alpha": "utils", "delta": "misc", "epsilon": None, "gamma": "utils", "libbeta1": "libs"}
    assert g.label_names == ["libs", "misc", "utils"]
    assert np.all(g.labels[5:] == -1)

    # Token bags: the matching Translation-en text is used, the stale one is not.
    vocab = arrays["vocab"].tobytes().decode().split("\n")
    assert "zebra" not in vocab and "alpha" in vocab and "editing" in vocab
    # epsilon has no description: an all-zero row; every other binary package has one.
    norms = np.linalg.norm(g.features, axis=1)
    assert norms[2] == 0 and np.all(np.abs(norms[[0, 1, 3, 4]] - 1) < 1e-6)


def test_fixture_features_match_a_direct_computation(tmp_path):
    """Rebuild alpha's row straight from its text and compare with the loaded row."""
    path, arrays = _build(tmp_path, min_section_size=1, min_token_nodes=1)
    g = load_debian_graph(path, feature_dim=16)
    text = "the alpha tool\n Alpha edits text files. Alpha is fast.\n Second paragraph about editing."
    row = np.zeros(16)
    for tok in builder.tokenize(text):
        bucket, sign = hash_token(tok, 16)
        row[bucket] += sign
    np.testing.assert_allclose(g.features[0], row / np.linalg.norm(row), rtol=1e-6)


def test_small_sections_merge_into_other(tmp_path):
    path, _ = _build(tmp_path, min_section_size=2)
    g = load_debian_graph(path)
    assert g.label_names == ["other", "utils"]
    assert g.meta["merged_sections"] == ["libs", "misc"]
    assert [g.label_names[l] for l in g.labels[[0, 1, 3, 4]]] == ["utils", "other", "utils", "other"]


def test_builder_is_deterministic(tmp_path):
    first, a = _build(tmp_path, "a.npz")
    second, b = _build(tmp_path, "b.npz")
    shuffled = builder.parse_stanzas(PACKAGES)
    random.Random(7).shuffle(shuffled)
    third, c = _build(tmp_path, "c.npz", stanzas=shuffled)  # input order must not matter
    assert first.read_bytes() == second.read_bytes() == third.read_bytes()
    for key in a:
        np.testing.assert_array_equal(a[key], c[key])


def test_builder_reads_compressed_lists_end_to_end(tmp_path):
    """main() on a fake apt lists dir: gzip/xz inputs, Release hash check, same bytes twice."""
    import gzip
    import lzma

    lists = tmp_path / "lists"
    lists.mkdir()
    pkg_sha = hashlib.sha256(PACKAGES.encode()).hexdigest()
    (lists / "m_debian_dists_test_InRelease").write_text(
        f"Origin: Debian\nSuite: testing\nCodename: test\nDate: Sat, 01 Jan 2000 00:00:00 UTC\n"
        f"SHA256:\n {pkg_sha} {len(PACKAGES)} main/binary-amd64/Packages\n"
    )
    (lists / "m_debian_dists_test_main_binary-amd64_Packages.gz").write_bytes(gzip.compress(PACKAGES.encode()))
    (lists / "m_debian_dists_test_main_i18n_Translation-en.xz").write_bytes(lzma.compress(TRANSLATIONS.encode()))
    args = ["--lists", str(lists), "--suite", "test", "--components", "main", "--min-section-size", "1"]
    assert builder.main(args + ["--out", str(tmp_path / "x.npz")]) == 0
    assert builder.main(args + ["--out", str(tmp_path / "y.npz")]) == 0
    assert (tmp_path / "x.npz").read_bytes() == (tmp_path / "y.npz").read_bytes()
    g = load_debian_graph(tmp_path / "x.npz")
    assert g.meta["release"]["Codename"] == "test"
    assert g.meta["sources"][0] == "main/binary-amd64/Packages (sha256 verified)"
    assert _named_edges(g)["depends"] == EXPECTED_EDGES["depends"]

    # A Packages file that does not match its Release entry is refused.
    (lists / "m_debian_dists_test_main_binary-amd64_Packages.gz").write_bytes(gzip.compress(PACKAGES.encode() + b"\n"))
    with pytest.raises(SystemExit, match="SHA256"):
        builder.main(args + ["--out", str(tmp_path / "z.npz")])


# ---------------------------------------------------------------------------
# Hashing and features


def test_hash_is_stable():
    digest = hashlib.blake2b(b"python", digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    assert hash_token("python", 256) == (h % 256, 1 if h < 2**63 else -1)
    assert hash_token("python", 256) == (168, -1)  # pinned: changing the hash changes every snapshot
    assert hash_token("library", 512) == (39, 1)
    # Independent of Python's per-process hash salt.
    code = "from hector.datasets.debian import hash_token; print(hash_token('python', 256))"
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "(168, -1)"


@pytest.mark.parametrize("rows,vocab_size,dim,chunk", [(1, 1, 1, 8), (7, 30, 8, 3), (50, 200, 64, 16), (5, 10, 4, 8)])
def test_hashed_features_match_a_loop(rows, vocab_size, dim, chunk):
    rng = np.random.default_rng(rows * 1000 + dim)
    vocab = [f"tok{i}" for i in range(vocab_size)]
    lengths = rng.integers(0, 6, size=rows)
    lengths[0] = 0  # an empty row stays all zero
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    tokens = rng.integers(0, vocab_size, size=indptr[-1])
    counts = rng.integers(1, 5, size=indptr[-1]).astype(np.float64)
    got = hashed_features(indptr, tokens, counts, vocab, dim, chunk_rows=chunk)
    want = np.zeros((rows, dim))
    for r in range(rows):
        for j in range(indptr[r], indptr[r + 1]):
            bucket, sign = hash_token(vocab[tokens[j]], dim)
            want[r, bucket] += sign * counts[j]
        norm = np.linalg.norm(want[r])
        if norm > 0:
            want[r] /= norm
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_token_gap_encoding_round_trip():
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 5, size=40)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    rows = [np.sort(rng.choice(1000, size=k, replace=False)) for k in lengths]
    tok = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    gaps = tok.copy()
    gaps[1:] -= tok[:-1]
    starts = indptr[:-1][lengths > 0]
    gaps[starts] = tok[starts]
    np.testing.assert_array_equal(debian._undo_row_gaps(gaps.astype(np.uint16), indptr), tok)


# ---------------------------------------------------------------------------
# Bad snapshot files


def test_missing_snapshot(tmp_path):
    with pytest.raises(FileNotFoundError, match="build-debian-graph.py"):
        load_debian_graph(tmp_path / "nope.npz")


def test_garbage_snapshot(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"this is not a zip file")
    with pytest.raises(DebianGraphError, match="cannot read"):
        load_debian_graph(bad)


def test_snapshot_missing_arrays(tmp_path):
    path = tmp_path / "partial.npz"
    np.savez_compressed(path, labels=np.zeros(3))
    with pytest.raises(DebianGraphError, match="missing arrays"):
        load_debian_graph(path)


@pytest.mark.parametrize(
    "key,mutate,message",
    [
        ("edge_dst", lambda a: a + 1000, "out of range"),
        ("edge_dst", lambda a: a[:-1], "edge array lengths"),
        ("labels", lambda a: np.full_like(a, 2), "not binary packages"),
        ("node_names", lambda a: a[:3], "node names"),
        ("feat_count", lambda a: a[:-1], "feature array lengths"),
        ("train_idx", lambda a: np.append(a, 99999).astype(np.int32), "train_idx"),
    ],
)
def test_corrupt_snapshot(tmp_path, key, mutate, message):
    _, arrays = _build(tmp_path, min_section_size=1)
    arrays[key] = mutate(arrays[key])
    path = tmp_path / "corrupt.npz"
    builder.write_npz(path, arrays)
    with pytest.raises(DebianGraphError, match=message):
        load_debian_graph(path)


def test_edge_endpoint_type_mismatch_is_caught(tmp_path):
    _, arrays = _build(tmp_path, min_section_size=1)
    # The first forward edge is a depends edge (binary -> binary); point it at a maintainer.
    arrays["edge_dst"] = arrays["edge_dst"].copy()
    arrays["edge_dst"][0] = arrays["node_type_offsets"][2]
    path = tmp_path / "typed.npz"
    builder.write_npz(path, arrays)
    with pytest.raises(DebianGraphError, match="wrong node type"):
        load_debian_graph(path)
