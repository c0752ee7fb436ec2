//===- Translations.cpp - Registration of commopt's translations ----------===//
//
// Registers the profile imports with the mlir-translate registry.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Translations.h"

#include "CommDialect/CommDialect.h"
#include "CommDialect/Target/Import.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

/// The dialects that imported training steps use.
static void registerImportDialects(DialectRegistry &registry) {
  registry.insert<comm::CommDialect, func::FuncDialect>();
}

void mlir::comm::registerCommOptTranslations() {
  static const bool registered = [] {
    TranslateToMLIRRegistration importGradProfile(
        "import-grad-profile",
        "Import a commopt JSON gradient profile (version 1)",
        [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
          return OwningOpRef<Operation *>(
              comm::importGradProfile(sourceMgr, context).release());
        },
        registerImportDialects);
    TranslateToMLIRRegistration importPipedream(
        "import-pipedream", "Import a graph.txt of pipedream's profiler",
        [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
          return OwningOpRef<Operation *>(
              comm::importPipedream(sourceMgr, context).release());
        },
        registerImportDialects);
    return true;
  }();
  (void)registered;
}
