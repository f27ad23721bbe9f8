"""What a GPU test needs first: torch with a CUDA GPU (else the test is
skipped) and exact fp32 products (no TF32 in matmuls or cuDNN), so that
results compare with float64 references at fp32 tolerances."""


def cuda_torch():
    import pytest

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch
