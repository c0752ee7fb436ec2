//===- commopt-opt.cpp - The commopt optimizer driver ---------------------===//
//
// An mlir-opt with the comm dialect, commopt's passes and pipelines, and the
// upstream dialects that exported training graphs use. --help lists
// commopt's pipelines and passes first, with their options' defaults.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Passes.h"
#include "CommOpt/CommOpt.h"
#include "CommOpt/Support/ToolHelp.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  // LLVM's code generators register hundreds of target flags; they stay
  // in --help-hidden.
  mlir::comm::hideLibraryOptions();
  mlir::registerAllPasses();
  mlir::comm::registerCommOptPasses();

  if (mlir::comm::isHelpRequested(argc, argv)) {
    llvm::outs() << "commopt's pipelines and passes (upstream's follow in "
                    "the full list below):\n";
    mlir::comm::printPassHelp(llvm::outs(),
                              mlir::comm::getCommOptPassArguments());
    llvm::outs() << "\n";
  }

  mlir::DialectRegistry registry;
  mlir::comm::registerDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "commopt optimizer: plans gradient communication\n",
      registry));
}
