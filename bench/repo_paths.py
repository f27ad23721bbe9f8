"""Import paths shared by the benchmark scripts: bench/ itself and the test/
helpers, and hector as installed, else this checkout's python/
(test/hector_checkout.py). A script does `from repo_paths import REPO` (or
`import repo_paths`) first (its own folder, bench/, is on sys.path)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for _path in (HERE, os.path.join(REPO, "test")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import hector_checkout  # noqa: E402,F401
