//===- commopt-grad-profile-fuzzer.cpp - Fuzzes the grad-profile import ---===//
//
// libFuzzer target of commopt-translate's --import-grad-profile
// (lib/Target/GradProfileImport.cpp, docs/GradProfile.md): each input is a
// JSON gradient profile. The import runs as the translation runs it, on a
// context with the comm and func dialects; a module it returns is verified
// and printed, and planned with comm-optimize as scripts/demo.sh plans
// imported profiles. Errors are expected; crashes, sanitizer reports and
// hangs are not.
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
  commopt::fuzz::addInputBuffer(sourceMgr, data, size, "fuzz.json");
  OwningOpRef<ModuleOp> module =
      comm::importGradProfile(sourceMgr, context.get());
  if (!module || failed(verify(*module)))
    return 0;
  module->print(llvm::nulls());
  (void)commopt::fuzz::runOptimize(
      *module, "cluster=ethernet10-16 estimate=step report=none");
  return 0;
}
