//===- CommDialect.td - The comm dialect and its op base ---*- tablegen -*-===//
//
// The `comm` dialect: gradient collectives of a data-parallel training step.
//
//===----------------------------------------------------------------------===//

#ifndef COMM_DIALECT_TD
#define COMM_DIALECT_TD

include "mlir/IR/OpBase.td"

def Comm_Dialect : Dialect {
  let name = "comm";
  let cppNamespace = "::mlir::comm";
  let summary = "Gradient communication of data-parallel training";
  let description = [{
    The `comm` dialect represents the gradient collectives of one training
    step and the plan commopt makes for them: which gradients are fused into
    one collective, when each collective starts and is waited on, on which
    channel it travels and in which precision. Ops have value semantics on
    tensors; after bufferization the same ops operate in place on memrefs and
    have no results, which is the form `convert-comm-to-runtime` lowers.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
  // Checks the discardable `comm.*` attributes: that their strings are
  // UTF-8 (they reach JSON plans and reports), and the shapes of the
  // module-level notes the imports write (`comm.model`, `comm.source`,
  // `comm.aliases`, `comm.unused`).
  let hasOperationAttrVerify = 1;
}

class Comm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Comm_Dialect, mnemonic, traits>;

#endif // COMM_DIALECT_TD
