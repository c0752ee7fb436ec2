//===- OptionChecks.cpp - Errors for pass options a user mistyped ---------===//

#include "CommOpt/Support/OptionChecks.h"
#include "CommOpt/Support/ChoiceParser.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::comm;

std::optional<StringRef>
mlir::comm::suggestNearest(StringRef typed, ArrayRef<StringRef> candidates) {
  unsigned maxDistance = std::max<unsigned>(1, typed.size() / 3);
  std::optional<StringRef> best;
  unsigned bestDistance = maxDistance + 1;
  for (StringRef candidate : candidates) {
    unsigned distance = typed.edit_distance(candidate, /*AllowReplacements=*/
                                            true, maxDistance);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate;
    }
  }
  return best;
}

std::optional<std::string>
mlir::comm::checkChoice(StringRef value, ArrayRef<StringRef> choices) {
  if (llvm::is_contained(choices, value))
    return std::nullopt;
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "unknown value '" << value << "'; expected one of "
     << llvm::join(choices, ", ");
  if (std::optional<StringRef> nearest = suggestNearest(value, choices))
    os << " (did you mean '" << *nearest << "'?)";
  return message;
}

SmallVector<StringRef> mlir::comm::getOptionKeys(StringRef options) {
  // Options are separated by spaces outside of braces and quotes, as the
  // pass-option parser reads them.
  SmallVector<StringRef> keys;
  size_t index = 0;
  while (index < options.size()) {
    while (index < options.size() && options[index] == ' ')
      ++index;
    size_t begin = index;
    int depth = 0;
    char quote = 0;
    for (; index < options.size(); ++index) {
      char c = options[index];
      if (quote) {
        quote = c == quote ? 0 : quote;
        continue;
      }
      if (c == '"' || c == '\'')
        quote = c;
      else if (c == '{')
        ++depth;
      else if (c == '}')
        --depth;
      else if (c == ' ' && depth == 0)
        break;
    }
    StringRef option = options.slice(begin, index);
    if (!option.empty())
      keys.push_back(option.split('=').first);
  }
  return keys;
}

SmallVector<std::string> mlir::comm::getPrintedOptionNames(StringRef printed) {
  StringRef inner = printed.trim();
  if (!inner.consume_back("}"))
    return {};
  inner = inner.split('{').second;
  SmallVector<std::string> names;
  for (StringRef key : getOptionKeys(inner))
    names.push_back(key.str());
  return names;
}

LogicalResult mlir::comm::checkOptionNames(
    StringRef passName, StringRef options, ArrayRef<StringRef> known,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  for (StringRef key : getOptionKeys(options)) {
    if (llvm::is_contained(known, key))
      continue;
    std::string message;
    llvm::raw_string_ostream os(message);
    os << passName << ": unknown option '" << key << "'";
    if (std::optional<StringRef> nearest = suggestNearest(key, known))
      os << "; did you mean '" << *nearest << "'?";
    else
      os << "; its options are " << llvm::join(known, ", ");
    return errorHandler(message);
  }
  return success();
}

LogicalResult mlir::comm::parseCheckedOptions(
    StringRef name, StringRef options,
    function_ref<LogicalResult(llvm::raw_ostream &)> parse,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  ChoiceErrorScope choiceErrors;
  std::string parseErrors;
  llvm::raw_string_ostream errorStream(parseErrors);
  if (succeeded(parse(errorStream)))
    return success();
  if (!choiceErrors.getError().empty())
    return errorHandler(name + ": " + choiceErrors.getError());
  // llvm::cl has printed what is wrong with a value that is not a choice.
  return errorHandler(name + ": cannot parse options '" + options + "'" +
                      (parseErrors.empty() ? "" : ": ") +
                      StringRef(parseErrors).trim());
}

LogicalResult mlir::comm::initializeCheckedOptions(
    Pass &pass, StringRef options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  // "name{a=1 b=x}": the pass's options with their current values.
  std::string printed;
  llvm::raw_string_ostream os(printed);
  pass.printAsTextualPipeline(os);
  SmallVector<std::string> names = getPrintedOptionNames(printed);
  SmallVector<StringRef> known(names.begin(), names.end());
  if (failed(
          checkOptionNames(pass.getArgument(), options, known, errorHandler)))
    return failure();
  return parseCheckedOptions(
      pass.getArgument(), options,
      [&](llvm::raw_ostream &errors) {
        return pass.Pass::initializeOptions(options, [&](const Twine &message) {
          errors << message;
          return failure();
        });
      },
      errorHandler);
}
