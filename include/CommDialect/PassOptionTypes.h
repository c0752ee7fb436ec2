//===- PassOptionTypes.h - Types of commopt's choice options ----*- C++ -*-===//
//
// The enums of the choice-valued options of commopt's passes and of
// comm-optimize. A pass option lists the values it accepts with
// `llvm::cl::values` (CommPasses.td); comm-optimize's options add `none`
// where the pipeline can leave a pass out. Their parsers report a bad value
// with the pass, the option, every valid value and the nearest spelling
// (CommOpt/Support/ChoiceParser.h).
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_PASSOPTIONTYPES_H
#define COMMDIALECT_PASSOPTIONTYPES_H

#include "CommOpt/Support/ChoiceParser.h"

namespace mlir::comm {

/// How comm-fuse-buckets chooses bucket boundaries (`policy`); comm-optimize
/// `fusion=none` leaves the pass out.
enum class FusionPolicy { None, Threshold, Cost, Mgwfbp };

/// The wire type comm-lower-precision gives collectives (`wire`);
/// comm-optimize `wire=none` leaves the pass out.
enum class WirePrecision { None, F16, BF16 };

/// What comm-estimate simulates (`mode`); comm-optimize `estimate=none`
/// leaves the pass out.
enum class EstimateMode { None, Step, Steady };

/// The format of comm-estimate's report (`report`).
enum class ReportFormat { Text, Json, None };

/// comm-sparsify's exchange (`exchange`): one, or the cheapest by the cost
/// model.
enum class SparseExchangeChoice { Auto, Allgather, Hash, Chunk };

/// comm-exchange-rows's exchange for gradients that are sparse by nature
/// (`exchange`): the cheapest of dense, allgather and hash, or one of the
/// rows exchanges for every such gradient.
enum class RowsExchangeChoice { Auto, Allgather, Hash, Dense };

/// comm-select-algorithm's allreduce algorithm (`algorithm`): the cheapest
/// by the cost model per collective, or one for all.
enum class AlgorithmChoice { Auto, Ring, Tree, Hierarchical };

/// comm-select-algorithm's transport (`transport`): per collective the
/// cheaper of the cluster's backend and its alternate, or one for all.
enum class TransportChoice { Auto, Nccl, Mpi };

/// comm-sparsify's selection for the allgather and hash exchanges
/// (`select`).
enum class SparseSelectChoice { Threshold, Topk };

/// How comm-shard-data-parallel shards a step (`stage`): ZeRO-2's gradients
/// and optimizer state (parameters gathered once a step and kept through
/// backward, FSDP's SHARD_GRAD_OP), or ZeRO-3's parameters too (gathered
/// for each layer's forward and again for its backward, FSDP's
/// FULL_SHARD); comm-optimize `shard=none` leaves the pass out.
enum class ShardStage { None, Grad, Full };

template <>
inline llvm::StringRef
getChoiceHint<SparseSelectChoice>(llvm::StringRef value) {
  return value == "chunk" ? "chunk selection comes with exchange=chunk"
                          : llvm::StringRef();
}

} // namespace mlir::comm

// The values each option accepts, for `llvm::cl::values` in CommPasses.td
// and in comm-optimize's options (Passes.h), which add `none`.
#define COMMOPT_FUSION_POLICY_VALUES                                           \
  clEnumValN(::mlir::comm::FusionPolicy::Threshold, "threshold",               \
             "close buckets at a size cap (DDP, Horovod)"),                    \
      clEnumValN(::mlir::comm::FusionPolicy::Cost, "cost",                     \
                 "the buckets of least simulated step time"),                  \
      clEnumValN(::mlir::comm::FusionPolicy::Mgwfbp, "mgwfbp",                 \
                 "MG-WFBP's merge rule")
#define COMMOPT_WIRE_PRECISION_VALUES                                          \
  clEnumValN(::mlir::comm::WirePrecision::F16, "f16", "IEEE half precision"),  \
      clEnumValN(::mlir::comm::WirePrecision::BF16, "bf16", "bfloat16")
#define COMMOPT_ESTIMATE_MODE_VALUES                                           \
  clEnumValN(::mlir::comm::EstimateMode::Step, "step", "one step"),            \
      clEnumValN(::mlir::comm::EstimateMode::Steady, "steady",                 \
                 "the steady state of repeated steps")
#define COMMOPT_REPORT_FORMAT_VALUES                                           \
  clEnumValN(::mlir::comm::ReportFormat::Text, "text", "a table"),             \
      clEnumValN(::mlir::comm::ReportFormat::Json, "json", "a JSON object"),   \
      clEnumValN(::mlir::comm::ReportFormat::None, "none", "no report")
#define COMMOPT_SPARSE_EXCHANGE_VALUES                                         \
  clEnumValN(::mlir::comm::SparseExchangeChoice::Auto, "auto",                 \
             "the cheapest by the cost model"),                                \
      clEnumValN(::mlir::comm::SparseExchangeChoice::Allgather, "allgather",   \
                 "allgather of every rank's selection"),                       \
      clEnumValN(::mlir::comm::SparseExchangeChoice::Hash, "hash",             \
                 "hash-balanced exchange"),                                    \
      clEnumValN(::mlir::comm::SparseExchangeChoice::Chunk, "chunk",           \
                 "chunked exchange")
#define COMMOPT_ROWS_EXCHANGE_VALUES                                           \
  clEnumValN(::mlir::comm::RowsExchangeChoice::Auto, "auto",                   \
             "the cheapest by the cost model, dense included"),                \
      clEnumValN(::mlir::comm::RowsExchangeChoice::Allgather, "allgather",     \
                 "allgather of every rank's touched rows"),                    \
      clEnumValN(::mlir::comm::RowsExchangeChoice::Hash, "hash",               \
                 "Zen's hash-balanced exchange of the touched rows"),          \
      clEnumValN(::mlir::comm::RowsExchangeChoice::Dense, "dense",             \
                 "the dense allreduce, every zero included")
#define COMMOPT_ALGORITHM_VALUES                                               \
  clEnumValN(::mlir::comm::AlgorithmChoice::Auto, "auto",                      \
             "per collective, the cheapest by the cost model"),                \
      clEnumValN(::mlir::comm::AlgorithmChoice::Ring, "ring", "flat ring"),    \
      clEnumValN(::mlir::comm::AlgorithmChoice::Tree, "tree",                  \
                 "latency-optimal tree"),                                      \
      clEnumValN(::mlir::comm::AlgorithmChoice::Hierarchical, "hierarchical",  \
                 "intra-node, then inter-node, then intra-node")
#define COMMOPT_TRANSPORT_VALUES                                               \
  clEnumValN(::mlir::comm::TransportChoice::Auto, "auto",                      \
             "per collective, the cheaper by the cost model"),                 \
      clEnumValN(::mlir::comm::TransportChoice::Nccl, "nccl",                  \
                 "commrt's NCCL backend"),                                     \
      clEnumValN(::mlir::comm::TransportChoice::Mpi, "mpi",                    \
                 "commrt's MPI backend")
#define COMMOPT_SPARSE_SELECT_VALUES                                           \
  clEnumValN(::mlir::comm::SparseSelectChoice::Threshold, "threshold",         \
             "entries above a sampled threshold"),                             \
      clEnumValN(::mlir::comm::SparseSelectChoice::Topk, "topk",               \
                 "the exact top k")

#define COMMOPT_SHARD_STAGE_VALUES                                             \
  clEnumValN(::mlir::comm::ShardStage::Grad, "grad",                           \
             "gradients and optimizer state (ZeRO-2)"),                        \
      clEnumValN(::mlir::comm::ShardStage::Full, "full",                       \
                 "parameters too (ZeRO-3, FSDP)")

// The parsers of the enums above, for llvm::cl and MLIR's pass options.
#define COMMOPT_CHOICE_PARSER(Enum)                                            \
  template <>                                                                  \
  class llvm::cl::parser<mlir::comm::Enum>                                     \
      : public mlir::comm::ChoiceParser<mlir::comm::Enum> {                    \
  public:                                                                      \
    using ChoiceParser::ChoiceParser;                                          \
  };
COMMOPT_CHOICE_PARSER(FusionPolicy)
COMMOPT_CHOICE_PARSER(WirePrecision)
COMMOPT_CHOICE_PARSER(EstimateMode)
COMMOPT_CHOICE_PARSER(ReportFormat)
COMMOPT_CHOICE_PARSER(SparseExchangeChoice)
COMMOPT_CHOICE_PARSER(SparseSelectChoice)
COMMOPT_CHOICE_PARSER(RowsExchangeChoice)
COMMOPT_CHOICE_PARSER(AlgorithmChoice)
COMMOPT_CHOICE_PARSER(TransportChoice)
COMMOPT_CHOICE_PARSER(ShardStage)
#undef COMMOPT_CHOICE_PARSER

#endif // COMMDIALECT_PASSOPTIONTYPES_H
