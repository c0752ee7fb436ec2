//===- ChoiceParser.cpp - llvm::cl parsing of choice-valued options -------===//

#include "CommOpt/Support/ChoiceParser.h"
#include "CommOpt/Support/OptionChecks.h"

using namespace mlir::comm;

/// The innermost scope of this thread: options are parsed on the thread
/// that adds the pass or pipeline.
static thread_local ChoiceErrorScope *currentScope = nullptr;

ChoiceErrorScope::ChoiceErrorScope() : outer(currentScope) {
  currentScope = this;
}

ChoiceErrorScope::~ChoiceErrorScope() { currentScope = outer; }

bool mlir::comm::reportUnknownChoice(llvm::cl::Option &option,
                                     llvm::StringRef optionName,
                                     llvm::StringRef value,
                                     llvm::ArrayRef<llvm::StringRef> choices,
                                     llvm::StringRef hint) {
  std::string message = checkChoice(value, choices).value_or("");
  if (!hint.empty())
    message += " (" + hint.str() + ")";
  if (currentScope) {
    // The first error is the one to report; parsing stops at it.
    if (currentScope->error.empty())
      currentScope->error = ("option '" + optionName + "': " + message).str();
    return true;
  }
  return option.error(message);
}
