//===- commopt-pipedream-fuzzer.cpp - Fuzzes the pipedream import ---------===//
//
// libFuzzer target of commopt-translate's --import-pipedream
// (lib/Target/PipedreamImport.cpp, docs/PipedreamProfile.md): each input is
// a graph.txt of pipedream's profiler. The import runs as the translation
// runs it, on a context with the comm and func dialects; a module it returns
// is verified and printed, and planned with comm-optimize as
// scripts/demo.sh plans imported profiles. Errors are expected; crashes,
// sanitizer reports and hangs are not.
//
//===----------------------------------------------------------------------===//

#include "../FuzzerSupport.h"

#include "CommDialect/CommDialect.h"
#include "CommDialect/Target/Import.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// The dialects of the translation's registration (Translations.cpp).
static const DialectRegistry &getRegistry() {
  static const DialectRegistry registry = [] {
    DialectRegistry result;
    result.insert<comm::CommDialect, func::FuncDialect>();
    return result;
  }();
  return registry;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  commopt::fuzz::SilentContext context(getRegistry());
  context.get()->loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  // The model's name comes from the file's name.
  commopt::fuzz::addInputBuffer(sourceMgr, data, size, "fuzz.graph.txt");
  OwningOpRef<ModuleOp> module =
      comm::importPipedream(sourceMgr, context.get());
  if (!module || failed(verify(*module)))
    return 0;
  module->print(llvm::nulls());
  (void)commopt::fuzz::runOptimize(
      *module, "cluster=ethernet10-16 estimate=step report=none");
  return 0;
}
