//===- TrainStepBuilder.h - Builds imported training steps ------*- C++ -*-===//
//
// The one place that knows the shape of an imported training step (see
// CommDialect/Target/Import.h): every profile import describes its model to
// a TrainStepBuilder, forward steps first, then backward steps, and gets the
// module back.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_LIB_TARGET_TRAINSTEPBUILDER_H
#define COMMOPT_LIB_TARGET_TRAINSTEPBUILDER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::comm {

/// A gradient that a backward step produces.
struct GradientSpec {
  /// The parameter's name, given to its allreduce.
  StringRef name;
  /// The gradient's type (the parameter's shape and element type).
  RankedTensorType type;
  /// For a gradient that is sparse by nature: the fraction of its rows that
  /// a step touches on 1, 2, 4, ... ranks together (`comm.rows_touched` on
  /// its allreduce); empty otherwise.
  ArrayRef<double> rowsTouched = {};
  /// Whether PyTorch produces it as a sparse COO tensor
  /// (`comm.coo_gradient`).
  bool coo = false;
};

/// Builds the module of one imported training step.
class TrainStepBuilder {
public:
  /// Starts a module for `model` whose profile was in format `source`; `loc`
  /// locates the module and its function.
  TrainStepBuilder(MLIRContext *context, Location loc, StringRef model,
                   StringRef source);

  /// Appends a forward step of `costUs` microseconds. `layer` is the layer's
  /// index in forward order, or none for a step covering the whole model.
  void addForward(Location loc, StringRef name, double costUs,
                  std::optional<int64_t> layer);

  /// Appends the backward step of layer `layer` (its index in forward order),
  /// which produces `gradients`, followed by one averaging allreduce per
  /// gradient.
  void addBackward(Location loc, StringRef name, double costUs, int64_t layer,
                   ArrayRef<GradientSpec> gradients);

  /// Appends the optimizer's update of `costUs` microseconds, which reads
  /// every reduced gradient (so that their collectives complete before it).
  void addUpdate(Location loc, double costUs);

  /// Returns the reduced gradients from the function and hands over the
  /// module. The builder may not be used afterwards.
  OwningOpRef<ModuleOp> finish();

private:
  OwningOpRef<ModuleOp> module;
  func::FuncOp trainStep;
  OpBuilder builder;
  /// The allreduces' results, in the order they were created.
  SmallVector<Value> reduced;
  /// Attributes every step or allreduce of their kind shares, made once: a
  /// profile of 10^5 gradients would otherwise look each up 10^5 times.
  Attribute averageAttr, backwardAttr, forwardAttr;
  /// Each layer's name and index as its forward step made them, by index,
  /// for its backward step: uniquing 10^5 names a second time costs tens of
  /// milliseconds.
  SmallVector<std::pair<StringAttr, IntegerAttr>> layerAttrs;
};

} // namespace mlir::comm

#endif // COMMOPT_LIB_TARGET_TRAINSTEPBUILDER_H
