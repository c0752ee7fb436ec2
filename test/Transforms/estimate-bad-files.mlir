// Files that are not what an option expects end in an error that names
// them, at once: a device or an endless stream given as a description is
// read up to 16 MiB, not for ever; a report that cannot be written (a full
// disk) is an error, not a crash at exit.

// RUN: not commopt-opt %s --comm-estimate="device=/dev/zero" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEVICE
// DEVICE: error: comm-estimate: option 'device': cannot read device description '/dev/zero': it holds more than 16 MiB, too much for a description (a device or an endless stream?)
// RUN: not commopt-opt %s --comm-estimate="cluster=/dev/zero" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CLUSTER
// CLUSTER: cannot read cluster description '/dev/zero': it holds more than 16 MiB
// RUN: not commopt-translate --import-grad-profile %S/../Target/Inputs/grad-profile-counts.json --grad-profile-device=/dev/zero -o /dev/null 2>&1 | FileCheck %s --check-prefix=PROFILE-DEVICE
// PROFILE-DEVICE: cannot read device description '/dev/zero': it holds more than 16 MiB

// RUN: not commopt-opt %s --comm-estimate="report=json report-file=/dev/full" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FULL
// FULL: error: comm-estimate: option 'report-file': cannot write '/dev/full': No space left on device
// FULL-NOT: LLVM ERROR

func.func @step() -> tensor<1024xf32> {
  %g = comm.compute () {cost_us = 10.0 : f64, layer = 0 : i64, phase = #comm.phase<backward>} : () -> tensor<1024xf32>
  %r = comm.allreduce %g {name = "w"} : tensor<1024xf32> -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
