//===- Passes.td - hgraph transformations ------------------*- tablegen -*-===//

#ifndef HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_TD
#define HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def HGraphHostResident : Pass<"hgraph-host-resident", "mlir::ModuleOp"> {
  let summary = "marks node-wise inputs that stay in host memory";
  let description = [{
    Marks every argument of an `hgraph.func` named in `names` (its
    `hgraph.name`, or `arg<k>` for argument k) with the unit attribute
    `hgraph.host_resident`. hgraph-to-htmpl turns it into
    `host_resident = true` in the entry point's `hector.arg`, the manifest
    says so, and a CUDA entry point then reads that argument in place from
    pinned, mapped host memory (a `hector.unified` tensor): its GEMM and
    traversal kernels gather the rows over PCIe, and no device copy is made
    (docs/runtime-unified.md, "Compiler option").

    Each name must be a node-wise argument with role `input` in at least one
    function; a weight, an edge-wise value, a saved value or a cotangent is
    an error, and so is a name no function has. With several functions
    (`f`, `f_fwd`, `f_bwd`) every argument of that name is marked.
  }];
  let options = [
    ListOption<"names", "names", "std::string",
               "names of the node-wise inputs that stay in host memory">
  ];
  let dependentDialects = ["hector::hgraph::HGraphDialect"];
}

def HGraphAutodiff : Pass<"hgraph-autodiff", "mlir::ModuleOp"> {
  let summary = "derives a training forward and a backward function from each "
                "hgraph.func";
  let description = [{
    For every `hgraph.func @f` (one without an `hgraph.kind` attribute) this
    adds two functions next to it and keeps `@f` for inference:

    - `@f_fwd` computes the results of `@f` and, as extra results, the
      forward values that the backward reads (role `saved`);
    - `@f_bwd` takes the arguments of `@f` that the backward reads, the saved
      values and one gradient per result of `@f` (role `grad_output`,
      `d_result<i>`), and returns the gradient of every differentiable
      argument (role `grad`, `d_<name>`), built from the vector-Jacobian
      rule of each op in reverse order. Gradient contributions of a value
      used several times are summed with `hgraph.add`; an argument the
      results do not depend on gets `hgraph.zeros`.

    Which forward values are saved and which are recomputed inside `@f_bwd`
    is explicit in the IR: saved values are results of `@f_fwd` and
    arguments of `@f_bwd`; recomputed ones are ordinary ops of `@f_bwd`.
    `save` picks the policy:
    - `materialized` (default): save what the forward stores anyway (the
      results of `typed_linear`, `aggregate`, `edge_softmax`, `concat`) and
      recompute row-wise math, which fuses into the backward traversals;
    - `all`: save every forward value the backward reads;
    - `none`: save nothing; the backward recomputes from the arguments.
    Graph constants (`relation_norm`, `degree_norm`) and weight reads
    (`typed_vector`) are always recomputed.

    `wrt` restricts the gradients to the named arguments (`hgraph.name`, or
    `arg<k>` for argument k); by default every argument but the graph is
    differentiated.
  }];
  let options = [
    Option<"save", "save", "std::string", /*default=*/"\"materialized\"",
           "which forward values the backward reads from memory: "
           "materialized | all | none">,
    ListOption<"wrt", "wrt", "std::string",
               "names of the arguments to differentiate (default: all)">
  ];
  let dependentDialects = ["hector::hgraph::HGraphDialect"];
}

// The graph sizes the profitability decisions are evaluated at (0: unknown,
// the defaults of docs/optimizations.md are used).
defvar GraphSizeOptions = [
  Option<"numNodes", "num-nodes", "int64_t", "0",
         "Nodes N of the graph the model will run on (0: unknown)">,
  Option<"numEdges", "num-edges", "int64_t", "0",
         "Edges E (0: unknown)">,
  Option<"numPairs", "num-pairs", "int64_t", "0",
         "Unique (source, edge type) pairs P (0: unknown)">,
  Option<"numEdgeTypes", "num-edge-types", "int64_t", "0",
         "Edge types R (0: unknown)">,
  Option<"numNodeTypes", "num-node-types", "int64_t", "0",
         "Node types T (0: unknown)">
];

def LinearReordering : Pass<"hgraph-linear-reordering", "mlir::ModuleOp"> {
  let summary = "Swap chained linear operators when that forms a product of "
                "weights only";
  let description = [{
    In every `hgraph.func`, rewrites a linear operator applied to the result
    of another linear operator so that the two weights are multiplied first
    (`hgraph.weight_product`, once per type) and the graph data goes through
    one operator only:

    - `dot(x · W, a)` → `dot(x, W · a)` (RGAT's attention: the typed linear
      map of an attention vector becomes a per-type vector);
    - `(x · W1) · W2` → `x · (W1 · W2)` (HGT's key and message chains
      `k_s W^att_φ` with `k_s = h_s K_τ(s)`);
    - `(s · a) · W` → `s · (a · W)` (a per-row scalar times a typed vector
      fed to a typed linear map, as autodiff writes input gradients of
      the first rule).

    A product of a node-typed and an edge-typed weight (HGT's chains) is
    only exact when every edge type has fixed endpoint node types, which a
    graph given as arbitrary typed edges need not have: those rewrites wait
    for `typed-endpoints`.

    A rewrite fires only where it is legal head by head and where it lowers
    the multiply-add count, evaluated as a polynomial in the graph's sizes
    (N, E, P, R, T; options below, defaults in docs/optimizations.md). An
    operator left without users is removed. Each function stays
    semantically equal, so forward and backward functions stay correct.
  }];
  let options = !listconcat(GraphSizeOptions, [
    Option<"typedEndpoints", "typed-endpoints", "bool", "false",
           "The graph's edge types have fixed source and destination node "
           "types, so a node-typed and an edge-typed weight may be "
           "multiplied (weight_product node_of)">,
    Option<"ignoreCost", "ignore-cost", "bool", "false",
           "Rewrite wherever legal, whatever the multiply-add counts say">,
    Option<"differentiable", "differentiable", "bool", "false",
           "Only create weight products that hgraph-autodiff can "
           "differentiate (a matrix and a vector indexed alike), for running "
           "before autodiff">,
    Option<"remarks", "remarks", "bool", "false",
           "Report every candidate with its symbolic costs as a remark">
  ]);
  let dependentDialects = ["::hector::hgraph::HGraphDialect"];
}

def CompactMaterialization
    : Pass<"hgraph-compact-materialization", "mlir::ModuleOp"> {
  let summary = "Store edge-wise values that depend only on (source, edge "
                "type) once per unique pair";
  let description = [{
    In every `hgraph.func`, marks with
    `hgraph.materialization = #hgraph.materialization<compact>` each typed
    linear map whose result depends only on the edge's source node and edge
    type (`dependsOnlySourceAndEdgeType`) and whose lowering is one GEMM row
    per edge: an edge-typed weight applied `from src`, or any weight applied
    `from edge` to a compact value. hgraph-to-htmpl then runs the GEMM over
    the P unique (source, edge type) pairs instead of the E edges, stores P
    rows, and its consumers read them through the edge → pair mapping
    (`compact` access scheme). The math is unchanged.

    With both `num-edges` and `num-pairs` given, the pass does nothing when
    P / E exceeds `max-ratio` (the extra indirection is not worth it). It
    takes the other graph sizes of `hgraph-linear-reordering` too, so that
    one option string serves both, and ignores them.
  }];
  let options = !listconcat(GraphSizeOptions, [
    Option<"maxRatio", "max-ratio", "double", "0.95",
           "Largest compaction ratio P / E at which values are compacted">
  ]);
  let dependentDialects = ["::hector::hgraph::HGraphDialect"];
}

def OffloadScheduling
    : Pass<"hgraph-offload-scheduling", "mlir::ModuleOp"> {
  let summary = "Plans where each saved value of a training step waits for "
                "the backward: kept, in host memory, on disk, or recomputed";
  let description = [{
    For every training pair (`@f_fwd`, `@f_bwd` of one primal, as
    `hgraph-autodiff` builds them) the pass lays the step out as the forward's
    operations then the backward's, and lists each saved value: its size
    (symbolic in N, E, P), its producer, its last forward reader, its
    backward readers, and the inactive period between them. A cost model
    estimates each operation's time (bytes over the device bandwidth, or
    FLOPs over the GEMM peak, whichever is larger) and each value's
    transfer times (bytes over the host and disk bandwidths); all rates are
    options, so that measured ones can be given.

    The memory model counts what the lowering allocates, from the
    decisions it shares with `hgraph-to-htmpl` (`isStoredByLowering`,
    `LoweringStorage.h`): the results of GEMMs, aggregations, edge softmax,
    concatenation and weight operations (none for a weight gradient or an
    outer product written into a sum's buffer), row-wise values a GEMM or a
    gather reads in memory, the values the lowering's fusion plan stores
    (`rowsStoredByFusion`: costly per-edge scalars several ops read, cuts
    of long expressions) and shared scores, each from its producer to its
    last reader (other row-wise math fuses into the traversals that read
    it);
    per-pair sums from their first reader to their last; an edge softmax's
    per-node scratch; and the caller's buffers for their whole function
    (results, and saved values kept for the whole step). Arguments are not
    counted: `capacity-mib` is the device memory the step's own values may
    use.

    `mode` chooses:
    - `none`: every saved value is kept;
    - `host` / `disk`: every saved value of at least `min-kib` with an
      inactive period goes to that tier;
    - `auto`: while the step's peak exceeds `capacity-mib`, the saved value
      that removes the most memory pressure (bytes over capacity wherever it
      would no longer be held) per second of transfer is moved: to host memory while
      `host-capacity-mib` allows, else to disk, or recomputed in the
      backward where that is cheaper than moving it (its producers read only
      arguments the backward has). Without a capacity, only values whose
      round trip hides in their inactive period are moved.

    Before planning, the backward is reordered without changing what it
    computes: each operation that makes a weight (the weight gradients) moves
    up, with the row-wise math it reads, to just after the stored values it
    needs (autodiff emits them last, which keeps every layer's per-edge
    gradients alive to the end), and each pure operation sinks to just
    before its first reader (autodiff emits the recomputed forward values
    first).

    A moved value is evicted (`hgraph.evict`) after its last forward reader;
    the forward returns it as `!hgraph.stored<...>` and the backward
    prefetches it (`hgraph.prefetch`) at the earliest point from which it
    fits under the capacity until its first reader, else at the latest point
    that still hides its read (at the backward's start when none does). The
    types make it impossible to read a value before its prefetch. A
    recomputed value is no longer saved: the backward evaluates its
    producers before its first reader.

    With `report`, every decision is a remark on the saved value's producer
    listing the figures it was made from, and each pair gets a summary.
  }];
  let options = !listconcat(GraphSizeOptions, [
    Option<"mode", "mode", "std::string", "\"auto\"",
           "none | host | disk | auto">,
    Option<"capacityMiB", "capacity-mib", "int64_t", "0",
           "Device memory for the step's values, MiB (0: no limit)">,
    Option<"hostCapacityMiB", "host-capacity-mib", "int64_t", "0",
           "Host memory for evicted values, MiB (0: no limit)">,
    Option<"minKiB", "min-kib", "int64_t", "64",
           "Smallest value the host and disk modes move, KiB">,
    Option<"deviceGBps", "device-gbps", "double", "2950",
           "Device memory bandwidth, GB/s (H100 copy: 2950)">,
    Option<"gemmTFlops", "gemm-tflops", "double", "51",
           "GEMM peak, TFLOP/s (H100 fp32 cuBLAS: 51)">,
    Option<"hostWriteGBps", "host-write-gbps", "double", "53.1",
           "Device to pinned host copies, GB/s">,
    Option<"hostReadGBps", "host-read-gbps", "double", "54.6",
           "Pinned host to device copies, GB/s">,
    Option<"diskWriteGBps", "disk-write-gbps", "double", "3.05",
           "Disk writes (O_DIRECT, 8 threads), GB/s">,
    Option<"diskReadGBps", "disk-read-gbps", "double", "1.78",
           "Disk reads, GB/s">,
    Option<"report", "report", "bool", "false",
           "Report every saved value's figures and the decision as remarks">
  ]);
  let dependentDialects = ["::hector::hgraph::HGraphDialect"];
}

#endif // HECTOR_DIALECT_HGRAPH_TRANSFORMS_PASSES_TD
