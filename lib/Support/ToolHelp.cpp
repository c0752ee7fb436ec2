//===- ToolHelp.cpp - --help that leads with commopt's own options --------===//

#include "CommOpt/Support/ToolHelp.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

void comm::hideLibraryOptions() {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *option = entry.second;
    if (llvm::is_contained(option->Categories,
                           &llvm::cl::getGeneralCategory()) &&
        option->getOptionHiddenFlag() == llvm::cl::NotHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

bool comm::isHelpRequested(int argc, char **argv) {
  for (int index = 1; index < argc; ++index) {
    llvm::StringRef argument(argv[index]);
    if (argument == "--") // Everything after is a positional argument.
      return false;
    if (argument == "-h" || argument == "-help" || argument == "--help" ||
        argument == "--help-list" || argument == "-help-list")
      return true;
  }
  return false;
}

void comm::printPassHelp(llvm::raw_ostream &os,
                         llvm::ArrayRef<llvm::StringRef> arguments) {
  // The pass registry prints to llvm::outs(); keep the order with `os`.
  os.flush();
  size_t descIndent = 0;
  for (llvm::StringRef argument : arguments) {
    const PassRegistryEntry *entry = PassInfo::lookup(argument);
    if (!entry)
      entry = PassPipelineInfo::lookup(argument);
    if (entry)
      descIndent = std::max(descIndent, entry->getOptionWidth());
  }
  descIndent += 8;
  for (llvm::StringRef argument : arguments) {
    const PassRegistryEntry *entry = PassInfo::lookup(argument);
    if (!entry)
      entry = PassPipelineInfo::lookup(argument);
    if (entry)
      entry->printHelpStr(/*indent=*/2, descIndent);
  }
  llvm::outs().flush();
}

void comm::printOptionHelp(llvm::raw_ostream &os,
                           llvm::ArrayRef<llvm::StringRef> names) {
  os.flush();
  auto &options = llvm::cl::getRegisteredOptions();
  size_t width = 0;
  for (llvm::StringRef name : names)
    if (llvm::cl::Option *option = options.lookup(name))
      width = std::max(width, option->getOptionWidth());
  for (llvm::StringRef name : names)
    if (llvm::cl::Option *option = options.lookup(name))
      option->printOptionInfo(width);
  llvm::outs().flush();
}
