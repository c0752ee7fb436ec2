//===- commopt-translate.cpp - The commopt translation driver -------------===//
//
// An mlir-translate with commopt's translations only: imports of training
// step profiles into the comm dialect, and the export of a simulated step's
// timeline as Chrome trace JSON.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Translations.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::comm::registerCommOptTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "commopt translation tool\n"));
}
