"""Compile hgraph IR with hectorc, through a cache shared by processes and machines.

    lib = hector.compile(hector.models.generate("rgat", 64, heads=4), target="cpu")
    lib.rgat(...)                      # a hector.compiled.CompiledLibrary

Every build is stored in the cache directory (`cache_dir=`, else
$HECTOR_CACHE_DIR, else ~/.cache/hector) and found there again next time.

* The **key** names what is built: sha256 of the IR text, the target, the GPU
  architecture, the hectorc flags (`--training` included) and the cache
  layout version. It can be computed anywhere, without a compiler.
* The **artifact id** names one build of a key: sha256 of the key and the
  compiler's identity (`hectorc --version` plus a hash of the hectorc binary,
  so that a rebuilt compiler never serves stale code). Artifacts live in
  `<cache>/lib/<artifact id>/`; `<cache>/index/<key>` names the newest
  artifact of each key.

With hectorc at hand, compile() looks up the artifact id and builds it when
it is missing. Without one (the GPU machines), it loads the artifact that
`<cache>/index/<key>` names, built ahead of time by ``python3 -m hector.aot``,
and a missing key raises MissingArtifactError naming the key, the model and
the target. Writes are atomic: a build goes to a temporary directory inside
the cache and is renamed into place (the first of two racing processes wins;
the other uses its result), and index entries are replaced with os.replace.

Every file of an artifact (the library, its manifest, ...) is recorded in its
meta.json with its size and sha256 when it is written, and checked before the
artifact is loaded (once per process): a damaged artifact (an interrupted
copy, a bad disk) is rebuilt when hectorc is at hand, and raises
DamagedArtifactError naming the file otherwise. It is never loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
import re
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Optional, Sequence

from . import compiled

__all__ = ["compile", "resolve_cache_dir", "find_compiler", "compiler_identity", "key_of",
           "supports_training", "CompileError", "MissingArtifactError",
           "DamagedArtifactError", "TARGETS",
           "DEFAULT_GPU_ARCH", "CACHE_ENV"]

CACHE_ENV = "HECTOR_CACHE_DIR"
BUILD_DIR_ENV = "HECTOR_BUILD_DIR"
CACHE_LAYOUT = 1  # bump when the layout of a cache directory changes
TARGETS = ("cpu", "cuda")
DEFAULT_GPU_ARCH = "sm_90"  # hectorc's default; the H100 and H200 machines
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Options that compile() sets itself (or that would not write a library).
_RESERVED = ("-o", "--emit", "--target", "--gpu-arch", "--training", "--help", "--version")


class CompileError(RuntimeError):
    """hectorc rejected the model or failed; the message has its diagnostics
    (`file:line:col: error: ...`)."""

    def __init__(self, message: str, key: str = "", stderr: str = ""):
        super().__init__(message)
        self.key = key
        self.stderr = stderr


class MissingArtifactError(LookupError):
    """No artifact for `key` in the cache and no compiler to build it."""

    def __init__(self, message: str, key: str, description: str, cache: str):
        super().__init__(message)
        self.key = key
        self.description = description
        self.cache_dir = cache

    def __str__(self) -> str:  # LookupError would quote the message like a KeyError
        return self.args[0]


class DamagedArtifactError(MissingArtifactError):
    """The cached artifact for `key` does not match the sizes and hashes
    recorded when it was written (`path` names the file), and there is no
    compiler to rebuild it. A MissingArtifactError: there is no usable
    artifact for the key."""

    def __init__(self, message: str, key: str, description: str, cache: str, path: str):
        super().__init__(message, key, description, cache)
        self.path = path


# ---- where things are -------------------------------------------------------

def resolve_cache_dir(path=None) -> str:
    """The cache directory: `path`, else $HECTOR_CACHE_DIR, else ~/.cache/hector."""
    if path is None:
        path = os.environ.get(CACHE_ENV) or os.path.join(
            os.path.expanduser("~"), ".cache", "hector")
    return os.path.abspath(os.fspath(path))


def _compiler_candidates() -> list:
    found = []
    if os.environ.get(BUILD_DIR_ENV):
        found.append(os.path.join(os.environ[BUILD_DIR_ENV], "bin", "hectorc"))
    on_path = shutil.which("hectorc")
    if on_path:
        found.append(on_path)
    found.append(os.path.join(_REPO, "build", "bin", "hectorc"))
    return found


def find_compiler(compiler=None) -> Optional[str]:
    """The hectorc to use, or None: `compiler` when given (False: none), else
    $HECTOR_BUILD_DIR/bin/hectorc, else hectorc on PATH, else the
    repository's build/bin/hectorc."""
    if compiler is False:
        return None
    if compiler is not None:
        path = os.fspath(compiler)
        if not os.access(path, os.X_OK):
            raise FileNotFoundError(f"hectorc {path!r} does not exist or is not executable")
        return os.path.abspath(path)
    return next((os.path.abspath(p) for p in _compiler_candidates()
                 if os.path.isfile(p) and os.access(p, os.X_OK)), None)


_identities: dict = {}
_lock = threading.Lock()


def compiler_identity(path: str) -> str:
    """`hectorc --version` and the sha256 of the binary, memoized per file
    version. Raises OSError when the binary does not run (e.g. a copy
    without its LLVM libraries)."""
    st = os.stat(path)
    memo = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
    with _lock:
        if memo in _identities:
            return _identities[memo]
    try:
        result = subprocess.run([path, "--version"], capture_output=True, text=True,
                                timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise OSError(f"{path} --version failed: {err}") from None
    if result.returncode != 0:
        raise OSError(f"{path} --version failed (exit {result.returncode}): "
                      f"{result.stderr.strip() or result.stdout.strip()}")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    identity = f"{result.stdout.strip()} sha256:{digest.hexdigest()}"
    with _lock:
        _identities[memo] = identity
    return identity


_training: dict = {}


def supports_training(compiler=None) -> bool:
    """Whether the hectorc that compile() would use has `--training`
    (memoized per file version)."""
    path = find_compiler(compiler)
    if path is None:
        return False
    st = os.stat(path)
    memo = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
    if memo not in _training:
        try:
            result = subprocess.run([path, "--help"], capture_output=True, text=True,
                                    timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
        _training[memo] = re.search(r"^\s*--training\b", result.stdout, re.M) is not None
    return _training[memo]


# ---- keys -------------------------------------------------------------------

def _normalize(target: str, gpu_arch, flags, training: bool):
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    if target == "cpu":
        if gpu_arch is not None:
            raise ValueError("gpu_arch is for target 'cuda' only")
    else:
        gpu_arch = DEFAULT_GPU_ARCH if gpu_arch is None else gpu_arch
        if not isinstance(gpu_arch, str) or not re.fullmatch(r"sm_[0-9]+[a-z]?", gpu_arch):
            raise ValueError(f"gpu_arch must look like 'sm_90', got {gpu_arch!r}")
    if isinstance(flags, str):
        raise TypeError("flags must be a sequence of options, e.g. ['--opt-level=3'], "
                        "not one string")
    flags = list(flags)
    for flag in flags:
        if not isinstance(flag, str) or not flag.startswith("-"):
            raise ValueError(f"flags must be hectorc options such as '--opt-level=3', "
                             f"got {flag!r}")
        option = flag.split("=", 1)[0]
        if option in _RESERVED:
            raise ValueError(f"flag {flag!r} is set by compile() itself: use its "
                             "target/gpu_arch/training arguments")
    if training:
        flags.append("--training")
    return gpu_arch, flags


def _digest(fields: dict) -> str:
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def key_of(source: str, target: str = "cpu", *, training: bool = False, gpu_arch=None,
           flags: Sequence[str] = ()) -> str:
    """The cache key of compiling `source` (IR text) this way; no compiler needed."""
    gpu_arch, flags = _normalize(target, gpu_arch, flags, training)
    return _digest(_key_fields(_source_text(source), target, gpu_arch, flags))


def _key_fields(text: str, target: str, gpu_arch, flags: list) -> dict:
    return {"layout": CACHE_LAYOUT, "ir_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "target": target, "gpu_arch": gpu_arch, "flags": flags}


def _source_text(source) -> str:
    if isinstance(source, os.PathLike):
        with open(source, encoding="utf-8") as f:
            return f.read()
    if not isinstance(source, str):
        raise TypeError(f"source must be hgraph IR text (str) or a path (os.PathLike), "
                        f"got {type(source).__name__}")
    if not source.strip():
        raise ValueError("source is empty: expected hgraph IR text")
    return source


def _functions(text: str) -> list:
    return re.findall(r"hgraph\.func\s+@([A-Za-z_][A-Za-z0-9_$.]*)", text)


def _describe(text: str, target: str, gpu_arch, flags: list, description) -> str:
    what = description or ("model " + ", ".join("@" + f for f in _functions(text))
                           if _functions(text) else "the model")
    where = f"target {target}" + (f" ({gpu_arch})" if gpu_arch else "")
    return f"{what}, {where}" + (f", flags {' '.join(flags)}" if flags else "")


# ---- the cache ----------------------------------------------------------------

_loaded: dict = {}  # artifact directory -> CompiledLibrary, in this process


class _Damaged(Exception):
    """An artifact that fails verification: `path` and what is wrong."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def _file_record(path: str) -> dict:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return {"size": size, "sha256": digest.hexdigest()}


def _record_files(directory: str) -> dict:
    """{name: {size, sha256}} of every file of an artifact but meta.json."""
    return {name: _file_record(os.path.join(directory, name))
            for name in sorted(os.listdir(directory))
            if name != "meta.json" and os.path.isfile(os.path.join(directory, name))}


def verify_artifact(directory: str) -> dict:
    """The artifact's meta.json, after checking that every file it records
    has the recorded size and sha256 (sizes first: a truncated file costs no
    hash). Raises _Damaged naming the first file that does not."""
    meta_path = os.path.join(directory, "meta.json")
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError) as err:
        raise _Damaged(meta_path, f"unreadable ({err})") from None
    files = meta.get("files") if isinstance(meta, dict) else None
    if not isinstance(files, dict):
        raise _Damaged(meta_path, "no recorded sizes and hashes of the artifact's files "
                       "(written by a hector from before the cache verified them)")
    library = meta.get("library")
    if library not in files or f"{library}.json" not in files:
        raise _Damaged(meta_path, f"records no size and hash for the library {library!r} "
                       "and its manifest")
    for name, record in files.items():
        path = os.path.join(directory, str(name))
        if os.path.basename(str(name)) != name or not isinstance(record, dict):
            raise _Damaged(meta_path, f"malformed file record {name!r}")
        try:
            size = os.stat(path).st_size
        except OSError as err:
            raise _Damaged(path, f"missing or unreadable ({err.strerror})") from None
        if size != record.get("size"):
            raise _Damaged(path, f"{size} bytes, but {record.get('size')} were written "
                           "(truncated or replaced)")
    for name, record in files.items():
        path = os.path.join(directory, name)
        try:
            actual = _file_record(path)["sha256"]
        except OSError as err:
            raise _Damaged(path, f"unreadable ({err.strerror})") from None
        if actual != record.get("sha256"):
            raise _Damaged(path, f"sha256 {actual}, but {record.get('sha256')} was written "
                           "(damaged)")
    return meta


def _load_artifact(directory: str) -> compiled.CompiledLibrary:
    """Loads a verified artifact (raises _Damaged otherwise); once per process."""
    with _lock:
        if directory in _loaded:
            return _loaded[directory]
    meta = verify_artifact(directory)
    lib = compiled.load(os.path.join(directory, meta["library"]))
    lib.key, lib.artifact_id = meta["key"], meta["artifact_id"]
    with _lock:
        return _loaded.setdefault(directory, lib)


def _write_index(root: str, key: str, meta: dict) -> None:
    index = os.path.join(root, "index")
    os.makedirs(index, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=index)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({k: meta[k] for k in ("artifact_id", "compiler", "description")}, f)
    os.replace(tmp, os.path.join(index, key))


def _read_index(root: str, key: str):
    try:
        with open(os.path.join(root, "index", key), encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise OSError(f"{os.path.join(root, 'index', key)}: unreadable cache index entry "
                      f"({err}); delete it and build again") from None


def _library_name(text: str, name) -> str:
    name = name or (_functions(text) or ["model"])[0]
    if not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise ValueError(f"name must be letters, digits and '_', got {name!r}")
    return f"lib{name}.so"


def _build(compiler: str, identity: str, text: str, target: str, gpu_arch, flags: list,
           root: str, key: str, artifact_id: str, library: str, description: str,
           replace_damaged: bool = False) -> str:
    """Builds into a temporary directory of the cache and renames it into
    place; returns the artifact directory. replace_damaged: the artifact
    directory exists but failed verification; replace it (unless another
    process repaired it meanwhile)."""
    final = os.path.join(root, "lib", artifact_id)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(final))
    try:
        model = os.path.join(tmp, "model.mlir")
        with open(model, "w", encoding="utf-8") as f:
            f.write(text)
        argv = [compiler, model, f"--target={target}"]
        if gpu_arch:
            argv.append(f"--gpu-arch={gpu_arch}")
        argv += flags + ["-o", os.path.join(tmp, library)]
        result = subprocess.run(argv, capture_output=True, text=True)
        if result.returncode != 0:
            stderr = result.stderr.replace(model, "<model>")
            raise CompileError(f"hectorc failed for {description} (key {key}):\n"
                               f"{stderr.strip() or f'exit status {result.returncode}'}",
                               key, stderr)
        meta = {"key": key, "artifact_id": artifact_id, "library": library,
                "compiler": identity, "description": description, "target": target,
                "gpu_arch": gpu_arch, "flags": flags, "created": time.time(),
                "hectorc_argv": [os.path.basename(a) for a in argv],
                "files": _record_files(tmp)}
        with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)
        if replace_damaged:
            _replace_damaged(tmp, final)
            tmp = None
        else:
            try:
                os.rename(tmp, final)
            except OSError:
                if not os.path.exists(os.path.join(final, "meta.json")):
                    raise
                # Another process built the same artifact first: use theirs.
            else:
                tmp = None
        _write_index(root, key, meta)
        return final
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _replace_damaged(new: str, final: str) -> None:
    """Moves the damaged artifact `final` aside and renames `new` into its
    place, under a lock file so that two processes repairing one artifact do
    not move each other's repair away; if `final` verifies by the time the
    lock is held, another process repaired it and `new` is discarded."""
    lock_path = os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.lock")
    with open(lock_path, "a") as lock:
        try:
            import fcntl
            fcntl.flock(lock, fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass  # no advisory locks here: repairs may race, never corrupt
        try:
            verify_artifact(final)
        except _Damaged:
            aside = os.path.join(os.path.dirname(final), f".damaged-{uuid.uuid4().hex}")
            try:
                os.rename(final, aside)
            except FileNotFoundError:
                aside = None
            os.rename(new, final)
            if aside is not None:
                shutil.rmtree(aside, ignore_errors=True)
        else:
            shutil.rmtree(new, ignore_errors=True)


def compile(source, target: str = "cpu", *, training: bool = False, gpu_arch=None,
            flags: Sequence[str] = (), cache_dir=None, compiler=None, name=None,
            description=None) -> compiled.CompiledLibrary:
    """Compiles hgraph IR (`source`: text, or a path as an os.PathLike) into
    a library for `target` ("cpu" or "cuda"), through the cache.

    training=True builds with ``hectorc --training`` (entries f, f_fwd, f_bwd).
    gpu_arch (cuda only, default "sm_90") and extra hectorc `flags`
    (e.g. ["--opt-level=3"]) are part of the key. `compiler`: the hectorc to
    use (default: see find_compiler), or False to only load from the cache.
    `name` names the library file (default: the first hgraph.func);
    `description` is how errors name the model (default: its functions).

    Returns a hector.compiled.CompiledLibrary with `key` and `artifact_id`.
    Raises CompileError when hectorc fails, MissingArtifactError when there is
    no compiler and the cache has no artifact for the key.
    """
    text = _source_text(source)
    gpu_arch, flags = _normalize(target, gpu_arch, flags, training)
    root = resolve_cache_dir(cache_dir)
    fields = _key_fields(text, target, gpu_arch, flags)
    key = _digest(fields)
    what = _describe(text, target, gpu_arch, flags, description)
    library = _library_name(text, name)

    path = find_compiler(compiler)
    why_not = "compiling was turned off (compiler=False)" if compiler is False else (
        "no hectorc was found ($HECTOR_BUILD_DIR/bin, PATH, build/bin)")
    identity = None
    if path is not None:
        try:
            identity = compiler_identity(path)
        except OSError as err:
            why_not = f"the hectorc found does not run ({err})"
    if identity is not None:
        artifact_id = _digest(dict(fields, compiler=identity))
        directory = os.path.join(root, "lib", artifact_id)
        build = (path, identity, text, target, gpu_arch, flags, root, key, artifact_id,
                 library, what)
        if not os.path.exists(os.path.join(directory, "meta.json")):
            directory = _build(*build)
        try:
            lib = _load_artifact(directory)
        except _Damaged:  # rebuilt, never loaded
            directory = _build(*build, replace_damaged=True)
            try:
                lib = _load_artifact(directory)
            except _Damaged as damaged:
                raise DamagedArtifactError(
                    f"the artifact for key {key} ({what}) fails verification right after "
                    f"it was rebuilt: {damaged}", key, what, root, damaged.path) from None
        if (_read_index(root, key) or {}).get("artifact_id") != artifact_id:
            _write_index(root, key, {"artifact_id": artifact_id, "compiler": identity,
                                     "description": what})
        return lib

    entry = _read_index(root, key)
    directory = entry and os.path.join(root, "lib", str(entry.get("artifact_id")))
    aot_command = (f"python3 -m hector.aot --target {target}"
                   + (f" --gpu-arch {gpu_arch}" if gpu_arch else "")
                   + (" --training" if "--training" in flags else "")
                   + "".join(f" --flag={f}" for f in flags if f != "--training")
                   + " --out DIR <model>")
    if not directory or not os.path.exists(os.path.join(directory, "meta.json")):
        raise MissingArtifactError(
            f"no compiled library for key {key} ({what}) in the cache {root}, and {why_not}. "
            f"Build it where hectorc runs, e.g. `{aot_command}`, then bring DIR here and "
            f"set {CACHE_ENV}=DIR (or pass cache_dir=DIR)", key, what, root)
    try:
        return _load_artifact(directory)
    except _Damaged as damaged:
        raise DamagedArtifactError(
            f"the cached artifact for key {key} ({what}) is damaged and was not loaded: "
            f"{damaged}. It can not be rebuilt here: {why_not}. Build it again where "
            f"hectorc runs, e.g. `{aot_command}`, and bring DIR here again (or delete "
            f"{directory})",
            key, what, root, damaged.path) from None
