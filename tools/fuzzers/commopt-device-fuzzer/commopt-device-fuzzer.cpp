//===- commopt-device-fuzzer.cpp - Fuzzes the device description reader ---===//
//
// libFuzzer target of the device description reader
// (DeviceModel::fromJSON in lib/Analysis/DeviceModel.cpp, docs/Cluster.md):
// each input is the text of a device description, as a `device=` option's
// file holds it. A description that reads must also pass verify(), read back
// equal from the JSON that toJSON() writes for it, and price work from
// nothing to 10^18 FLOP and bytes at a roofline time that is a number and
// not negative (comm-estimate rejects an infinite one). A broken promise
// aborts; errors from bad descriptions are expected.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/DeviceModel.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

using namespace mlir::comm;

/// Work from nothing to far more than a step does.
static constexpr double kAmounts[] = {0.0, 1.0, 1e6, 1e12, 1e18};

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<DeviceModel> device = DeviceModel::fromJSON(text);
  if (!device) {
    llvm::consumeError(device.takeError());
    return 0;
  }
  if (llvm::Error error = device->verify())
    llvm::report_fatal_error(
        llvm::Twine("a device that reads does not verify: ") +
        llvm::toString(std::move(error)));

  std::string printed;
  llvm::raw_string_ostream(printed) << device->toJSON();
  llvm::Expected<DeviceModel> again = DeviceModel::fromJSON(printed);
  if (!again)
    llvm::report_fatal_error(
        llvm::Twine("toJSON wrote a device that does not read: ") +
        llvm::toString(again.takeError()) + "\n" + printed);
  if (!(*again == *device))
    llvm::report_fatal_error(llvm::Twine("toJSON wrote another device: ") +
                             printed);

  for (double flops : kAmounts)
    for (double bytes : kAmounts)
      for (bool tensorCores : {false, true}) {
        double us = device->rooflineUs(flops, bytes, tensorCores);
        if (std::isnan(us) || us < 0.0)
          llvm::report_fatal_error("a roofline time that is not a time");
      }
  return 0;
}
