// The sharded collectives on 4 ranks, lowered and run: rank r's gradient of
// 10 elements is (r + 1) (i + 1). Reduce-scattered over all ranks, rank r
// gets elements [3 r, 3 r + 3) of the sum 10 (i + 1), the last rank's
// shard one element and two of padding (zeros); all-gathered back (in bf16
// on the wire, exact for these integers), every rank holds the whole sum.
// Within the rows of a 2x2 grid ({0, 1} and {2, 3}) the shards are 5
// elements of 3 (i + 1) and of 7 (i + 1). The same 10 elements as the flat
// tensor of two (6 and 4 elements, FSDP's flat parameter) give the same
// shards, and gather back into both. Every value is exact in f32.
//
// RUN: commopt-opt %s --commopt-lower-to-llvm -o %t.llvm.mlir
// RUN: FileCheck %s --check-prefix=LOWERED < %t.llvm.mlir
// RUN: rm -rf %t.out
// RUN: %mpirun -np 4 --output-filename %t.out mlir-runner %t.llvm.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s --check-prefix=RANK$r < %t.out/1/rank.$r/stdout || exit 1; done
//
// Split for overlap by comm-schedule-overlap, every collective is started
// on a channel and waited for, with the same results.
// RUN: commopt-opt %s --comm-schedule-overlap --commopt-lower-to-llvm -o %t.started.mlir
// RUN: FileCheck %s --check-prefix=STARTED --implicit-check-not="llvm.call @commrt_reduce_scatter(" --implicit-check-not="llvm.call @commrt_all_gather(" < %t.started.mlir
// RUN: rm -rf %t.started.out
// RUN: %mpirun -np 4 --output-filename %t.started.out mlir-runner %t.started.mlir \
// RUN:   -e main -entry-point-result=void \
// RUN:   -shared-libs=%commrt_lib,%mlir_c_runner_utils,%mlir_runner_utils
// RUN: for r in 0 1 2 3; do FileCheck %s --check-prefix=RANK$r < %t.started.out/1/rank.$r/stdout || exit 1; done

// LOWERED: llvm.call @commrt_reduce_scatter(
// LOWERED: llvm.call @commrt_all_gather(
// LOWERED: llvm.call @commrt_group_split(
// LOWERED: llvm.call @commrt_reduce_scatter(
// LOWERED: llvm.call @commrt_reduce_scatter(
// LOWERED: llvm.call @commrt_all_gather(

// STARTED-DAG: llvm.call @commrt_reduce_scatter_start(
// STARTED-DAG: llvm.call @commrt_all_gather_start(
// STARTED-DAG: llvm.call @commrt_wait(

// Every rank: its shard, the gathered sum, its shard within its row, its
// shard of the flat tensor of two, and the two gathered.
// RANK0: data =
// RANK0-NEXT: [10,  20,  30]
// RANK0: data =
// RANK0-NEXT: [10,  20,  30,  40,  50,  60,  70,  80,  90,  100]
// RANK0: data =
// RANK0-NEXT: [3,  6,  9,  12,  15]
// RANK0: data =
// RANK0-NEXT: [10,  20,  30]
// RANK0: data =
// RANK0-NEXT: [10,  20,  30,  40,  50,  60]
// RANK0: data =
// RANK0-NEXT: [70,  80,  90,  100]
// RANK0-NOT: data =
//
// RANK1: data =
// RANK1-NEXT: [40,  50,  60]
// RANK1: data =
// RANK1-NEXT: [10,  20,  30,  40,  50,  60,  70,  80,  90,  100]
// RANK1: data =
// RANK1-NEXT: [18,  21,  24,  27,  30]
// RANK1: data =
// RANK1-NEXT: [40,  50,  60]
// RANK1: data =
// RANK1-NEXT: [10,  20,  30,  40,  50,  60]
// RANK1: data =
// RANK1-NEXT: [70,  80,  90,  100]
// RANK1-NOT: data =
//
// RANK2: data =
// RANK2-NEXT: [70,  80,  90]
// RANK2: data =
// RANK2-NEXT: [10,  20,  30,  40,  50,  60,  70,  80,  90,  100]
// RANK2: data =
// RANK2-NEXT: [7,  14,  21,  28,  35]
// RANK2: data =
// RANK2-NEXT: [70,  80,  90]
// RANK2: data =
// RANK2-NEXT: [10,  20,  30,  40,  50,  60]
// RANK2: data =
// RANK2-NEXT: [70,  80,  90,  100]
// RANK2-NOT: data =
//
// RANK3: data =
// RANK3-NEXT: [100,  0,  0]
// RANK3: data =
// RANK3-NEXT: [10,  20,  30,  40,  50,  60,  70,  80,  90,  100]
// RANK3: data =
// RANK3-NEXT: [42,  49,  56,  63,  70]
// RANK3: data =
// RANK3-NEXT: [100,  0,  0]
// RANK3: data =
// RANK3-NEXT: [10,  20,  30,  40,  50,  60]
// RANK3: data =
// RANK3-NEXT: [70,  80,  90,  100]
// RANK3-NOT: data =

shard.grid @mesh(shape = 2x2)

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @print3(%t: tensor<3xf32>) {
  %m = bufferization.to_buffer %t : tensor<3xf32> to memref<3xf32>
  %u = memref.cast %m : memref<3xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @print5(%t: tensor<5xf32>) {
  %m = bufferization.to_buffer %t : tensor<5xf32> to memref<5xf32>
  %u = memref.cast %m : memref<5xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @print6(%t: tensor<6xf32>) {
  %m = bufferization.to_buffer %t : tensor<6xf32> to memref<6xf32>
  %u = memref.cast %m : memref<6xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @print4(%t: tensor<4xf32>) {
  %m = bufferization.to_buffer %t : tensor<4xf32> to memref<4xf32>
  %u = memref.cast %m : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @print10(%t: tensor<10xf32>) {
  %m = bufferization.to_buffer %t : tensor<10xf32> to memref<10xf32>
  %u = memref.cast %m : memref<10xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  %rank = shard.process_linear_index on @mesh : index
  %c1 = arith.constant 1 : index
  %g = tensor.generate {
  ^bb0(%i: index):
    %r1 = arith.addi %rank, %c1 : index
    %i1 = arith.addi %i, %c1 : index
    %p = arith.muli %r1, %i1 : index
    %pi = arith.index_cast %p : index to i64
    %v = arith.sitofp %pi : i64 to f32
    tensor.yield %v : f32
  } : tensor<10xf32>
  %shard = comm.reduce_scatter %g {shards = 4} : tensor<10xf32> -> tensor<3xf32>
  %whole = comm.all_gather %shard {shards = 4, wire = bf16}
      : tensor<3xf32> -> tensor<10xf32>
  %row = comm.reduce_scatter %g {shards = 2, group = #comm.group<@mesh, axes = [1]>}
      : tensor<10xf32> -> tensor<5xf32>
  %a = tensor.extract_slice %g[0] [6] [1] : tensor<10xf32> to tensor<6xf32>
  %b = tensor.extract_slice %g[6] [4] [1] : tensor<10xf32> to tensor<4xf32>
  %flat = comm.reduce_scatter %a, %b {shards = 4}
      : tensor<6xf32>, tensor<4xf32> -> tensor<3xf32>
  %both:2 = comm.all_gather %flat {shards = 4}
      : tensor<3xf32> -> tensor<6xf32>, tensor<4xf32>
  call @print3(%shard) : (tensor<3xf32>) -> ()
  call @print10(%whole) : (tensor<10xf32>) -> ()
  call @print5(%row) : (tensor<5xf32>) -> ()
  call @print3(%flat) : (tensor<3xf32>) -> ()
  call @print6(%both#0) : (tensor<6xf32>) -> ()
  call @print4(%both#1) : (tensor<4xf32>) -> ()
  return
}
