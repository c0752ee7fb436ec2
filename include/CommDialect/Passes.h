//===- Passes.h - commopt passes and pipelines ------------------*- C++ -*-===//
//
// Declares every pass of commopt and the functions that register them and
// the pipelines built from them.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_PASSES_H
#define COMMDIALECT_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace arith {
class ArithDialect;
} // namespace arith
namespace cf {
class ControlFlowDialect;
} // namespace cf
namespace func {
class FuncDialect;
} // namespace func
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace memref {
class MemRefDialect;
} // namespace memref
namespace ml_program {
class MLProgramDialect;
} // namespace ml_program

namespace comm {

#define GEN_PASS_DECL
#include "CommDialect/CommPasses.h.inc"

/// Adds to `pm` the passes that take a module whose gradients are tensors
/// through bufferization, `convert-comm-to-runtime` and the LLVM lowering,
/// ready for mlir-runner or mlir-translate --mlir-to-llvmir.
void buildLowerToLLVMPipeline(OpPassManager &pm);

/// Registers every commopt pass and pipeline with the global registry, so
/// that they appear in an mlir-opt-style tool's command line.
void registerCommOptPasses();

#define GEN_PASS_REGISTRATION
#include "CommDialect/CommPasses.h.inc"

} // namespace comm
} // namespace mlir

#endif // COMMDIALECT_PASSES_H
