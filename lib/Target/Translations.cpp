//===- Translations.cpp - Registration of commopt's translations ----------===//
//
// Registers the profile imports and the timeline and plan exports with the
// mlir-translate registry.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Translations.h"
#include "CommOpt/Support/ToolHelp.h"

#include "CommDialect/CommDialect.h"
#include "CommDialect/Target/Export.h"
#include "CommDialect/Target/Import.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using mlir::comm::printOptionHelp;

/// The dialects that imported training steps use.
static void registerImportDialects(DialectRegistry &registry) {
  registry.insert<comm::CommDialect, func::FuncDialect>();
}

/// The dialects of the training steps the exports read: comm, the upstream
/// ops whose cost they estimate with the roofline model, the globals that
/// hold sparse residuals, and the grids that process groups name.
static void registerExportDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, comm::CommDialect, func::FuncDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  ml_program::MLProgramDialect, shard::ShardDialect,
                  tensor::TensorDialect>();
}

namespace {
/// One of commopt's translations, for registration and --help.
struct TranslationInfo {
  StringRef name;
  StringRef description;
  /// Its command-line options.
  ArrayRef<StringRef> options;
};
} // namespace

static constexpr StringRef kTimelineOptions[] = {
    "timeline-cluster", "timeline-device", "timeline-mode"};
static constexpr StringRef kPlanOptions[] = {"plan-function"};
static constexpr StringRef kGradProfileOptions[] = {"grad-profile-device",
                                                    "grad-profile-json-values"};
static const TranslationInfo kImportGradProfile = {
    "import-grad-profile",
    "Import a commopt JSON gradient profile, version 1 (docs/GradProfile.md)",
    kGradProfileOptions};
static const TranslationInfo kImportPipedream = {
    "import-pipedream",
    "Import a graph.txt of pipedream's profiler (docs/PipedreamProfile.md)",
    {}};
static const TranslationInfo kExportTimeline = {
    "export-timeline",
    "Simulate each function's step and write it as Chrome trace event JSON "
    "(Perfetto, chrome://tracing)",
    kTimelineOptions};
static const TranslationInfo kExportPlan = {
    "export-plan",
    "Write a planned step (after comm-optimize with an estimate) as a JSON "
    "plan for commopt's training bridge (docs/Plan.md)",
    kPlanOptions};
static const TranslationInfo *const kTranslations[] = {
    &kImportGradProfile, &kImportPipedream, &kExportTimeline, &kExportPlan};

void mlir::comm::printCommOptTranslationHelp(raw_ostream &os) {
  size_t width = 0;
  for (const TranslationInfo *translation : kTranslations)
    width = std::max(width, translation->name.size());
  os << "commopt's translations (one per run; the full list of options "
        "follows):\n";
  for (const TranslationInfo *translation : kTranslations) {
    os << "  --" << llvm::left_justify(translation->name, width) << "  - "
       << translation->description << "\n";
    printOptionHelp(os, translation->options);
  }
  os << "\n";
}

void mlir::comm::registerCommOptTranslations() {
  static const bool registered = [] {
    static llvm::cl::opt<std::string> timelineCluster(
        "timeline-cluster",
        llvm::cl::desc("--export-timeline: cluster preset or description "
                       "file (default: the cluster recorded on the module, "
                       "else gradientflow-64)"),
        llvm::cl::init(TimelineExportOptions().cluster));
    static llvm::cl::opt<std::string> timelineDevice(
        "timeline-device",
        llvm::cl::desc("--export-timeline: device preset or description file, "
                       "for ops without a measured cost (default: v100)"),
        llvm::cl::init(TimelineExportOptions().device));
    static llvm::cl::opt<SimulationMode> timelineMode(
        "timeline-mode",
        llvm::cl::desc("--export-timeline: what to simulate (default: step)"),
        llvm::cl::values(
            clEnumValN(SimulationMode::Step, "step", "one step"),
            clEnumValN(SimulationMode::SteadyState, "steady",
                       "the measured iterations of the steady state")),
        llvm::cl::init(SimulationMode::Step));
    static llvm::cl::opt<std::string> gradProfileDevice(
        "grad-profile-device",
        llvm::cl::desc("--import-grad-profile: device preset or description "
                       "file; each layer's times become its roofline time "
                       "of the profile's FLOPs and bytes (default: the "
                       "measured times)"),
        llvm::cl::init(comm::GradProfileImportOptions().device));
    static llvm::cl::opt<bool> gradProfileJsonValues(
        "grad-profile-json-values",
        llvm::cl::desc("--import-grad-profile: read every layer through "
                       "llvm::json values, never directly from the text (for "
                       "tests of the direct reader) (default: false)"),
        llvm::cl::init(comm::GradProfileImportOptions().jsonValuesOnly),
        llvm::cl::Hidden);
    static llvm::cl::opt<std::string> planFunction(
        "plan-function",
        llvm::cl::desc("--export-plan: the step function (default: the one "
                       "function that holds collectives)"),
        llvm::cl::init(""));
    TranslateToMLIRRegistration importGradProfile(
        kImportGradProfile.name, kImportGradProfile.description,
        [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
          comm::GradProfileImportOptions options;
          options.device = gradProfileDevice;
          options.jsonValuesOnly = gradProfileJsonValues;
          return OwningOpRef<Operation *>(
              comm::importGradProfile(sourceMgr, context, options).release());
        },
        registerImportDialects);
    TranslateToMLIRRegistration importPipedream(
        kImportPipedream.name, kImportPipedream.description,
        [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
          return OwningOpRef<Operation *>(
              comm::importPipedream(sourceMgr, context).release());
        },
        registerImportDialects);
    TranslateFromMLIRRegistration exportTimeline(
        kExportTimeline.name, kExportTimeline.description,
        [](ModuleOp module, raw_ostream &os) {
          TimelineExportOptions options;
          options.cluster = timelineCluster;
          options.device = timelineDevice;
          options.mode = timelineMode;
          return comm::exportTimeline(module, os, options);
        },
        registerExportDialects);
    TranslateFromMLIRRegistration exportPlan(
        kExportPlan.name, kExportPlan.description,
        [](ModuleOp module, raw_ostream &os) {
          PlanExportOptions options;
          options.function = planFunction;
          return comm::exportPlan(module, os, options);
        },
        registerExportDialects);
    return true;
  }();
  (void)registered;
}
