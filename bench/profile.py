"""Profile one layer call or training step: per-kernel GPU time, launch count, registers and
occupancy (torch.profiler; Nsight Compute with --ncu). The tool is bench/kernel_profile.py
(its docstring says what it measures and how); this file only runs it:

    python3 bench/profile.py --lib-dir build/gpu-models/tmpl --model rgcn --dataset am \\
        --mode training --out OUT [--ncu]
    python3 bench/profile.py --contender torch-compile --model rgcn --dataset am --mode training --out OUT

bench/ is the first entry of sys.path for every script run from it, so a file
named profile.py there is what `import profile` finds, and the standard
library's cProfile (which torch imports) does `import profile`. Imported under
any name but __main__, this module therefore puts the standard library's
profile module in its place.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel_profile

    sys.exit(kernel_profile.main())
else:
    import importlib.util
    import sysconfig

    _std = os.path.join(sysconfig.get_paths()["stdlib"], "profile.py")
    if os.path.exists(_std):
        _spec = importlib.util.spec_from_file_location(__name__, _std)
        _module = importlib.util.module_from_spec(_spec)
        sys.modules[__name__] = _module
        _spec.loader.exec_module(_module)
