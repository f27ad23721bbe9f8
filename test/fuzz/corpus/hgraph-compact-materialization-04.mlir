hgraph.func @f_fwd(%g: !hgraph.graph, %h: !hgraph.node<8xf32>, %W: !hgraph.weight<edge, 8x8xf32>)
    -> (!hgraph.edge<8xf32> {hgraph.name = "result0", hgraph.role = "output"},
        !hgraph.edge<8xf32> {hgraph.name = "saved0", hgraph.role = "saved"},
        !hgraph.edge<8xf32> {hgraph.name = "saved1", hgraph.role = "saved"})
    attributes {hgraph.kind = "training_forward", hgraph.primal = "f"} {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %t = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  hgraph.return %z, %z, %t : !hgraph.edge<8xf32>, !hgraph.edge<8xf32>, !hgraph.edge<8xf32>
}
hgraph.func @f_bwd(%g: !hgraph.graph, %s0: !hgraph.edge<8xf32> {hgraph.name = "saved0", hgraph.role = "saved"},
                   %s1: !hgraph.edge<8xf32> {hgraph.name = "saved1", hgraph.role = "saved"})
    -> (!hgraph.node<8xf32> {hgraph.name = "d_h", hgraph.role = "grad"})
    attributes {hgraph.kind = "training_backward", hgraph.primal = "f"} {
  %sum = hgraph.add %s0, %s1 : !hgraph.edge<8xf32>
  %d = hgraph.aggregate sum %sum : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %d : !hgraph.node<8xf32>
}
hgraph.func @other_bwd(%g: !hgraph.graph, %s0: !hgraph.edge<8xf32> {hgraph.name = "saved0", hgraph.role = "saved"})
    -> (!hgraph.node<8xf32> {hgraph.name = "d_h", hgraph.role = "grad"})
    attributes {hgraph.kind = "training_backward", hgraph.primal = "other"} {
  %d = hgraph.aggregate sum %s0 : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  hgraph.return %d : !hgraph.node<8xf32>
}
