"""Import paths of the pytest suite: test/ for the helpers (test/reference),
and hector as installed, else this checkout's python/ (test/hector_checkout.py).
Scripts of this folder run on their own (program_generator.py) import it too."""

import os
import sys

_TEST = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TEST not in sys.path:
    sys.path.insert(0, _TEST)

import hector_checkout  # noqa: E402,F401
