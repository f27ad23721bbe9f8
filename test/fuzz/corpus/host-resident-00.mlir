hgraph.func @two(%g: !hgraph.graph, %h: !hgraph.node<8xf32> {hgraph.name = "h"},
                 %x2: !hgraph.node<8xf32> {hgraph.name = "x2"},
                 %W: !hgraph.weight<edge, 8x8xf32> {hgraph.name = "W"}) -> !hgraph.node<8xf32> {
  %z = hgraph.typed_linear %W, %h from src : !hgraph.weight<edge, 8x8xf32>, !hgraph.node<8xf32> -> !hgraph.edge<8xf32>
  %a = hgraph.aggregate sum %z : !hgraph.edge<8xf32> -> !hgraph.node<8xf32>
  %s = hgraph.add %a, %x2 : !hgraph.node<8xf32>
  hgraph.return %s : !hgraph.node<8xf32>
}





hgraph.func @unnamed(%g: !hgraph.graph, %h: !hgraph.node<4xf32>) -> !hgraph.node<4xf32> {
  %e = hgraph.exp %h : !hgraph.node<4xf32>
  hgraph.return %e : !hgraph.node<4xf32>
}

func.func @scale(%x: memref<?x4xf32> {hector.arg = {role = "input", name = "x", shape = ["N", 4], host_resident = true}},
                 %out: memref<?x4xf32> {hector.arg = {role = "output", name = "out", shape = ["N", 4]}}) {
  return
}


hgraph.func @kinds(%g: !hgraph.graph,
                   %W: !hgraph.weight<edge, 4x4xf32> {hgraph.name = "W"},
                   %e: !hgraph.edge<4xf32> {hgraph.name = "e"},
                   %s: !hgraph.node<4xf32> {hgraph.name = "s", hgraph.role = "saved"}) -> !hgraph.node<4xf32> {
  %a = hgraph.aggregate sum %e : !hgraph.edge<4xf32> -> !hgraph.node<4xf32>
  %b = hgraph.add %a, %s : !hgraph.node<4xf32>
  hgraph.return %b : !hgraph.node<4xf32>
}

hgraph.func @marked(%g: !hgraph.graph,
                    %W: !hgraph.weight<single, 4x4xf32> {hgraph.name = "W", hgraph.host_resident},
                    %h: !hgraph.node<4xf32> {hgraph.name = "h"}) -> !hgraph.node<4xf32> {
  %y = hgraph.typed_linear %W, %h from node : !hgraph.weight<single, 4x4xf32>, !hgraph.node<4xf32> -> !hgraph.node<4xf32>
  hgraph.return %y : !hgraph.node<4xf32>
}

func.func @read_in_kernel(%x: memref<?xf32> {hector.arg = {name = "x", host_resident = true}},
                          %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.subview %x[%bx] [1] [1] : memref<?xf32> to memref<1xf32, strided<[1], offset: ?>>
    %a = memref.load %v[%c0] : memref<1xf32, strided<[1], offset: ?>>
    memref.store %a, %out[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}
