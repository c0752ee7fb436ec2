//===- FuzzerSupport.h - What commopt's fuzz targets share ------*- C++ -*-===//
//
// Helpers of the libFuzzer targets under tools/fuzzers: a context per input
// whose diagnostics go nowhere, the fuzzer's bytes as a named, null-terminated
// buffer, and runs of the comm-optimize pipeline. Errors are expected from
// fuzzed input and are dropped; crashes, sanitizer reports and hangs are the
// findings.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_TOOLS_FUZZERS_FUZZERSUPPORT_H
#define COMMOPT_TOOLS_FUZZERS_FUZZERSUPPORT_H

#include "CommDialect/CommDialect.h"
#include "CommOpt/CommOpt.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace commopt::fuzz {

/// A context for one input: single-threaded (no thread pool per input),
/// with every diagnostic swallowed.
class SilentContext {
public:
  explicit SilentContext(const mlir::DialectRegistry &registry)
      : context(registry, mlir::MLIRContext::Threading::DISABLED),
        silence(&context, [](mlir::Diagnostic &) { return mlir::success(); }) {}

  mlir::MLIRContext *get() { return &context; }

private:
  mlir::MLIRContext context;
  mlir::ScopedDiagnosticHandler silence;
};

/// The input as the main buffer of `sourceMgr`, copied so that it is
/// null-terminated as the parsers expect; `name` is its file name in
/// locations.
inline void addInputBuffer(llvm::SourceMgr &sourceMgr, const uint8_t *data,
                           size_t size, llvm::StringRef name) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(bytes, name), llvm::SMLoc());
}

/// Runs comm-optimize with `options` on a copy of `module`. The pipeline
/// checks the IR after every pass, as commopt-opt does. Returns the planned
/// copy, or null when the options or a pass failed.
inline mlir::OwningOpRef<mlir::ModuleOp> runOptimize(mlir::ModuleOp module,
                                                     llvm::StringRef options) {
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  mlir::PassManager pm(module.getContext(), mlir::ModuleOp::getOperationName());
  if (mlir::failed(mlir::comm::addOptimizePipeline(pm, options)) ||
      mlir::failed(pm.run(*copy)))
    return nullptr;
  return copy;
}

/// One input of an importer target: `import` (a commopt-translate import)
/// reads the bytes as the file `name` on a context with the translation's
/// dialects; a module it returns is verified and printed, and planned with
/// comm-optimize as scripts/demo.sh plans imported profiles.
inline int
fuzzImport(const uint8_t *data, size_t size, llvm::StringRef name,
           mlir::OwningOpRef<mlir::ModuleOp> (*import)(llvm::SourceMgr &,
                                                       mlir::MLIRContext *)) {
  static const mlir::DialectRegistry registry = [] {
    mlir::DialectRegistry result;
    result.insert<mlir::comm::CommDialect, mlir::func::FuncDialect>();
    return result;
  }();
  SilentContext context(registry);
  context.get()->loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  addInputBuffer(sourceMgr, data, size, name);
  mlir::OwningOpRef<mlir::ModuleOp> module = import(sourceMgr, context.get());
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  module->print(llvm::nulls());
  (void)runOptimize(*module, "cluster=ethernet10-16 estimate=step report=none");
  return 0;
}

} // namespace commopt::fuzz

#endif // COMMOPT_TOOLS_FUZZERS_FUZZERSUPPORT_H
