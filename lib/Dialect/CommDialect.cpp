//===- CommDialect.cpp - The comm dialect ---------------------------------===//
//
// Registers the comm dialect's attributes, types and ops.
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

#define GET_ATTRDEF_CLASSES
#include "CommDialect/CommAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "CommDialect/CommTypes.cpp.inc"

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
}
