"""Independent references of the RGCN, RGAT and HGT layers (BRIEF.md section 4).

models_numpy: float64 numpy, forward only, the ground truth.
models_torch: differentiable torch (CPU or CUDA, torch 1.13 and 2.x), also the
PyTorch-eager benchmark contender. params: make_params and graph unpacking.
"""

from .params import PARAM_NAMES, graph_arrays, make_params, type_counts  # noqa: F401
