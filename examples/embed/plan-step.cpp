//===- plan-step.cpp - Plan a training step with commopt's API ------------===//
//
// An example of embedding commopt: reads a training step (a file, or a small
// built-in one), plans its gradient communication with the comm-optimize
// pipeline under the given options and prints the planned module.
//
//   plan-step [--options="cluster=nvlink-8 fusion=cost"] [step.mlir]
//
//===----------------------------------------------------------------------===//

#include "CommOpt/CommOpt.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace {

/// A training step as commopt's profile importers write one: the forward
/// pass, then each layer's backward step (last layer first), whose
/// gradients are averaged across ranks as soon as they are produced.
constexpr llvm::StringLiteral kTrainStep = R"mlir(
func.func @train_step() -> (tensor<10x512xf32>, tensor<10xf32>,
                            tensor<512x512xf32>, tensor<512xf32>,
                            tensor<512x784xf32>, tensor<512xf32>) {
  comm.compute () {cost_us = 900.0, name = "forward",
                   phase = #comm.phase<forward>} : () -> ()
  %fc3:2 = comm.compute () {cost_us = 60.0, layer = 2, name = "fc3",
                            phase = #comm.phase<backward>}
      : () -> (tensor<10x512xf32>, tensor<10xf32>)
  %fc3w = comm.allreduce %fc3#0 {name = "fc3.weight", reduce = #comm.reduce<avg>}
      : tensor<10x512xf32> -> tensor<10x512xf32>
  %fc3b = comm.allreduce %fc3#1 {name = "fc3.bias", reduce = #comm.reduce<avg>}
      : tensor<10xf32> -> tensor<10xf32>
  %fc2:2 = comm.compute () {cost_us = 700.0, layer = 1, name = "fc2",
                            phase = #comm.phase<backward>}
      : () -> (tensor<512x512xf32>, tensor<512xf32>)
  %fc2w = comm.allreduce %fc2#0 {name = "fc2.weight", reduce = #comm.reduce<avg>}
      : tensor<512x512xf32> -> tensor<512x512xf32>
  %fc2b = comm.allreduce %fc2#1 {name = "fc2.bias", reduce = #comm.reduce<avg>}
      : tensor<512xf32> -> tensor<512xf32>
  %fc1:2 = comm.compute () {cost_us = 1100.0, layer = 0, name = "fc1",
                            phase = #comm.phase<backward>}
      : () -> (tensor<512x784xf32>, tensor<512xf32>)
  %fc1w = comm.allreduce %fc1#0 {name = "fc1.weight", reduce = #comm.reduce<avg>}
      : tensor<512x784xf32> -> tensor<512x784xf32>
  %fc1b = comm.allreduce %fc1#1 {name = "fc1.bias", reduce = #comm.reduce<avg>}
      : tensor<512xf32> -> tensor<512xf32>
  return %fc3w, %fc3b, %fc2w, %fc2b, %fc1w, %fc1b
      : tensor<10x512xf32>, tensor<10xf32>, tensor<512x512xf32>,
        tensor<512xf32>, tensor<512x784xf32>, tensor<512xf32>
}
)mlir";

llvm::cl::opt<std::string>
    inputFilename(llvm::cl::Positional,
                  llvm::cl::desc("[training step .mlir, or - for stdin]"),
                  llvm::cl::init(""));

llvm::cl::opt<std::string> optimizeOptions(
    "options",
    llvm::cl::desc("Options of the comm-optimize pipeline, e.g. "
                   "\"cluster=nvlink-8 fusion=cost\""),
    llvm::cl::init(""));

} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "plan-step: plans a training step's gradient communication\n");

  mlir::DialectRegistry registry;
  mlir::comm::registerDialects(registry);
  mlir::MLIRContext context(registry);

  // The step to plan, with diagnostics that point into it.
  llvm::SourceMgr sourceMgr;
  if (inputFilename.empty()) {
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(kTrainStep, "built-in training step"),
        llvm::SMLoc());
  } else {
    std::string error;
    std::unique_ptr<llvm::MemoryBuffer> file =
        mlir::openInputFile(inputFilename, &error);
    if (!file) {
      llvm::errs() << "plan-step: " << error << "\n";
      return 1;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  }
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  mlir::PassManager pm(&context);
  if (mlir::failed(mlir::comm::addOptimizePipeline(pm, optimizeOptions)))
    return 1;
  if (mlir::failed(pm.run(*module)))
    return 1;

  module->print(llvm::outs());
  return 0;
}
