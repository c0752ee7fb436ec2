//===- CommDialect.h - The comm dialect -------------------------*- C++ -*-===//
//
// Declares the comm dialect, its attributes, types and ops. Include this one
// header to use the dialect.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_COMMDIALECT_H
#define COMMDIALECT_COMMDIALECT_H

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "CommDialect/CommDialect.h.inc"
#include "CommDialect/CommEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "CommDialect/CommAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "CommDialect/CommTypes.h.inc"

namespace mlir::comm {
/// The bytes of a gradient of the shaped type `type` whose elements travel
/// at the bits of `wire` (of its own element type where null), rounded up
/// to whole bytes: the one byte count of every pass and estimate. Nullopt
/// for a dynamic shape.
std::optional<int64_t> getGradientBytes(Type type, Type wire = {});

/// The chunk size of chunk selection when a sparse collective names none
/// (the default of its `chunk_elements`; the runtime's
/// COMMRT_DEFAULT_CHUNK_ELEMENTS).
inline constexpr int64_t kDefaultSparseChunkElements = 32768;

/// On a comm.allreduce of a gradient that is sparse by nature (an
/// embedding's), from its profile: `array<f64: d1, d2, d4, ...>`, the
/// fraction of the gradient's rows that a step touches on 1, 2, 4, ...
/// ranks together (docs/GradProfile.md). comm-exchange-rows prices the
/// lossless rows exchange with it.
inline constexpr llvm::StringLiteral kRowsTouchedAttrName = "comm.rows_touched";

/// On a comm.allreduce whose gradient PyTorch produces as a sparse COO
/// tensor (`nn.Embedding(sparse=True)`): a unit attribute, from its profile.
inline constexpr llvm::StringLiteral kCooGradientAttrName = "comm.coo_gradient";

/// Whether `op` is a blocking collective in tensor form, which
/// comm-schedule-overlap splits into a start and a wait (a sparse one only
/// with `sparse`, that pass's option).
bool isBlockingTensorCollective(Operation *op, bool sparse);
} // namespace mlir::comm

#include "CommDialect/CommInterfaces.h.inc"

#define GET_OP_CLASSES
#include "CommDialect/CommOps.h.inc"

#endif // COMMDIALECT_COMMDIALECT_H
