//===- AddStepDriver.cpp - A timing @main around a training step ----------===//
//
// Implements `comm-add-step-driver`: adds a @main that runs the step
// function a number of times, each step between a barrier and a report of
// the slowest rank's time, with arguments made from a fill value, so that a
// lowered module runs under mlir-runner as it is.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Passes.h"
#include "CommDialect/RuntimeFunctions.h"
#include "CommOpt/Support/OptionChecks.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::comm {
#define GEN_PASS_DEF_COMMADDSTEPDRIVER
#include "CommDialect/CommPasses.h.inc"
} // namespace mlir::comm

using namespace mlir;
using namespace mlir::comm;

namespace {

struct CommAddStepDriverPass
    : public WithCheckedOptions<
          comm::impl::CommAddStepDriverBase<CommAddStepDriverPass>> {
  using WithCheckedOptions::WithCheckedOptions;

  LogicalResult initialize(MLIRContext *context) final {
    if (steps < 1)
      return emitError(UnknownLoc::get(context))
             << "comm-add-step-driver: option 'steps': expected at least 1, "
                "got "
             << steps.getValue();
    return success();
  }

  void runOnOperation() final {
    ModuleOp module = getOperation();
    if (module.lookupSymbol("main")) {
      module.emitError() << "comm-add-step-driver: the module already has a "
                            "@main";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> step = findStep(module);
    if (failed(step) || failed(checkArguments(*step)))
      return signalPassFailure();
    FailureOr<DriverFunctions> runtime = declareRuntime(module);
    if (failed(runtime))
      return signalPassFailure();
    buildMain(module, *step, *runtime);
  }

private:
  /// The runtime functions @main calls.
  struct DriverFunctions {
    func::FuncOp barrier, timeUs, reportStepUs, abortOnError;
  };

  /// The step: `function`, or the one public function with a body.
  FailureOr<func::FuncOp> findStep(ModuleOp module) {
    if (!function.empty()) {
      auto step = module.lookupSymbol<func::FuncOp>(function);
      if (!step || step.isExternal())
        return module.emitError()
               << "comm-add-step-driver: option 'function': no function @"
               << function << " with a body in the module";
      return step;
    }
    SmallVector<func::FuncOp> candidates;
    for (func::FuncOp func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.isPublic())
        candidates.push_back(func);
    if (candidates.size() == 1)
      return candidates.front();
    InFlightDiagnostic diag = module.emitError() << "comm-add-step-driver: ";
    if (candidates.empty())
      return diag << "the module has no public function with a body to run";
    diag << "the module has " << candidates.size()
         << " public functions with a body (";
    llvm::interleaveComma(candidates, diag, [&](func::FuncOp func) {
      diag << "@" << func.getSymName();
    });
    return diag << "); name the step with function=";
  }

  /// Checks that every argument of `step` can be made from `fill`.
  LogicalResult checkArguments(func::FuncOp step) {
    for (auto [index, type] : llvm::enumerate(step.getArgumentTypes())) {
      Type element = getElementTypeOrSelf(type);
      bool shapeOk =
          !isa<ShapedType>(type) || (isa<RankedTensorType, MemRefType>(type) &&
                                     cast<ShapedType>(type).hasStaticShape());
      if (shapeOk && (isa<FloatType, IntegerType, IndexType>(element)))
        continue;
      return step.emitError()
             << "comm-add-step-driver: argument " << index << " of @"
             << step.getSymName() << " has type " << type
             << ", which the driver cannot make: it makes statically shaped "
                "tensors and memrefs, integers, indices and floats";
    }
    return success();
  }

  FailureOr<DriverFunctions> declareRuntime(ModuleOp module) {
    OpBuilder builder(module.getContext());
    Type i32 = builder.getI32Type(), i64 = builder.getI64Type(),
         f64 = builder.getF64Type();
    auto declare = [&](StringRef name, FunctionType type) {
      return getOrDeclareRuntimeFunction(
          builder, module, name, type, [&](Operation *existing) {
            existing->emitError()
                << "comm-add-step-driver: @" << name
                << " is taken by something else than the runtime's " << type;
          });
    };
    FailureOr<func::FuncOp> barrier =
        declare("commrt_barrier", builder.getFunctionType({}, {i32}));
    FailureOr<func::FuncOp> timeUs =
        declare("commrt_time_us", builder.getFunctionType({}, {f64}));
    FailureOr<func::FuncOp> report = declare(
        "commrt_report_step_us", builder.getFunctionType({i64, f64}, {i32}));
    FailureOr<func::FuncOp> abort =
        declare("commrt_abort_on_error", builder.getFunctionType({i32}, {}));
    if (failed(barrier) || failed(timeUs) || failed(report) || failed(abort))
      return failure();
    return DriverFunctions{*barrier, *timeUs, *report, *abort};
  }

  /// `fill` as a constant of the scalar type `type`.
  Value buildScalar(OpBuilder &b, Location loc, Type type) {
    if (auto floatType = dyn_cast<FloatType>(type))
      return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, fill));
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, static_cast<int64_t>(fill)));
  }

  /// A fresh value of `type` for one step's call.
  Value buildArgument(OpBuilder &b, Location loc, Type type) {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped)
      return buildScalar(b, loc, type);
    Value value = buildScalar(b, loc, shaped.getElementType());
    if (auto memref = dyn_cast<MemRefType>(type)) {
      Value buffer = memref::AllocOp::create(b, loc, memref);
      linalg::FillOp::create(b, loc, value, buffer);
      return buffer;
    }
    Value empty = tensor::EmptyOp::create(b, loc, shaped.getShape(),
                                          shaped.getElementType());
    return linalg::FillOp::create(b, loc, value, empty).getResult(0);
  }

  void buildMain(ModuleOp module, func::FuncOp step,
                 const DriverFunctions &runtime) {
    Location loc = step.getLoc();
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    auto main = func::FuncOp::create(builder, loc, "main",
                                     builder.getFunctionType({}, {}));
    OpBuilder b = OpBuilder::atBlockBegin(main.addEntryBlock());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value count = arith::ConstantIndexOp::create(b, loc, steps);
    auto loop = scf::ForOp::create(b, loc, zero, count, one);
    b.setInsertionPointToStart(loop.getBody());

    SmallVector<Value> arguments;
    for (Type type : step.getArgumentTypes())
      arguments.push_back(buildArgument(b, loc, type));
    Value barrier = func::CallOp::create(b, loc, runtime.barrier, ValueRange())
                        .getResult(0);
    func::CallOp::create(b, loc, runtime.abortOnError, barrier);
    Value start =
        func::CallOp::create(b, loc, runtime.timeUs, ValueRange()).getResult(0);
    func::CallOp::create(b, loc, step, arguments);
    Value end =
        func::CallOp::create(b, loc, runtime.timeUs, ValueRange()).getResult(0);
    Value elapsed = arith::SubFOp::create(b, loc, end, start);
    Value index = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                             loop.getInductionVar());
    Value reported = func::CallOp::create(b, loc, runtime.reportStepUs,
                                          ValueRange{index, elapsed})
                         .getResult(0);
    func::CallOp::create(b, loc, runtime.abortOnError, reported);
    // Memref arguments are the driver's own; tensors are freed by the
    // deallocation pipeline.
    for (Value argument : arguments)
      if (isa<MemRefType>(argument.getType()))
        memref::DeallocOp::create(b, loc, argument);

    b.setInsertionPointToEnd(&main.getBody().front());
    func::ReturnOp::create(b, loc);
  }
};

} // namespace
