//===- ChoiceParser.h - llvm::cl parsing of choice-valued options -*- C++
//-*-===//
//
// Choice-valued pass and pipeline options are enums whose valid spellings
// the option lists with `llvm::cl::values`: `--help` shows them and the
// parser rejects anything else. LLVM's own parser for enums reports a bad
// value as "for the --wire option: Cannot find option named 'f8'!", without
// the pass, the valid values or a suggestion; `ChoiceParser` reports
// "comm-lower-precision: option 'wire': unknown value 'f8'; expected one of
// f16, bf16". An enum gets it by specialising `llvm::cl::parser`:
//
//   template <>
//   class llvm::cl::parser<mlir::comm::WirePrecision>
//       : public mlir::comm::ChoiceParser<mlir::comm::WirePrecision> {
//     using ChoiceParser::ChoiceParser;
//   };
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_SUPPORT_CHOICEPARSER_H
#define COMMOPT_SUPPORT_CHOICEPARSER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace mlir::comm {

/// Reports that option `optionName` got `value`, which is none of
/// `choices`: to the pass or pipeline parsing its options (see
/// `ChoiceErrorScope`), which names itself in the error, or else through
/// `option.error`. `hint` ends the message when not empty. Returns true,
/// llvm::cl's "failed".
bool reportUnknownChoice(llvm::cl::Option &option, llvm::StringRef optionName,
                         llvm::StringRef value,
                         llvm::ArrayRef<llvm::StringRef> choices,
                         llvm::StringRef hint);

/// A note for the error of a bad value of an option of type `Enum`, after
/// the list of valid values; empty by default.
template <typename Enum> llvm::StringRef getChoiceHint(llvm::StringRef value) {
  return {};
}

/// `llvm::cl::parser<Enum>` with the error above. It keeps the layout of
/// LLVM's generic parser (`Values` of name, value and help), which MLIR's
/// pass options read to print an option's value.
template <typename Enum>
class ChoiceParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(llvm::StringRef name, Enum value, llvm::StringRef help)
        : GenericOptionInfo(name, help), V(value) {}
    llvm::cl::OptionValue<Enum> V;
  };
  llvm::SmallVector<OptionInfo, 4> Values;

public:
  using parser_data_type = Enum;

  explicit ChoiceParser(llvm::cl::Option &owner) : generic_parser_base(owner) {}

  unsigned getNumOptions() const override { return Values.size(); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// Returns true on error, as llvm::cl parsers do.
  bool parse(llvm::cl::Option &option, llvm::StringRef argName,
             llvm::StringRef arg, Enum &value) {
    llvm::StringRef typed = Owner.hasArgStr() ? arg : argName;
    llvm::SmallVector<llvm::StringRef, 4> names;
    for (const OptionInfo &info : Values) {
      if (info.Name == typed) {
        value = info.V.getValue();
        return false;
      }
      names.push_back(info.Name);
    }
    return reportUnknownChoice(option, option.ArgStr, typed, names,
                               getChoiceHint<Enum>(typed));
  }

  /// Called by `llvm::cl::values`.
  template <typename T>
  void addLiteralOption(llvm::StringRef name, const T &value,
                        llvm::StringRef help) {
    Values.emplace_back(name, static_cast<Enum>(value), help);
    llvm::cl::AddLiteralOption(Owner, name);
  }

  void removeLiteralOption(llvm::StringRef name) {
    unsigned n = findOption(name);
    assert(n != Values.size() && "no such value");
    Values.erase(Values.begin() + n);
  }
};

/// While alive, bad choices reported by `reportUnknownChoice` on this thread
/// are kept for the pass or pipeline that parses its options, instead of
/// being printed: it reports them with its own name.
class ChoiceErrorScope {
public:
  ChoiceErrorScope();
  ~ChoiceErrorScope();
  ChoiceErrorScope(const ChoiceErrorScope &) = delete;
  ChoiceErrorScope &operator=(const ChoiceErrorScope &) = delete;

  /// "option 'wire': unknown value 'f8'; expected one of f16, bf16", or
  /// empty when no bad choice was reported.
  const std::string &getError() const { return error; }

private:
  friend bool reportUnknownChoice(llvm::cl::Option &, llvm::StringRef,
                                  llvm::StringRef,
                                  llvm::ArrayRef<llvm::StringRef>,
                                  llvm::StringRef);
  ChoiceErrorScope *outer;
  std::string error;
};

} // namespace mlir::comm

#endif // COMMOPT_SUPPORT_CHOICEPARSER_H
