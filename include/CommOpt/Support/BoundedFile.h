//===- BoundedFile.h - Reading a small input file, bounded ------*- C++ -*-===//
//
// Descriptions (clusters, devices) are a few kilobytes of JSON. Read with
// MemoryBuffer::getFile, a path such as /dev/zero or a never-ending pipe
// would be read for ever; readBoundedFile reads at most a limit and says
// that the file is not a description past it.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_SUPPORT_BOUNDEDFILE_H
#define COMMOPT_SUPPORT_BOUNDEDFILE_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"

#include <string>

namespace mlir::comm {

/// The most bytes a description file may hold.
inline constexpr size_t kMaxDescriptionBytes = size_t(16) << 20;

/// The contents of the file at `path`, read up to `maxBytes`; an error
/// naming the file where it cannot be opened or read, or holds more.
inline llvm::Expected<std::string>
readBoundedFile(llvm::StringRef path, size_t maxBytes = kMaxDescriptionBytes) {
  llvm::Expected<llvm::sys::fs::file_t> file =
      llvm::sys::fs::openNativeFileForRead(path);
  if (!file)
    return file.takeError();
  std::string contents;
  llvm::SmallVector<char, 0> chunk(size_t(64) << 10);
  llvm::Error result = llvm::Error::success();
  while (true) {
    llvm::Expected<size_t> read = llvm::sys::fs::readNativeFile(*file, chunk);
    if (!read) {
      result = read.takeError();
      break;
    }
    if (*read == 0)
      break;
    if (contents.size() + *read > maxBytes) {
      result = llvm::createStringError(
          std::errc::file_too_large,
          "it holds more than %zu MiB, too much for a description (a device "
          "or an endless stream?)",
          maxBytes >> 20);
      break;
    }
    contents.append(chunk.data(), *read);
  }
  llvm::sys::fs::closeFile(*file);
  if (result)
    return std::move(result);
  return contents;
}

} // namespace mlir::comm

#endif // COMMOPT_SUPPORT_BOUNDEDFILE_H
