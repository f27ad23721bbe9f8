//===- PullbackBuilder.h - what a vector-Jacobian rule may do ---*- C++ -*-===//
//
// The hooks an op's vector-Jacobian rule (VJPOpInterface::buildPullback,
// lib/Dialect/HGraph/IR/HGraphVJP.cpp) builds the backward with. The
// autodiff pass implements them; declaring them here keeps the dialect free
// of any dependency on its transforms.
//
//===----------------------------------------------------------------------===//

#ifndef HECTOR_DIALECT_HGRAPH_IR_PULLBACKBUILDER_H
#define HECTOR_DIALECT_HGRAPH_IR_PULLBACKBUILDER_H

#include "hector/Dialect/HGraph/IR/HGraph.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace hector::hgraph {

/// The backward function under construction, as one op's rule sees it.
class PullbackBuilder {
public:
  virtual ~PullbackBuilder();

  /// The builder, inserting at the end of the backward body.
  virtual mlir::OpBuilder &getBuilder() = 0;
  /// The location of the op being differentiated.
  virtual mlir::Location getLoc() const = 0;
  /// The graph argument of the backward function.
  virtual mlir::Value getGraph() = 0;
  /// The backward's copy of the forward value `primalValue`: an argument,
  /// a saved value or a recomputation, as the save policy decides.
  virtual mlir::Value forward(mlir::Value primalValue) = 0;
  /// True when `primalValue` depends on a differentiated argument and
  /// reaches a result: only active values get a gradient.
  virtual bool isActive(mlir::Value primalValue) const = 0;
  /// Adds `contribution` to the gradient of `primalValue`.
  virtual void addCotangent(mlir::Value primalValue,
                            mlir::Value contribution) = 0;
  /// True when the save policy saves the values the forward stores anyway
  /// (isStoredByLowering): every policy but `none`. A rule may then read
  /// such a result rather than recompute an operand (leaky_relu).
  virtual bool savesStoredValues() const = 0;

  /// Adds the contribution `rule` builds to the gradient of `operand`, if
  /// it is active (else builds nothing).
  void contribute(mlir::Value operand, llvm::function_ref<mlir::Value()> rule) {
    if (isActive(operand))
      addCotangent(operand, rule());
  }

  /// Builds an `OpTy` of result type `type` at the end of the backward.
  template <typename OpTy, typename... Args>
  mlir::Value make(mlir::Type type, Args &&...args) {
    return OpTy::create(getBuilder(), getLoc(), type,
                        std::forward<Args>(args)...)
        .getResult();
  }
  mlir::Value mul(mlir::Value a, mlir::Value b) {
    return make<MulOp>(a.getType(), a, b);
  }
  /// The node-wise `node` read at endpoint `at` of every edge.
  mlir::Value gather(mlir::Value node, mlir::Type edgeType, Endpoint at) {
    return make<GatherOp>(edgeType, node, at);
  }
  /// The sum of the edge-wise `edge` over the edges of each node, which
  /// is their endpoint `into`.
  mlir::Value aggregateSum(mlir::Value edge, mlir::Type nodeType,
                           Endpoint into);
};

} // namespace hector::hgraph

#endif // HECTOR_DIALECT_HGRAPH_IR_PULLBACKBUILDER_H
