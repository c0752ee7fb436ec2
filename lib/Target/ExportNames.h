//===- ExportNames.h - Checks of the names the exports write ----*- C++ -*-===//
//
// The exports write the model's and the step function's names into JSON,
// which holds UTF-8 only. Names in comm ops and `comm.*` attributes are
// checked by the verifiers; symbol names are any bytes, and are checked here.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_LIB_TARGET_EXPORTNAMES_H
#define COMMOPT_LIB_TARGET_EXPORTNAMES_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

namespace mlir::comm::detail {

/// Fails, with an error of `exportName` at `op`, unless `name` (what
/// `what` says it is) is valid UTF-8.
inline LogicalResult checkExportedName(Operation *op,
                                       llvm::StringRef exportName,
                                       llvm::StringRef what,
                                       llvm::StringRef name) {
  size_t offset = 0;
  if (llvm::json::isUTF8(name, &offset))
    return success();
  return op->emitError() << exportName << ": " << what << " '"
                         << name.take_front(offset)
                         << "...' is not valid UTF-8 at byte " << offset
                         << "; JSON holds UTF-8 only";
}

} // namespace mlir::comm::detail

#endif // COMMOPT_LIB_TARGET_EXPORTNAMES_H
