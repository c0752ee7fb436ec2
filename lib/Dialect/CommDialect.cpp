//===- CommDialect.cpp - The comm dialect ---------------------------------===//
//
// Registers the comm dialect's attributes, types and ops; parses, prints and
// verifies its attributes.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::comm;

#include "CommDialect/CommDialect.cpp.inc"
#include "CommDialect/CommEnums.cpp.inc"
#include "CommDialect/CommInterfaces.cpp.inc"

/// Parses the axes of a `#comm.group`: a bracketed, comma-separated list of
/// integers, possibly empty (which the verifier then rejects with a clearer
/// message than a parse error).
static ParseResult parseGridAxes(AsmParser &parser,
                                 SmallVector<int64_t> &axes) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    int64_t axis;
    if (parser.parseInteger(axis))
      return failure();
    axes.push_back(axis);
    return success();
  });
}

/// Prints the axes of a `#comm.group` as `[a, b, ...]`.
static void printGridAxes(AsmPrinter &printer, ArrayRef<int64_t> axes) {
  printer << '[';
  llvm::interleaveComma(axes, printer);
  printer << ']';
}

#define GET_ATTRDEF_CLASSES
#include "CommDialect/CommAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "CommDialect/CommTypes.cpp.inc"

LogicalResult GroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                FlatSymbolRefAttr grid,
                                ArrayRef<int64_t> axes) {
  if (!grid)
    return emitError() << "#comm.group needs a grid symbol";
  if (axes.empty())
    return emitError() << "#comm.group needs at least one grid axis";
  for (auto [index, axis] : llvm::enumerate(axes)) {
    if (axis < 0)
      return emitError() << "#comm.group axes must be non-negative, got "
                         << axis;
    if (index > 0 && axis <= axes[index - 1])
      return emitError() << "#comm.group axes must be listed in increasing "
                            "order, each once, got "
                         << axes[index - 1] << " before " << axis;
  }
  return success();
}

void CommDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "CommDialect/CommAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "CommDialect/CommTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "CommDialect/CommOps.cpp.inc"
      >();
  // BufferizableOpInterfaceImpl.cpp implements it.
  declarePromisedInterfaces<bufferization::BufferizableOpInterface, AllReduceOp,
                            FusedAllReduceOp, SparseAllReduceOp, StartOp,
                            WaitOp, ComputeOp>();
}
