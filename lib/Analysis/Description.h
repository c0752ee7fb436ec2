//===- Description.h - Reading cluster and device descriptions --*- C++ -*-===//
//
// What ClusterModel and DeviceModel share: parsing their JSON description
// with errors that name the field, reading and checking its fields and
// enums, loading it from a file, and accepting a preset name or a file path.
// Internal to lib/Analysis.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_LIB_ANALYSIS_DESCRIPTION_H
#define COMMOPT_LIB_ANALYSIS_DESCRIPTION_H

#include "CommOpt/Support/BoundedFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <optional>

namespace mlir::comm::detail {

//===----------------------------------------------------------------------===//
// Fields
//===----------------------------------------------------------------------===//

/// Reports `message` at `field` below `path` unless `holds`; returns `holds`.
/// `message` must be a literal (json::Path::report keeps only a pointer).
inline bool checkField(bool holds, llvm::json::Path path, llvm::StringRef field,
                       llvm::StringLiteral message) {
  if (!holds)
    path.field(field).report(message);
  return holds;
}

/// Checks that `x`, the value of `field`, is a finite number above 0.
inline bool checkPositive(double x, llvm::json::Path path,
                          llvm::StringRef field) {
  return checkField(std::isfinite(x) && x > 0, path, field,
                    "expected a positive number");
}

/// Checks that `x`, the value of `field`, is a finite number of at least 0.
inline bool checkNonNegative(double x, llvm::json::Path path,
                             llvm::StringRef field) {
  return checkField(std::isfinite(x) && x >= 0, path, field,
                    "expected a non-negative number");
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

/// The spelling of one enumerator in a description.
template <typename Enum> struct EnumSpelling {
  Enum value;
  llvm::StringLiteral text;
};

/// The spelling of `value` in `spellings`, which must have one.
template <typename Enum, size_t N>
llvm::StringRef stringifyEnum(const EnumSpelling<Enum> (&spellings)[N],
                              Enum value) {
  for (const EnumSpelling<Enum> &spelling : spellings)
    if (spelling.value == value)
      return spelling.text;
  llvm_unreachable("enumerator without a spelling");
}

/// The enumerator spelt `text` in `spellings`, if any.
template <typename Enum, size_t N>
std::optional<Enum> symbolizeEnum(const EnumSpelling<Enum> (&spellings)[N],
                                  llvm::StringRef text) {
  for (const EnumSpelling<Enum> &spelling : spellings)
    if (spelling.text == text)
      return spelling.value;
  return std::nullopt;
}

/// Reads `value`, a string, as one of `spellings` into `result`; otherwise
/// reports `message` (a literal that lists the spellings) at `path`.
template <typename Enum, size_t N>
bool readEnum(const llvm::json::Value &value, Enum &result,
              llvm::json::Path path, const EnumSpelling<Enum> (&spellings)[N],
              llvm::StringLiteral message) {
  std::optional<llvm::StringRef> text = value.getAsString();
  std::optional<Enum> parsed =
      text ? symbolizeEnum(spellings, *text) : std::nullopt;
  if (!parsed) {
    path.report(message);
    return false;
  }
  result = *parsed;
  return true;
}

//===----------------------------------------------------------------------===//
// Descriptions
//===----------------------------------------------------------------------===//

/// Reads the optional `format` and `version` fields every description
/// starts with; they must be `expectedFormat` and 1 when present.
/// `formatError` is the message for another format (json::Path::report keeps
/// only a pointer to it, so it must be a literal).
inline bool readDescriptionHeader(llvm::json::ObjectMapper &mapper,
                                  llvm::json::Path path,
                                  llvm::StringRef expectedFormat,
                                  llvm::StringLiteral formatError) {
  std::string format = expectedFormat.str();
  int64_t version = 1;
  if (!mapper.mapOptional("format", format) ||
      !mapper.mapOptional("version", version))
    return false;
  if (format != expectedFormat) {
    path.field("format").report(formatError);
    return false;
  }
  if (version != 1) {
    path.field("version").report("unsupported version (expected 1)");
    return false;
  }
  return true;
}

/// Parses `text` as a description of `kind` ("cluster", "device") into a
/// `Model` with the `fromJSON(const json::Value &, Model &, json::Path)`
/// found by argument-dependent lookup.
template <typename Model>
llvm::Expected<Model> parseDescription(llvm::StringRef text,
                                       llvm::StringRef kind) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "invalid %s description: %s",
        kind.str().c_str(), llvm::toString(value.takeError()).c_str());
  Model model;
  llvm::json::Path::Root root(kind);
  if (!fromJSON(*value, model, root))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "invalid %s description: %s",
        kind.str().c_str(), llvm::toString(root.getError()).c_str());
  return model;
}

/// Reads the description of `kind` in the file at `path`; errors name it.
template <typename Model>
llvm::Expected<Model> loadDescription(llvm::StringRef path,
                                      llvm::StringRef kind) {
  llvm::Expected<std::string> contents = readBoundedFile(path);
  if (!contents)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(), "cannot read %s description '%s': %s",
        kind.str().c_str(), path.str().c_str(),
        llvm::toString(contents.takeError()).c_str());
  llvm::Expected<Model> model = parseDescription<Model>(*contents, kind);
  if (!model)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s",
                                   path.str().c_str(),
                                   llvm::toString(model.takeError()).c_str());
  return model;
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

/// The names of `presets` (entries with a `name` and a `build()` that
/// returns the model), in their order.
template <typename Preset, size_t N>
llvm::SmallVector<llvm::StringRef> presetNamesOf(const Preset (&presets)[N]) {
  return llvm::to_vector(
      llvm::map_range(presets, [](const Preset &preset) -> llvm::StringRef {
        return preset.name;
      }));
}

/// The `Model` that the entry of `presets` called `name` builds, or the
/// error of `kind` ("cluster", "device") that lists the known names.
template <typename Model, typename Preset, size_t N>
llvm::Expected<Model> buildPreset(const Preset (&presets)[N],
                                  llvm::StringRef name, llvm::StringRef kind) {
  for (const Preset &preset : presets)
    if (preset.name == name)
      return preset.build();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(), "unknown %s preset '%s' (known: %s)",
      kind.str().c_str(), name.str().c_str(),
      llvm::join(presetNamesOf(presets), ", ").c_str());
}

/// The preset `nameOrPath` of `Model`, or the description in that file.
template <typename Model>
llvm::Expected<Model> parsePresetOrFile(llvm::StringRef nameOrPath,
                                        llvm::StringRef kind) {
  if (llvm::is_contained(Model::presetNames(), nameOrPath))
    return Model::preset(nameOrPath);
  if (!llvm::sys::fs::exists(nameOrPath))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "'%s' is neither a %s preset (%s) nor "
        "a file",
        nameOrPath.str().c_str(), kind.str().c_str(),
        llvm::join(Model::presetNames(), ", ").c_str());
  return Model::loadFile(nameOrPath);
}

} // namespace mlir::comm::detail

#endif // COMMOPT_LIB_ANALYSIS_DESCRIPTION_H
