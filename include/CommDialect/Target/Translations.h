//===- Translations.h - Registration of commopt's translations --*- C++ -*-===//
//
// Registers commopt's translations with the mlir-translate registry, for
// commopt-translate and any other MlirTranslateMain-based tool.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_TARGET_TRANSLATIONS_H
#define COMMDIALECT_TARGET_TRANSLATIONS_H

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::comm {

/// Registers `--import-grad-profile`, `--import-pipedream` and
/// `--export-timeline` (with its options `--timeline-cluster`,
/// `--timeline-device` and `--timeline-mode`). Safe to call more than once.
void registerCommOptTranslations();

/// Prints commopt's translations and their options, the first part of
/// commopt-translate's --help.
void printCommOptTranslationHelp(llvm::raw_ostream &os);

} // namespace mlir::comm

#endif // COMMDIALECT_TARGET_TRANSLATIONS_H
