//===- commopt-translate.cpp - The commopt translation driver -------------===//
//
// An mlir-translate with commopt's translations only: imports of training
// step profiles into the comm dialect, and the exports of a planned step's
// timeline (Chrome trace JSON) and plan (JSON for the training bridge).
// --help lists them first, with their options.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Translations.h"
#include "CommOpt/Support/ToolHelp.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  // LLVM's code generators register hundreds of target flags; they stay
  // in --help-hidden.
  mlir::comm::hideLibraryOptions();
  mlir::comm::registerCommOptTranslations();
  if (mlir::comm::isHelpRequested(argc, argv))
    mlir::comm::printCommOptTranslationHelp(llvm::outs());
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "commopt translation tool\n"));
}
