// The helpers of the wire-precision integration tests (wire-precision-4-ranks
// and mixed-wire-4-ranks), which append this file to their own: two
// gradients per rank, an exactly representable one and an inexact one, their
// f64 references over all ranks, and the verdict that each test prints.
// Not a test itself (lit.local.cfg excludes Inputs/).

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<?xf32>) {
  %m = bufferization.to_buffer %t : tensor<?xf32> to memref<?xf32>
  %u = memref.cast %m : memref<?xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}

func.func @index_to_f32(%i: index) -> f32 {
  %w = arith.index_cast %i : index to i64
  %f = arith.sitofp %w : i64 to f32
  return %f : f32
}

// Element i of rank r's exactly representable gradient: (r + 1) * c[i].
func.func @exact_value(%rank: index, %i: index) -> f32 {
  %c = arith.constant dense<[1.0, 2.0, 3.0, -5.0, 0.25, 16384.0, 0.0]> : tensor<7xf32>
  %ci = tensor.extract %c[%i] : tensor<7xf32>
  %c1 = arith.constant 1 : index
  %r1 = arith.addi %rank, %c1 : index
  %r1f = call @index_to_f32(%r1) : (index) -> f32
  %v = arith.mulf %r1f, %ci : f32
  return %v : f32
}

// Element i of rank r's other gradient: (7 r + 13 i + 1) / 9, rounded to f32.
func.func @inexact_value(%rank: index, %i: index) -> f32 {
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c13 = arith.constant 13 : index
  %a = arith.muli %rank, %c7 : index
  %b = arith.muli %i, %c13 : index
  %ab = arith.addi %a, %b : index
  %n = arith.addi %ab, %c1 : index
  %nf = call @index_to_f32(%n) : (index) -> f32
  %nine = arith.constant 9.0 : f32
  %v = arith.divf %nf, %nine : f32
  return %v : f32
}

// The f64 reference of element i: the sum over all ranks of their f32
// values (exact in f64 for these values), divided by `divisor`.
func.func @reference(%exact: i1, %size: index, %i: index, %divisor: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %sum = scf.for %r = %c0 to %size step %c1 iter_args(%acc = %zero) -> (f64) {
    %v = scf.if %exact -> (f32) {
      %e = func.call @exact_value(%r, %i) : (index, index) -> f32
      scf.yield %e : f32
    } else {
      %x = func.call @inexact_value(%r, %i) : (index, index) -> f32
      scf.yield %x : f32
    }
    %vd = arith.extf %v : f32 to f64
    %next = arith.addf %acc, %vd : f64
    scf.yield %next : f64
  }
  %ref = arith.divf %sum, %divisor : f64
  return %ref : f64
}

// 1.0 if `condition` holds, 0.0 otherwise.
func.func @flag(%condition: i1) -> f32 {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %f = arith.select %condition, %one, %zero : f32
  return %f : f32
}

// The verdict printed for one reduction (see the top of the file); `divisor`
// is 1 for sum and the number of ranks for avg.
func.func @verdict(%exact: tensor<7xf32>, %inexact: tensor<256xf32>,
                   %size: index, %divisor: f64) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c256 = arith.constant 256 : index
  %true = arith.constant true
  %false = arith.constant false
  %zero = arith.constant 0.0 : f64

  // Any element of the exact gradient that differs from its reference.
  %mismatch = scf.for %i = %c0 to %c7 step %c1 iter_args(%any = %false) -> (i1) {
    %ref = func.call @reference(%true, %size, %i, %divisor) : (i1, index, index, f64) -> f64
    %got = tensor.extract %exact[%i] : tensor<7xf32>
    %gotd = arith.extf %got : f32 to f64
    %differs = arith.cmpf une, %gotd, %ref : f64
    %next = arith.ori %any, %differs : i1
    scf.yield %next : i1
  }

  // The largest relative error of the other gradient (NaN propagates).
  %maxRel = scf.for %i = %c0 to %c256 step %c1 iter_args(%max = %zero) -> (f64) {
    %ref = func.call @reference(%false, %size, %i, %divisor) : (i1, index, index, f64) -> f64
    %got = tensor.extract %inexact[%i] : tensor<256xf32>
    %gotd = arith.extf %got : f32 to f64
    %diff = arith.subf %gotd, %ref : f64
    %abs = math.absf %diff : f64
    %rel = arith.divf %abs, %ref : f64
    %next = arith.maximumf %max, %rel : f64
    scf.yield %next : f64
  }

  %uF32 = arith.constant 5.9604644775390625e-08 : f64 // 2^-24
  %uF16 = arith.constant 4.8828125e-04 : f64          // 2^-11
  %uBF16 = arith.constant 3.90625e-03 : f64           // 2^-8
  %three = arith.constant 3.01 : f64
  %four = arith.constant 4.01 : f64
  %boundF32 = arith.mulf %three, %uF32 : f64
  %boundF16 = arith.mulf %four, %uF16 : f64
  %boundBF16 = arith.mulf %four, %uBF16 : f64
  %exactOk = arith.xori %mismatch, %true : i1
  %inF32 = arith.cmpf ole, %maxRel, %boundF32 : f64
  %inF16 = arith.cmpf ole, %maxRel, %boundF16 : f64
  %inBF16 = arith.cmpf ole, %maxRel, %boundBF16 : f64
  %f0 = call @flag(%exactOk) : (i1) -> f32
  %f1 = call @flag(%inF32) : (i1) -> f32
  %f2 = call @flag(%inF16) : (i1) -> f32
  %f3 = call @flag(%inBF16) : (i1) -> f32
  %v = tensor.from_elements %f0, %f1, %f2, %f3 : tensor<4xf32>
  return %v : tensor<4xf32>
}
