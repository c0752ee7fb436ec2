//===- CommTypes.td - Types of the comm dialect ------------*- tablegen -*-===//

#ifndef COMM_TYPES_TD
#define COMM_TYPES_TD

include "CommDialect/CommDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Comm_TokenType : TypeDef<Comm_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "Handle of a collective in flight";
  let description = [{
    Produced by `comm.start` and consumed by exactly one `comm.wait`. Between
    the two, the collective may progress concurrently with compute.
  }];
}

#endif // COMM_TYPES_TD
