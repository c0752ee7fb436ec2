//===- CommDialect.cpp - The comm dialect ---------------------------------===//
//
// Registers the comm dialect's attributes, types and ops; parses, prints and
// verifies its attributes.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"

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
  size_t offset = 0;
  if (!llvm::json::isUTF8(grid.getValue(), &offset))
    return emitError() << "#comm.group grid name '"
                       << grid.getValue().take_front(offset)
                       << "...' is not valid UTF-8 at byte " << offset
                       << ": names go into JSON plans and reports";
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
                            FusedAllReduceOp, SparseAllReduceOp, SparseStartOp,
                            StartOp, WaitOp, ComputeOp>();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

/// Fails unless every string in the value of `attr` (strings, dictionary
/// keys, nested ones included) is valid UTF-8: comm attributes reach the
/// plan, the timeline and the reports, which are JSON.
static LogicalResult verifyStringsAreUTF8(Operation *op, NamedAttribute attr) {
  std::optional<std::pair<StringRef, size_t>> bad;
  auto check = [&](StringRef string) {
    size_t offset = 0;
    if (llvm::json::isUTF8(string, &offset))
      return WalkResult::advance();
    bad = {string, offset};
    return WalkResult::interrupt();
  };
  attr.getValue().walk([&](Attribute nested) {
    if (auto string = dyn_cast<StringAttr>(nested))
      return check(string.getValue());
    if (auto dictionary = dyn_cast<DictionaryAttr>(nested))
      for (NamedAttribute entry : dictionary)
        if (check(entry.getName().getValue()).wasInterrupted())
          return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (!bad)
    return success();
  return op->emitOpError("attribute '")
         << attr.getName().getValue() << "' holds '"
         << bad->first.take_front(bad->second)
         << "...', which is not valid UTF-8 at byte " << bad->second
         << ": names go into JSON plans and reports";
}

/// Fails unless `attr` is an array of strings; `what` says what it lists.
static LogicalResult verifyStringArray(Operation *op, NamedAttribute attr,
                                       StringRef what) {
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!array || !llvm::all_of(array, llvm::IsaPred<StringAttr>))
    return op->emitOpError("attribute '")
           << attr.getName().getValue() << "' must be an array of strings ("
           << what << "), got " << attr.getValue();
  return success();
}

LogicalResult CommDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  // The notes the imports record on the module (Target/Import.h,
  // docs/GradProfile.md).
  bool isModuleNote = llvm::is_contained(
      {"comm.model", "comm.source", "comm.aliases", "comm.unused"}, name);
  if (isModuleNote && !isa<ModuleOp>(op))
    return op->emitOpError("attribute '") << name << "' belongs on the module";
  if (name == "comm.model" || name == "comm.source") {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError("attribute '")
             << name << "' must be a string ("
             << (name == "comm.model" ? "the model's name"
                                      : "the format the step came from")
             << "), got " << attr.getValue();
  } else if (name == "comm.aliases") {
    auto aliases = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!aliases)
      return op->emitOpError("attribute 'comm.aliases' must be a dictionary "
                             "from a parameter's name to the array of its "
                             "other names, got ")
             << attr.getValue();
    for (NamedAttribute entry : aliases) {
      auto names = dyn_cast<ArrayAttr>(entry.getValue());
      if (!names || !llvm::all_of(names, llvm::IsaPred<StringAttr>))
        return op->emitOpError("attribute 'comm.aliases' must map '")
               << entry.getName().getValue()
               << "' to an array of strings (its other names), got "
               << entry.getValue();
    }
  } else if (name == "comm.unused") {
    if (failed(
            verifyStringArray(op, attr, "the parameters that get no gradient")))
      return failure();
  }
  return verifyStringsAreUTF8(op, attr);
}
