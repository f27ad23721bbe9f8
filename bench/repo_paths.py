"""Import paths shared by the benchmark scripts: bench/ itself, the
repository's python/ package and the test/ helpers. A script does
`from repo_paths import REPO` first (its own folder, bench/, is on sys.path)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for _path in (HERE, os.path.join(REPO, "python"), os.path.join(REPO, "test")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
