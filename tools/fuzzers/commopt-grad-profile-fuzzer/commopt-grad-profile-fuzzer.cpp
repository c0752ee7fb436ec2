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
// It is also a differential test of the importer's direct layer reader
// (LayerReader, the fast path of well-formed layers): the same input read
// only through llvm::json values must give the same module, or the same
// error, or the target aborts.
//
//===----------------------------------------------------------------------===//

#include "../FuzzerSupport.h"

#include "CommDialect/Target/Import.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

/// The printed module, or the diagnostics, of importing the input with
/// `options`.
std::string
importAndPrint(const uint8_t *data, size_t size,
               const mlir::comm::GradProfileImportOptions &options) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::comm::CommDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  std::string result;
  llvm::raw_string_ostream os(result);
  mlir::ScopedDiagnosticHandler record(&context, [&](mlir::Diagnostic &diag) {
    os << "error: " << diag << "\n";
    return mlir::success();
  });
  llvm::SourceMgr sourceMgr;
  commopt::fuzz::addInputBuffer(sourceMgr, data, size, "fuzz.json");
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::comm::importGradProfile(sourceMgr, &context, options);
  if (module)
    module->print(os, mlir::OpPrintingFlags().enableDebugInfo());
  return result;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::comm::GradProfileImportOptions direct, valuesOnly;
  valuesOnly.jsonValuesOnly = true;
  std::string fast = importAndPrint(data, size, direct);
  std::string reference = importAndPrint(data, size, valuesOnly);
  if (fast != reference) {
    std::fprintf(stderr,
                 "the direct layer reader and llvm::json disagree:\n"
                 "--- direct\n%s\n--- llvm::json values\n%s\n",
                 fast.c_str(), reference.c_str());
    std::abort();
  }
  // The model's name comes from the file's name.
  return commopt::fuzz::fuzzImport(data, size, "fuzz.json",
                                   mlir::comm::importGradProfile);
}
