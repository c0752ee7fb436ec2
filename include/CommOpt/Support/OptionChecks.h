//===- OptionChecks.h - Errors for pass options a user mistyped -*- C++ -*-===//
//
// Helpers that give pass and pipeline options the errors a user can act on:
// the option as typed, every valid value, and the nearest valid spelling.
//
//===----------------------------------------------------------------------===//

#ifndef COMMOPT_SUPPORT_OPTIONCHECKS_H
#define COMMOPT_SUPPORT_OPTIONCHECKS_H

#include "mlir/Pass/Pass.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir::comm {

/// The entry of `candidates` nearest to `typed` by edit distance, when it is
/// near enough to be a misspelling (at most a third of its length, and at
/// least one edit, away).
std::optional<StringRef> suggestNearest(StringRef typed,
                                        ArrayRef<StringRef> candidates);

/// An error message when `value` is not one of `choices`:
/// "unknown value 'fp16'; expected one of none, f16, bf16 (did you mean
/// 'f16'?)"; nothing when it is.
std::optional<std::string> checkChoice(StringRef value,
                                       ArrayRef<StringRef> choices);

/// The option names (`name` of `name=value`) in a textual pass or pipeline
/// option string, in order.
SmallVector<StringRef> getOptionKeys(StringRef options);

/// The option names in the printed form of a pass or of pass options:
/// "name{a=1 b=x}" or "{a=1 b=x}" gives a and b.
SmallVector<std::string> getPrintedOptionNames(StringRef printed);

/// Checks that every key of `options` is one of `known`; otherwise reports
/// "<passName>: unknown option '<key>'; did you mean '<nearest>'?" (or the
/// list of options) through `errorHandler`.
LogicalResult
checkOptionNames(StringRef passName, StringRef options,
                 ArrayRef<StringRef> known,
                 function_ref<LogicalResult(const Twine &)> errorHandler);

/// Parses the options `options` of the pass or pipeline `name` with
/// `parse`, which writes what it reports to the stream it gets. A bad value
/// of a choice-valued option (ChoiceParser.h) is reported as "<name>: option
/// 'wire': unknown value 'f8'; expected one of f16, bf16", any other failure
/// as "<name>: cannot parse options '<options>'".
LogicalResult
parseCheckedOptions(StringRef name, StringRef options,
                    function_ref<LogicalResult(llvm::raw_ostream &)> parse,
                    function_ref<LogicalResult(const Twine &)> errorHandler);

/// Pass::initializeOptions with the checks above, the known names being the
/// options `pass` prints in its textual pipeline form.
LogicalResult initializeCheckedOptions(
    Pass &pass, StringRef options,
    function_ref<LogicalResult(const Twine &)> errorHandler);

/// A pass whose option names are checked as above: derive a pass from
/// `WithCheckedOptions<impl::XBase<XPass>>` instead of its generated base.
template <typename PassBase> class WithCheckedOptions : public PassBase {
public:
  using PassBase::PassBase;

  LogicalResult initializeOptions(
      StringRef options,
      function_ref<LogicalResult(const Twine &)> errorHandler) final {
    return initializeCheckedOptions(*this, options, errorHandler);
  }
};

} // namespace mlir::comm

#endif // COMMOPT_SUPPORT_OPTIONCHECKS_H
