// --grad-profile-device replaces each layer's measured times, and the
// optimizer's update, by the device's roofline time of the FLOPs and bytes
// the profile counts: launch_overhead_us + max(FLOPs / peak, bytes /
// bandwidth), with the tensor-core peak for a layer whose parameters are all
// f16 or bf16.

// RUN: commopt-translate --import-grad-profile --grad-profile-device=v100 %S/Inputs/grad-profile-counts.json \
// RUN:   | FileCheck %s --check-prefix=V100
// RUN: commopt-translate --import-grad-profile --grad-profile-device=v100 %S/Inputs/grad-profile-counts.json \
// RUN:   | commopt-opt | FileCheck %s --check-prefix=V100
// RUN: commopt-translate --import-grad-profile --grad-profile-device=a100 %S/Inputs/grad-profile-counts.json \
// RUN:   | FileCheck %s --check-prefix=A100
// RUN: commopt-translate --import-grad-profile --grad-profile-device=%S/Inputs/device-toy.json %S/Inputs/grad-profile-counts.json \
// RUN:   | FileCheck %s --check-prefix=TOY
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-counts.json \
// RUN:   | FileCheck %s --check-prefix=MEASURED

// V100 (15.7 TFLOP/s FP32, 125 tensor, 900 GB/s). fc1's parameters are
// bf16: 1.25e9 FLOP on tensor cores = 10 us (0.9e6 B = 1 us); act moves
// 1.8e6 B = 2 us; fc2 does 1.57e9 FLOP = 100 us (9e6 B = 10 us). Backward:
// fc2 is memory bound, 9e8 B = 1000 us (3.14e9 FLOP = 200 us); act 3.6e6 B
// = 4 us; fc1 2.5e9 FLOP = 20 us. The update: 4.5e8 B = 500 us.
// V100-LABEL: func.func @train_step()
// V100-NEXT: comm.compute() {cost_us = 1.000000e+01 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<forward>}
// V100-NEXT: comm.compute() {cost_us = 2.000000e+00 : f64, layer = 1 : i64, name = "act", phase = #comm.phase<forward>}
// V100-NEXT: comm.compute() {cost_us = 1.000000e+02 : f64, layer = 2 : i64, name = "fc2", phase = #comm.phase<forward>}
// V100-NEXT: comm.compute() {cost_us = 1.000000e+03 : f64, layer = 2 : i64, name = "fc2", phase = #comm.phase<backward>}
// V100-NEXT: comm.allreduce
// V100-NEXT: comm.compute() {cost_us = 4.000000e+00 : f64, layer = 1 : i64, name = "act", phase = #comm.phase<backward>}
// V100-NEXT: comm.compute() {cost_us = 2.000000e+01 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<backward>}
// V100: comm.compute({{.*}}) {cost_us = 5.000000e+02 : f64, name = "update", phase = #comm.phase<optimizer>}

// A100 (19.5 TFLOP/s FP32, 312 tensor, 1555 GB/s): fc1 forward 1.25e9 /
// 312e12 s = 4.006 us; fc2 forward 1.57e9 / 19.5e12 s = 80.51 us; fc2
// backward 9e8 B / 1555e9 B/s = 578.8 us.
// A100: comm.compute() {cost_us = 4.0064102564102564 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<forward>}
// A100: comm.compute() {cost_us = 80.51282051282051 : f64, layer = 2 : i64, name = "fc2", phase = #comm.phase<forward>}
// A100: comm.compute() {cost_us = 578.77813504823155 : f64, layer = 2 : i64, name = "fc2", phase = #comm.phase<backward>}

// A description file: 1 TFLOP/s without tensor cores, 1 GB/s and 5 us per
// op. fc1 forward: 5 + max(1250, 900) us; fc2 forward: 5 + max(1570, 9000).
// TOY: comm.compute() {cost_us = 1.255000e+03 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<forward>}
// TOY: comm.compute() {cost_us = 9.005000e+03 : f64, layer = 2 : i64, name = "fc2", phase = #comm.phase<forward>}
// TOY: comm.compute() {cost_us = 9.000050e+05 : f64, layer = 2 : i64, name = "fc2", phase = #comm.phase<backward>}
// TOY: comm.compute({{.*}}) {cost_us = 4.500050e+05 : f64, name = "update", phase = #comm.phase<optimizer>}

// Without the option the counts are read, checked and otherwise ignored.
// MEASURED: comm.compute() {cost_us = 3.000000e+01 : f64, layer = 0 : i64, name = "fc1", phase = #comm.phase<forward>}
// MEASURED: comm.compute({{.*}}) {cost_us = 1.250000e+01 : f64, name = "update", phase = #comm.phase<optimizer>}

// A layer without its counts, an update without its own, an unknown device
// and a file that is no device description are errors; a count below 0 is
// one with or without the option.
// RUN: not commopt-translate --import-grad-profile --grad-profile-device=v100 %S/Inputs/grad-profile-counts-missing.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING
// MISSING: grad-profile-counts-missing.json:1:1: error: layers[1].backward_bytes: missing value: --grad-profile-device=v100 replaces the times of layer "fc1" by the device's roofline time of its FLOPs and bytes; export the profile again with tools/commopt-export/commopt-export.py, which counts them
// RUN: commopt-translate --import-grad-profile %S/Inputs/grad-profile-counts-missing.json -o /dev/null

// RUN: not commopt-translate --import-grad-profile --grad-profile-device=v100 %S/Inputs/grad-profile-counts-no-update.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-UPDATE
// NO-UPDATE: error: update_flops: missing value: --grad-profile-device=v100 replaces the times of the optimizer's update by

// RUN: not commopt-translate --import-grad-profile --grad-profile-device=tpu %S/Inputs/grad-profile-counts.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-DEVICE
// BAD-DEVICE: grad-profile-counts.json:1:1: error: import-grad-profile: option --grad-profile-device: 'tpu' is neither a device preset (v100, p40, a100, h100) nor a file
// RUN: not commopt-translate --import-grad-profile --grad-profile-device=%S/Inputs/grad-profile-counts.json %S/Inputs/grad-profile-counts.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOT-DEVICE
// NOT-DEVICE: error: import-grad-profile: option --grad-profile-device: {{.*}}grad-profile-counts.json: invalid device description: expected "commopt-device" at device.format

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-counts-negative.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: grad-profile-counts-negative.json:1:1: error: layers[0].backward_flops: a count of FLOPs or bytes must be a finite number >= 0, got -200
