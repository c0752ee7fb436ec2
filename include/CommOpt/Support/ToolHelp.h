//===- ToolHelp.h - --help that leads with commopt's own options -*- C++
//-*-===//
//
// commopt-opt and commopt-translate link LLVM's code generators, whose
// hundreds of target flags would bury commopt's passes and translations in
// --help. These helpers hide options registered by libraries before main
// (they stay in --help-hidden) and print commopt's own first.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_SUPPORT_TOOLHELP_H
#define COMMOPT_SUPPORT_TOOLHELP_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::comm {

/// Marks every command-line option registered so far, except --help,
/// --version and their kin, as hidden. Call first thing in main, before the
/// tool registers its own options.
void hideLibraryOptions();

/// Whether the command line asks for --help (or -h, --help-list).
bool isHelpRequested(int argc, char **argv);

/// Prints commopt's passes and pipelines (`arguments`), each with its
/// options and their defaults, as the first part of --help.
void printPassHelp(llvm::raw_ostream &os,
                   llvm::ArrayRef<llvm::StringRef> arguments);

/// Prints the command-line options named `names` (commopt's translations
/// and their options) as the first part of --help.
void printOptionHelp(llvm::raw_ostream &os,
                     llvm::ArrayRef<llvm::StringRef> names);

} // namespace mlir::comm

#endif // COMMOPT_SUPPORT_TOOLHELP_H
