//===- TrainStepBuilder.cpp - Builds imported training steps --------------===//
//
// Builds the @train_step skeleton that profile imports produce, op by op.
//
//===----------------------------------------------------------------------===//

#include "TrainStepBuilder.h"

#include "CommDialect/CommDialect.h"

using namespace mlir;
using namespace mlir::comm;

TrainStepBuilder::TrainStepBuilder(MLIRContext *context, Location loc,
                                   StringRef model, StringRef source)
    : module(ModuleOp::create(loc)), builder(context) {
  context->loadDialect<CommDialect, func::FuncDialect>();
  averageAttr = ReduceKindAttr::get(context, ReduceKind::avg);
  backwardAttr = PhaseAttr::get(context, Phase::backward);
  forwardAttr = PhaseAttr::get(context, Phase::forward);
  (*module)->setAttr("comm.model", builder.getStringAttr(model));
  (*module)->setAttr("comm.source", builder.getStringAttr(source));
  builder.setInsertionPointToEnd(module->getBody());
  trainStep = func::FuncOp::create(builder, loc, "train_step",
                                   builder.getFunctionType({}, {}));
  builder.setInsertionPointToEnd(trainStep.addEntryBlock());
}

void TrainStepBuilder::addForward(Location loc, StringRef name, double costUs,
                                  std::optional<int64_t> layer) {
  StringAttr nameAttr = builder.getStringAttr(name);
  IntegerAttr layerAttr = layer ? builder.getI64IntegerAttr(*layer) : nullptr;
  if (layer && *layer >= 0) {
    if (layerAttrs.size() <= static_cast<uint64_t>(*layer))
      layerAttrs.resize(*layer + 1);
    layerAttrs[*layer] = {nameAttr, layerAttr};
  }
  ComputeOp::create(builder, loc, TypeRange(), ValueRange(),
                    /*outputs=*/ValueRange(), builder.getF64FloatAttr(costUs),
                    nameAttr, layerAttr, cast<PhaseAttr>(forwardAttr));
}

void TrainStepBuilder::addBackward(Location loc, StringRef name, double costUs,
                                   int64_t layer,
                                   ArrayRef<GradientSpec> gradients) {
  SmallVector<Type> types;
  types.reserve(gradients.size());
  for (const GradientSpec &gradient : gradients)
    types.push_back(gradient.type);
  // The forward step of the layer made its attributes already, unless it
  // had another name or none was added.
  StringAttr nameAttr;
  IntegerAttr layerAttr;
  if (layer >= 0 && static_cast<uint64_t>(layer) < layerAttrs.size() &&
      layerAttrs[layer].first && layerAttrs[layer].first.getValue() == name)
    std::tie(nameAttr, layerAttr) = layerAttrs[layer];
  else
    std::tie(nameAttr, layerAttr) = std::make_pair(
        builder.getStringAttr(name), builder.getI64IntegerAttr(layer));
  auto step = ComputeOp::create(builder, loc, types, ValueRange(),
                                /*outputs=*/ValueRange(),
                                builder.getF64FloatAttr(costUs), nameAttr,
                                layerAttr, cast<PhaseAttr>(backwardAttr));
  for (auto [gradient, value] : llvm::zip_equal(gradients, step.getResults())) {
    auto allreduce = AllReduceOp::create(
        builder, loc, gradient.type, value, cast<ReduceKindAttr>(averageAttr),
        /*wire=*/nullptr, /*prescale=*/nullptr,
        builder.getStringAttr(gradient.name), /*group=*/nullptr,
        /*algorithm=*/nullptr, /*transport=*/nullptr);
    if (!gradient.rowsTouched.empty())
      allreduce->setAttr(kRowsTouchedAttrName,
                         builder.getDenseF64ArrayAttr(gradient.rowsTouched));
    if (gradient.coo)
      allreduce->setAttr(kCooGradientAttrName, builder.getUnitAttr());
    reduced.push_back(allreduce.getResult());
  }
}

void TrainStepBuilder::addUpdate(Location loc, double costUs) {
  ComputeOp::create(builder, loc, TypeRange(), reduced,
                    /*outputs=*/ValueRange(), builder.getF64FloatAttr(costUs),
                    builder.getStringAttr("update"), /*layer=*/nullptr,
                    PhaseAttr::get(builder.getContext(), Phase::optimizer));
}

OwningOpRef<ModuleOp> TrainStepBuilder::finish() {
  func::ReturnOp::create(builder, trainStep.getLoc(), reduced);
  trainStep.setFunctionType(
      builder.getFunctionType({}, ValueRange(reduced).getTypes()));
  return std::move(module);
}
