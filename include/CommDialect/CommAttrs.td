//===- CommAttrs.td - Attributes of the comm dialect -------*- tablegen -*-===//

#ifndef COMM_ATTRS_TD
#define COMM_ATTRS_TD

include "CommDialect/CommDialect.td"
include "mlir/IR/EnumAttr.td"

def Comm_ReduceSum : I32EnumAttrCase<"sum", 0>;
def Comm_ReduceAvg : I32EnumAttrCase<"avg", 1>;
def Comm_ReduceMax : I32EnumAttrCase<"max", 2>;
def Comm_ReduceMin : I32EnumAttrCase<"min", 3>;

// The integer values are those of the runtime's commrt_reduce.
def Comm_ReduceKind : I32EnumAttr<"ReduceKind", "reduction of a collective",
    [Comm_ReduceSum, Comm_ReduceAvg, Comm_ReduceMax, Comm_ReduceMin]> {
  let cppNamespace = "::mlir::comm";
  let genSpecializedAttr = 0;
}

def Comm_ReduceKindAttr : EnumAttr<Comm_Dialect, Comm_ReduceKind, "reduce"> {
  let summary = "The reduction a collective applies across ranks";
  let description = [{
    `#comm.reduce<sum>`, `<avg>` (sum divided by the number of ranks, the
    gradient average of data-parallel training), `<max>` or `<min>`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Comm_PhaseForward : I32EnumAttrCase<"forward", 0>;
def Comm_PhaseBackward : I32EnumAttrCase<"backward", 1>;
def Comm_PhaseOptimizer : I32EnumAttrCase<"optimizer", 2>;

def Comm_Phase : I32EnumAttr<"Phase", "part of a training step",
    [Comm_PhaseForward, Comm_PhaseBackward, Comm_PhaseOptimizer]> {
  let cppNamespace = "::mlir::comm";
  let genSpecializedAttr = 0;
}

def Comm_PhaseAttr : EnumAttr<Comm_Dialect, Comm_Phase, "phase"> {
  let summary = "The part of a training step a compute step belongs to";
  let description = [{
    `#comm.phase<forward>`, `<backward>` or `<optimizer>`. The estimator's
    steady-state mode lets the next step's forward of a layer start as soon
    as that layer's gradients are reduced.
  }];
  let assemblyFormat = "`<` $value `>`";
}

#endif // COMM_ATTRS_TD
