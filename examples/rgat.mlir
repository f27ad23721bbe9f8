// RGAT (BRIEF.md §4), 1 head(s) of 64 features:
//   z_e     = W_φ(e)ᵀ h_s
//   score_e = LeakyReLU_0.2(a_φ(e)·z_e + b_φ(e)·(W_φ(e)ᵀ h_t))   (per head)
//   α_e     = softmax of score over the incoming edges of t
//   h'_t    = Σ_e α_e z_e
hgraph.func @rgat(%g: !hgraph.graph, %h: !hgraph.node<64xf32> {hgraph.name = "h"},
                  %W: !hgraph.weight<edge, 64x64xf32> {hgraph.name = "W"}, %a: !hgraph.weight<edge, 64xf32> {hgraph.name = "a"}, %b: !hgraph.weight<edge, 64xf32> {hgraph.name = "b"}) -> !hgraph.node<64xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %zt = hgraph.typed_linear %W, %h from dst : !hgraph.weight<edge, 64x64xf32>, !hgraph.node<64xf32> -> !hgraph.edge<64xf32>
  %av = hgraph.typed_vector %a : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32>
  %bv = hgraph.typed_vector %b : !hgraph.weight<edge, 64xf32> -> !hgraph.edge<64xf32>
  %sa = hgraph.dot %z, %av : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %sb = hgraph.dot %zt, %bv : !hgraph.edge<64xf32> -> !hgraph.edge<1xf32>
  %sum = hgraph.add %sa, %sb : !hgraph.edge<1xf32>
  %score = hgraph.leaky_relu %sum alpha 2.000000e-01 : !hgraph.edge<1xf32>
  %alpha = hgraph.edge_softmax %score : !hgraph.edge<1xf32>
  %msg = hgraph.scale %alpha, %z : !hgraph.edge<1xf32>, !hgraph.edge<64xf32> -> !hgraph.edge<64xf32>
  %out = hgraph.aggregate sum %msg : !hgraph.edge<64xf32> -> !hgraph.node<64xf32>
  hgraph.return %out : !hgraph.node<64xf32>
}
