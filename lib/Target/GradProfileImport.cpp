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
// optimizer's step, which applies the reduced gradients. The optional totals
// `num_layers`, `num_params` and `num_elements` must agree with the body, so
// that a profile that lost layers is an error rather than a smaller model.
// The optional counts `forward_flops`, `backward_flops`, `forward_bytes` and
// `backward_bytes` of each layer, and `update_flops` and `update_bytes`, let
// the import replace the measured times by a device's roofline times
// (GradProfileImportOptions::device).
// Unknown fields are ignored; a field given twice in one object is an error.
// Errors name the field, e.g. `layers[3].params[0].dtype: unknown dtype
// "f8"`.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Import.h"

#include "TrainStepBuilder.h"

#include "CommOpt/Analysis/DeviceModel.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

using namespace mlir;
using namespace mlir::comm;
namespace json = llvm::json;

/// The value of the `format` field that identifies a gradient profile.
static constexpr StringLiteral kFormat = "commopt-grad-profile";

/// The header's optional totals, which the body must agree with.
static constexpr StringLiteral kNumLayers = "num_layers";
static constexpr StringLiteral kNumParams = "num_params";
static constexpr StringLiteral kNumElements = "num_elements";

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
  /// For a gradient that is sparse by nature: the fraction of rows a step
  /// touches on 1, 2, 4, ... ranks together, and whether PyTorch gives it
  /// as a sparse COO tensor (`"sparse": {"rows_touched": [...], "coo": b}`).
  std::vector<double> rowsTouched;
  bool coo = false;
  bool hasSparse = false;
};

/// A param's `sparse` object.
struct SparseSpec {
  std::vector<double> rowsTouched;
  std::optional<bool> coo;
};

bool fromJSON(const json::Value &value, SparseSpec &sparse, json::Path path) {
  json::ObjectMapper mapper(value, path);
  return mapper && mapper.map("rows_touched", sparse.rowsTouched) &&
         mapper.map("coo", sparse.coo);
}

/// A layer, as the profile lists it.
struct LayerSpec {
  std::string name;
  double backwardUs = 0.0;
  std::optional<double> forwardUs;
  /// The work of the forward and the backward step, where counted: FLOPs and
  /// bytes moved to or from memory.
  std::optional<double> forwardFlops;
  std::optional<double> backwardFlops;
  std::optional<double> forwardBytes;
  std::optional<double> backwardBytes;
  std::vector<ParamSpec> params;
};

/// The fields of a profile that the import uses; `format` and `version` are
/// checked before the rest is read.
struct ProfileSpec {
  std::string model;
  std::optional<double> forwardUs;
  /// The optimizer's update after the gradients are reduced, and its work
  /// where counted.
  std::optional<double> updateUs;
  std::optional<double> updateFlops;
  std::optional<double> updateBytes;
  std::vector<LayerSpec> layers;
  /// The header's totals, where given: the number of layers, of params (each
  /// listed param once, without its aliases) and of their elements.
  std::optional<int64_t> numLayers;
  std::optional<int64_t> numParams;
  std::optional<int64_t> numElements;
};

bool fromJSON(const json::Value &value, ParamSpec &param, json::Path path) {
  json::ObjectMapper mapper(value, path);
  // `"aliases": null` counts as absent, as for every optional field.
  std::optional<std::vector<std::string>> aliases;
  std::optional<SparseSpec> sparse;
  if (!mapper || !mapper.map("name", param.name) ||
      !mapper.map("shape", param.shape) || !mapper.map("dtype", param.dtype) ||
      !mapper.map("aliases", aliases) || !mapper.map("unused", param.unused) ||
      !mapper.map("sparse", sparse))
    return false;
  param.aliases = std::move(aliases).value_or(std::vector<std::string>());
  if (sparse) {
    param.hasSparse = true;
    param.rowsTouched = std::move(sparse->rowsTouched);
    param.coo = sparse->coo.value_or(false);
  }
  return true;
}

bool fromJSON(const json::Value &value, LayerSpec &layer, json::Path path) {
  json::ObjectMapper mapper(value, path);
  return mapper && mapper.map("name", layer.name) &&
         mapper.map("backward_us", layer.backwardUs) &&
         mapper.map("forward_us", layer.forwardUs) &&
         mapper.map("forward_flops", layer.forwardFlops) &&
         mapper.map("backward_flops", layer.backwardFlops) &&
         mapper.map("forward_bytes", layer.forwardBytes) &&
         mapper.map("backward_bytes", layer.backwardBytes) &&
         mapper.map("params", layer.params);
}

bool fromJSON(const json::Value &value, ProfileSpec &profile, json::Path path) {
  json::ObjectMapper mapper(value, path);
  return mapper && mapper.map("model", profile.model) &&
         mapper.map("forward_us", profile.forwardUs) &&
         mapper.map("update_us", profile.updateUs) &&
         mapper.map("update_flops", profile.updateFlops) &&
         mapper.map("update_bytes", profile.updateBytes) &&
         mapper.map("layers", profile.layers);
}

/// Reads one layer of a profile straight from its JSON text into a
/// LayerSpec, without the json::Value tree that json::parse builds (which
/// costs most of the import of a large profile): the fast path for layers in
/// the form the exporter writes them. It reads only what json::parse and the
/// fromJSON functions above would read alike: strings without escapes or
/// control characters, numbers in JSON's grammar (integers that fit an
/// int64_t where an integer is read), `true` and `false`, each known field
/// once and no `null`. At anything else it gives up, and the caller reads the
/// layer with json::parse and fromJSON, which also report every error.
class LayerReader {
public:
  /// `text` is one element of the `layers` array, valid UTF-8.
  explicit LayerReader(StringRef text) : text(text) {}

  /// Reads the layer into `layer`; false where the caller must read it.
  bool read(LayerSpec &layer) {
    if (!readLayer(layer))
      return false;
    skipSpace();
    return at == text.size();
  }

private:
  /// The fields of an object read so far, as bits.
  struct FieldsSeen {
    unsigned bits = 0;
    /// Records `field`; whether it was not seen before.
    bool first(unsigned field) {
      bool isFirst = !(bits & field);
      bits |= field;
      return isFirst;
    }
    /// Whether every field of `fields` was seen.
    bool all(unsigned fields) const { return (bits & fields) == fields; }
  };

  bool readLayer(LayerSpec &layer) {
    // The fields of a layer, each at most once.
    enum Field : unsigned {
      Name = 1,
      BackwardUs = 2,
      Params = 4,
      ForwardUs = 8,
      ForwardFlops = 16,
      BackwardFlops = 32,
      ForwardBytes = 64,
      BackwardBytes = 128,
    };
    FieldsSeen seen;
    auto once = [&](Field field) { return seen.first(field); };
    auto optional = [&](Field field, std::optional<double> &value) {
      double number;
      if (!once(field) || !readNumber(number))
        return false;
      value = number;
      return true;
    };
    bool read = readObject([&](StringRef key) {
      if (key == "name")
        return once(Name) && readString(layer.name);
      if (key == "backward_us")
        return once(BackwardUs) && readNumber(layer.backwardUs);
      if (key == "params")
        return once(Params) && readArray([&] {
                 return readParam(layer.params.emplace_back());
               });
      if (key == "forward_us")
        return optional(ForwardUs, layer.forwardUs);
      if (key == "forward_flops")
        return optional(ForwardFlops, layer.forwardFlops);
      if (key == "backward_flops")
        return optional(BackwardFlops, layer.backwardFlops);
      if (key == "forward_bytes")
        return optional(ForwardBytes, layer.forwardBytes);
      if (key == "backward_bytes")
        return optional(BackwardBytes, layer.backwardBytes);
      return false;
    });
    return read && seen.all(Name | BackwardUs | Params);
  }

  bool readParam(ParamSpec &param) {
    enum Field : unsigned {
      Name = 1,
      Shape = 2,
      Dtype = 4,
      Aliases = 8,
      Unused = 16,
    };
    FieldsSeen seen;
    auto once = [&](Field field) { return seen.first(field); };
    bool read = readObject([&](StringRef key) {
      if (key == "name")
        return once(Name) && readString(param.name);
      if (key == "shape")
        return once(Shape) && readArray([&] {
                 return readInteger(param.shape.emplace_back());
               });
      if (key == "dtype")
        return once(Dtype) && readString(param.dtype);
      if (key == "aliases")
        return once(Aliases) && readArray([&] {
                 return readString(param.aliases.emplace_back());
               });
      if (key == "unused") {
        bool value;
        if (!once(Unused) || !readBool(value))
          return false;
        param.unused = value;
        return true;
      }
      return false;
    });
    return read && seen.all(Name | Shape | Dtype);
  }

  /// Reads `{ "key": value, ... }`, each value by `field(key)`.
  template <typename Field> bool readObject(Field &&field) {
    if (!consume('{'))
      return false;
    if (consume('}'))
      return true;
    do {
      StringRef key;
      if (!readStringRef(key) || !consume(':') || !field(key))
        return false;
    } while (consume(','));
    return consume('}');
  }

  /// Reads `[ element, ... ]`, each by `element()`.
  template <typename Element> bool readArray(Element &&element) {
    if (!consume('['))
      return false;
    if (consume(']'))
      return true;
    do {
      if (!element())
        return false;
    } while (consume(','));
    return consume(']');
  }

  bool readString(std::string &out) {
    StringRef value;
    if (!readStringRef(value))
      return false;
    out = value.str();
    return true;
  }

  /// A string without escapes and control characters, which json::parse
  /// would read as it stands.
  bool readStringRef(StringRef &out) {
    if (!consume('"'))
      return false;
    size_t begin = at;
    for (; at < text.size() && text[at] != '"'; ++at)
      if (text[at] == '\\' || static_cast<unsigned char>(text[at]) < 0x20)
        return false;
    if (at == text.size())
      return false;
    out = text.slice(begin, at++);
    return true;
  }

  /// A number in JSON's grammar, `-? (0 | [1-9][0-9]*) (. [0-9]+)?
  /// ([eE] [+-]? [0-9]+)?`: `token` is its text, `integer` whether it has
  /// neither fraction nor exponent.
  bool scanNumber(StringRef &token, bool &integer) {
    skipSpace();
    size_t begin = at;
    auto digits = [&] {
      size_t first = at;
      while (at < text.size() && llvm::isDigit(text[at]))
        ++at;
      return at > first;
    };
    if (at < text.size() && text[at] == '-')
      ++at;
    if (at < text.size() && text[at] == '0')
      ++at;
    else if (!digits())
      return false;
    integer = true;
    if (at < text.size() && text[at] == '.') {
      ++at;
      integer = false;
      if (!digits())
        return false;
    }
    if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
      ++at;
      integer = false;
      if (at < text.size() && (text[at] == '+' || text[at] == '-'))
        ++at;
      if (!digits())
        return false;
    }
    token = text.slice(begin, at);
    return true;
  }

  /// An integer that fits an int64_t, as json::parse keeps it.
  bool readInteger(int64_t &out) {
    StringRef token;
    bool integer;
    return scanNumber(token, integer) && integer &&
           !token.getAsInteger(10, out);
  }

  /// A number as json::parse reads it: an integer that fits an int64_t
  /// exactly, through double; any other by strtod.
  bool readNumber(double &out) {
    StringRef token;
    bool integer;
    if (!scanNumber(token, integer))
      return false;
    int64_t value;
    if (integer) {
      if (token.getAsInteger(10, value))
        return false;
      out = static_cast<double>(value);
      return true;
    }
    llvm::SmallString<32> buffer(token);
    char *end;
    out = std::strtod(buffer.c_str(), &end);
    return end == buffer.c_str() + buffer.size();
  }

  bool readBool(bool &out) {
    skipSpace();
    for (bool value : {true, false}) {
      StringRef word = value ? "true" : "false";
      if (text.substr(at).starts_with(word)) {
        at += word.size();
        out = value;
        return true;
      }
    }
    return false;
  }

  /// Skips JSON's whitespace, then consumes `c` if it is next.
  bool consume(char c) {
    skipSpace();
    if (at < text.size() && text[at] == c) {
      ++at;
      return true;
    }
    return false;
  }

  void skipSpace() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n' ||
                                text[at] == '\t' || text[at] == '\r'))
      ++at;
  }

  StringRef text;
  size_t at = 0;
};

/// Reads a profile from its JSON text and builds the module. Errors are
/// recorded against a json::Path, so that the diagnostic names the field.
class GradProfileImporter {
public:
  GradProfileImporter(llvm::SourceMgr &sourceMgr, MLIRContext *context,
                      const GradProfileImportOptions &options);

  /// Runs the import; returns null after emitting an error.
  OwningOpRef<ModuleOp> import();

private:
  /// Parses the JSON text into `profile` and checks it.
  LogicalResult read(ProfileSpec &profile);
  /// Scans the JSON text for what json::parse lets pass: a field given twice
  /// in one object (the parser keeps the last silently), kept in
  /// `duplicate`. Records where each top-level field starts in
  /// `topLevelFields`, and the elements of the top-level `layers` array in
  /// `layerSpans`. Stops, leaving `scanned` false, at text that is not
  /// nested as JSON is.
  void scanFields();
  /// Parses the text in pieces: the document with an empty `layers` array
  /// into `document`, and each layer on its own, on the context's threads:
  /// into `direct` where LayerReader reads it (`readDirectly` set), else
  /// into `layers` by json::parse. One json::parse of a whole large profile
  /// costs far more: json::Value's move is not noexcept, so the layers array
  /// copies every layer each time it grows. False when the text has no
  /// layers array to split or a piece does not parse (json::parse of the
  /// whole text then says where).
  bool parseInPieces(json::Value &document, std::vector<json::Value> &layers,
                     std::vector<LayerSpec> &direct,
                     std::vector<char> &readDirectly);
  /// Checks `format` and `version` of the profile `value`.
  LogicalResult checkHeader(const json::Value &value);
  /// Reads the header's totals (`num_layers`, ...) of the profile `value`
  /// into `profile`, checking that each is an integer >= 0.
  LogicalResult readTotals(const json::Value &value, ProfileSpec &profile);
  /// Reads the total `key` of `object`, if given, into `total`.
  LogicalResult readTotal(const json::Object &object, StringLiteral key,
                          std::optional<int64_t> &total);
  /// Checks what the types alone do not: times, shapes, dtypes and names.
  LogicalResult checkProfile(const ProfileSpec &profile);
  /// Checks the header's totals against the body of a checked profile.
  LogicalResult checkTotals(const ProfileSpec &profile);
  /// Checks that `us` is a finite, non-negative time.
  LogicalResult checkTime(double us, json::Path path);
  /// Checks that `count`, if given, is a finite, non-negative number of
  /// FLOPs or bytes.
  LogicalResult checkWork(std::optional<double> count, json::Path path);
  /// Checks a param's `sparse` object at `path`: a gradient with rows, and
  /// `rows_touched` a nondecreasing list of fractions in (0, 1], one per
  /// power of two of ranks up to 2^30.
  LogicalResult checkRowsTouched(const ParamSpec &param, json::Path path);
  /// Replaces the times of a checked profile by `device`'s roofline times of
  /// the counted work; fails naming the first layer without its counts.
  LogicalResult applyDevice(const DeviceModel &device, ProfileSpec &profile);
  /// Builds the module of a checked profile.
  OwningOpRef<ModuleOp> build(const ProfileSpec &profile);
  /// Records the parameters' aliases (`comm.aliases`, a dictionary from a
  /// parameter's name to its other names) and those without a gradient
  /// (`comm.unused`) on the module, where planning keeps them.
  void recordParameterNotes(const ProfileSpec &profile, ModuleOp module);

  /// Records `message` as the error at `path`. json::Path::report accepts
  /// only string literals, so the message is kept here.
  LogicalResult fail(json::Path path, const Twine &message);
  /// As above, reported at the top-level field `key` of the text (its line
  /// and column) instead of the file's first line.
  LogicalResult failAtField(json::Path path, StringRef key,
                            const Twine &message);
  /// The location of the offset `offset` into the text.
  FileLineColLoc getLoc(size_t offset) const;
  /// Emits the error recorded in `root` (by `fail` or by json::ObjectMapper)
  /// as "<field path>: <message>".
  void emitPathError();

  /// The element type that `dtype` names, or null if it names none.
  Type getElementType(StringRef dtype);

  MLIRContext *context;
  const GradProfileImportOptions &options;
  StringRef text;
  /// The location of the profile as a whole.
  FileLineColLoc fileLoc;
  json::Path::Root root;
  /// The message recorded by `fail`; empty when json::ObjectMapper reported.
  std::string failMessage;
  /// Where `failAtField` reports; the file's first line when unset.
  std::optional<FileLineColLoc> failLoc;
  /// The offset of each top-level field's name in the text, where errors
  /// about the field are reported.
  llvm::StringMap<size_t> topLevelFields;
  /// What scanFields found.
  bool scanned = false;
  struct Duplicate {
    std::string name;
    size_t first, second;
  };
  std::optional<Duplicate> duplicate;
  /// The top-level `layers` array, `[` to `]`, and its elements.
  std::optional<std::pair<size_t, size_t>> layersSpan;
  std::vector<std::pair<size_t, size_t>> layerSpans;
};
} // namespace

GradProfileImporter::GradProfileImporter(
    llvm::SourceMgr &sourceMgr, MLIRContext *context,
    const GradProfileImportOptions &options)
    : context(context), options(options),
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

LogicalResult GradProfileImporter::failAtField(json::Path path, StringRef key,
                                               const Twine &message) {
  auto it = topLevelFields.find(key);
  if (it != topLevelFields.end())
    failLoc = getLoc(it->second);
  return fail(path, message);
}

FileLineColLoc GradProfileImporter::getLoc(size_t offset) const {
  StringRef before = text.take_front(offset);
  unsigned line = 1 + before.count('\n');
  size_t lineStart = before.rfind('\n');
  unsigned column =
      offset - (lineStart == StringRef::npos ? 0 : lineStart + 1) + 1;
  return FileLineColLoc::get(fileLoc.getFilename(), line, column);
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
  Location loc = failLoc ? Location(*failLoc) : Location(fileLoc);
  if (path.empty())
    emitError(loc) << message;
  else
    emitError(loc) << path << ": " << message;
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

LogicalResult GradProfileImporter::checkWork(std::optional<double> count,
                                             json::Path path) {
  if (!count || (std::isfinite(*count) && *count >= 0.0))
    return success();
  return fail(path, llvm::formatv("a count of FLOPs or bytes must be a finite "
                                  "number >= 0, got {0}",
                                  json::Value(*count)));
}

LogicalResult GradProfileImporter::applyDevice(const DeviceModel &device,
                                               ProfileSpec &profile) {
  json::Path rootPath(root);
  json::Path layersPath = rootPath.field("layers");
  auto missing = [&](json::Path path, StringRef what) {
    return fail(path, llvm::formatv("missing value: --grad-profile-device={0} "
                                    "replaces the times of {1} by the "
                                    "device's roofline time of its FLOPs and "
                                    "bytes; export the profile again with "
                                    "tools/commopt-export/commopt-export.py, "
                                    "which counts them",
                                    options.device, what));
  };
  for (auto [index, layer] : llvm::enumerate(profile.layers)) {
    json::Path layerPath = layersPath.index(index);
    std::string what = llvm::formatv("layer \"{0}\"", layer.name).str();
    std::pair<StringLiteral, const std::optional<double> *> counts[] = {
        {"forward_flops", &layer.forwardFlops},
        {"backward_flops", &layer.backwardFlops},
        {"forward_bytes", &layer.forwardBytes},
        {"backward_bytes", &layer.backwardBytes}};
    for (auto [key, count] : counts)
      if (!*count)
        return missing(layerPath.field(key), what);
    // Tensor cores where the layer's parameters are all half precision.
    bool half = !layer.params.empty() &&
                llvm::all_of(layer.params, [](const ParamSpec &param) {
                  return param.dtype == "f16" || param.dtype == "bf16";
                });
    layer.forwardUs =
        device.rooflineUs(*layer.forwardFlops, *layer.forwardBytes, half);
    layer.backwardUs =
        device.rooflineUs(*layer.backwardFlops, *layer.backwardBytes, half);
  }
  if (!profile.updateUs)
    return success();
  if (!profile.updateFlops)
    return missing(rootPath.field("update_flops"), "the optimizer's update");
  if (!profile.updateBytes)
    return missing(rootPath.field("update_bytes"), "the optimizer's update");
  profile.updateUs =
      device.rooflineUs(*profile.updateFlops, *profile.updateBytes);
  return success();
}

/// `value` with at most 6 significant digits, as a person would write it.
static std::string shortNumber(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

LogicalResult GradProfileImporter::checkRowsTouched(const ParamSpec &param,
                                                    json::Path path) {
  if (param.shape.empty())
    return fail(path, "a scalar has no rows to touch");
  json::Path rowsPath = path.field("rows_touched");
  if (param.rowsTouched.empty())
    return fail(rowsPath, "expected at least one fraction (1 rank's)");
  if (param.rowsTouched.size() > 31)
    return fail(rowsPath,
                llvm::formatv("expected at most 31 fractions (1 to 2^30 "
                              "ranks), got {0}",
                              param.rowsTouched.size()));
  for (auto [index, fraction] : llvm::enumerate(param.rowsTouched)) {
    if (!(fraction > 0.0 && fraction <= 1.0))
      return fail(rowsPath.index(index),
                  llvm::formatv("expected a fraction of rows in (0, 1], "
                                "got {0}",
                                shortNumber(fraction)));
    if (index > 0 && fraction < param.rowsTouched[index - 1])
      return fail(rowsPath.index(index),
                  llvm::formatv("{0} is less than the {1} of half as many "
                                "ranks: more ranks touch at least the rows "
                                "fewer do",
                                shortNumber(fraction),
                                shortNumber(param.rowsTouched[index - 1])));
  }
  return success();
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

LogicalResult GradProfileImporter::readTotal(const json::Object &object,
                                             StringLiteral key,
                                             std::optional<int64_t> &total) {
  const json::Value *value = object.get(key);
  if (!value || value->kind() == json::Value::Null)
    return success();
  json::Path rootPath(root);
  json::Path path = rootPath.field(key);
  if (value->kind() != json::Value::Number) {
    std::string given;
    switch (value->kind()) {
    case json::Value::Array:
      given = "an array";
      break;
    case json::Value::Object:
      given = "an object";
      break;
    case json::Value::String:
      given = llvm::formatv("the string {0}", *value);
      break;
    default:
      given = llvm::formatv("{0}", *value);
      break;
    }
    return failAtField(path, key, "a count must be a number, got " + given);
  }
  if (std::optional<int64_t> count = value->getAsInteger()) {
    if (*count < 0)
      return failAtField(
          path, key, llvm::formatv("a count must be >= 0, got {0}", *count));
    total = *count;
    return success();
  }
  // A number that is no int64_t: negative, fractional or too large.
  double number = *value->getAsNumber();
  if (number < 0)
    return failAtField(path, key,
                       llvm::formatv("a count must be >= 0, got {0}", *value));
  if (number != std::trunc(number))
    return failAtField(
        path, key,
        llvm::formatv("a count must be an integer, got {0}", *value));
  return failAtField(path, key,
                     llvm::formatv("a count must be at most {0}, got {1}",
                                   std::numeric_limits<int64_t>::max(),
                                   *value));
}

LogicalResult GradProfileImporter::readTotals(const json::Value &value,
                                              ProfileSpec &profile) {
  const json::Object &object = *value.getAsObject();
  return success(
      succeeded(readTotal(object, kNumLayers, profile.numLayers)) &&
      succeeded(readTotal(object, kNumParams, profile.numParams)) &&
      succeeded(readTotal(object, kNumElements, profile.numElements)));
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
    if (failed(
            checkWork(layer.forwardFlops, layerPath.field("forward_flops"))) ||
        failed(checkWork(layer.backwardFlops,
                         layerPath.field("backward_flops"))) ||
        failed(
            checkWork(layer.forwardBytes, layerPath.field("forward_bytes"))) ||
        failed(
            checkWork(layer.backwardBytes, layerPath.field("backward_bytes"))))
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
      if (param.hasSparse &&
          failed(checkRowsTouched(param, paramPath.field("sparse"))))
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
  if (failed(checkWork(profile.updateFlops, rootPath.field("update_flops"))) ||
      failed(checkWork(profile.updateBytes, rootPath.field("update_bytes"))))
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

LogicalResult GradProfileImporter::checkTotals(const ProfileSpec &profile) {
  int64_t numParams = 0;
  // None once the sum overflows.
  std::optional<int64_t> numElements = 0;
  for (const LayerSpec &layer : profile.layers)
    for (const ParamSpec &param : layer.params) {
      ++numParams;
      std::optional<int64_t> elements = 1;
      for (int64_t dim : param.shape)
        if (elements)
          elements = llvm::checkedMul(*elements, dim);
      numElements = elements && numElements
                        ? llvm::checkedAdd(*numElements, *elements)
                        : std::nullopt;
    }

  json::Path rootPath(root);
  auto check = [&](StringLiteral key, std::optional<int64_t> declared,
                   std::optional<int64_t> actual, StringRef noun,
                   StringRef holder) -> LogicalResult {
    if (!declared || declared == actual)
      return success();
    std::string held = actual
                           ? std::to_string(*actual)
                           : llvm::formatv("more than {0}",
                                           std::numeric_limits<int64_t>::max())
                                 .str();
    bool fewer = actual && *actual < *declared;
    return failAtField(
        rootPath.field(key), key,
        llvm::formatv("says {0} {1}{2} but {3} {4}: {5}", *declared, noun,
                      *declared == 1 ? "" : "s", holder, held,
                      fewer ? "is the profile cut short?"
                            : "was the profile edited after its totals "
                              "were written?"));
  };
  return success(succeeded(check(kNumLayers, profile.numLayers,
                                 static_cast<int64_t>(profile.layers.size()),
                                 "layer", "\"layers\" holds")) &&
                 succeeded(check(kNumParams, profile.numParams, numParams,
                                 "param", "the layers hold")) &&
                 succeeded(check(kNumElements, profile.numElements, numElements,
                                 "element", "the params hold")));
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
           RankedTensorType::get(param.shape, getElementType(param.dtype)),
           param.rowsTouched, param.coo});
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

void GradProfileImporter::scanFields() {
  // An open object or array: an object with the names of its fields so far
  // and where each starts.
  struct Open {
    bool isObject;
    SmallVector<std::pair<std::string, size_t>, 8> fields;
  };
  SmallVector<Open, 4> open;
  // The last top-level field whose name was read, whose value follows.
  std::string topLevelField;
  // Inside the top-level `layers` array: where its current element starts.
  std::optional<size_t> elementStart;
  auto endElement = [&](size_t end) {
    StringRef element = text.slice(*elementStart, end).trim();
    if (!element.empty())
      layerSpans.emplace_back(element.data() - text.data(),
                              element.data() - text.data() + element.size());
  };
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    bool inLayers = elementStart && open.size() == 2;
    if (c == '{' || c == '[') {
      if (c == '[' && open.size() == 1 && topLevelField == "layers" &&
          !layersSpan) {
        layersSpan.emplace(i, i);
        elementStart = i + 1;
      }
      open.push_back(Open{c == '{', {}});
      continue;
    }
    if (c == '}' || c == ']') {
      if (open.empty())
        return;
      if (inLayers && c == ']') {
        endElement(i);
        layersSpan->second = i;
        elementStart.reset();
      }
      open.pop_back();
      continue;
    }
    if (c == ',' && inLayers) {
      endElement(i);
      elementStart = i + 1;
      continue;
    }
    if (c != '"')
      continue;
    // A string: a field's name when a ':' follows.
    size_t start = i;
    for (++i; i < e && text[i] != '"'; ++i)
      if (text[i] == '\\')
        ++i;
    size_t next = text.find_first_not_of(" \t\r\n", i + 1);
    if (open.empty() || !open.back().isObject || next == StringRef::npos ||
        text[next] != ':')
      continue;
    StringRef quoted = text.slice(start, std::min(i + 1, e));
    std::string name = quoted.drop_front().drop_back().str();
    if (quoted.contains('\\')) {
      llvm::Expected<json::Value> decoded = json::parse(quoted);
      if (!decoded) {
        llvm::consumeError(decoded.takeError());
        continue;
      }
      name = decoded->getAsString().value_or(name).str();
    }
    auto &fields = open.back().fields;
    auto found = llvm::find_if(
        fields, [&](const auto &field) { return field.first == name; });
    if (found != fields.end()) {
      if (!duplicate)
        duplicate = Duplicate{name, found->second, start};
    } else {
      fields.emplace_back(name, start);
    }
    if (open.size() == 1) {
      topLevelFields[name] = start;
      topLevelField = name;
    }
  }
  scanned = open.empty();
}

bool GradProfileImporter::parseInPieces(json::Value &document,
                                        std::vector<json::Value> &layers,
                                        std::vector<LayerSpec> &direct,
                                        std::vector<char> &readDirectly) {
  if (!scanned || !layersSpan)
    return false;
  std::string outer = (text.take_front(layersSpan->first) + "[]" +
                       text.drop_front(layersSpan->second + 1))
                          .str();
  llvm::Expected<json::Value> parsed = json::parse(outer);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return false;
  }
  document = std::move(*parsed);
  // The layers are independent pieces, read on the context's threads:
  // directly where LayerReader can, else by json::parse.
  layers.assign(layerSpans.size(), json::Value(nullptr));
  direct.assign(layerSpans.size(), LayerSpec());
  readDirectly.assign(layerSpans.size(), false);
  bool utf8 = !options.jsonValuesOnly && json::isUTF8(text);
  std::atomic<bool> allParsed{true};
  parallelFor(context, 0, layerSpans.size(), [&](size_t index) {
    auto [begin, end] = layerSpans[index];
    StringRef piece = text.slice(begin, end);
    if (utf8 && LayerReader(piece).read(direct[index])) {
      readDirectly[index] = true;
      return;
    }
    direct[index] = LayerSpec();
    llvm::Expected<json::Value> layer = json::parse(piece);
    if (!layer) {
      llvm::consumeError(layer.takeError());
      allParsed = false;
      return;
    }
    layers[index] = std::move(*layer);
  });
  return allParsed;
}

LogicalResult GradProfileImporter::read(ProfileSpec &profile) {
  scanFields();
  json::Value document = nullptr;
  std::vector<json::Value> layers;
  std::vector<LayerSpec> direct;
  std::vector<char> readDirectly;
  bool inPieces = parseInPieces(document, layers, direct, readDirectly);
  if (!inPieces) {
    llvm::Expected<json::Value> value = json::parse(text);
    if (!value) {
      // json::ParseError renders as "[<line>:<column>, byte=<offset>]:
      // <msg>". Its column is 0-based and, for most errors, just past the
      // character the parser stopped at: that is the character's 1-based
      // column.
      std::string rendered = llvm::toString(value.takeError());
      SmallVector<StringRef, 5> match;
      llvm::Regex pattern("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$");
      unsigned line = 0, column = 0;
      if (!pattern.match(rendered, &match) || match[1].getAsInteger(10, line) ||
          match[2].getAsInteger(10, column))
        return emitError(fileLoc) << "malformed JSON: " << rendered;
      auto loc = FileLineColLoc::get(fileLoc.getFilename(), line,
                                     std::max(column, 1u));
      return emitError(loc) << "malformed JSON: " << match[3];
    }
    document = std::move(*value);
  }

  if (duplicate) {
    FileLineColLoc first = getLoc(duplicate->first);
    return emitError(getLoc(duplicate->second))
           << "duplicate field \"" << duplicate->name << "\" (first at line "
           << first.getLine() << ", column " << first.getColumn() << ")";
  }
  // `layers` is the last field fromJSON reads, so that reading the layers
  // after the rest reports the same first error as one fromJSON would.
  auto readLayers = [&] {
    if (!inPieces)
      return true;
    profile.layers = std::move(direct);
    // On the context's threads, each layer that LayerReader left against a
    // root of its own; where one fails, again in order against `root`,
    // which then reports the first error as a single read would.
    std::atomic<bool> allRead{true};
    parallelFor(context, 0, layers.size(), [&](size_t index) {
      json::Path::Root layerRoot;
      if (!readDirectly[index] &&
          !fromJSON(layers[index], profile.layers[index],
                    json::Path(layerRoot)))
        allRead = false;
    });
    if (allRead)
      return true;
    // A json::Path points to its parent: both must outlive the reads.
    json::Path rootPath(root);
    json::Path layersPath = rootPath.field("layers");
    for (auto [index, layer] : llvm::enumerate(layers))
      if (!readDirectly[index] &&
          !fromJSON(layer, profile.layers[index], layersPath.index(index)))
        return false;
    return true;
  };
  if (failed(checkHeader(document)) || !fromJSON(document, profile, root) ||
      !readLayers() || failed(readTotals(document, profile)) ||
      failed(checkProfile(profile)) || failed(checkTotals(profile))) {
    emitPathError();
    return failure();
  }
  return success();
}

OwningOpRef<ModuleOp> GradProfileImporter::import() {
  std::optional<DeviceModel> device;
  if (!options.device.empty()) {
    llvm::Expected<DeviceModel> parsed = DeviceModel::parse(options.device);
    if (!parsed) {
      emitError(fileLoc) << "import-grad-profile: option "
                            "--grad-profile-device: "
                         << llvm::toString(parsed.takeError());
      return nullptr;
    }
    device = std::move(*parsed);
  }
  ProfileSpec profile;
  if (failed(read(profile)))
    return nullptr;
  if (device && failed(applyDevice(*device, profile))) {
    emitPathError();
    return nullptr;
  }
  return build(profile);
}

OwningOpRef<ModuleOp> mlir::comm::importGradProfile(llvm::SourceMgr &sourceMgr,
                                                    MLIRContext *context) {
  return importGradProfile(sourceMgr, context, GradProfileImportOptions());
}

OwningOpRef<ModuleOp>
mlir::comm::importGradProfile(llvm::SourceMgr &sourceMgr, MLIRContext *context,
                              const GradProfileImportOptions &options) {
  return GradProfileImporter(sourceMgr, context, options).import();
}
