//===- RuntimeFunctions.h - Declarations of commrt functions ----*- C++ -*-===//
//
// Looks up or declares the `commrt_*` functions of the runtime's C ABI
// (lib/Runtime/include/commrt/commrt.h) that lowered code calls.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_RUNTIMEFUNCTIONS_H
#define COMMDIALECT_RUNTIMEFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::comm {

/// Returns the function `name` of `module`, declaring it, private and at the
/// end of the module, where the module has no symbol `name`. Where the
/// symbol is something else than a function of type `type`, calls
/// `reportConflict` with it, for the caller's diagnostic, and fails.
FailureOr<func::FuncOp> getOrDeclareRuntimeFunction(
    OpBuilder &builder, ModuleOp module, StringRef name, FunctionType type,
    function_ref<void(Operation *existing)> reportConflict);

} // namespace mlir::comm

#endif // COMMDIALECT_RUNTIMEFUNCTIONS_H
