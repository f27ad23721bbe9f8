"""Import paths of the GPU scripts and tests, run on their own or by pytest
(this folder is first on sys.path either way): test/gpu, test/python and
test/ for the helpers, and hector as installed, else this checkout's python/
(test/hector_checkout.py). A file does `from gpu_paths import REPO` (or
`import gpu_paths`) before its other imports from the repository."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for _path in (os.path.join(REPO, "test"), os.path.join(REPO, "test", "python"), HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import hector_checkout  # noqa: E402,F401
