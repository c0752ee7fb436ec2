// RUN: commopt-translate --import-grad-profile %S/../Target/Inputs/grad-profile-basic.json \
// RUN:   | commopt-opt --comm-estimate="cluster=ib56-16" 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=STEP
// RUN: commopt-translate --import-grad-profile %S/../Target/Inputs/grad-profile-basic.json \
// RUN:   | commopt-opt --comm-estimate="cluster=ib56-16 mode=steady top=0" 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=STEADY

// An imported gradient profile (test/Target/Inputs/grad-profile-basic.json)
// on ib56-16, a flat 16-rank ring whose alpha and beta reproduce MG-WFBP's
// fit of a 16-worker allreduce on 56 Gb IB exactly (docs/CostModel.md,
// section 5): an allreduce of n bytes costs
//   T(n) = 235.836777 us + 4.05947877e-4 us/B * n.
//
// The import gives: forward 30500 us; fc's backward 480 us, then
// fc.weight (1000x2048 f32, 8192000 B) and fc.bias (4000 B); relu 12.5 us;
// norm 7 us, then norm.scale (64 bf16, 128 B) and norm.temperature (one
// f64, 8 B); embed 0 us, then embed.weight (32000x64 f16, 4096000 B). Every
// allreduce blocks, and the cluster has one channel:
//   fc.weight      30980.000 + T(8192000) = 30980.000 + 3561.362 = 34541.362
//   fc.bias        34541.362 + T(4000)    = 34541.362 +  237.461 = 34778.822
//   relu, norm     34778.822 + 12.5 + 7                          = 34798.322
//   norm.scale     34798.322 + T(128)     = 34798.322 +  235.889 = 35034.211
//   norm.temp.     35034.211 + T(8)       = 35034.211 +  235.840 = 35270.051
//   embed.weight   35270.051 + T(4096000) = 35270.051 + 1898.599 = 37168.650
// Step 37168.650; compute 30500 + 480 + 12.5 + 7 = 30999.5; communication
// the five T(n), 6169.150, all exposed: 6169.150 / 37168.650 = 16.6%.
// Memory: the gradients (3073034 f32, 12292136 B, returned, so all live at
// the end) and as many bytes of parameters: 24584272 B = 23.445 MiB.

// STEP: comm-estimate: tiny-mlp @train_step
// STEP-NEXT: cluster ib56-16 (16 ranks, 1 per node, ring allreduce, 1 shared channel)
// STEP-NEXT: device v100
// STEP-NEXT: mode step
// STEP-NEXT: step 37168.650 us
// STEP-NEXT: compute 30999.500 us
// STEP-NEXT: communication 6169.150 us
// STEP-NEXT: exposed 6169.150 us (16.6% of the step)
// STEP-NEXT: memory 23.445 MiB at most a rank (parameters, gradients, shards)
// STEP-NEXT: collectives 5; the 5 most exposed:
// STEP-NEXT: name bytes channel start (us) end (us) exposed (us)
// STEP-NEXT: fc.weight 8192000 0 30980.000 34541.362 3561.362
// STEP-NEXT: embed.weight 4096000 0 35270.051 37168.650 1898.599
// STEP-NEXT: fc.bias 4000 0 34541.362 34778.822 237.461
// STEP-NEXT: norm.scale 128 0 34798.322 35034.211 235.889
// STEP-NEXT: norm.temperature 8 0 35034.211 35270.051 235.840

// The profile has one forward step for the whole model, so the next step
// cannot start before every gradient is reduced: the steady state is the
// single step repeated.
// STEADY: mode steady (mean of 4 iterations after 2 warm-up)
// STEADY-NEXT: iteration 37168.650 us
// STEADY-NEXT: compute 30999.500 us
// STEADY-NEXT: communication 6169.150 us
// STEADY-NEXT: exposed 6169.150 us (16.6% of the iteration)
// STEADY-NEXT: memory 23.445 MiB at most a rank (parameters, gradients, shards)
// STEADY-NEXT: collectives 5{{$}}
