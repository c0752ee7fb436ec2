//===- Import.h - Imports of training-step profiles -------------*- C++ -*-===//
//
// Entry points of the profile imports, for programs (benchmarks, tests) that
// call them directly rather than through commopt-translate. Both produce the
// same shape of module:
//
//   module attributes {comm.model = "<model>", comm.source = "<format>"} {
//     func.func @train_step() -> (<one result per gradient>) {
//       <forward steps, in forward order>
//       <per layer, in backward order: its backward step, which returns the
//        layer's gradients, then one comm.allreduce (avg) per gradient>
//       return <the reduced gradients, in the order they were reduced>
//     }
//   }
//
// Forward and backward steps are `comm.compute` ops with `cost_us`, `name`,
// `phase` and, where the profile times layers one by one, `layer` (the
// layer's index in forward order).
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_TARGET_IMPORT_H
#define COMMDIALECT_TARGET_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
class MLIRContext;

namespace comm {

/// Options of the gradient-profile import.
struct GradProfileImportOptions {
  /// A device preset (v100, a100, ...) or device description file. When
  /// set, each layer's forward and backward times, and the optimizer's
  /// update, are the device's roofline times of the FLOPs and bytes the
  /// profile counts (docs/GradProfile.md, section 3) instead of the
  /// measured ones; a profile without the counts is an error.
  std::string device;
  /// Reads every layer through json::parse and fromJSON, never directly
  /// from the text (the fast path that well-formed layers take otherwise);
  /// both must give the same module or the same error, which the
  /// grad-profile fuzzer checks.
  bool jsonValuesOnly = false;
};

/// Imports commopt's JSON gradient profile (version 1) held in the main
/// buffer of `sourceMgr`. Layers are listed in backward order; a layer's
/// `forward_us` gives one forward step per layer when every layer has one,
/// otherwise the model-level `forward_us` gives a single forward step.
/// Returns null after emitting an error that names the offending field.
OwningOpRef<ModuleOp> importGradProfile(llvm::SourceMgr &sourceMgr,
                                        MLIRContext *context);
/// As above, with `options`.
OwningOpRef<ModuleOp>
importGradProfile(llvm::SourceMgr &sourceMgr, MLIRContext *context,
                  const GradProfileImportOptions &options);

/// Imports a `graph.txt` written by pipedream's profiler held in the main
/// buffer of `sourceMgr`. Every node but the inputs (descriptions starting
/// with `Input`) becomes one forward and one backward step; a node with
/// parameters yields one f32 gradient of `parameter_size / 4` elements named
/// after the node. Forward runs in topological order of the edges, ties
/// broken by the order of the nodes in the file; backward in reverse.
/// Returns null after emitting an error located at the offending line.
OwningOpRef<ModuleOp> importPipedream(llvm::SourceMgr &sourceMgr,
                                      MLIRContext *context);

} // namespace comm
} // namespace mlir

#endif // COMMDIALECT_TARGET_IMPORT_H
