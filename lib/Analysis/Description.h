//===- Description.h - Reading cluster and device descriptions --*- C++ -*-===//
//
// What ClusterModel and DeviceModel share: parsing their JSON description
// with errors that name the field, loading it from a file, and accepting a
// preset name or a file path. Internal to lib/Analysis.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_LIB_ANALYSIS_DESCRIPTION_H
#define COMMOPT_LIB_ANALYSIS_DESCRIPTION_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mlir::comm::detail {

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
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   "cannot read %s description '%s': %s",
                                   kind.str().c_str(), path.str().c_str(),
                                   buffer.getError().message().c_str());
  llvm::Expected<Model> model =
      parseDescription<Model>((*buffer)->getBuffer(), kind);
  if (!model)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s",
                                   path.str().c_str(),
                                   llvm::toString(model.takeError()).c_str());
  return model;
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
