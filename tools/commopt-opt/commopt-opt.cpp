//===- commopt-opt.cpp - The commopt optimizer driver ---------------------===//
//
// An mlir-opt with the comm dialect, commopt's passes and pipelines, and the
// upstream dialects that exported training graphs use.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/CommOpt.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::comm::registerCommOptPasses();

  mlir::DialectRegistry registry;
  mlir::comm::registerDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "commopt optimizer: plans gradient communication\n",
      registry));
}
