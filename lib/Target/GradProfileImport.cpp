//===- GradProfileImport.cpp - Import of commopt's gradient profiles ------===//
//
// Translates commopt's JSON gradient profile, version 1, into a training-step
// skeleton:
//
//   { "format": "commopt-grad-profile", "version": 1, "model": "resnet50",
//     "forward_us": 30500.0,
//     "layers": [   // in the order their backward runs
//       { "name": "fc", "backward_us": 480.0, "forward_us": 95.0,
//         "params": [ { "name": "fc.weight", "shape": [1000, 2048],
//                       "dtype": "f32" } ] } ] }
//
// The model-level `forward_us` may be left out when every layer has its own
// (then each layer gets a forward step). The optional `update_us` is the
// optimizer's step, which applies the reduced gradients. Unknown fields are
// ignored. Errors
// name the field, e.g. `layers[3].params[0].dtype: unknown dtype "f8"`.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Import.h"

#include "TrainStepBuilder.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>

using namespace mlir;
using namespace mlir::comm;
namespace json = llvm::json;

/// The value of the `format` field that identifies a gradient profile.
static constexpr StringLiteral kFormat = "commopt-grad-profile";

namespace {
/// A parameter of a layer, as the profile lists it.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;
  /// Other names of a tied (shared) parameter, listed once.
  std::vector<std::string> aliases;
  /// Whether it got no gradient in the exported step.
  std::optional<bool> unused;
};

/// A layer, as the profile lists it.
struct LayerSpec {
  std::string name;
  double backwardUs = 0.0;
  std::optional<double> forwardUs;
  std::vector<ParamSpec> params;
};

/// The fields of a profile that the import uses; `format` and `version` are
/// checked before the rest is read.
struct ProfileSpec {
  std::string model;
  std::optional<double> forwardUs;
  /// The optimizer's update after the gradients are reduced.
  std::optional<double> updateUs;
  std::vector<LayerSpec> layers;
};

bool fromJSON(const json::Value &value, ParamSpec &param, json::Path path) {
  json::ObjectMapper mapper(value, path);
  return mapper && mapper.map("name", param.name) &&
         mapper.map("shape", param.shape) && mapper.map("dtype", param.dtype) &&
         mapper.mapOptional("aliases", param.aliases) &&
         mapper.map("unused", param.unused);
}

bool fromJSON(const json::Value &value, LayerSpec &layer, json::Path path) {
  json::ObjectMapper mapper(value, path);
  return mapper && mapper.map("name", layer.name) &&
         mapper.map("backward_us", layer.backwardUs) &&
         mapper.map("forward_us", layer.forwardUs) &&
         mapper.map("params", layer.params);
}

bool fromJSON(const json::Value &value, ProfileSpec &profile, json::Path path) {
  json::ObjectMapper mapper(value, path);
  return mapper && mapper.map("model", profile.model) &&
         mapper.map("forward_us", profile.forwardUs) &&
         mapper.map("update_us", profile.updateUs) &&
         mapper.map("layers", profile.layers);
}

/// Reads a profile from its JSON text and builds the module. Errors are
/// recorded against a json::Path, so that the diagnostic names the field.
class GradProfileImporter {
public:
  GradProfileImporter(llvm::SourceMgr &sourceMgr, MLIRContext *context);

  /// Runs the import; returns null after emitting an error.
  OwningOpRef<ModuleOp> import();

private:
  /// Parses the JSON text into `profile` and checks it.
  LogicalResult read(ProfileSpec &profile);
  /// Checks `format` and `version` of the profile `value`.
  LogicalResult checkHeader(const json::Value &value);
  /// Checks what the types alone do not: times, shapes, dtypes and names.
  LogicalResult checkProfile(const ProfileSpec &profile);
  /// Checks that `us` is a finite, non-negative time.
  LogicalResult checkTime(double us, json::Path path);
  /// Builds the module of a checked profile.
  OwningOpRef<ModuleOp> build(const ProfileSpec &profile);
  /// Records the parameters' aliases (`comm.aliases`, a dictionary from a
  /// parameter's name to its other names) and those without a gradient
  /// (`comm.unused`) on the module, where planning keeps them.
  void recordParameterNotes(const ProfileSpec &profile, ModuleOp module);

  /// Records `message` as the error at `path`. json::Path::report accepts
  /// only string literals, so the message is kept here.
  LogicalResult fail(json::Path path, const Twine &message);
  /// Emits the error recorded in `root` (by `fail` or by json::ObjectMapper)
  /// as "<field path>: <message>".
  void emitPathError();

  /// The element type that `dtype` names, or null if it names none.
  Type getElementType(StringRef dtype);

  MLIRContext *context;
  StringRef text;
  /// The location of the profile as a whole.
  FileLineColLoc fileLoc;
  json::Path::Root root;
  /// The message recorded by `fail`; empty when json::ObjectMapper reported.
  std::string failMessage;
};
} // namespace

GradProfileImporter::GradProfileImporter(llvm::SourceMgr &sourceMgr,
                                         MLIRContext *context)
    : context(context),
      text(sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer()),
      fileLoc(FileLineColLoc::get(
          context,
          sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
              ->getBufferIdentifier(),
          /*line=*/1, /*column=*/1)) {}

LogicalResult GradProfileImporter::fail(json::Path path, const Twine &message) {
  path.report("");
  failMessage = message.str();
  return failure();
}

void GradProfileImporter::emitPathError() {
  // json::Path::Root renders its error as "<message> at (root)<path>", with
  // the path as in "(root).layers[3].params[0]"; take the two apart.
  std::string rendered = llvm::toString(root.getError());
  StringRef message = rendered;
  StringRef path;
  constexpr StringLiteral kAtRoot = " at (root)";
  size_t at = message.rfind(kAtRoot);
  if (at != StringRef::npos) {
    path = message.drop_front(at + kAtRoot.size());
    path.consume_front(".");
    message = message.take_front(at);
  }
  if (!failMessage.empty())
    message = failMessage;
  if (path.empty())
    emitError(fileLoc) << message;
  else
    emitError(fileLoc) << path << ": " << message;
}

Type GradProfileImporter::getElementType(StringRef dtype) {
  return llvm::StringSwitch<Type>(dtype)
      .Case("f16", Float16Type::get(context))
      .Case("bf16", BFloat16Type::get(context))
      .Case("f32", Float32Type::get(context))
      .Case("f64", Float64Type::get(context))
      .Default(nullptr);
}

LogicalResult GradProfileImporter::checkTime(double us, json::Path path) {
  if (std::isfinite(us) && us >= 0.0)
    return success();
  return fail(path, llvm::formatv("time must be a finite number of "
                                  "microseconds >= 0, got {0}",
                                  json::Value(us)));
}

LogicalResult GradProfileImporter::checkHeader(const json::Value &value) {
  json::Path rootPath(root);
  json::ObjectMapper mapper(value, rootPath);
  std::string format;
  int64_t version = 0;
  if (!mapper || !mapper.map("format", format))
    return failure();
  if (format != kFormat)
    return fail(
        rootPath.field("format"),
        llvm::formatv("expected \"{0}\", got \"{1}\"", kFormat, format));
  if (!mapper.map("version", version))
    return failure();
  if (version != 1)
    return fail(rootPath.field("version"),
                llvm::formatv("unsupported version {0}; expected 1", version));
  return success();
}

LogicalResult GradProfileImporter::checkProfile(const ProfileSpec &profile) {
  json::Path rootPath(root);
  json::Path layersPath = rootPath.field("layers");
  // Where each parameter name was first used, to report duplicates.
  llvm::StringMap<std::pair<size_t, size_t>> firstUse;
  std::optional<size_t> layerWithoutForward;
  for (auto [layerIndex, layer] : llvm::enumerate(profile.layers)) {
    json::Path layerPath = layersPath.index(layerIndex);
    if (failed(checkTime(layer.backwardUs, layerPath.field("backward_us"))))
      return failure();
    if (!layer.forwardUs)
      layerWithoutForward = layerWithoutForward.value_or(layerIndex);
    else if (failed(checkTime(*layer.forwardUs, layerPath.field("forward_us"))))
      return failure();

    json::Path paramsPath = layerPath.field("params");
    for (auto [paramIndex, param] : llvm::enumerate(layer.params)) {
      json::Path paramPath = paramsPath.index(paramIndex);
      json::Path shapePath = paramPath.field("shape");
      for (auto [dimIndex, dim] : llvm::enumerate(param.shape))
        if (dim <= 0)
          return fail(
              shapePath.index(dimIndex),
              llvm::formatv("dimension must be positive, got {0}", dim));
      if (!getElementType(param.dtype))
        return fail(paramPath.field("dtype"),
                    llvm::formatv("unknown dtype \"{0}\"; expected f16, "
                                  "bf16, f32 or f64",
                                  param.dtype));
      // A name or alias names one tensor: no two parameters share one.
      std::pair<size_t, size_t> place(layerIndex, paramIndex);
      auto checkUnique = [&](StringRef name, json::Path namePath) {
        if (name.empty())
          return fail(namePath, "empty name");
        auto [it, inserted] = firstUse.try_emplace(name, place);
        if (inserted)
          return success();
        return fail(namePath,
                    llvm::formatv("duplicate parameter name \"{0}\" (first "
                                  "at layers[{1}].params[{2}])",
                                  name, it->second.first, it->second.second));
      };
      if (failed(checkUnique(param.name, paramPath.field("name"))))
        return failure();
      json::Path aliasesPath = paramPath.field("aliases");
      for (auto [aliasIndex, alias] : llvm::enumerate(param.aliases))
        if (failed(checkUnique(alias, aliasesPath.index(aliasIndex))))
          return failure();
    }
  }

  if (profile.updateUs &&
      failed(checkTime(*profile.updateUs, rootPath.field("update_us"))))
    return failure();
  if (profile.forwardUs)
    return checkTime(*profile.forwardUs, rootPath.field("forward_us"));
  if (profile.layers.empty())
    return fail(rootPath.field("forward_us"), "missing value");
  if (layerWithoutForward)
    return fail(rootPath.field("forward_us"),
                llvm::formatv("missing value; it may be left out only when "
                              "every layer has its own forward_us, and "
                              "layers[{0}] has none",
                              *layerWithoutForward));
  return success();
}

OwningOpRef<ModuleOp> GradProfileImporter::build(const ProfileSpec &profile) {
  TrainStepBuilder step(context, fileLoc, profile.model, kFormat);
  int64_t numLayers = profile.layers.size();
  bool perLayerForward =
      !profile.layers.empty() &&
      llvm::all_of(profile.layers,
                   [](const LayerSpec &layer) { return layer.forwardUs; });
  if (perLayerForward) {
    // Layers are listed in backward order: forward visits them reversed.
    for (auto [layer, spec] : llvm::enumerate(llvm::reverse(profile.layers)))
      step.addForward(fileLoc, spec.name, *spec.forwardUs, layer);
  } else {
    step.addForward(fileLoc, "forward", *profile.forwardUs, std::nullopt);
  }

  SmallVector<GradientSpec> gradients;
  for (auto [position, layer] : llvm::enumerate(profile.layers)) {
    gradients.clear();
    for (const ParamSpec &param : layer.params)
      gradients.push_back(
          {param.name,
           RankedTensorType::get(param.shape, getElementType(param.dtype))});
    step.addBackward(fileLoc, layer.name, layer.backwardUs,
                     numLayers - 1 - static_cast<int64_t>(position), gradients);
  }
  if (profile.updateUs)
    step.addUpdate(fileLoc, *profile.updateUs);
  OwningOpRef<ModuleOp> module = step.finish();
  recordParameterNotes(profile, module.get());
  return module;
}

void GradProfileImporter::recordParameterNotes(const ProfileSpec &profile,
                                               ModuleOp module) {
  Builder builder(context);
  SmallVector<NamedAttribute> aliases;
  SmallVector<StringRef> unused;
  for (const LayerSpec &layer : profile.layers)
    for (const ParamSpec &param : layer.params) {
      if (!param.aliases.empty()) {
        SmallVector<StringRef> names(param.aliases.begin(),
                                     param.aliases.end());
        aliases.push_back(
            builder.getNamedAttr(param.name, builder.getStrArrayAttr(names)));
      }
      if (param.unused.value_or(false))
        unused.push_back(param.name);
    }
  if (!aliases.empty())
    module->setAttr("comm.aliases", builder.getDictionaryAttr(aliases));
  if (!unused.empty())
    module->setAttr("comm.unused", builder.getStrArrayAttr(unused));
}

LogicalResult GradProfileImporter::read(ProfileSpec &profile) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value) {
    // json::ParseError renders as "[<line>:<column>, byte=<offset>]: <msg>".
    // Its column is 0-based and, for most errors, just past the character
    // the parser stopped at: that is the character's 1-based column.
    std::string rendered = llvm::toString(value.takeError());
    SmallVector<StringRef, 5> match;
    llvm::Regex pattern("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$");
    unsigned line = 0, column = 0;
    if (!pattern.match(rendered, &match) || match[1].getAsInteger(10, line) ||
        match[2].getAsInteger(10, column))
      return emitError(fileLoc) << "malformed JSON: " << rendered;
    auto loc =
        FileLineColLoc::get(fileLoc.getFilename(), line, std::max(column, 1u));
    return emitError(loc) << "malformed JSON: " << match[3];
  }

  if (failed(checkHeader(*value)) || !fromJSON(*value, profile, root) ||
      failed(checkProfile(profile))) {
    emitPathError();
    return failure();
  }
  return success();
}

OwningOpRef<ModuleOp> GradProfileImporter::import() {
  ProfileSpec profile;
  if (failed(read(profile)))
    return nullptr;
  return build(profile);
}

OwningOpRef<ModuleOp> mlir::comm::importGradProfile(llvm::SourceMgr &sourceMgr,
                                                    MLIRContext *context) {
  return GradProfileImporter(sourceMgr, context).import();
}
