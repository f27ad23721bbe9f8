"""Make the in-tree package (python/) and the test helpers (test/, e.g. test/reference) importable."""

import os
import sys

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _path in (os.path.join(_REPO, "python"), os.path.join(_REPO, "test")):
    if _path not in sys.path:
        sys.path.insert(0, _path)
