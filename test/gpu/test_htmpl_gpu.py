"""GPU checks of the htmpl-to-gpu kernels (tiled GEMM, warp/thread traversals)
against torch, on random data and edge cases: segments with zero rows, a hub
destination with 100k in-edges, odd widths (16, 33) and heads.

The GPU machines have no compiler, so the libraries are built here first:

    python3 test/gpu/test_htmpl_gpu.py --build build-gpu/htmpl-gpu

(hectorc and hector-opt from $HECTOR_BUILD_DIR/bin or build/bin; every
function goes through `hectorc --target=cuda --gpu-templates`, or, with a
hectorc without that flag, `hector-opt --htmpl-to-gpu | hectorc --target=cuda`),
and the folder travels to the GPU machine, where

    HECTOR_HTMPL_GPU_DIR=build-gpu/htmpl-gpu python3 -m pytest test/gpu/test_htmpl_gpu.py

runs the checks. Not collected by CI (CI runs test/python only). The
references are written from the op semantics (docs/dialects/HTmplDialect.md)
in float64 torch.

The references and the harness themselves can be checked without a GPU,
against the CPU loop lowering (htmpl-to-loops) of the same functions:

    python3 test/gpu/test_htmpl_gpu.py --build-cpu build-gpu/htmpl-cpu
    HECTOR_HTMPL_GPU_DIR=build-gpu/htmpl-cpu HECTOR_HTMPL_GPU_DEVICE=cpu \
        python3 -m pytest test/gpu/test_htmpl_gpu.py

`python3 test/gpu/test_htmpl_gpu.py --bench DIR` (GPU machine) prints rough
timings of GEMM schedule variants (fp32 and TF32) and traversals on
bgs/am-shaped inputs.

`--build` also compiles the GEMM instances with `hectorc --precision=tf32`
into libhtmpl_gpu_tf32.so; every row-mode GEMM test runs against both
libraries (test ids [fp32] and [tf32]), the TF32 ones at a tolerance of
5e-3 relative (see TF32_RTOL), and test_gemm_tf32_rounds_inputs checks the
rounding to TF32 exactly.
"""

from __future__ import annotations

import os
import string
import subprocess
import sys

from gpu_paths import REPO as _REPO  # noqa: E402  (sets the import paths)

# ---- the instances (MLIR templates; ${...} are filled per configuration) ----

GEMM_TYPED = """
func.func @gemm_typed_${K}_${N}(%lhs: memref<?x${K}xf32>, %rows: memref<?xi32>,
    %rhs: memref<?x${K}x${N}xf32>, %out: memref<?x${N}xf32>, %seg: memref<?xi32>)
    attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x${K}xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x${K}x${N}xf32>) out(%out : memref<?x${N}xf32>)
             segments(%seg : memref<?xi32>)
  return
}
"""

GEMM_SCATTER = """
func.func @gemm_scatter_${K}_${N}(%lhs: memref<?x${K}xf32>, %rhs: memref<${K}x${N}xf32>,
    %out: memref<?x${N}xf32>, %orows: memref<?xi64>, %s: memref<?xf32>)
    attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x${K}xf32>) rhs(%rhs : memref<${K}x${N}xf32>)
             out(%out : memref<?x${N}xf32>[%orows : memref<?xi64>])
             row_scale(%s : memref<?xf32>) {accumulate, atomic}
  return
}

func.func @gemm_overwrite_${K}_${N}(%lhs: memref<?x${K}xf32>, %rhs: memref<?x${K}x${N}xf32>,
    %out: memref<?x${N}xf32>, %orows: memref<?xi32>, %seg: memref<?xi32>)
    attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x${K}xf32>) rhs(%rhs : memref<?x${K}x${N}xf32>)
             out(%out : memref<?x${N}xf32>[%orows : memref<?xi32>])
             segments(%seg : memref<?xi32>) {atomic}
  return
}

func.func @gemm_transpose_${K}_${N}(%lhs: memref<?x${K}xf32>, %rhs: memref<?x${N}x${K}xf32>,
    %out: memref<?x${N}xf32>, %seg: memref<?xi32>) attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x${K}xf32>) rhs(%rhs : memref<?x${N}x${K}xf32>)
             out(%out : memref<?x${N}xf32>) segments(%seg : memref<?xi32>)
             {accumulate, transpose_rhs}
  return
}

func.func @wgrad_${K}_${N}(%lhs: memref<?x${K}xf32>, %lrows: memref<?xi32>,
    %rhs: memref<?x${N}xf32>, %rrows: memref<?xi64>, %out: memref<?x${K}x${N}xf32>,
    %seg: memref<?xi32>, %s: memref<?xf32>) attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x${K}xf32>[%lrows : memref<?xi32>])
             rhs(%rhs : memref<?x${N}xf32>[%rrows : memref<?xi64>])
             out(%out : memref<?x${K}x${N}xf32>) segments(%seg : memref<?xi32>)
             row_scale(%s : memref<?xf32>) {transpose_lhs}
  return
}
"""

# Per-head block-diagonal weights [T, H, KH, NH]: lhs [M, H*KH], out [M, H*NH].
GEMM_HEADS = """
func.func @gemm_heads_${H}_${KH}_${NH}(%lhs: memref<?x${K}xf32>,
    %rhs: memref<?x${H}x${KH}x${NH}xf32>, %out: memref<?x${N}xf32>, %seg: memref<?xi32>,
    %s: memref<?x${H}xf32>) attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x${K}xf32>) rhs(%rhs : memref<?x${H}x${KH}x${NH}xf32>)
             out(%out : memref<?x${N}xf32>) segments(%seg : memref<?xi32>)
             row_scale(%s : memref<?x${H}xf32>)
  return
}

func.func @wgrad_heads_${H}_${KH}_${NH}(%lhs: memref<?x${K}xf32>, %rhs: memref<?x${N}xf32>,
    %out: memref<?x${H}x${KH}x${NH}xf32>, %seg: memref<?xi32>, %s: memref<?x${H}xf32>)
    attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x${K}xf32>) rhs(%rhs : memref<?x${N}xf32>)
             out(%out : memref<?x${H}x${KH}x${NH}xf32>) segments(%seg : memref<?xi32>)
             row_scale(%s : memref<?x${H}xf32>) {accumulate, transpose_lhs}
  return
}
"""

# The row-dot epilogue (s[i] = out[i] . a[t(i)]): RGAT's per-pair source
# score fused into the pair GEMM. ROW_DOT_CASES: name -> (K, N, knobs); the
# knobs cover a row held by 16 lanes of one warp (the default tile), by two
# column tiles (N = 128 over tn = 64: partial sums from two blocks), by two
# whole warps (tn = 256, 64 threads a row), by groups of 4 lanes (12 threads
# a row) and the general kernel (K, N not multiples of 4). With H heads
# (the last field) s is [M, H], one dot per block of N / H columns: heads a
# lane group spans exactly (16 columns), heads narrower than a vector
# kernel lane's 4 columns (2: each column its own share), heads of 12 and
# of 16 of three, over two column tiles, two warps and the general kernel.
GEMM_ROW_DOT = """
func.func @gemm_row_dot_${NAME}(%lhs: memref<?x${K}xf32>, %rows: memref<?xi32>,
    %rhs: memref<?x${K}x${N}xf32>, %out: memref<?x${N}xf32>, %seg: memref<?xi32>,
    %a: memref<?x${N}xf32>, %s: memref<?x${H}xf32>) attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x${K}xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x${K}x${N}xf32>) out(%out : memref<?x${N}xf32>)
             segments(%seg : memref<?xi32>)
             row_dot(%a : memref<?x${N}xf32>) into(%s : memref<?x${H}xf32>) ${ATTRS}
  return
}
"""

ROW_DOT_CASES = {
    "64_64": (64, 64, "", 1),
    "128_64": (128, 64, "", 1),
    "64_128": (64, 128, "", 1),
    "33_33": (33, 33, "", 1),
    "16_16": (16, 16, "", 1),
    "warps": (32, 256, "{tile = array<i64: 8, 256, 8>, coarsen = 4, launch_bounds = 256}", 1),
    "quads": (32, 48, "{tile = array<i64: 16, 48, 8>, coarsen = 4, launch_bounds = 192}", 1),
    "64_64_h4": (64, 64, "", 4),
    "64_64_h32": (64, 64, "", 32),
    "64_48_h3": (64, 48, "", 3),
    "64_128_h4": (64, 128, "", 4),
    "33_32_h2": (33, 32, "", 2),
    "warps_h8": (32, 256, "{tile = array<i64: 8, 256, 8>, coarsen = 4, launch_bounds = 256}", 8),
    "quads_h4": (32, 48, "{tile = array<i64: 16, 48, 8>, coarsen = 4, launch_bounds = 192}", 4),
}

# A single transposed weight, rows scattered: s is per instance row.
GEMM_ROW_DOT_SCATTER = """
func.func @gemm_row_dot_scatter(%lhs: memref<?x64xf32>, %rhs: memref<64x64xf32>,
    %out: memref<?x64xf32>, %orows: memref<?xi32>, %a: memref<1x64xf32>,
    %s: memref<?x1xf32>) attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<64x64xf32>)
             out(%out : memref<?x64xf32>[%orows : memref<?xi32>])
             row_dot(%a : memref<1x64xf32>) into(%s : memref<?x1xf32>) {transpose_rhs}
  return
}
"""

GEMM_KNOBS = """
func.func @gemm_knobs_a(%lhs: memref<?x64xf32>, %rhs: memref<64x128xf32>,
    %out: memref<?x128xf32>) attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>) rhs(%rhs : memref<64x128xf32>)
             out(%out : memref<?x128xf32>)
             {tile = array<i64: 32, 64, 16>, coarsen = 4, launch_bounds = 128}
  return
}

func.func @gemm_knobs_b(%lhs: memref<?x33xf32>, %rhs: memref<33x33xf32>,
    %out: memref<?x33xf32>) attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x33xf32>) rhs(%rhs : memref<33x33xf32>)
             out(%out : memref<?x33xf32>)
             {tile = array<i64: 16, 32, 4>, coarsen = 2, launch_bounds = 64}
  return
}
"""

TRAVERSALS = """
// out[dst] += norm[e] * z[e]  (warp mapping, buffered destination rows)
func.func @aggregate_${W}(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %norm: memref<?xf32>, %z: memref<?x${W}xf32>, %out: memref<?x${W}xf32>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant ${W} : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%norm : memref<?xf32> as edge, %z : memref<?x${W}xf32> as edge)
      outs(%out : memref<?x${W}xf32> as dst) {
  ^bb0(%e: index, %rn: index, %rz: index, %ro: index):
    %n = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %cw step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x${W}xf32>
      %p = arith.mulf %n, %v : f32
      htmpl.accumulate add %p, %out[%ro, %f] : f32, memref<?x${W}xf32>
    }
  }
  return
}

// score[e] = z[e] . a[etype]; smax[dst] = max(smax[dst], score[e])
func.func @score_${W}(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %z: memref<?x${W}xf32>, %a: memref<?x${W}xf32>, %s: memref<?x1xf32>,
    %m: memref<?x1xf32>) attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant ${W} : index
  %zero = arith.constant 0.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%z : memref<?x${W}xf32> as edge, %a : memref<?x${W}xf32> as etype)
      outs(%s : memref<?x1xf32> as edge, %m : memref<?x1xf32> as dst) {
  ^bb0(%e: index, %rz: index, %ra: index, %rs: index, %rm: index):
    %d = scf.for %f = %c0 to %cw step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %z[%rz, %f] : memref<?x${W}xf32>
      %y = memref.load %a[%ra, %f] : memref<?x${W}xf32>
      %p = arith.mulf %x, %y : f32
      %q = arith.addf %acc, %p : f32
      scf.yield %q : f32
    }
    memref.store %d, %s[%rs, %c0] : memref<?x1xf32>
    htmpl.accumulate max %d, %m[%rm, %c0] : f32, memref<?x1xf32>
  }
  return
}

// CSR: sum[t] += z[compact(e)] * a[etype]; mx[t] = max(...); back[src] += ...
func.func @csr_${W}(%rp: memref<?xi32>, %csrc: memref<?xi32>, %eid: memref<?xi32>,
    %cety: memref<?xi32>, %map: memref<?xi32>, %z: memref<?x${W}xf32>,
    %a: memref<?x${W}xf32>, %sum: memref<?x${W}xf32>, %mx: memref<?x${W}xf32>,
    %back: memref<?x${W}xf32>) attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant ${W} : index
  htmpl.traversal edges csr(%rp, %csrc, %eid, %cety : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%z : memref<?x${W}xf32> as compact, %a : memref<?x${W}xf32> as etype)
      outs(%sum : memref<?x${W}xf32> as dst, %mx : memref<?x${W}xf32> as dst,
           %back : memref<?x${W}xf32> as src) launch_bounds(128) {
  ^bb0(%e: index, %rz: index, %ra: index, %rs: index, %rm: index, %rb: index):
    scf.for %f = %c0 to %cw step %c1 {
      %zv = memref.load %z[%rz, %f] : memref<?x${W}xf32>
      %av = memref.load %a[%ra, %f] : memref<?x${W}xf32>
      %p = arith.mulf %zv, %av : f32
      htmpl.accumulate add %p, %sum[%rs, %f] : f32, memref<?x${W}xf32>
      htmpl.accumulate max %p, %mx[%rm, %f] : f32, memref<?x${W}xf32>
      htmpl.accumulate add %p, %back[%rb, %f] : f32, memref<?x${W}xf32>
    }
  }
  return
}

// Every edge scheme: o[e] = z[compact(e)] * a[etype] + x[src] + b
func.func @schemes_${W}(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %map: memref<?xi64>, %z: memref<?x${W}xf32>, %a: memref<?x${W}xf32>,
    %x: memref<?x${W}xf32>, %b: memref<${W}xf32>, %o: memref<?x${W}xf32>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant ${W} : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi64>)
      ins(%z : memref<?x${W}xf32> as compact, %a : memref<?x${W}xf32> as etype,
          %x : memref<?x${W}xf32> as src, %b : memref<${W}xf32> as whole)
      outs(%o : memref<?x${W}xf32> as edge) {
  ^bb0(%e: index, %rz: index, %ra: index, %rx: index, %rb: index, %ro: index):
    scf.for %f = %c0 to %cw step %c1 {
      %zv = memref.load %z[%rz, %f] : memref<?x${W}xf32>
      %av = memref.load %a[%ra, %f] : memref<?x${W}xf32>
      %xv = memref.load %x[%rx, %f] : memref<?x${W}xf32>
      %bv = memref.load %b[%f] : memref<${W}xf32>
      %p = arith.mulf %zv, %av : f32
      %q = arith.addf %p, %xv : f32
      %r = arith.addf %q, %bv : f32
      memref.store %r, %o[%ro, %f] : memref<?x${W}xf32>
    }
  }
  return
}

// Lanes share the destination element: out[dst, 1] += sum_f z[e, f]
// (shared-memory atomics); and mixed sites: lane 0 adds norm[e] to
// out2[dst, 0] and the lanes add z[e, f] to out2[dst, f] (plain updates
// separated by warp barriers).
func.func @shared_sites_${W}(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %norm: memref<?xf32>, %z: memref<?x${W}xf32>, %out: memref<?x2xf32>,
    %out2: memref<?x${W}xf32>) attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant ${W} : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%norm : memref<?xf32> as edge, %z : memref<?x${W}xf32> as edge)
      outs(%out : memref<?x2xf32> as dst, %out2 : memref<?x${W}xf32> as dst) {
  ^bb0(%e: index, %rn: index, %rz: index, %ro: index, %ro2: index):
    %n = memref.load %norm[%rn] : memref<?xf32>
    htmpl.accumulate add %n, %out2[%ro2, %c0] : f32, memref<?x${W}xf32>
    scf.for %f = %c0 to %cw step %c1 {
      %v = memref.load %z[%rz, %f] : memref<?x${W}xf32>
      htmpl.accumulate add %v, %out[%ro, %c1] : f32, memref<?x2xf32>
      htmpl.accumulate add %v, %out2[%ro2, %f] : f32, memref<?x${W}xf32>
    }
  }
  return
}

// Pair order: sums[compact(e)] += norm[e] * g[dst[e]] over the slots of
// pair_eid (warp mapping, buffered pair rows)
func.func @pair_sums_${W}(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %peid: memref<?xi32>, %map: memref<?xi32>, %norm: memref<?xf32>,
    %g: memref<?x${W}xf32>, %sums: memref<?x${W}xf32>) attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant ${W} : index
  htmpl.traversal edges pairs(%src, %dst, %ety, %peid : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%norm : memref<?xf32> as edge, %g : memref<?x${W}xf32> as dst)
      outs(%sums : memref<?x${W}xf32> as compact) {
  ^bb0(%e: index, %rn: index, %rg: index, %rs: index):
    %n = memref.load %norm[%rn] : memref<?xf32>
    scf.for %f = %c0 to %cw step %c1 {
      %v = memref.load %g[%rg, %f] : memref<?x${W}xf32>
      %p = arith.mulf %n, %v : f32
      htmpl.accumulate add %p, %sums[%rs, %f] : f32, memref<?x${W}xf32>
    }
  }
  return
}

// In place: m[n] = m[n] / max(row_ptr[n+1] - row_ptr[n], 1)  (warp per node)
func.func @mean_${W}(%rp: memref<?xi32>, %m: memref<?x${W}xf32>) attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cw = arith.constant ${W} : index
  %one = arith.constant 1 : i32
  htmpl.traversal nodes ins(%rp : memref<?xi32> as whole, %m : memref<?x${W}xf32> as node)
      outs(%m : memref<?x${W}xf32> as node) {
  ^bb0(%n: index, %rw: index, %r1: index, %r2: index):
    %n1 = arith.addi %n, %c1 : index
    %lo = memref.load %rp[%n] : memref<?xi32>
    %hi = memref.load %rp[%n1] : memref<?xi32>
    %d = arith.subi %hi, %lo : i32
    %d1 = arith.maxsi %d, %one : i32
    %df = arith.sitofp %d1 : i32 to f32
    scf.for %f = %c0 to %cw step %c1 {
      %v = memref.load %m[%r1, %f] : memref<?x${W}xf32>
      %q = arith.divf %v, %df : f32
      memref.store %q, %m[%r2, %f] : memref<?x${W}xf32>
    }
  }
  return
}
"""

# Heads: per head h, w = exp(alpha[e, h]); out[dst, h*DH + f] += w * z[e, h*DH + f]
TRAVERSAL_HEADS = """
func.func @heads_${H}_${DH}(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %alpha: memref<?x${H}xf32>, %z: memref<?x${W}xf32>, %out: memref<?x${W}xf32>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ch = arith.constant ${H} : index
  %cd = arith.constant ${DH} : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%alpha : memref<?x${H}xf32> as edge, %z : memref<?x${W}xf32> as edge)
      outs(%out : memref<?x${W}xf32> as dst) {
  ^bb0(%e: index, %ra: index, %rz: index, %ro: index):
    scf.for %h = %c0 to %ch step %c1 {
      %s = memref.load %alpha[%ra, %h] : memref<?x${H}xf32>
      %w = math.exp %s : f32
      %base = arith.muli %h, %cd : index
      scf.for %f = %c0 to %cd step %c1 {
        %col = arith.addi %base, %f : index
        %v = memref.load %z[%rz, %col] : memref<?x${W}xf32>
        %p = arith.mulf %w, %v : f32
        htmpl.accumulate add %p, %out[%ro, %col] : f32, memref<?x${W}xf32>
      }
    }
  }
  return
}
"""

# Edge softmax and weighted sum over each destination's CSR row, values
# read through a compact map (one warp per destination, online softmax).
SOFTMAX_AGGREGATE = """
func.func @softmax_aggregate_${H}_${DH}(%rp: memref<?xi32>, %eid: memref<?xi32>,
    %map: memref<?xi32>, %s: memref<?x${H}xf32>, %z: memref<?x${W}xf32>,
    %out: memref<?x${W}xf32>) attributes {hector.entry} {
  htmpl.softmax_aggregate csr(%rp, %eid : memref<?xi32>, memref<?xi32>)
      scores(%s : memref<?x${H}xf32>)
      values(%z : memref<?x${W}xf32>[%map : memref<?xi32>])
      out(%out : memref<?x${W}xf32>)
  return
}
"""

SCALAR_TRAVERSALS = """
// sum[dst] += exp(s[e] - m[dst])  (thread mapping, segmented warp reduction)
func.func @expsum(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %s: memref<?x1xf32>, %m: memref<?x1xf32>, %sum: memref<?x1xf32>)
    attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%s : memref<?x1xf32> as edge, %m : memref<?x1xf32> as dst)
      outs(%sum : memref<?x1xf32> as dst) {
  ^bb0(%e: index, %rs: index, %rm: index, %ro: index):
    %x = memref.load %s[%rs, %c0] : memref<?x1xf32>
    %y = memref.load %m[%rm, %c0] : memref<?x1xf32>
    %d = arith.subf %x, %y : f32
    %v = math.exp %d : f32
    htmpl.accumulate add %v, %sum[%ro, %c0] : f32, memref<?x1xf32>
  }
  return
}

// per head h < 4: sum[dst, h] += exp(s[e, h]); mx[dst, h] = max(mx, s[e, h])
// (the head loop is unrolled: thread mapping, reduced across the warp)
func.func @expsum_heads(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %s: memref<?x4xf32>, %sum: memref<?x4xf32>, %mx: memref<?x4xf32>)
    attributes {hector.entry} {
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%s : memref<?x4xf32> as edge)
      outs(%sum : memref<?x4xf32> as dst, %mx : memref<?x4xf32> as dst) {
  ^bb0(%e: index, %rs: index, %ro: index, %rm: index):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %h = %c0 to %c4 step %c1 {
      %x = memref.load %s[%rs, %h] : memref<?x4xf32>
      %v = math.exp %x : f32
      htmpl.accumulate add %v, %sum[%ro, %h] : f32, memref<?x4xf32>
      htmpl.accumulate max %x, %mx[%rm, %h] : f32, memref<?x4xf32>
    }
  }
  return
}

// Pair order, scalar body: psum[compact(e)] += x[e] * y[etype(e)] (one slot
// per thread, lanes of one pair reduced across the warp)
func.func @pair_scalar(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %peid: memref<?xi32>, %map: memref<?xi32>, %x: memref<?x1xf32>, %y: memref<?x1xf32>,
    %psum: memref<?x1xf32>) attributes {hector.entry} {
  htmpl.traversal edges pairs(%src, %dst, %ety, %peid : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      compact_map(%map : memref<?xi32>)
      ins(%x : memref<?x1xf32> as edge, %y : memref<?x1xf32> as etype)
      outs(%psum : memref<?x1xf32> as compact) {
  ^bb0(%e: index, %rx: index, %ry: index, %rs: index):
    %c0 = arith.constant 0 : index
    %a = memref.load %x[%rx, %c0] : memref<?x1xf32>
    %b = memref.load %y[%ry, %c0] : memref<?x1xf32>
    %v = arith.mulf %a, %b : f32
    htmpl.accumulate add %v, %psum[%rs, %c0] : f32, memref<?x1xf32>
  }
  return
}

// deg[dst] += 1 (integers), and the max source id per destination
func.func @degrees(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %deg: memref<?xi32>, %top: memref<?xi32>) attributes {hector.entry} {
  %one = arith.constant 1 : i32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      outs(%deg : memref<?xi32> as dst, %top : memref<?xi32> as dst) launch_bounds(64) {
  ^bb0(%e: index, %rd: index, %rt: index):
    %ei = arith.index_cast %e : index to i32
    htmpl.accumulate add %one, %deg[%rd] : i32, memref<?xi32>
    htmpl.accumulate max %ei, %top[%rt] : i32, memref<?xi32>
  }
  return
}

// o[e, 0] = 1, then o[e, f] = x[e, f] for every f: the loop's store wins
// (stores from two sites: the thread mapping keeps the body's order)
func.func @store_sites(%src: memref<?xi32>, %dst: memref<?xi32>, %ety: memref<?xi32>,
    %x: memref<?x8xf32>, %o: memref<?x8xf32>) attributes {hector.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  htmpl.traversal edges coo(%src, %dst, %ety : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      ins(%x : memref<?x8xf32> as edge) outs(%o : memref<?x8xf32> as edge) {
  ^bb0(%e: index, %rx: index, %ro: index):
    memref.store %one, %o[%ro, %c0] : memref<?x8xf32>
    scf.for %f = %c0 to %c8 step %c1 {
      %v = memref.load %x[%rx, %f] : memref<?x8xf32>
      memref.store %v, %o[%ro, %f] : memref<?x8xf32>
    }
  }
  return
}

// o[n] = w[ntype(n)]  (thread per node)
func.func @ntype(%nt: memref<?xi32>, %w: memref<?xf32>, %o: memref<?xf32>)
    attributes {hector.entry} {
  htmpl.traversal nodes node_types(%nt : memref<?xi32>)
      ins(%w : memref<?xf32> as ntype) outs(%o : memref<?xf32> as node) {
  ^bb0(%n: index, %rw: index, %ro: index):
    %v = memref.load %w[%rw] : memref<?xf32>
    memref.store %v, %o[%ro] : memref<?xf32>
  }
  return
}
"""

# Schedule variants of the typed gather GEMM for --bench (name: tile,
# coarsen, launch_bounds); the first is the op's default.
BENCH_GEMMS = {
    "default": "",  # 64 x 64, 256 threads, 16 x 1 outputs each
    "t32x64": "{tile = array<i64: 32, 64, 8>}",
    "t16x64": "{tile = array<i64: 16, 64, 8>}",
    "t64x64_p512": "{tile = array<i64: 64, 64, 8>, launch_bounds = 512}",
}

BENCH_GEMM = """
func.func @bench_gemm_${NAME}(%lhs: memref<?x64xf32>, %rows: memref<?xi32>,
    %rhs: memref<?x64x64xf32>, %out: memref<?x64xf32>, %seg: memref<?xi32>)
    attributes {hector.entry} {
  htmpl.gemm lhs(%lhs : memref<?x64xf32>[%rows : memref<?xi32>])
             rhs(%rhs : memref<?x64x64xf32>) out(%out : memref<?x64xf32>)
             segments(%seg : memref<?xi32>) ${ATTRS}
  return
}
"""

GEMM_SHAPES = ((16, 16), (33, 33), (64, 64), (64, 16), (16, 33))
HEAD_SHAPES = ((4, 16, 8), (3, 11, 7), (2, 32, 32))
WIDTHS = (1, 16, 33, 64, 128)
TRAVERSAL_HEADS_SHAPES = ((4, 16), (3, 11), (1, 64))
# (heads, head width): RGAT/HGT's 64 columns with 1 and 4 heads (128-bit
# loads, two edges per warp step), 16 (eight lanes per row), 128 (a whole
# warp per row), odd widths (scalar loads, lanes past the row), and 1200
# (two column passes).
SOFTMAX_AGGREGATE_SHAPES = ((1, 64), (4, 16), (1, 16), (1, 128), (2, 3),
                            (3, 11), (1, 1200))


def gemm_module_source() -> str:
    """The GEMM instances (also built with --precision=tf32)."""
    parts = []
    for k, n in GEMM_SHAPES:
        parts.append(string.Template(GEMM_TYPED).substitute(K=k, N=n))
        parts.append(string.Template(GEMM_SCATTER).substitute(K=k, N=n))
    for h, kh, nh in HEAD_SHAPES:
        parts.append(string.Template(GEMM_HEADS).substitute(
            H=h, KH=kh, NH=nh, K=h * kh, N=h * nh))
    parts.append(GEMM_KNOBS)
    for name, (k, n, attrs, heads) in ROW_DOT_CASES.items():
        parts.append(string.Template(GEMM_ROW_DOT).substitute(
            NAME=name, K=k, N=n, ATTRS=attrs, H=heads))
    parts.append(GEMM_ROW_DOT_SCATTER)
    for name, attrs in BENCH_GEMMS.items():
        parts.append(string.Template(BENCH_GEMM).substitute(NAME=name, ATTRS=attrs))
    return "\n".join(parts)


def module_source() -> str:
    parts = [gemm_module_source()]
    for w in WIDTHS:
        parts.append(string.Template(TRAVERSALS).substitute(W=w))
    for h, dh in TRAVERSAL_HEADS_SHAPES:
        parts.append(string.Template(TRAVERSAL_HEADS).substitute(H=h, DH=dh, W=h * dh))
    parts.append(SCALAR_TRAVERSALS)
    for h, dh in SOFTMAX_AGGREGATE_SHAPES:
        parts.append(string.Template(SOFTMAX_AGGREGATE).substitute(H=h, DH=dh, W=h * dh))
    return "\n".join(parts)


def _tool(name: str) -> str:
    candidates = []
    if os.environ.get("HECTOR_BUILD_DIR"):
        candidates.append(os.path.join(os.environ["HECTOR_BUILD_DIR"], "bin", name))
    candidates.append(os.path.join(_REPO, "build", "bin", name))
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    raise SystemExit(f"{name} not found in " + ", ".join(candidates))


def build(directory: str, target: str = "cuda") -> None:
    """Compiles every instance into `directory`/libhtmpl_gpu.so, and (cuda)
    the GEMM instances with --precision=tf32 into libhtmpl_gpu_tf32.so."""
    os.makedirs(directory, exist_ok=True)
    model = os.path.join(directory, "htmpl_gpu.mlir")
    with open(model, "w") as f:
        f.write(module_source())
    out = os.path.join(directory, "libhtmpl_gpu.so")
    hectorc = _tool("hectorc")
    if target == "cpu":
        subprocess.run([hectorc, model, "--target=cpu", "-o", out], check=True)
        print("built", out)
        return
    help_text = subprocess.run([hectorc, "--help"], capture_output=True, text=True).stdout
    if "--gpu-templates" in help_text:
        subprocess.run([hectorc, model, "--target=cuda", "--gpu-templates", "-o", out],
                       check=True)
    else:
        lowered = subprocess.run([_tool("hector-opt"), model, "--htmpl-to-gpu"],
                                 check=True, capture_output=True, text=True).stdout
        subprocess.run([hectorc, "-", "--target=cuda", "-o", out], input=lowered,
                       check=True, text=True)
    print("built", out)
    if "--precision" not in help_text:
        print("hectorc has no --precision: no TF32 library")
        return
    gemms = os.path.join(directory, "htmpl_gpu_tf32.mlir")
    with open(gemms, "w") as f:
        f.write(gemm_module_source())
    out = os.path.join(directory, "libhtmpl_gpu_tf32.so")
    subprocess.run([hectorc, gemms, "--target=cuda", "--precision=tf32", "-o", out],
                   check=True)
    print("built", out)


# ---- the tests (GPU machine) ------------------------------------------------

if __name__ != "__main__":
    import pytest

    torch = pytest.importorskip("torch")
    DEVICE = os.environ.get("HECTOR_HTMPL_GPU_DEVICE", "cuda")
    if DEVICE == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU", allow_module_level=True)

    from hector import compiled

    DIR = os.environ.get("HECTOR_HTMPL_GPU_DIR",
                         os.path.join(_REPO, "build-gpu", "htmpl-gpu"))
    DEV = torch.device("cuda", 0) if DEVICE == "cuda" else torch.device("cpu")
    F64 = torch.float64

    @pytest.fixture(scope="module")
    def lib():
        path = os.path.join(DIR, "libhtmpl_gpu.so")
        if not os.path.exists(path):
            pytest.fail(f"{path} missing: build it with "
                        f"`python3 test/gpu/test_htmpl_gpu.py --build {DIR}`")
        return compiled.load(path)

    def rand(*shape, seed=0):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(*shape, generator=g).to(DEV)

    def ints(high, size, seed=0, dtype=torch.int32):
        g = torch.Generator().manual_seed(seed)
        return torch.randint(0, max(high, 1), (size,), generator=g).to(dtype).to(DEV)

    def segments(counts):
        """[T+1] offsets of segments with the given row counts, and the
        type of each row."""
        counts = torch.tensor(counts, dtype=torch.long)
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
        types = torch.repeat_interleave(torch.arange(len(counts)), counts)
        return offsets.int().to(DEV), types.to(DEV)

    def close(actual, expected, rtol=1e-4, atol=1e-4):
        torch.testing.assert_close(actual.to(F64), expected.to(F64), rtol=rtol, atol=atol)

    # TF32 (--precision=tf32): tensor cores multiply inputs rounded to 11
    # significant bits (relative error <= 2^-11 each) and sum in fp32, so a
    # sum of `terms` products of unit normals errs by about 5e-4 * sqrt(terms).
    # The checks allow 5e-3 relative plus 5e-3 * sqrt(terms) absolute (for
    # sums near zero). Instances the tensor cores do not take (K or N not a
    # multiple of 4, weight gradients) stay fp32 in the TF32 library.
    TF32_RTOL = 5e-3

    class GemmLib:
        """The GEMM instances built at one precision (fp32 or tf32)."""

        def __init__(self, lib, precision):
            self.lib, self.precision = lib, precision

        def __getitem__(self, name):
            return self.lib[name]

        def tol(self, terms, **fp32):
            """assert_close tolerances of outputs that each sum `terms`
            products: `fp32` (default: close's) for the fp32 library."""
            if self.precision == "fp32":
                return fp32
            return {"rtol": TF32_RTOL, "atol": TF32_RTOL * max(terms, 1) ** 0.5}

    @pytest.fixture(scope="module", params=["fp32", "tf32"])
    def gemm_lib(request, lib):
        if request.param == "fp32":
            return GemmLib(lib, "fp32")
        if DEVICE != "cuda":
            pytest.skip("the TF32 library runs on the GPU only")
        path = os.path.join(DIR, "libhtmpl_gpu_tf32.so")
        if not os.path.exists(path):
            pytest.fail(f"{path} missing: build it with "
                        f"`python3 test/gpu/test_htmpl_gpu.py --build {DIR}`")
        return GemmLib(compiled.load(path), "tf32")

    # fp32 sums in any order: a hub row adds 100k terms of size ~1 (sums of
    # size ~300), so its rounding error is far above a plain row's.
    HUB_TOL = {"rtol": 1e-3, "atol": 2e-2}

    # Segment layouts: empty segments first, in the middle and last; one
    # segment; segments that straddle and fill row tiles.
    SEGMENT_COUNTS = [
        [0, 5, 0, 70, 0],
        [1],
        [64, 64, 0, 1, 127],
        [300, 0, 0, 2000, 17, 0],
        [0, 0],
    ]

    # ---- GEMM, row mode --------------------------------------------------

    @pytest.mark.parametrize("k,n", GEMM_SHAPES)
    @pytest.mark.parametrize("counts", SEGMENT_COUNTS)
    def test_gemm_typed_gather(gemm_lib, k, n, counts):
        seg, types = segments(counts)
        m, t, n_lhs = len(types), len(counts), 257
        lhs = rand(n_lhs, k, seed=1)
        rhs = rand(t, k, n, seed=2)
        rows = ints(n_lhs, m, seed=3)
        out = torch.full((m, n), float("nan"), device=DEV)
        gemm_lib[f"gemm_typed_{k}_{n}"](lhs, rows, rhs, out, seg)
        ref = torch.einsum("mk,mkn->mn", lhs[rows.long()].to(F64), rhs[types].to(F64))
        close(out, ref, **gemm_lib.tol(k))

    @pytest.mark.parametrize("k,n", GEMM_SHAPES)
    @pytest.mark.parametrize("m,n_out", [(0, 3), (1, 1), (130, 40), (5000, 7)])
    def test_gemm_scatter_atomic_accumulate(gemm_lib, k, n, m, n_out):
        lhs, rhs = rand(m, k, seed=4), rand(k, n, seed=5)
        orows = ints(n_out, m, seed=6, dtype=torch.int64)
        scale = rand(m, seed=7)
        base = rand(n_out, n, seed=8)
        out = base.clone()
        gemm_lib[f"gemm_scatter_{k}_{n}"](lhs, rhs, out, orows, scale)
        ref = base.to(F64).index_add(
            0, orows, scale.to(F64)[:, None] * (lhs.to(F64) @ rhs.to(F64)))
        close(out, ref, **gemm_lib.tol(k * m / n_out, rtol=1e-4, atol=1e-3))

    @pytest.mark.parametrize("k,n", GEMM_SHAPES)
    @pytest.mark.parametrize("counts", SEGMENT_COUNTS)
    def test_gemm_scatter_atomic_overwrite(gemm_lib, k, n, counts):
        # Rows of segments are cleared, then every producer adds; rows no
        # instance row scatters to keep their value.
        seg, types = segments(counts)
        m, t, n_out = len(types), len(counts), 97
        lhs, rhs = rand(m, k, seed=9), rand(t, k, n, seed=10)
        orows = ints(n_out, m, seed=11)
        base = rand(n_out, n, seed=12)
        out = base.clone()
        gemm_lib[f"gemm_overwrite_{k}_{n}"](lhs, rhs, out, orows, seg)
        ref = base.to(F64).clone()
        ref[orows.long()] = 0
        ref.index_add_(0, orows.long(),
                       torch.einsum("mk,mkn->mn", lhs.to(F64), rhs[types].to(F64)))
        close(out, ref, **gemm_lib.tol(k * m / n_out, rtol=1e-4, atol=1e-3))

    @pytest.mark.parametrize("k,n", GEMM_SHAPES)
    @pytest.mark.parametrize("counts", SEGMENT_COUNTS)
    def test_gemm_transpose_rhs_accumulate(gemm_lib, k, n, counts):
        seg, types = segments(counts)
        m, t = len(types), len(counts)
        lhs, rhs = rand(m, k, seed=13), rand(t, n, k, seed=14)
        base = rand(m, n, seed=15)
        out = base.clone()
        gemm_lib[f"gemm_transpose_{k}_{n}"](lhs, rhs, out, seg)
        ref = base.to(F64) + torch.einsum("mk,mnk->mn", lhs.to(F64), rhs[types].to(F64))
        close(out, ref, **gemm_lib.tol(k))

    @pytest.mark.parametrize("h,kh,nh", HEAD_SHAPES)
    @pytest.mark.parametrize("counts", SEGMENT_COUNTS)
    def test_gemm_per_head(gemm_lib, h, kh, nh, counts):
        seg, types = segments(counts)
        m, t = len(types), len(counts)
        lhs, rhs = rand(m, h * kh, seed=16), rand(t, h, kh, nh, seed=17)
        scale = rand(m, h, seed=18)
        out = torch.full((m, h * nh), float("nan"), device=DEV)
        gemm_lib[f"gemm_heads_{h}_{kh}_{nh}"](lhs, rhs, out, seg, scale)
        blocks = torch.einsum("mhk,mhkn->mhn", lhs.to(F64).reshape(m, h, kh),
                              rhs[types].to(F64))
        ref = (blocks * scale.to(F64)[:, :, None]).reshape(m, h * nh)
        close(out, ref, **gemm_lib.tol(kh))

    @pytest.mark.parametrize("name,k,n", [("gemm_knobs_a", 64, 128), ("gemm_knobs_b", 33, 33)])
    @pytest.mark.parametrize("m", [0, 1, 31, 1000])
    def test_gemm_schedule_knobs(gemm_lib, name, k, n, m):
        lhs, rhs = rand(m, k, seed=19), rand(k, n, seed=20)
        out = torch.full((m, n), float("nan"), device=DEV)
        gemm_lib[name](lhs, rhs, out)
        close(out, lhs.to(F64) @ rhs.to(F64), **gemm_lib.tol(k))

    @pytest.mark.parametrize("name", ROW_DOT_CASES)
    @pytest.mark.parametrize("counts", SEGMENT_COUNTS)
    def test_gemm_row_dot(gemm_lib, name, counts):
        k, n, _, heads = ROW_DOT_CASES[name]
        seg, types = segments(counts)
        m, t, n_lhs = len(types), len(counts), 257
        lhs = rand(n_lhs, k, seed=40)
        rhs = rand(t, k, n, seed=41)
        a = rand(max(t, 1), n, seed=42)
        rows = ints(n_lhs, m, seed=43)
        out = torch.full((m, n), float("nan"), device=DEV)
        s = torch.full((m, heads), float("nan"), device=DEV)
        gemm_lib[f"gemm_row_dot_{name}"](lhs, rows, rhs, out, seg, a, s)
        ref = torch.einsum("mk,mkn->mn", lhs[rows.long()].to(F64), rhs[types].to(F64))
        close(out, ref, **gemm_lib.tol(k))
        ref_s = (ref * a[types].to(F64)).reshape(m, heads, n // heads).sum(2)
        close(s, ref_s, **gemm_lib.tol(k * n, rtol=1e-4, atol=1e-3))

    @pytest.mark.parametrize("m", [0, 1, 300])
    def test_gemm_row_dot_scatter(gemm_lib, m):
        n_out = m + 5
        lhs, rhs, a = rand(m, 64, seed=44), rand(64, 64, seed=45), rand(1, 64, seed=46)
        orows = torch.randperm(n_out, generator=torch.Generator().manual_seed(47))[:m]
        orows = orows.int().to(DEV)
        base = rand(n_out, 64, seed=48)
        out = base.clone()
        s = torch.full((m, 1), float("nan"), device=DEV)
        gemm_lib["gemm_row_dot_scatter"](lhs, rhs, out, orows, a, s)
        rows = lhs.to(F64) @ rhs.to(F64).T
        ref = base.to(F64).clone()
        ref[orows.long()] = rows
        close(out, ref, **gemm_lib.tol(64))
        close(s, (rows * a.to(F64)).sum(1, keepdim=True),
              **gemm_lib.tol(64 * 64, rtol=1e-4, atol=1e-3))

    @pytest.mark.parametrize("name", BENCH_GEMMS)
    @pytest.mark.parametrize("counts", SEGMENT_COUNTS)
    def test_gemm_bench_variants(gemm_lib, name, counts):
        seg, types = segments(counts)
        m, t, n_lhs = len(types), len(counts), 500
        lhs, rhs = rand(n_lhs, 64, seed=52), rand(t, 64, 64, seed=53)
        rows = ints(n_lhs, m, seed=54)
        out = torch.full((m, 64), float("nan"), device=DEV)
        gemm_lib[f"bench_gemm_{name}"](lhs, rows, rhs, out, seg)
        close(out, torch.einsum("mk,mkn->mn", lhs[rows.long()].to(F64), rhs[types].to(F64)),
              **gemm_lib.tol(64))

    @pytest.mark.parametrize("x,tf32", [
        (1 + 2**-12, 1.0),                   # below half a TF32 ulp: down
        (1 + 3 * 2**-12, 1 + 2**-10),        # above half an ulp: up
        (1 + 2**-11, 1 + 2**-10),            # a tie: away from zero (rna)
    ])
    def test_gemm_tf32_rounds_inputs(gemm_lib, x, tf32):
        # 64 products x * 1 sum exactly in fp32 either way, so the output
        # shows how the inputs were rounded: not at all with fp32, to
        # nearest with ties away from zero (cvt.rna.tf32.f32) with tf32.
        seg, _ = segments([100])
        lhs = torch.full((1, 64), x, device=DEV)
        rows = torch.zeros(100, dtype=torch.int32, device=DEV)
        rhs = torch.ones(1, 64, 64, device=DEV)
        out = torch.full((100, 64), float("nan"), device=DEV)
        gemm_lib["gemm_typed_64_64"](lhs, rows, rhs, out, seg)
        exact = tf32 if gemm_lib.precision == "tf32" else x
        assert torch.equal(out.cpu(), torch.full((100, 64), 64 * exact))

    # ---- GEMM, outer-product mode (weight gradients) ----------------------

    @pytest.mark.parametrize("k,n", GEMM_SHAPES)
    @pytest.mark.parametrize("counts", SEGMENT_COUNTS + [[150_000, 0, 60_000]])
    def test_weight_gradient(lib, k, n, counts):
        seg, types = segments(counts)
        m, t, n_l, n_r = len(types), len(counts), 301, 203
        lhs, rhs = rand(n_l, k, seed=21), rand(n_r, n, seed=22)
        lrows = ints(n_l, m, seed=23)
        rrows = ints(n_r, m, seed=24, dtype=torch.int64)
        scale = rand(m, seed=25)
        out = torch.full((t, k, n), float("nan"), device=DEV)
        lib[f"wgrad_{k}_{n}"](lhs, lrows, rhs, rrows, out, seg, scale)
        x = lhs[lrows.long()].to(F64)
        y = rhs[rrows].to(F64) * scale.to(F64)[:, None]
        ref = torch.stack([x[types == i].T @ y[types == i] for i in range(t)])
        close(out, ref, rtol=1e-4, atol=1e-3 * max(1.0, (m / 1000) ** 0.5))

    @pytest.mark.parametrize("h,kh,nh", HEAD_SHAPES)
    @pytest.mark.parametrize("counts", SEGMENT_COUNTS)
    def test_weight_gradient_per_head_accumulate(lib, h, kh, nh, counts):
        seg, types = segments(counts)
        m, t = len(types), len(counts)
        lhs, rhs = rand(m, h * kh, seed=26), rand(m, h * nh, seed=27)
        scale = rand(m, h, seed=28)
        base = rand(t, h, kh, nh, seed=29)
        out = base.clone()
        lib[f"wgrad_heads_{h}_{kh}_{nh}"](lhs, rhs, out, seg, scale)
        x = lhs.to(F64).reshape(m, h, kh)
        y = rhs.to(F64).reshape(m, h, nh) * scale.to(F64)[:, :, None]
        ref = base.to(F64).clone()
        ref.index_add_(0, types, torch.einsum("mhk,mhn->mhkn", x, y))
        close(out, ref, rtol=1e-4, atol=1e-3)

    # ---- traversals -------------------------------------------------------

    def coo_graph(n, e, r, seed, hub=None, hub_edges=0, order="canonical"):
        """src, dst, etype (int32, on the device) of a random graph; with
        `hub`, `hub_edges` extra edges all go to node `hub`. Canonical order
        is by (etype, dst, src), as the runtime's preprocessing sorts."""
        g = torch.Generator().manual_seed(seed)
        src = torch.randint(0, max(n, 1), (e + hub_edges,), generator=g)
        dst = torch.randint(0, max(n, 1), (e + hub_edges,), generator=g)
        ety = torch.randint(0, max(r, 1), (e + hub_edges,), generator=g)
        if hub is not None:
            dst[e:] = hub
        if order == "canonical":
            key = (ety * max(n, 1) + dst) * max(n, 1) + src
            perm = torch.argsort(key)
            src, dst, ety = src[perm], dst[perm], ety[perm]
        return [t.int().to(DEV) for t in (src, dst, ety)]

    GRAPHS = [
        # (n, e, r, hub, hub_edges, order)
        (1, 0, 1, None, 0, "canonical"),
        (1, 1, 1, None, 0, "canonical"),
        (50, 333, 4, None, 0, "canonical"),
        (50, 333, 4, None, 0, "random"),
        (2000, 30_000, 7, 5, 100_000, "canonical"),
        (2000, 30_000, 7, 5, 100_000, "random"),
    ]

    @pytest.mark.parametrize("w", WIDTHS)
    @pytest.mark.parametrize("n,e,r,hub,hub_edges,order", GRAPHS)
    def test_aggregate(lib, w, n, e, r, hub, hub_edges, order):
        src, dst, ety = coo_graph(n, e, r, seed=w, hub=hub, hub_edges=hub_edges, order=order)
        edges = len(src)
        norm, z = rand(edges, seed=30), rand(edges, w, seed=31)
        base = rand(n, w, seed=32)
        out = base.clone()
        lib[f"aggregate_{w}"](src, dst, ety, norm, z, out)
        ref = base.to(F64).index_add(0, dst.long(), norm.to(F64)[:, None] * z.to(F64))
        close(out, ref, **(HUB_TOL if hub_edges else {}))

    @pytest.mark.parametrize("w", (64, 128))
    @pytest.mark.parametrize("shift", (0, 1, 2))
    def test_aggregate_rows_off_16_bytes(lib, w, shift):
        # Rows of 64 and 128 floats get a 16-byte variant (one 128-bit load
        # per lane and row) that runs only where every row operand starts on
        # a 16-byte boundary: rows shifted by 1 or 2 floats (4, 8 bytes)
        # must take the general kernel and give the same sums.
        n, e, r = 300, 5000, 3
        src, dst, ety = coo_graph(n, e, r, seed=w + shift, order="canonical")
        edges = len(src)
        norm = rand(edges, seed=60)
        z = rand(edges * w + shift, seed=61)[shift:].view(edges, w)
        out_buffer = torch.zeros(n * w + shift, device=DEV)
        out = out_buffer[shift:].view(n, w)
        lib[f"aggregate_{w}"](src, dst, ety, norm, z, out)
        ref = torch.zeros(n, w, dtype=F64, device=DEV).index_add(
            0, dst.long(), norm.to(F64)[:, None] * z.to(F64))
        close(out, ref)

    @pytest.mark.parametrize("w", WIDTHS)
    @pytest.mark.parametrize("n,e,r,hub,hub_edges,order", GRAPHS)
    def test_shared_row_sites(lib, w, n, e, r, hub, hub_edges, order):
        src, dst, ety = coo_graph(n, e, r, seed=w + 4, hub=hub, hub_edges=hub_edges,
                                  order=order)
        edges = len(src)
        norm, z = rand(edges, seed=50), rand(edges, w, seed=51)
        out = torch.zeros(n, 2, device=DEV)
        out2 = torch.zeros(n, w, device=DEV)
        lib[f"shared_sites_{w}"](src, dst, ety, norm, z, out, out2)
        ref = torch.zeros(n, 2, dtype=F64, device=DEV)
        ref[:, 1].index_add_(0, dst.long(), z.to(F64).sum(1))
        ref2 = torch.zeros(n, w, dtype=F64, device=DEV).index_add(0, dst.long(), z.to(F64))
        ref2[:, 0].index_add_(0, dst.long(), norm.to(F64))
        tol = {"rtol": 1e-3, "atol": 1e-1} if hub_edges else {"rtol": 1e-4, "atol": 1e-3}
        close(out, ref, **tol)
        close(out2, ref2, **(HUB_TOL if hub_edges else {}))

    @pytest.mark.parametrize("w", WIDTHS)
    @pytest.mark.parametrize("n,e,r,hub,hub_edges,order", GRAPHS)
    def test_score_dot_store_max(lib, w, n, e, r, hub, hub_edges, order):
        src, dst, ety = coo_graph(n, e, r, seed=w + 1, hub=hub, hub_edges=hub_edges,
                                  order=order)
        edges = len(src)
        z, a = rand(edges, w, seed=33), rand(r, w, seed=34)
        s = torch.full((edges, 1), float("nan"), device=DEV)
        m = torch.full((n, 1), float("-inf"), device=DEV)
        lib[f"score_{w}"](src, dst, ety, z, a, s, m)
        ref_s = (z.to(F64) * a[ety.long()].to(F64)).sum(1, keepdim=True)
        close(s, ref_s)
        ref_m = torch.full((n, 1), float("-inf"), dtype=F64, device=DEV)
        ref_m = ref_m.scatter_reduce(0, dst.long()[:, None], ref_s, "amax")
        close(m, ref_m)

    def csr_graph(n, e, r, seed, hub=None, hub_edges=0):
        """CSR of a random graph grouped by destination: row_ptr [N+1], per
        slot src, canonical edge id, etype; and a compact map with its pair
        count."""
        src, dst, ety = coo_graph(n, e, r, seed, hub=hub, hub_edges=hub_edges)
        edges = len(src)
        slot_order = torch.argsort(dst.long() * max(edges, 1)
                                   + torch.arange(edges, device=DEV), stable=True)
        counts = torch.bincount(dst.long(), minlength=n)
        row_ptr = torch.cat([torch.zeros(1, dtype=torch.long, device=DEV), counts.cumsum(0)])
        pair = ety.long() * max(n, 1) + src.long()
        _, compact = torch.unique(pair, return_inverse=True)
        return (row_ptr.int(), src[slot_order], slot_order.int(), ety[slot_order],
                compact.int(), int(compact.max()) + 1 if edges else 0, src, dst, ety)

    @pytest.mark.parametrize("w", WIDTHS)
    @pytest.mark.parametrize("n,e,r,hub,hub_edges", [
        (1, 0, 1, None, 0), (7, 3, 2, None, 0), (300, 4000, 5, None, 0),
        (2000, 30_000, 7, 1999, 100_000)])
    def test_csr_sum_max_and_src_atomics(lib, w, n, e, r, hub, hub_edges):
        (row_ptr, csrc, eid, cety, cmap, pairs,
         src, dst, ety) = csr_graph(n, e, r, seed=w + 2, hub=hub, hub_edges=hub_edges)
        z, a = rand(max(pairs, 1), w, seed=35), rand(r, w, seed=36)
        total = torch.zeros(n, w, device=DEV)
        mx = torch.full((n, w), float("-inf"), device=DEV)
        back = torch.zeros(n, w, device=DEV)
        lib[f"csr_{w}"](row_ptr, csrc, eid, cety, cmap, z, a, total, mx, back)
        p = z[cmap.long()].to(F64) * a[ety.long()].to(F64)
        close(total, torch.zeros(n, w, dtype=F64, device=DEV).index_add(0, dst.long(), p),
              **(HUB_TOL if hub_edges else {}))
        ref_mx = torch.full((n, w), float("-inf"), dtype=F64, device=DEV)
        ref_mx = ref_mx.scatter_reduce(0, dst.long()[:, None].expand(-1, w), p, "amax")
        close(mx, ref_mx)
        close(back, torch.zeros(n, w, dtype=F64, device=DEV).index_add(0, src.long(), p),
              **(HUB_TOL if hub_edges else {}))

    @pytest.mark.parametrize("w", WIDTHS)
    @pytest.mark.parametrize("n,e,r", [(1, 0, 1), (40, 500, 3), (3000, 50_000, 9)])
    def test_every_edge_scheme(lib, w, n, e, r):
        src, dst, ety = coo_graph(n, e, r, seed=w + 3)
        pair = ety.long() * max(n, 1) + src.long()
        _, cmap = torch.unique(pair, return_inverse=True)
        pairs = int(cmap.max()) + 1 if e else 1
        z, a = rand(pairs, w, seed=37), rand(r, w, seed=38)
        x, b = rand(n, w, seed=39), rand(w, seed=40)
        o = torch.full((e, w), float("nan"), device=DEV)
        lib[f"schemes_{w}"](src, dst, ety, cmap, z, a, x, b, o)
        ref = (z[cmap].to(F64) * a[ety.long()].to(F64) + x[src.long()].to(F64)
               + b.to(F64))
        close(o, ref)

    def pair_graph(n, e, r, seed, hub_pair_edges=0, order="pairs"):
        """A canonical graph with its compact map, pair count and pair_eid
        (edges grouped by pair, as the runtime builds it; "random": any
        permutation, which must give the same sums, only slower). With
        `hub_pair_edges`, that many extra edges share one (source, type)
        pair, so the pair spans many lane groups' chunks."""
        g = torch.Generator().manual_seed(seed)
        src = torch.randint(0, max(n, 1), (e + hub_pair_edges,), generator=g)
        dst = torch.randint(0, max(n, 1), (e + hub_pair_edges,), generator=g)
        ety = torch.randint(0, max(r, 1), (e + hub_pair_edges,), generator=g)
        src[e:], ety[e:] = 0, 0
        key = (ety * max(n, 1) + dst) * max(n, 1) + src
        perm = torch.argsort(key)
        src, dst, ety = src[perm], dst[perm], ety[perm]
        _, cmap = torch.unique(ety * max(n, 1) + src, return_inverse=True)
        pairs = int(cmap.max()) + 1 if len(cmap) else 0
        if order == "pairs":
            peid = torch.argsort(cmap, stable=True)
        else:
            peid = torch.randperm(len(cmap), generator=g)
        return [t.int().to(DEV) for t in (src, dst, ety, cmap, peid)] + [pairs]

    PAIR_GRAPHS = [
        # (n, e, r, hub_pair_edges, order)
        (1, 0, 1, 0, "pairs"), (1, 1, 1, 0, "pairs"), (50, 333, 4, 0, "pairs"),
        (50, 333, 4, 0, "random"), (3000, 40_000, 7, 0, "pairs"),
        (2000, 30_000, 7, 100_000, "pairs"), (2000, 30_000, 7, 100_000, "random"),
    ]

    @pytest.mark.parametrize("w", WIDTHS)
    @pytest.mark.parametrize("n,e,r,hub_pair_edges,order", PAIR_GRAPHS)
    def test_pair_order_sums(lib, w, n, e, r, hub_pair_edges, order):
        src, dst, ety, cmap, peid, pairs = pair_graph(n, e, r, seed=w + 5,
                                                      hub_pair_edges=hub_pair_edges,
                                                      order=order)
        edges = len(src)
        norm, g = rand(edges, seed=60), rand(n, w, seed=61)
        base = rand(max(pairs, 1), w, seed=62)
        sums = base.clone()
        lib[f"pair_sums_{w}"](src, dst, ety, peid, cmap, norm, g, sums)
        terms = norm.to(F64)[:, None] * g.to(F64)[dst.long()]
        ref = base.to(F64).index_add(0, cmap.long(), terms)
        close(sums, ref, **(HUB_TOL if hub_pair_edges else {}))

    @pytest.mark.parametrize("n,e,r,hub_pair_edges,order", PAIR_GRAPHS)
    def test_pair_order_scalar_sums(lib, n, e, r, hub_pair_edges, order):
        src, dst, ety, cmap, peid, pairs = pair_graph(n, e, r, seed=63,
                                                      hub_pair_edges=hub_pair_edges,
                                                      order=order)
        edges = len(src)
        x, y = rand(edges, 1, seed=64), rand(r, 1, seed=65)
        psum = torch.zeros(max(pairs, 1), 1, device=DEV)
        lib["pair_scalar"](src, dst, ety, peid, cmap, x, y, psum)
        ref = torch.zeros(max(pairs, 1), 1, dtype=F64, device=DEV).index_add(
            0, cmap.long(), x.to(F64) * y.to(F64)[ety.long()])
        close(psum, ref, **(HUB_TOL if hub_pair_edges else {}))

    @pytest.mark.parametrize("w", WIDTHS)
    @pytest.mark.parametrize("n", [0, 1, 37, 20_000])
    def test_mean_in_place(lib, w, n):
        g = torch.Generator().manual_seed(n + w)
        degree = torch.randint(0, 5, (n,), generator=g)
        row_ptr = torch.cat([torch.zeros(1, dtype=torch.long), degree.cumsum(0)]).int().to(DEV)
        m = rand(n, w, seed=41)
        ref = m.to(F64) / degree.clamp(min=1).to(F64).to(DEV)[:, None]
        lib[f"mean_{w}"](row_ptr, m)
        close(m, ref)

    @pytest.mark.parametrize("h,dh", TRAVERSAL_HEADS_SHAPES)
    @pytest.mark.parametrize("n,e,r,hub,hub_edges,order", GRAPHS)
    def test_heads(lib, h, dh, n, e, r, hub, hub_edges, order):
        src, dst, ety = coo_graph(n, e, r, seed=h, hub=hub, hub_edges=hub_edges, order=order)
        edges = len(src)
        alpha = rand(edges, h, seed=42) * 0.1
        z = rand(edges, h * dh, seed=43)
        out = torch.zeros(n, h * dh, device=DEV)
        lib[f"heads_{h}_{dh}"](src, dst, ety, alpha, z, out)
        msg = (torch.exp(alpha.to(F64))[:, :, None] * z.to(F64).reshape(edges, h, dh))
        ref = torch.zeros(n, h * dh, dtype=F64, device=DEV).index_add(
            0, dst.long(), msg.reshape(edges, h * dh))
        close(out, ref, **(HUB_TOL if hub_edges else {}))

    @pytest.mark.parametrize("h,dh", SOFTMAX_AGGREGATE_SHAPES)
    @pytest.mark.parametrize("n,e,r,hub,hub_edges,order", GRAPHS)
    def test_softmax_aggregate(lib, h, dh, n, e, r, hub, hub_edges, order):
        """out[t] = sum over t's in-edges of softmax(s)[e, head] * z[map[e]],
        against a two-pass float64 softmax; scores spread over tens so the
        running maximum changes along the rows; every element is written
        (out starts as NaN), rows without edges get zeros."""
        src, dst, ety = coo_graph(n, e, r, seed=60 + h, hub=hub, hub_edges=hub_edges,
                                  order=order)
        edges, w = len(src), h * dh
        d = dst.long()
        eid = torch.sort(d, stable=True).indices.int()
        counts = torch.bincount(d, minlength=n)
        rp = torch.cat([torch.zeros(1, dtype=torch.long, device=DEV),
                        counts.cumsum(0)]).int()
        pairs = max(edges // 2, 1)
        cmap = ints(pairs, edges, seed=61)
        s = rand(edges, h, seed=62) * 10
        z = rand(pairs, w, seed=63)
        out = torch.full((n, w), float("nan"), device=DEV)
        lib[f"softmax_aggregate_{h}_{dh}"](rp, eid, cmap, s, z, out)
        s64 = s.to(F64)
        idx = d[:, None].expand(-1, h)
        mx = torch.full((n, h), float("-inf"), dtype=F64, device=DEV).scatter_reduce(
            0, idx, s64, "amax")
        ex = torch.exp(s64 - mx[d])
        total = torch.zeros(n, h, dtype=F64, device=DEV).index_add(0, d, ex)
        alpha = ex / total[d]
        msg = alpha[:, :, None] * z.to(F64)[cmap.long()].reshape(edges, h, dh)
        ref = torch.zeros(n, w, dtype=F64, device=DEV).index_add(
            0, d, msg.reshape(edges, w))
        close(out, ref, **(HUB_TOL if hub_edges else {}))

    @pytest.mark.parametrize("n,e,r,hub,hub_edges,order", GRAPHS)
    def test_scalar_body_segmented_reduction(lib, n, e, r, hub, hub_edges, order):
        src, dst, ety = coo_graph(n, e, r, seed=44, hub=hub, hub_edges=hub_edges, order=order)
        edges = len(src)
        s, m = rand(edges, 1, seed=45), rand(n, 1, seed=46)
        total = torch.zeros(n, 1, device=DEV)
        lib["expsum"](src, dst, ety, s, m, total)
        v = torch.exp(s.to(F64) - m.to(F64)[dst.long()])
        ref = torch.zeros(n, 1, dtype=F64, device=DEV).index_add(0, dst.long(), v)
        close(total, ref, **(HUB_TOL if hub_edges else {}))

    @pytest.mark.parametrize("n,e,r,hub,hub_edges,order", GRAPHS)
    def test_per_head_scalar_body(lib, n, e, r, hub, hub_edges, order):
        src, dst, ety = coo_graph(n, e, r, seed=57, hub=hub, hub_edges=hub_edges, order=order)
        edges = len(src)
        s = rand(edges, 4, seed=58)
        total = torch.zeros(n, 4, device=DEV)
        mx = torch.full((n, 4), float("-inf"), device=DEV)
        lib["expsum_heads"](src, dst, ety, s, total, mx)
        idx = dst.long()[:, None].expand(-1, 4)
        ref = torch.zeros(n, 4, dtype=F64, device=DEV).index_add(
            0, dst.long(), torch.exp(s.to(F64)))
        close(total, ref, **(HUB_TOL if hub_edges else {}))
        ref_mx = torch.full((n, 4), float("-inf"), dtype=F64, device=DEV).scatter_reduce(
            0, idx, s.to(F64), "amax")
        close(mx, ref_mx)

    @pytest.mark.parametrize("n,e,r,hub,hub_edges,order", GRAPHS)
    def test_integer_accumulations(lib, n, e, r, hub, hub_edges, order):
        src, dst, ety = coo_graph(n, e, r, seed=47, hub=hub, hub_edges=hub_edges, order=order)
        edges = len(src)
        deg = torch.zeros(n, dtype=torch.int32, device=DEV)
        top = torch.full((n,), -1, dtype=torch.int32, device=DEV)
        lib["degrees"](src, dst, ety, deg, top)
        assert torch.equal(deg, torch.bincount(dst.long(), minlength=n).int())
        ref_top = torch.full((n,), -1, dtype=torch.long, device=DEV).scatter_reduce(
            0, dst.long(), torch.arange(edges, device=DEV), "amax")
        assert torch.equal(top.long(), ref_top)

    @pytest.mark.parametrize("e", [0, 1, 5000])
    def test_store_order(lib, e):
        src, dst, ety = coo_graph(10, e, 2, seed=55)
        x = rand(e, 8, seed=56)
        o = torch.full((e, 8), float("nan"), device=DEV)
        lib["store_sites"](src, dst, ety, x, o)
        close(o, x)

    @pytest.mark.parametrize("n", [0, 1, 1000])
    def test_node_types(lib, n):
        nt = ints(5, n, seed=48)
        w = rand(5, seed=49)
        o = torch.full((n,), float("nan"), device=DEV)
        lib["ntype"](nt, w, o)
        close(o, w[nt.long()])


def bench(directory: str) -> None:
    """Rough timings (not a test): the typed gather GEMM of RGCN/RGAT (width
    64) per schedule variant, and the aggregation and score traversals,
    against torch, on graphs shaped like bgs and am."""
    import torch

    from hector import compiled

    lib = compiled.load(os.path.join(directory, "libhtmpl_gpu.so"))
    libs = {"fp32": lib}
    if os.path.exists(os.path.join(directory, "libhtmpl_gpu_tf32.so")):
        libs["tf32"] = compiled.load(os.path.join(directory, "libhtmpl_gpu_tf32.so"))
    dev = torch.device("cuda", 0)
    gpu = torch.cuda.get_device_name(dev)

    def time(fn, reps=20):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(True), torch.cuda.Event(True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / reps

    for label, n, e, r in (("bgs", 94_806, 672_884, 122), ("am", 881_680, 5_668_682, 96)):
        g = torch.Generator().manual_seed(0)
        src = torch.randint(0, n, (e,), generator=g)
        dst = torch.randint(0, n, (e,), generator=g)
        ety = torch.randint(0, r, (e,), generator=g)
        perm = torch.argsort((ety * n + dst) * n + src)
        src, dst, ety = (t[perm].int().to(dev) for t in (src, dst, ety))
        counts = torch.bincount(ety.long(), minlength=r)
        seg = torch.cat([torch.zeros(1, dtype=torch.long, device=dev),
                         counts.cumsum(0)]).int()
        h = torch.randn(n, 64, device=dev)
        w = torch.randn(r, 64, 64, device=dev)
        z = torch.empty(e, 64, device=dev)
        moved = (e * 64 * 4 * 2 + e * 4) / 1e9  # gathered rows in, rows out, index
        for precision, variants in libs.items():
            for name in BENCH_GEMMS:
                fn = variants[f"bench_gemm_{name}"]
                ms = time(lambda: fn(h, src, w, z, seg, synchronize=False))
                print(f"{gpu} {label}: typed gather GEMM 64x64 [{name}, {precision}]: "
                      f"{ms:.3f} ms ({moved / ms:.0f} GB/s of rows)")
        types = ety.long()

        def torch_gemm():
            torch.bmm(h[src.long()].unsqueeze(1), w[types]).squeeze(1)

        if e <= 1_000_000:  # w[types] replicates the weights per edge
            print(f"{gpu} {label}: torch bmm (weights replicated per edge): "
                  f"{time(torch_gemm, 5):.3f} ms")
        norm = torch.randn(e, device=dev)
        out = torch.zeros(n, 64, device=dev)
        agg = lib["aggregate_64"]
        ms = time(lambda: agg(src, dst, ety, norm, z, out, synchronize=False))
        ref = time(lambda: out.index_add_(0, dst.long(), norm[:, None] * z))
        print(f"{gpu} {label}: aggregate 64 (warp, buffered rows): {ms:.3f} ms; "
              f"torch index_add: {ref:.3f} ms")
        a = torch.randn(r, 64, device=dev)
        s = torch.empty(e, 1, device=dev)
        m = torch.full((n, 1), float("-inf"), device=dev)
        score = lib["score_64"]
        ms = time(lambda: score(src, dst, ety, z, a, s, m, synchronize=False))
        print(f"{gpu} {label}: score 64 (dot + store + max): {ms:.3f} ms")
        sm = torch.zeros(n, 1, device=dev)
        expsum = lib["expsum"]
        ms = time(lambda: expsum(src, dst, ety, s, m, sm, synchronize=False))
        print(f"{gpu} {label}: expsum (thread, segmented warp reduction): {ms:.3f} ms")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--bench":
        bench(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--build":
        build(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "--build-cpu":
        build(sys.argv[2], target="cpu")
    else:
        raise SystemExit(__doc__)
