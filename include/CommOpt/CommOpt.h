//===- CommOpt.h - The API for embedding commopt ----------------*- C++ -*-===//
//
// The one header a program that embeds commopt includes: registration of
// the dialects a training step uses, of commopt's passes and translations,
// and construction of the planning pipeline from an option string.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_COMMOPT_H
#define COMMOPT_COMMOPT_H

#include "CommDialect/Passes.h"
#include "CommDialect/Target/Translations.h"

#include "mlir/Support/LLVM.h"

namespace mlir {
class DialectRegistry;

namespace comm {

/// Inserts into `registry` the comm dialect and the upstream dialects that
/// training steps and commopt's lowering use (affine, arith, bufferization,
/// cf, func, linalg, llvm, math, memref, ml_program, mpi, scf, shard,
/// tensor), with the bufferization and LLVM-lowering interfaces of those
/// dialects. commopt-opt registers exactly this set.
void registerDialects(DialectRegistry &registry);

/// Parses `options`, the option string of the `comm-optimize` pipeline
/// (e.g. "cluster=nvlink-8 fusion=cost"; empty for the defaults), and adds
/// that pipeline to `pm`, which must run on a module. On malformed options
/// it reports why on stderr, leaves `pm` unchanged and returns failure.
/// Option values that parse but name nothing known (an unknown cluster
/// preset, say) are reported by the passes when `pm` runs.
LogicalResult addOptimizePipeline(OpPassManager &pm, StringRef options);

} // namespace comm
} // namespace mlir

#endif // COMMOPT_COMMOPT_H
