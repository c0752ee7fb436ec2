// RUN: commopt-opt %s -split-input-file -verify-diagnostics

func.func @result_type_mismatch(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op result #0 has type 'tensor<8xf32>', but its gradient has type 'tensor<4xf32>'}}
  %0 = comm.allreduce %g : tensor<4xf32> -> tensor<8xf32>
  return
}

// -----

func.func @tensor_without_result(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op expects one result per gradient (1), but has 0}}
  comm.allreduce %g : tensor<4xf32>
  return
}

// -----

func.func @memref_with_result(%m: memref<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op on memrefs reduces in place and has no results, but has 1}}
  %0 = comm.allreduce %m : memref<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @avg_on_integers(%g: tensor<4xi32>) {
  // expected-error @+1 {{'comm.allreduce' op reduce <avg> needs a floating-point element type, but the gradients are 'i32'}}
  %0 = comm.allreduce %g {reduce = #comm.reduce<avg>} : tensor<4xi32> -> tensor<4xi32>
  return
}

// -----

func.func @wire_not_narrower(%g: tensor<4xf16>) {
  // expected-error @+1 {{'comm.allreduce' op wire type 'f16' must be narrower than the element type 'f16'}}
  %0 = comm.allreduce %g {wire = f16} : tensor<4xf16> -> tensor<4xf16>
  return
}

// -----

func.func @wire_on_integers(%g: tensor<4xi32>) {
  // expected-error @+1 {{'comm.allreduce' op wire precision applies to floating-point gradients and types only, got wire 'f16' for 'i32' gradients}}
  %0 = comm.allreduce %g {wire = f16} : tensor<4xi32> -> tensor<4xi32>
  return
}

// -----

func.func @wire_not_a_float(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op wire precision applies to floating-point gradients and types only, got wire 'i8' for 'f32' gradients}}
  %0 = comm.allreduce %g {wire = i8} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @wire_unsupported_float(%g: tensor<4xf64>) {
  // expected-error @+1 {{'comm.allreduce' op wire type must be f16 or bf16, got 'f32'}}
  %0 = comm.allreduce %g {wire = f32} : tensor<4xf64> -> tensor<4xf64>
  return
}

// -----

func.func @prescale_not_positive(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op prescale must be a positive finite number, got -2.5}}
  %0 = comm.allreduce %g {wire = f16, prescale = -2.5} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @prescale_on_integers(%g: tensor<4xi64>) {
  // expected-error @+1 {{'comm.allreduce' op prescale needs floating-point gradients, got 'i64'}}
  %0 = comm.allreduce %g {prescale = 0.5} : tensor<4xi64> -> tensor<4xi64>
  return
}

// -----

func.func @unknown_reduce(%g: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::comm::ReduceKind to be one of: sum, avg, max, min}}
  // expected-error @+1 {{failed to parse Comm_ReduceKindAttr parameter 'value' which is to be a `::mlir::comm::ReduceKind`}}
  %0 = comm.allreduce %g {reduce = #comm.reduce<prod>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @unknown_algorithm(%g: tensor<4xf32>) {
  // expected-error @+2 {{expected ::mlir::comm::AlgorithmKind to be one of: ring, tree, hierarchical}}
  // expected-error @+1 {{failed to parse Comm_AlgorithmKindAttr parameter 'value' which is to be a `::mlir::comm::AlgorithmKind`}}
  %0 = comm.allreduce %g {algorithm = #comm.algorithm<rings>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @algorithm_not_an_algorithm(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.start' op attribute 'algorithm' failed to satisfy constraint: The algorithm a dense allreduce runs}}
  %t = comm.start %g {algorithm = 1 : i32} : tensor<4xf32>
  %r = comm.wait %t : tensor<4xf32>
  return
}

// -----

func.func @empty_fused() {
  // expected-error @+1 {{'comm.fused_allreduce' op expects at least one gradient}}
  "comm.fused_allreduce"() : () -> ()
  return
}

// -----

func.func @fused_mixed_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'comm.fused_allreduce' op expects all gradients to share one element type, but operand #1 has 'f16' and operand #0 has 'f32'}}
  %0:2 = comm.fused_allreduce %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>, tensor<4xf16>
  return
}

// -----

func.func @fused_mixed_forms(%a: tensor<4xf32>, %m: memref<4xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op expects all gradients to be tensors or all to be memrefs, but operand #1 is 'memref<4xf32>'}}
  %0 = comm.fused_allreduce %a, %m : tensor<4xf32>, memref<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fused_result_count(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op expects one result per gradient (2), but has 1}}
  %0 = comm.fused_allreduce %a, %b : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @fused_result_order(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op result #0 has type 'tensor<8xf32>', but its gradient has type 'tensor<4xf32>'}}
  %0:2 = comm.fused_allreduce %a, %b : tensor<4xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<4xf32>
  return
}

// -----

func.func @fused_names_count(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op has 1 names for 2 gradients}}
  %0:2 = comm.fused_allreduce %a, %b {names = ["a"]} : tensor<4xf32>, tensor<8xf32> -> tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @not_a_gradient(%a: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{'comm.allreduce' op operand #0 must be ranked tensor or memref of floats or signless integers}}
  %0 = comm.allreduce %a : tensor<4xcomplex<f32>> -> tensor<4xcomplex<f32>>
  return
}

// -----

func.func @token_never_waited(%a: tensor<4xf32>) {
  // expected-error @+1 {{'comm.start' op token is never waited on: every comm.start needs exactly one comm.wait}}
  %t = comm.start %a : tensor<4xf32>
  return
}

// -----

func.func @token_waited_twice(%a: tensor<4xf32>) {
  // expected-error @+1 {{'comm.start' op token is waited on more than once: every comm.start needs exactly one comm.wait}}
  %t = comm.start %a : tensor<4xf32>
  %0 = comm.wait %t : tensor<4xf32>
  %1 = comm.wait %t : tensor<4xf32>
  return
}

// -----

func.func private @consume(!comm.token)

func.func @token_escapes(%a: tensor<4xf32>) {
  // expected-error @+1 {{'comm.start' op token must be consumed by comm.wait, not by func.call}}
  %t = comm.start %a : tensor<4xf32>
  func.call @consume(%t) : (!comm.token) -> ()
  return
}

// -----

func.func @start_empty() {
  // expected-error @+1 {{'comm.start' op expects at least one gradient}}
  %t = "comm.start"() : () -> !comm.token
  comm.wait %t
  return
}

// -----

func.func @start_negative_channel(%a: tensor<4xf32>) {
  // expected-error @+1 {{'comm.start' op attribute 'channel' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %t = comm.start %a {channel = -1} : tensor<4xf32>
  %0 = comm.wait %t : tensor<4xf32>
  return
}

// -----

func.func @wait_token_from_argument(%t: !comm.token) {
  // expected-error @+1 {{'comm.wait' op token must come directly from a comm.start, comm.sparse_start, comm.reduce_scatter_start or comm.all_gather_start}}
  %0 = comm.wait %t : tensor<4xf32>
  return
}

// -----

func.func @wait_result_count(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  %t = comm.start %a, %b : tensor<4xf32>, tensor<4xf32>
  // expected-error @+1 {{'comm.wait' op expects one result per operand of its comm.start (2), but has 1}}
  %0 = comm.wait %t : tensor<4xf32>
  return
}

// -----

func.func @wait_result_type(%a: tensor<4xf32>) {
  %t = comm.start %a : tensor<4xf32>
  // expected-error @+1 {{'comm.wait' op result #0 has type 'tensor<4xf64>', but the operand started has type 'tensor<4xf32>'}}
  %0 = comm.wait %t : tensor<4xf64>
  return
}

// -----

func.func @wait_buffer_form_with_results(%m: memref<4xf32>) {
  %t = comm.start %m : memref<4xf32>
  // expected-error @+1 {{'comm.wait' op waits on a collective over memrefs, which reduces them in place: expected no results, got 1}}
  %0 = comm.wait %t : tensor<4xf32>
  return
}

// -----

func.func @negative_cost() {
  // expected-error @+1 {{'comm.compute' op cost_us must be a non-negative finite number of microseconds, got -1}}
  comm.compute () {cost_us = -1.0} : () -> ()
  return
}

// -----

func.func @outputs_and_tensor_results(%m: memref<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'comm.compute' op writes 'outs' (buffer form) and returns tensors: a step produces its results one way}}
  %t = comm.compute () outs(%m : memref<4xf32>) {cost_us = 1.0} : () -> tensor<4xf32>
  return %t : tensor<4xf32>
}

// -----

func.func @tensor_output(%t: tensor<4xf32>) {
  // expected-error @+1 {{'comm.compute' op operand #0 must be variadic of memref of any type values, but got 'tensor<4xf32>'}}
  "comm.compute"(%t) <{cost_us = 1.0 : f64, operandSegmentSizes = array<i32: 0, 1>}> : (tensor<4xf32>) -> ()
  return
}

// -----

func.func @missing_cost() {
  // expected-error @+1 {{'comm.compute' op requires attribute 'cost_us'}}
  comm.compute () {name = "x"} : () -> ()
  return
}

// -----

func.func @negative_layer() {
  // expected-error @+1 {{'comm.compute' op attribute 'layer' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  comm.compute () {cost_us = 1.0, layer = -3} : () -> ()
  return
}

// -----

func.func @unknown_phase() {
  // expected-error @+2 {{expected ::mlir::comm::Phase to be one of: forward, backward, optimizer}}
  // expected-error @+1 {{failed to parse Comm_PhaseAttr parameter 'value' which is to be a `::mlir::comm::Phase`}}
  comm.compute () {cost_us = 1.0, phase = #comm.phase<sideways>} : () -> ()
  return
}

// -----

shard.grid @grid(shape = 2x4)

func.func @group_without_axes(%g: tensor<4xf32>) {
  // expected-error @+1 {{#comm.group needs at least one grid axis}}
  %0 = comm.allreduce %g {group = #comm.group<@grid, axes = []>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x4)

func.func @group_axes_unsorted(%g: tensor<4xf32>) {
  // expected-error @+1 {{#comm.group axes must be listed in increasing order, each once, got 1 before 0}}
  %0 = comm.allreduce %g {group = #comm.group<@grid, axes = [1, 0]>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x4)

func.func @group_axes_repeated(%g: tensor<4xf32>) {
  // expected-error @+1 {{#comm.group axes must be listed in increasing order, each once, got 1 before 1}}
  %0 = comm.allreduce %g {group = #comm.group<@grid, axes = [1, 1]>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x4)

func.func @group_axis_negative(%g: tensor<4xf32>) {
  // expected-error @+1 {{#comm.group axes must be non-negative, got -1}}
  %0 = comm.allreduce %g {group = #comm.group<@grid, axes = [-1, 0]>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @group_unknown_grid(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op group refers to an unknown grid @nowhere}}
  %0 = comm.allreduce %g {group = #comm.group<@nowhere, axes = [0]>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @group_not_a_grid(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op group's grid @group_not_a_grid must be a shard.grid, but is a 'func.func'}}
  %0 = comm.allreduce %g {group = #comm.group<@group_not_a_grid, axes = [0]>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x4)

func.func @group_axis_out_of_range(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op group axis 2 is out of range: grid @grid has 2 axes}}
  %0 = comm.allreduce %g {group = #comm.group<@grid, axes = [0, 2]>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

shard.grid @line(shape = 8)

func.func @sparse_group_axis_out_of_range(%g: tensor<8xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op group axis 1 is out of range: grid @line has 1 axis}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5 : f64,
      exchange = #comm.exchange<allgather>, group = #comm.group<@line, axes = [1]>,
      select = #comm.select<topk>}
      : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
  return
}

// -----

shard.grid @empty(shape = 0x4)

func.func @group_grid_without_processes(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op group's grid @empty has no processes: its axis 0 has size 0}}
  %0 = comm.allreduce %g {group = #comm.group<@empty, axes = [1]>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @sparse_group_unknown_grid(%g: tensor<8xf32>, %r: tensor<8xf32>) {
  // expected-error @+1 {{'comm.sparse_allreduce' op group refers to an unknown grid @nowhere}}
  %0:2 = comm.sparse_allreduce %g, %r {density = 0.5 : f64,
      exchange = #comm.exchange<allgather>, group = #comm.group<@nowhere, axes = [0]>,
      select = #comm.select<topk>}
      : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>, tensor<8xf32>
  return
}

// -----

shard.grid @line(shape = 8)

func.func @fused_group_axis_out_of_range(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op group axis 1 is out of range: grid @line has 1 axis}}
  %0:2 = comm.fused_allreduce %a, %b {group = #comm.group<@line, axes = [1]>}
      : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x4)

func.func @start_group_axis_out_of_range(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'comm.start' op group axis 5 is out of range: grid @grid has 2 axes}}
  %t = comm.start %g {group = #comm.group<@grid, axes = [5]>} : tensor<4xf32>
  %r = comm.wait %t : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @start_group_unknown_grid(%m: memref<4xf32>) {
  // expected-error @+1 {{'comm.start' op group refers to an unknown grid @nowhere}}
  %t = comm.start %m {group = #comm.group<@nowhere, axes = [0]>} : memref<4xf32>
  comm.wait %t
  return
}

// -----

// A gradient whose byte count would overflow the passes' arithmetic
// (4611686018427387904 x 8 f32 = 2^67 bytes) is rejected, not counted as 0.
func.func @huge_gradient(%g: tensor<4611686018427387904x8xf32>) -> tensor<4611686018427387904x8xf32> {
  // expected-error @+1 {{'comm.allreduce' op operand #0 of type 'tensor<4611686018427387904x8xf32>' holds more than 2^62 bytes, the most a collective may hold}}
  %r = comm.allreduce %g : tensor<4611686018427387904x8xf32> -> tensor<4611686018427387904x8xf32>
  return %r : tensor<4611686018427387904x8xf32>
}

// -----

// Three gradients of 2^61 bytes each: together over the limit.
func.func @huge_bucket(%a: tensor<576460752303423488xf32>, %b: tensor<576460752303423488xf32>, %c: tensor<576460752303423488xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op gradients hold more than 2^62 bytes together, the most a collective may hold}}
  %r:3 = comm.fused_allreduce %a, %b, %c : tensor<576460752303423488xf32>, tensor<576460752303423488xf32>, tensor<576460752303423488xf32> -> tensor<576460752303423488xf32>, tensor<576460752303423488xf32>, tensor<576460752303423488xf32>
  return
}

// -----

// Names go into JSON (plans, timelines, reports): they must be UTF-8.
func.func @name_not_utf8(%g: tensor<4xf32>) {
  // expected-error @+1 {{'comm.allreduce' op name 'fc....' is not valid UTF-8 at byte 3: names go into JSON plans and reports}}
  %0 = comm.allreduce %g {name = "fc.\FA\FF"} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @bucket_name_not_utf8(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op name 'b...' is not valid UTF-8 at byte 1}}
  %0:2 = comm.fused_allreduce %a, %b {names = ["a", "b\C0"]} : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @compute_name_not_utf8() {
  // expected-error @+1 {{'comm.compute' op name '...' is not valid UTF-8 at byte 0}}
  comm.compute() {cost_us = 1.0 : f64, name = "\FF"} : () -> ()
  return
}

// -----

// The module-level notes of the imports go into JSON too (the model's name
// into plans, timelines and reports).
// expected-error @+1 {{'builtin.module' op attribute 'comm.model' holds 'two...', which is not valid UTF-8 at byte 3: names go into JSON plans and reports}}
module attributes {comm.model = "two\FFlayers"} {}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'comm.aliases' holds 'embed...', which is not valid UTF-8 at byte 5}}
module attributes {comm.aliases = {"embed\C3" = ["head.weight"]}} {}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'comm.aliases' holds 'head...', which is not valid UTF-8 at byte 4}}
module attributes {comm.aliases = {embed = ["head\80"]}} {}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'comm.unused' holds 'aux...', which is not valid UTF-8 at byte 3}}
module attributes {comm.unused = ["fc", "aux\FE"]} {}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'comm.model' must be a string (the model's name), got 3 : i64}}
module attributes {comm.model = 3} {}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'comm.unused' must be an array of strings (the parameters that get no gradient), got "aux"}}
module attributes {comm.unused = "aux"} {}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'comm.aliases' must be a dictionary from a parameter's name to the array of its other names, got ["head"]}}
module attributes {comm.aliases = ["head"]} {}

// -----

// expected-error @+1 {{'builtin.module' op attribute 'comm.aliases' must map 'embed' to an array of strings (its other names), got "head"}}
module attributes {comm.aliases = {embed = "head"}} {}

// -----

module {
  // expected-error @+1 {{'func.func' op attribute 'comm.model' belongs on the module}}
  func.func @f() attributes {comm.model = "x"} {
    return
  }
}

// -----

// Every comm attribute, here an estimate's cluster.
func.func @estimate_not_utf8() attributes {comm.estimate = {cluster = "nv\FF"}} {
  return
}
// expected-error @-3 {{'func.func' op attribute 'comm.estimate' holds 'nv...', which is not valid UTF-8 at byte 2}}

// -----

shard.grid @"g\FF"(shape = 2)
func.func @grid_name_not_utf8(%g: tensor<4xf32>) {
  // expected-error @+1 {{#comm.group grid name 'g...' is not valid UTF-8 at byte 1: names go into JSON plans and reports}}
  %0 = comm.allreduce %g {group = #comm.group<@"g\FF", axes = [0]>} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @narrowed_without_wire(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op 'narrowed' needs a wire type: it flags the gradients that travel in it}}
  %0:2 = comm.fused_allreduce %a, %b {narrowed = array<i1: true, false>}
      : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @narrowed_wrong_count(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op has 3 narrowed flags for 2 gradients}}
  %0:2 = comm.fused_allreduce %a, %b {narrowed = array<i1: true, false, true>, wire = f16}
      : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @narrowed_all(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op narrows every gradient: leave 'narrowed' out}}
  %0:2 = comm.fused_allreduce %a, %b {narrowed = array<i1: true, true>, wire = f16}
      : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @narrowed_none(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op narrows no gradient: leave 'narrowed', 'wire' and 'prescale' out}}
  %0:2 = comm.fused_allreduce %a, %b {narrowed = array<i1: false, false>, wire = f16}
      : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return
}

// -----

func.func @narrowed_not_ring(%a: memref<4xf32>, %b: memref<2xf32>) {
  // expected-error @+1 {{'comm.fused_allreduce' op is a mixed-wire bucket, which runs the ring, but has algorithm tree}}
  comm.fused_allreduce %a, %b {algorithm = #comm.algorithm<tree>,
      narrowed = array<i1: true, false>, wire = f16} : memref<4xf32>, memref<2xf32>
  return
}

// -----

// commrt_mixed_allreduce takes no transport.
func.func @narrowed_with_transport(%a: memref<4xf32>, %b: memref<2xf32>) {
  // expected-error @+1 {{'comm.start' op is a mixed-wire bucket, which runs on the backend in use, but has transport mpi}}
  %t = comm.start %a, %b {narrowed = array<i1: true, false>,
      transport = #comm.transport<mpi>, wire = f16} : memref<4xf32>, memref<2xf32>
  comm.wait %t
  return
}

// -----

func.func @unknown_transport(%a: memref<4xf32>) {
  // expected-error @+2 {{expected ::mlir::comm::TransportKind to be one of: nccl, mpi}}
  // expected-error @+1 {{failed to parse Comm_TransportKindAttr parameter 'value'}}
  comm.allreduce %a {transport = #comm.transport<gloo>} : memref<4xf32>
  return
}

// -----

func.func @start_narrowed_wrong_count(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{'comm.start' op has 1 narrowed flags for 2 gradients}}
  %t = comm.start %a, %b {narrowed = array<i1: true>, wire = f16}
      : tensor<4xf32>, tensor<2xf32>
  %r:2 = comm.wait %t : tensor<4xf32>, tensor<2xf32>
  return
}
