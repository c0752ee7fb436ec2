//===- CommInterfaces.td - Interfaces of the comm dialect --*- tablegen -*-===//
//
// CollectiveOpInterface: what every pass, the step model and the lowering ask
// of a collective, whatever its kind (comm.allreduce, comm.fused_allreduce,
// comm.start, comm.sparse_allreduce).
//
//===----------------------------------------------------------------------===//

#ifndef COMM_INTERFACES
#define COMM_INTERFACES

include "mlir/IR/OpBase.td"

def Comm_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::comm";
  let description = [{
    A collective over gradients: the gradients it reduces (a sparse
    allreduce's residual is state, not a gradient), the reduction, the type
    the data travels in, the prescale, the process group, the allreduce
    algorithm, the parameter names and the bytes it moves.
  }];
  let methods = [
    InterfaceMethod<"The gradients the collective reduces, in order.",
      "::mlir::ValueRange", "getGradients">,
    InterfaceMethod<[{
        The parameter name of each gradient, in order; "" where a gradient
        has none.
      }],
      "::llvm::SmallVector<::llvm::StringRef>", "getGradientNames">,
    InterfaceMethod<"The reduction.",
      "::mlir::comm::ReduceKind", "getReduceKind", (ins), [{}], [{
        return $_op.getReduce();
      }]>,
    InterfaceMethod<[{
        The type the data travels in when narrower than the gradients' own
        (the `wire` attribute); null for the gradients' own type.
      }],
      "::mlir::Type", "getWireType", (ins), [{}], [{
        if (::mlir::TypeAttr wire = $_op.getWireAttr())
          return wire.getValue();
        return {};
      }]>,
    InterfaceMethod<[{
        For a mixed-wire bucket, one flag per gradient: whether it travels in
        the wire type (getWireType) or in its own type. nullopt where every
        gradient travels alike.
      }],
      "::std::optional<::llvm::ArrayRef<bool>>", "getNarrowedGradients",
      (ins), [{}], [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        The factor applied before the cast to the wire type (to the narrowed
        gradients of a mixed-wire bucket).
      }],
      "::std::optional<double>", "getPrescaleFactor", (ins), [{}], [{
        if (::mlir::FloatAttr prescale = $_op.getPrescaleAttr())
          return prescale.getValueAsDouble();
        return std::nullopt;
      }]>,
    InterfaceMethod<"The process group it runs among; null for all ranks.",
      "::mlir::comm::GroupAttr", "getProcessGroup", (ins), [{}], [{
        return $_op.getGroupAttr();
      }]>,
    InterfaceMethod<[{
        The allreduce algorithm it runs (the `algorithm` attribute); nullopt
        for the runtime's default, and for collectives that are not a dense
        allreduce.
      }],
      "::std::optional<::mlir::comm::AlgorithmKind>", "getAllreduceAlgorithm",
      (ins), [{}], [{
        return $_op.getAlgorithm();
      }]>,
    InterfaceMethod<[{
        Makes the collective run `algorithm` (comm-select-algorithm); only on
        dense allreduces (those whose getAllreduceAlgorithm may be set:
        isDenseAllreduce()).
      }],
      "void", "setAllreduceAlgorithm",
      (ins "::mlir::comm::AlgorithmKind":$algorithm), [{}], [{
        $_op.setAlgorithm(algorithm);
      }]>,
    InterfaceMethod<[{
        The runtime backend that carries it (the `transport` attribute);
        nullopt for the backend in use, and for collectives that are not a
        dense allreduce.
      }],
      "::std::optional<::mlir::comm::TransportKind>", "getCollectiveTransport",
      (ins), [{}], [{
        if (!$_op.isDenseAllreduce())
          return ::std::nullopt;
        if (auto transport = $_op->template
                getAttrOfType<::mlir::comm::TransportKindAttr>("transport"))
          return transport.getValue();
        return ::std::nullopt;
      }]>,
    InterfaceMethod<[{
        Makes the collective run on `transport` (comm-select-algorithm); only
        on dense allreduces (isDenseAllreduce()).
      }],
      "void", "setCollectiveTransport",
      (ins "::mlir::comm::TransportKind":$transport), [{}], [{
        assert($_op.isDenseAllreduce() && "only a dense allreduce has a "
                                          "transport");
        $_op->setAttr("transport", ::mlir::comm::TransportKindAttr::get(
                                       $_op->getContext(), transport));
      }]>,
    InterfaceMethod<[{
        Whether the collective is a dense allreduce (comm.allreduce,
        comm.fused_allreduce, comm.start), which has an allreduce algorithm.
      }],
      "bool", "isDenseAllreduce", (ins), [{}], [{ return true; }]>,
    InterfaceMethod<[{
        Whether the data may travel in a narrower type (comm-lower-precision
        sets `wire` and `prescale`).
      }],
      "bool", "canNarrowWire", (ins), [{}], [{ return true; }]>,
    InterfaceMethod<[{
        Makes the data travel in `wire`, multiplied by `prescale` (if given)
        before the cast. Only where canNarrowWire().
      }],
      "void", "narrowWire",
      (ins "::mlir::Type":$wire, "::std::optional<double>":$prescale), [{}],
      [{
        $_op.setWireAttr(::mlir::TypeAttr::get(wire));
        if (prescale)
          $_op.setPrescaleAttr(
              ::mlir::Builder($_op.getContext()).getF64FloatAttr(*prescale));
      }]>,
  ];
  let extraSharedClassDeclaration = [{
    /// The type gradient `index` travels in when narrower than its own: the
    /// wire type, unless a mixed-wire bucket leaves that gradient in its own
    /// type (null).
    ::mlir::Type getGradientWireType(unsigned index) {
      if (auto narrowed = $_op.getNarrowedGradients())
        return (*narrowed)[index] ? $_op.getWireType() : ::mlir::Type();
      return $_op.getWireType();
    }

    /// Whether the gradients travel in different types.
    bool isMixedWire() { return $_op.getNarrowedGradients().has_value(); }

    /// The bytes the collective moves: every gradient's elements at the bits
    /// of the type it travels in (getGradientWireType, else its own), rounded
    /// up to whole bytes per gradient; nullopt when a shape is dynamic.
    std::optional<int64_t> getCommunicatedBytes() {
      int64_t bytes = 0;
      for (auto [index, type] :
           ::llvm::enumerate($_op.getGradients().getTypes())) {
        std::optional<int64_t> gradient = ::mlir::comm::getGradientBytes(
            type, getGradientWireType(static_cast<unsigned>(index)));
        if (!gradient)
          return std::nullopt;
        bytes += *gradient;
      }
      return bytes;
    }
  }];
}

def Comm_StartedCollectiveOpInterface
    : OpInterface<"StartedCollectiveOpInterface"> {
  let cppNamespace = "::mlir::comm";
  let description = [{
    The first half of a collective split for overlap (comm.start,
    comm.sparse_start): the channel it runs on, its priority, and the token
    that its one comm.wait consumes.
  }];
  let methods = [
    InterfaceMethod<"The communication channel.", "uint64_t", "getChannel",
      (ins), [{ return $_op.getChannel(); }]>,
    InterfaceMethod<"Puts the collective on `channel`.", "void", "setChannel",
      (ins "uint64_t":$channel), [{ $_op.setChannel(channel); }]>,
    InterfaceMethod<"Its priority (lower is more urgent), if any.",
      "::std::optional<int64_t>", "getPriority", (ins), [{
        if (auto priority = $_op.getPriority())
          return static_cast<int64_t>(*priority);
        return std::nullopt;
      }]>,
    InterfaceMethod<"The token its comm.wait consumes.", "::mlir::Value",
      "getToken", (ins), [{ return $_op.getToken(); }]>,
    InterfaceMethod<[{
        In buffer form, the buffers that hold the collective's results once
        its comm.wait returns (its comm.wait's results in tensor form):
        every operand for collectives in place, the output buffers of a
        sharded collective.
      }],
      "::mlir::ValueRange", "getResultBuffers", (ins), [{}], [{
        return $_op->getOperands();
      }]>,
  ];
}

def Comm_SparseCollectiveOpInterface
    : OpInterface<"SparseCollectiveOpInterface"> {
  let cppNamespace = "::mlir::comm";
  let description = [{
    A sparse allreduce of one gradient, blocking (comm.sparse_allreduce) or
    started (comm.sparse_start), compressed with a residual or lossless by
    rows: what the step model, the lowering and the plan export ask of
    either form.
  }];
  let methods = [
    InterfaceMethod<"The gradient.", "::mlir::Value", "getGrad", (ins),
      [{ return $_op.getGrad(); }]>,
    InterfaceMethod<[{
        The residual carried in from the previous step; null for the
        lossless rows exchange.
      }],
      "::mlir::Value", "getResidualIn", (ins),
      [{ return $_op.getResidualIn(); }]>,
    InterfaceMethod<"The fraction of entries (or chunks) sent.",
      "double", "getDensityValue", (ins),
      [{ return $_op.getDensity().convertToDouble(); }]>,
    InterfaceMethod<"How entries are selected.",
      "::mlir::comm::SelectKind", "getSelect", (ins),
      [{ return $_op.getSelect(); }]>,
    InterfaceMethod<"How the selected entries are exchanged.",
      "::mlir::comm::ExchangeKind", "getExchange", (ins),
      [{ return $_op.getExchange(); }]>,
    InterfaceMethod<[{
        The chunk size of chunk selection: `chunk_elements`, else the
        documented default; for rows selection, the length of a row (the
        product of the gradient's dimensions after the first, 1 for a 1-D
        gradient), which the runtime takes in the same argument.
      }],
      "int64_t", "getChunkElementCount", (ins), [{
        if ($_op.getSelect() == ::mlir::comm::SelectKind::rows) {
          auto type = ::llvm::cast<::mlir::ShapedType>($_op.getGrad().getType());
          int64_t row = 1;
          for (int64_t size : type.getShape().drop_front())
            row *= size;
          return row;
        }
        return static_cast<int64_t>($_op.getChunkElements().value_or(
            ::mlir::comm::kDefaultSparseChunkElements));
      }]>,
    InterfaceMethod<[{
        The measured fraction of rows (or entries) some rank sends, if the
        plan recorded it.
      }],
      "std::optional<double>", "getUnionDensityValue", (ins), [{
        if (auto attr = $_op.getUnionDensityAttr())
          return attr.getValueAsDouble();
        return std::nullopt;
      }]>,
    InterfaceMethod<"Whether `chunk_elements` is given.",
      "bool", "hasChunkElements", (ins),
      [{ return $_op.getChunkElements().has_value(); }]>,
  ];
}

#endif // COMM_INTERFACES
