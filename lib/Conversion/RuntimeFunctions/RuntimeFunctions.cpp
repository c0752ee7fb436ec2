//===- RuntimeFunctions.cpp - Declarations of commrt functions ------------===//
//
// Looks up or declares the runtime functions that convert-comm-to-runtime
// and comm-add-step-driver call.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/RuntimeFunctions.h"

using namespace mlir;

FailureOr<func::FuncOp> mlir::comm::getOrDeclareRuntimeFunction(
    OpBuilder &builder, ModuleOp module, StringRef name, FunctionType type,
    function_ref<void(Operation *existing)> reportConflict) {
  if (Operation *existing = module.lookupSymbol(name)) {
    auto func = dyn_cast<func::FuncOp>(existing);
    if (func && func.getFunctionType() == type)
      return func;
    reportConflict(existing);
    return failure();
  }
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}
