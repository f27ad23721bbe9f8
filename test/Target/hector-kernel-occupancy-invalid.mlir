// RUN: hector-opt %s --split-input-file --hector-kernel-occupancy --verify-diagnostics

gpu.module @kernels {
  gpu.func @gemm() kernel {
    // expected-error @+1 {{hector-kernel-occupancy: 'hector.min_blocks_per_sm' must be a positive integer, got 0 : i64}}
    gpu.barrier {hector.min_blocks_per_sm = 0 : i64}
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @gemm() kernel {
    // expected-error @+1 {{hector-kernel-occupancy: 'hector.min_blocks_per_sm' must be a positive integer, got "three"}}
    gpu.barrier {hector.min_blocks_per_sm = "three"}
    gpu.return
  }
}
