#!/usr/bin/env python3
"""Build the bundled heterogeneous graph from Debian's package index.

    # as root: fetch bookworm's index into a private apt directory, then build
    python3 scripts/build-debian-graph.py --fetch --out examples/data/debian-packages.npz
    # or rebuild from lists fetched earlier (no root, no network)
    python3 scripts/build-debian-graph.py --lists /tmp/hector-debian-apt/lists --out ...

The graph, the parsing rules and the snapshot format are described in
docs/debian-graph.md; `python/hector/datasets/debian.py` loads the snapshot.
The same index always gives the same snapshot, byte for byte: every list is
sorted, the split uses a keyed hash instead of a random generator, and the
.npz is written with fixed zip timestamps.
"""

from __future__ import annotations

import argparse
import bz2
import collections
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1

NODE_TYPES = ("binary_package", "source_package", "maintainer", "debtag")
BIN, SRC, MNT, TAG = range(4)

# Forward relations: (edge type name, stanza field or None, src type, dst type).
# Edge type r + len(FORWARD) is the reverse of r (named "rev-<name>").
FORWARD = (
    ("depends", "Depends", BIN, BIN),
    ("pre-depends", "Pre-Depends", BIN, BIN),
    ("recommends", "Recommends", BIN, BIN),
    ("suggests", "Suggests", BIN, BIN),
    ("enhances", "Enhances", BIN, BIN),
    ("breaks", "Breaks", BIN, BIN),
    ("conflicts", "Conflicts", BIN, BIN),
    ("replaces", "Replaces", BIN, BIN),
    ("provides", "Provides", BIN, BIN),
    ("built-using", "Built-Using", BIN, SRC),
    ("built-from-source", None, BIN, SRC),
    ("maintained-by", None, BIN, MNT),
    ("tagged", None, BIN, TAG),
)
# Relation fields whose targets are binary package names (resolved through Provides).
BINARY_RELATION_FIELDS = tuple(f for _, f, _, d in FORWARD if f and d == BIN and f != "Provides")

# Dependency-free defaults; every one of them is recorded in the snapshot's metadata.
DEFAULTS = dict(
    min_section_size=100,  # sections with fewer binary packages are merged into "other"
    min_token_nodes=2,  # a token must occur in at least this many nodes to enter the vocabulary
    split_seed=0,
    split_fractions=(0.6, 0.2, 0.2),  # train / val / test, per section (stratified)
)

DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SUITE = "bookworm"
DEFAULT_COMPONENTS = ("main", "contrib", "non-free", "non-free-firmware")
DEFAULT_ARCH = "amd64"
DEFAULT_APT_DIR = "/tmp/hector-debian-apt"

# ---------------------------------------------------------------------------
# Reading deb822 index files


def read_index_text(path: Path) -> str:
    """Text of an index file, decompressing by extension (.lz4/.zst through apt's own helper)."""
    path = Path(path)
    suffix = path.suffix
    try:
        if suffix == ".gz":
            data = gzip.decompress(path.read_bytes())
        elif suffix == ".xz":
            data = lzma.decompress(path.read_bytes())
        elif suffix == ".bz2":
            data = bz2.decompress(path.read_bytes())
        elif suffix in (".lz4", ".zst"):
            helper = "/usr/lib/apt/apt-helper"
            cmd = [helper, "cat-file", str(path)] if os.path.exists(helper) else ["lz4cat", str(path)]
            data = subprocess.run(cmd, check=True, capture_output=True).stdout
        else:
            data = path.read_bytes()
    except (OSError, EOFError, lzma.LZMAError, subprocess.CalledProcessError) as exc:
        raise ValueError(f"cannot read index file {path}: {exc}") from exc
    return data.decode("utf-8")


def parse_stanzas(text: str, origin: str = "<text>") -> list[dict[str, str]]:
    """Split a deb822 file into stanzas. Continuation lines are kept, joined by '\\n'."""
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    key = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            if current:
                stanzas.append(current)
            current, key = {}, None
        elif line[0] in " \t":
            if key is None:
                raise ValueError(f"{origin}:{lineno}: continuation line before any field")
            current[key] += "\n" + line
        else:
            key, sep, value = line.partition(":")
            if not sep or not key or " " in key:
                raise ValueError(f"{origin}:{lineno}: malformed field line {line!r}")
            current[key] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


def parse_release(text: str) -> dict:
    """Fields of a Release or (clear-signed) InRelease file, plus its SHA256 table."""
    if text.startswith("-----BEGIN PGP SIGNED MESSAGE-----"):
        body = text.split("\n\n", 1)[1]  # drop the armour header ("Hash: ...")
        text = body.split("-----BEGIN PGP SIGNATURE-----", 1)[0]
    stanzas = parse_stanzas(text, "Release")
    if not stanzas:
        raise ValueError("empty Release file")
    fields = stanzas[0]
    sha256 = {}
    for line in fields.get("SHA256", "").splitlines():
        parts = line.split()
        if len(parts) == 3:
            sha256[parts[2]] = (parts[0], int(parts[1]))
    info = {k: fields[k] for k in ("Origin", "Label", "Suite", "Version", "Codename", "Date") if k in fields}
    return {"fields": info, "sha256": sha256}


# ---------------------------------------------------------------------------
# Field parsers

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9+.\-]+$")


def parse_relation_field(value: str, where: str = "") -> list[list[str]]:
    """Package names of a relation field: one inner list of alternatives per comma group.

    Version constraints "(>= 1.0)", architecture lists "[amd64]", build profiles
    "<!nocheck>" and architecture qualifiers ":any" / ":amd64" are dropped.
    """
    groups = []
    for group in value.split(","):
        if not group.strip():
            continue
        alternatives = []
        for alt in group.split("|"):
            bare = re.sub(r"\([^)]*\)|\[[^\]]*\]|<[^>]*>", " ", alt)
            if re.search(r"[()\[\]<>]", bare):
                raise ValueError(f"{where}: unbalanced brackets in relation {alt.strip()!r}")
            words = bare.split()
            if len(words) != 1:
                raise ValueError(f"{where}: cannot parse relation {alt.strip()!r}")
            name = words[0].split(":", 1)[0]
            if not _NAME_RE.match(name):
                raise ValueError(f"{where}: invalid package name {name!r} in {alt.strip()!r}")
            alternatives.append(name)
        groups.append(alternatives)
    return groups


def relation_names(value: str, where: str = "") -> list[str]:
    """All alternatives of a relation field, flattened: each one becomes its own edge."""
    return [name for group in parse_relation_field(value, where) for name in group]


def parse_source_field(stanza: dict[str, str]) -> str:
    """Source package of a binary stanza: "Source: name (version)", else the package's own name."""
    value = stanza.get("Source", "").split("(")[0].strip()
    return value or stanza["Package"]


def parse_maintainer(value: str) -> tuple[str, str]:
    """("Full Name", "e-mail") of an RFC-822-style "Full Name <e-mail>"."""
    match = re.match(r"^\s*(.*?)\s*<([^>]*)>\s*$", value)
    if not match:
        return value.strip(), ""
    return match.group(1).strip().strip('"'), match.group(2).strip().lower()


def parse_tags(value: str) -> list[str]:
    """Debtags of a "Tag:" field ("facet::value, ..."), sorted, without duplicates."""
    return sorted({t.strip() for t in value.replace("\n", " ").split(",") if t.strip()})


def strip_section(section: str) -> str:
    """Section without its archive area: "non-free/libs" -> "libs"."""
    return section.rsplit("/", 1)[-1].strip()


# Debian version ordering (deb-version(7)), used to keep one stanza per package name.


def _order(c: str) -> int:
    if c == "~":
        return -1
    if c.isdigit():
        return 0
    if c.isalpha():
        return ord(c)
    return ord(c) + 256


def _compare_fragment(a: str, b: str) -> int:
    i = j = 0
    while i < len(a) or j < len(b):
        # Non-digit runs compare character by character ("~" before everything, letters before other marks) ...
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        # ... then digit runs compare as numbers.
        si, sj = i, j
        while i < len(a) and a[i].isdigit():
            i += 1
        while j < len(b) and b[j].isdigit():
            j += 1
        diff = int(a[si:i] or 0) - int(b[sj:j] or 0)
        if diff:
            return diff
    return 0


def compare_versions(a: str, b: str) -> int:
    """<0, 0, >0 as Debian version a sorts before, equal to, or after b."""

    def split(v: str) -> tuple[int, str, str]:
        epoch, _, rest = v.partition(":") if ":" in v else ("0", "", v)
        upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "0")
        return int(epoch or 0), upstream, revision

    ea, ua, ra = split(a)
    eb, ub, rb = split(b)
    if ea != eb:
        return ea - eb
    return _compare_fragment(ua, ub) or _compare_fragment(ra, rb)


# ---------------------------------------------------------------------------
# Text -> tokens

STOPWORDS = frozenset(
    """a about above after again all also an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from
    further had has have having here how i if in into is it its itself just may more most
    must no nor not now of off on once only or other our out over own same shall should so
    some such than that the their them then there these they this those through to too
    under until up upon very was we were what when where which while who whom why will with
    within without would you your""".split()
)
_TOKEN_RE = re.compile(r"[a-z0-9][a-z0-9+]*")


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; stopwords, one-character tokens and bare numbers dropped."""
    return [
        t
        for t in _TOKEN_RE.findall(text.lower())
        if len(t) > 1 and t not in STOPWORDS and not t.isdigit()
    ]


def description_text(stanza: dict[str, str], long_descriptions: dict) -> str:
    """Short + long description: the Translation-en text when it matches, else Packages' own."""
    key = (stanza["Package"], stanza.get("Description-md5", ""))
    text = long_descriptions.get(key) or stanza.get("Description", "")
    # Continuation lines of " ." are paragraph breaks, not words.
    return "\n".join(line for line in text.splitlines() if line.strip() != ".")


def name_tokens(node_type: int, name: str, extra: str = "") -> list[str]:
    """Tokens of a node that has no description: its name (and a maintainer's e-mail domain)."""
    if node_type == MNT:
        domain = extra.rpartition("@")[2]
        return tokenize(name) + tokenize(domain.replace(".", " "))
    return tokenize(name.replace("::", " "))


# ---------------------------------------------------------------------------
# Graph assembly


def select_packages(stanzas: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    """One stanza per package name: the highest version (Packages may list a name twice)."""
    chosen: dict[str, dict[str, str]] = {}
    for st in stanzas:
        if "Package" not in st:
            raise ValueError(f"stanza without a Package field: {sorted(st)[:5]}")
        name = st["Package"]
        if not _NAME_RE.match(name):
            raise ValueError(f"invalid package name {name!r}")
        old = chosen.get(name)
        if old is None or compare_versions(st.get("Version", "0"), old.get("Version", "0")) > 0:
            chosen[name] = st
    return chosen


def long_description_table(translation_stanzas: list[dict[str, str]]) -> dict:
    """(package, Description-md5) -> full English description."""
    table = {}
    for st in translation_stanzas:
        if "Package" in st and "Description-en" in st:
            table[(st["Package"], st.get("Description-md5", ""))] = st["Description-en"]
    return table


def _stable_key(seed: int, name: str) -> bytes:
    return hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=16).digest()


def make_split(labels: np.ndarray, names: list[str], seed: int, fractions) -> tuple:
    """Stratified train/val/test of the labelled nodes. The order inside each class is a
    keyed hash of the node name, so the split does not depend on numpy's RNG streams."""
    train, val, test = [], [], []
    for cls in np.unique(labels[labels >= 0]):
        members = sorted(np.flatnonzero(labels == cls).tolist(), key=lambda i: _stable_key(seed, names[i]))
        n = len(members)
        n_train = int(round(fractions[0] * n))
        n_val = int(round(fractions[1] * n))
        train += members[:n_train]
        val += members[n_train : n_train + n_val]
        test += members[n_train + n_val :]
    return tuple(np.array(sorted(x), dtype=np.int32) for x in (train, val, test))


def build_snapshot(
    package_stanzas: list[dict[str, str]],
    translation_stanzas: list[dict[str, str]] = (),
    release: dict | None = None,
    *,
    min_section_size: int = DEFAULTS["min_section_size"],
    min_token_nodes: int = DEFAULTS["min_token_nodes"],
    split_seed: int = DEFAULTS["split_seed"],
    split_fractions=DEFAULTS["split_fractions"],
    sources: list[str] = (),
) -> dict[str, np.ndarray]:
    """All arrays of the snapshot (see docs/debian-graph.md for the format)."""
    packages = select_packages(package_stanzas)
    long_desc = long_description_table(translation_stanzas)
    bin_names = sorted(packages)

    # Every name a package provides; a purely virtual name resolves to all its providers.
    providers: dict[str, set[str]] = collections.defaultdict(set)
    for name in bin_names:
        for target in relation_names(packages[name].get("Provides", ""), f"{name} Provides"):
            providers[target].add(name)

    def resolve(target: str) -> list[str]:
        if target in packages:
            return [target]  # a real package of that name wins over providers
        return sorted(providers.get(target, ()))

    # Nodes of the other types, keyed by the identity they are merged on.
    source_names, maintainers, tag_names = set(), {}, set()
    for name in bin_names:
        st = packages[name]
        source_names.add(parse_source_field(st))
        source_names.update(relation_names(st.get("Built-Using", ""), f"{name} Built-Using"))
        if st.get("Maintainer"):
            full, email = parse_maintainer(st["Maintainer"])
            ident = email or full.lower()
            # Several spellings of one address: keep the smallest, for determinism.
            display = f"{full} <{email}>" if email else full
            maintainers[ident] = min(maintainers.get(ident, display), display)
        tag_names.update(parse_tags(st.get("Tag", "")))
    mnt_keys = sorted(maintainers)
    type_names = [bin_names, sorted(source_names), [maintainers[k] for k in mnt_keys], sorted(tag_names)]
    offsets = np.cumsum([0] + [len(x) for x in type_names]).astype(np.int64)
    index = [
        {n: int(offsets[BIN]) + i for i, n in enumerate(bin_names)},
        {n: int(offsets[SRC]) + i for i, n in enumerate(type_names[SRC])},
        {k: int(offsets[MNT]) + i for i, k in enumerate(mnt_keys)},
        {n: int(offsets[TAG]) + i for i, n in enumerate(type_names[TAG])},
    ]
    num_nodes = int(offsets[-1])

    # Forward edges; reverse ones are derived at load time.
    edges = [set() for _ in FORWARD]
    unresolved = collections.Counter()
    for name in bin_names:
        st, u = packages[name], index[BIN][name]
        for r, (rel, field, _, dst_type) in enumerate(FORWARD):
            if field == "Provides":
                targets = [t for t in relation_names(st.get(field, ""), name) if t in packages]
            elif field in BINARY_RELATION_FIELDS:
                targets = []
                for t in relation_names(st.get(field, ""), f"{name} {field}"):
                    found = resolve(t)
                    unresolved[rel] += not found
                    targets += found
            elif field == "Built-Using":
                targets = relation_names(st.get(field, ""), f"{name} {field}")
            elif rel == "built-from-source":
                targets = [parse_source_field(st)]
            elif rel == "maintained-by":
                if not st.get("Maintainer"):
                    continue
                full, email = parse_maintainer(st["Maintainer"])
                targets = [email or full.lower()]
            else:  # tagged
                targets = parse_tags(st.get("Tag", ""))
            for t in targets:
                v = index[dst_type][t]
                if v != u:  # self-loops come from a package conflicting with its own virtual name
                    edges[r].add((u, v))
    edge_lists = [sorted(e) for e in edges]
    edge_ptr = np.cumsum([0] + [len(e) for e in edge_lists]).astype(np.int32)
    flat = [p for e in edge_lists for p in e]
    edge_src = np.array([p[0] for p in flat], dtype=np.int32)
    edge_dst = np.array([p[1] for p in flat], dtype=np.int32)

    # Labels: the binary package's section, small sections merged into "other".
    sections = {n: strip_section(packages[n].get("Section", "")) for n in bin_names}
    counts = collections.Counter(s for s in sections.values() if s)
    kept = sorted(s for s, c in counts.items() if c >= min_section_size)
    merged = sorted(s for s, c in counts.items() if c < min_section_size)
    label_names = sorted(set(kept) | ({"other"} if merged else set()))
    label_of = {s: label_names.index(s if s in kept else "other") for s in counts}
    labels = np.full(num_nodes, -1, dtype=np.int16)
    for n in bin_names:
        if sections[n]:
            labels[index[BIN][n]] = label_of[sections[n]]

    # Token bags: descriptions for binary packages, names for the other node types.
    node_names = [n for names in type_names for n in names]
    bags: list[collections.Counter] = []
    for n in bin_names:
        bags.append(collections.Counter(tokenize(description_text(packages[n], long_desc))))
    for n in type_names[SRC]:
        bags.append(collections.Counter(name_tokens(SRC, n)))
    for k in mnt_keys:
        full, email = parse_maintainer(maintainers[k])
        bags.append(collections.Counter(name_tokens(MNT, full, email)))
    for n in type_names[TAG]:
        bags.append(collections.Counter(name_tokens(TAG, n)))
    doc_freq = collections.Counter(t for bag in bags for t in bag)
    vocab = sorted(t for t, c in doc_freq.items() if c >= min_token_nodes)
    token_id = {t: i for i, t in enumerate(vocab)}
    indptr, tok, cnt = [0], [], []
    for bag in bags:
        row = sorted((token_id[t], min(c, 255)) for t, c in bag.items() if t in token_id)
        tok += [i for i, _ in row]
        cnt += [c for _, c in row]
        indptr.append(len(tok))
    tok = np.array(tok, dtype=np.int32)
    indptr = np.array(indptr, dtype=np.int32)
    # Token ids are sorted inside each row: store the gaps, which compress far better.
    tok_delta = tok.copy()
    starts = indptr[:-1][np.diff(indptr) > 0]
    tok_delta[1:] -= tok[:-1]
    tok_delta[starts] = tok[starts]

    train_idx, val_idx, test_idx = make_split(labels, node_names, split_seed, split_fractions)

    node_counts = {NODE_TYPES[t]: len(type_names[t]) for t in range(len(NODE_TYPES))}
    meta = {
        "format_version": FORMAT_VERSION,
        "name": "debian-packages",
        "node_type_names": list(NODE_TYPES),
        "forward_edge_type_names": [f[0] for f in FORWARD],
        "forward_edge_type_endpoints": [[f[2], f[3]] for f in FORWARD],
        "label_names": label_names,
        "merged_sections": merged,
        "release": (release or {}).get("fields", {}),
        "sources": list(sources),
        "node_counts": node_counts,
        "forward_edge_counts": {f[0]: len(e) for f, e in zip(FORWARD, edge_lists)},
        "unresolved_relation_targets": {k: unresolved[k] for k in sorted(unresolved) if unresolved[k]},
        "vocabulary_size": len(vocab),
        "params": {
            "min_section_size": min_section_size,
            "min_token_nodes": min_token_nodes,
            "split_seed": split_seed,
            "split_fractions": list(split_fractions),
        },
    }
    return {
        "meta_json": np.frombuffer(json.dumps(meta, sort_keys=True, indent=1).encode(), dtype=np.uint8),
        "node_type_offsets": offsets.astype(np.int32),
        "node_names": _join(node_names),
        "edge_type_ptr": edge_ptr,
        "edge_src": edge_src,
        "edge_dst": edge_dst,
        "labels": labels,
        "vocab": _join(vocab),
        "feat_indptr": indptr,
        "feat_token_delta": tok_delta.astype(np.uint16 if len(vocab) < 65536 else np.int32),
        "feat_count": np.array(cnt, dtype=np.uint8),
        "train_idx": train_idx,
        "val_idx": val_idx,
        "test_idx": test_idx,
    }


def _join(strings: list[str]) -> np.ndarray:
    """A list of strings as one newline-separated uint8 buffer (no pickled object arrays)."""
    for s in strings:
        if "\n" in s:
            raise ValueError(f"name with a newline: {s!r}")
    return np.frombuffer("\n".join(strings).encode(), dtype=np.uint8)


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """np.savez_compressed, but with fixed timestamps and order, so the bytes are reproducible."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue(), compresslevel=9)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# Inputs: a private apt lists directory


def fetch_lists(apt_dir: Path, mirror: str, suite: str, components, arch: str) -> Path:
    """`apt-get update` into a private directory (needs root); the machine's apt setup is untouched."""
    if shutil.which("apt-get") is None:
        raise SystemExit("--fetch needs apt-get")
    apt_dir = Path(apt_dir)
    lists = apt_dir / "lists"
    for d in (lists / "partial", apt_dir / "cache" / "archives" / "partial", apt_dir / "empty.d"):
        d.mkdir(parents=True, exist_ok=True)
    sources = apt_dir / "sources.list"
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    sources.write_text(f"deb [arch={arch} signed-by={keyring}] {mirror} {suite} {' '.join(components)}\n")
    opts = {
        "Dir::Etc::SourceList": sources,
        "Dir::Etc::SourceParts": apt_dir / "empty.d",
        "Dir::State::Lists": lists,
        "Dir::Cache": apt_dir / "cache",
        "Acquire::Languages": "en",  # the long descriptions live in Translation-en
        "Acquire::GzipIndexes": "false",  # keep the lists as plain text
        "APT::Architectures": arch,
    }
    cmd = ["apt-get", "update"] + [a for k, v in opts.items() for a in ("-o", f"{k}={v}")]
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)
    return lists


_INDEX_EXTENSIONS = ("", ".gz", ".xz", ".bz2", ".lz4", ".zst")


def discover_inputs(lists: Path, suite: str, components, arch: str) -> dict:
    """Paths of the Release, Packages and Translation-en files of the suite in an apt lists dir."""
    lists = Path(lists)
    if not lists.is_dir():
        raise SystemExit(f"no apt lists directory at {lists} (use --fetch as root first)")

    def one(pattern: str, required: bool) -> Path | None:
        # The plain file sorts before its compressed forms, so it is preferred.
        found = sorted(p for ext in _INDEX_EXTENSIONS for p in lists.glob(pattern + ext))
        if not found and required:
            raise SystemExit(f"missing {pattern} in {lists}")
        return found[0] if found else None

    release = one(f"*_dists_{suite}_InRelease", False) or one(f"*_dists_{suite}_Release", True)
    packages, translations = [], []
    for comp in components:
        packages.append(one(f"*_dists_{suite}_{comp}_binary-{arch}_Packages", True))
        tr = one(f"*_dists_{suite}_{comp}_i18n_Translation-en", False)
        if tr is None:
            print(f"warning: no Translation-en for {comp}: only short descriptions", file=sys.stderr)
        else:
            translations.append(tr)
    return {"release": release, "packages": packages, "translations": translations}


def verify_against_release(text: str, path: Path, release: dict, component: str, arch: str) -> bool:
    """Check an uncompressed Packages text against the Release file's SHA256 table, if listed."""
    entry = release["sha256"].get(f"{component}/binary-{arch}/Packages")
    if entry is None:
        return False
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if digest != entry[0]:
        raise SystemExit(f"{path} does not match the Release file's SHA256: stale or corrupt lists")
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fetch", action="store_true", help="run apt-get update into --apt-dir first (root)")
    ap.add_argument("--apt-dir", default=DEFAULT_APT_DIR, help="private apt state directory for --fetch")
    ap.add_argument("--lists", help="apt lists directory to read (default: <apt-dir>/lists)")
    ap.add_argument("--mirror", default=DEFAULT_MIRROR)
    ap.add_argument("--suite", default=DEFAULT_SUITE)
    ap.add_argument("--components", default=",".join(DEFAULT_COMPONENTS))
    ap.add_argument("--arch", default=DEFAULT_ARCH)
    ap.add_argument("--min-section-size", type=int, default=DEFAULTS["min_section_size"])
    ap.add_argument("--min-token-nodes", type=int, default=DEFAULTS["min_token_nodes"])
    ap.add_argument("--split-seed", type=int, default=DEFAULTS["split_seed"])
    ap.add_argument("--out", default="examples/data/debian-packages.npz")
    args = ap.parse_args(argv)

    components = [c for c in args.components.split(",") if c]
    lists = Path(args.lists or Path(args.apt_dir) / "lists")
    if args.fetch:
        lists = fetch_lists(Path(args.apt_dir), args.mirror, args.suite, components, args.arch)
    inputs = discover_inputs(lists, args.suite, components, args.arch)
    release = parse_release(read_index_text(inputs["release"]))

    package_stanzas, translation_stanzas, sources = [], [], []
    for comp, path in zip(components, inputs["packages"]):
        text = read_index_text(path)
        verified = verify_against_release(text, path, release, comp, args.arch)
        package_stanzas += parse_stanzas(text, str(path))
        sources.append(f"{comp}/binary-{args.arch}/Packages" + (" (sha256 verified)" if verified else ""))
    for path in inputs["translations"]:
        translation_stanzas += parse_stanzas(read_index_text(path), str(path))
        sources.append(path.name.split("_dists_", 1)[-1].replace("_", "/"))

    arrays = build_snapshot(
        package_stanzas,
        translation_stanzas,
        release,
        min_section_size=args.min_section_size,
        min_token_nodes=args.min_token_nodes,
        split_seed=args.split_seed,
        sources=sources,
    )
    write_npz(Path(args.out), arrays)
    meta = json.loads(arrays["meta_json"].tobytes())
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.2f} MB)")
    print(json.dumps({k: meta[k] for k in ("release", "node_counts", "forward_edge_counts")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
