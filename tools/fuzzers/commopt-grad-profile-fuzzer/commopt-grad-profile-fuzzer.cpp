//===- commopt-grad-profile-fuzzer.cpp - Fuzzes the grad-profile import ---===//
//
// libFuzzer target of commopt-translate's --import-grad-profile
// (lib/Target/GradProfileImport.cpp, docs/GradProfile.md): each input is a
// JSON gradient profile. The import runs as the translation runs it, on a
// context with the comm and func dialects; a module it returns is verified
// and printed, and planned with comm-optimize as scripts/demo.sh plans
// imported profiles. Errors are expected; crashes, sanitizer reports and
// hangs are not.
//
//===----------------------------------------------------------------------===//

#include "../FuzzerSupport.h"

#include "CommDialect/Target/Import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The model's name comes from the file's name.
  return commopt::fuzz::fuzzImport(data, size, "fuzz.json",
                                   mlir::comm::importGradProfile);
}
