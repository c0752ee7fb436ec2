//===- CommOpt.cpp - The API for embedding commopt ------------------------===//
//
// Implements the registration and pipeline-building functions that
// programs embedding commopt call, and that commopt-opt itself uses.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/CommOpt.h"

#include "CommDialect/BufferizableOpInterfaceImpl.h"
#include "CommDialect/CommDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/MLProgram/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllExtensions.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

void comm::registerDialects(DialectRegistry &registry) {
  registry
      .insert<CommDialect, affine::AffineDialect, arith::ArithDialect,
              bufferization::BufferizationDialect, cf::ControlFlowDialect,
              func::FuncDialect, LLVM::LLVMDialect, linalg::LinalgDialect,
              math::MathDialect, memref::MemRefDialect,
              ml_program::MLProgramDialect, mpi::MPIDialect, scf::SCFDialect,
              shard::ShardDialect, tensor::TensorDialect>();
  // Bufferization and LLVM-lowering interfaces of the upstream dialects.
  registerAllExtensions(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  ml_program::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  comm::registerBufferizableOpInterfaceExternalModels(registry);
}

LogicalResult comm::addOptimizePipeline(OpPassManager &pm, StringRef options) {
  // The option parser says what is wrong with an option; this names the
  // string it was in.
  std::unique_ptr<OptimizeOptions> parsed =
      OptimizeOptions::createFromString(options);
  if (!parsed) {
    llvm::errs() << "commopt: invalid comm-optimize options '" << options
                 << "'\n";
    return failure();
  }
  if (failed(verifyOptimizeOptions(*parsed, [](const Twine &message) {
        llvm::errs() << "commopt: " << message << "\n";
        return failure();
      })))
    return failure();
  buildOptimizePipeline(pm, *parsed);
  return success();
}
