// A step whose tensors hold indices, found by commopt-ir-fuzzer
// (docs/Robustness.md) in a seed from the tests: comm-estimate's step memory
// analysis asked the size of every tensor's element, and an index has none
// (a null dereference in FloatType::getWidth). An index now counts as 8
// bytes, and other element types without a width count nothing.
//
// RUN: commopt-opt %S/Inputs/ir-index-elements.mlir --comm-optimize="estimate=step report=json report-file=%t.json" -o /dev/null
// RUN: %python -c "import json; print(int(json.load(open('%t.json'))['functions'][0]['peak_memory_bytes']))" | FileCheck %s
//
// The argument (64 B) and the unimported shard op's result (16 B).
// CHECK: 80
