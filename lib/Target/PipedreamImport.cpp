//===- PipedreamImport.cpp - Import of pipedream's layer profiles ---------===//
//
// Translates the `graph.txt` that pipedream's profiler writes into a
// training-step skeleton. The file lists one node per layer, then the edges
// (node lines are wrapped here; they are one line each in the file):
//
//   node2 -- Conv2d(3, 64, kernel_size=(11, 11)) --
//       forward_compute_time=22.316, backward_compute_time=6.405,
//       activation_size=198246400.000, parameter_size=93184.000
//   ...
//   <tab>node1 -- node2
//
// Times are in milliseconds and sizes in bytes. A description may span
// several lines (a module's multi-line repr); `activation_size` may be a list
// (`[a; b]`) and is checked but not used; a trailing ` -- stage_id=<n>` is
// ignored. A profile is one connected graph: a file cut short (nodes
// without their edges) is an error, not a step in the wrong order.
//
//===----------------------------------------------------------------------===//

#include "CommDialect/Target/Import.h"

#include "TrainStepBuilder.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <functional>
#include <numeric>
#include <queue>

using namespace mlir;
using namespace mlir::comm;

/// The separator between the parts of node and edge lines.
static constexpr StringLiteral kSeparator = " -- ";

/// Whether `text` is a node id, `node<digits>`.
static bool isNodeId(StringRef text) {
  return text.consume_front("node") && !text.empty() &&
         llvm::all_of(text, llvm::isDigit);
}

/// Whether `text` is an edge line: indented, then `<id> -- <id>`.
static bool isEdgeLine(StringRef text) {
  if (text.empty() || !llvm::isSpace(text.front()))
    return false;
  auto [from, to] = text.trim().split(kSeparator);
  return isNodeId(from) && isNodeId(to);
}

/// Whether `text` starts a node: `<id> -- ...` from its first column.
static bool isNodeLine(StringRef text) {
  size_t idEnd = text.find(kSeparator);
  return idEnd != StringRef::npos && isNodeId(text.take_front(idEnd));
}

/// The model's name, taken from the input file's: "resnet50" for both
/// ".../resnet50.graph.txt" and pipedream's own ".../resnet50/graph.txt".
static StringRef getModelName(StringRef bufferName) {
  StringRef name = llvm::sys::path::filename(bufferName).split('.').first;
  if (name == "graph")
    name = llvm::sys::path::filename(llvm::sys::path::parent_path(bufferName));
  return name.empty() || name.starts_with("<") ? "unknown" : name;
}

namespace {
/// A line of the input and its 1-based number.
struct SourceLine {
  StringRef text;
  unsigned number;
};

/// A node of the graph: a layer or an input of the model.
struct Node {
  StringRef id;
  std::string description;
  double forwardMs = 0.0;
  double backwardMs = 0.0;
  int64_t parameterBytes = 0;
  /// The line the node starts on.
  SourceLine line;

  /// Inputs (data loading) have no place in the compute of a step.
  bool isInput() const { return StringRef(description).starts_with("Input"); }
};

/// An edge as written, `from -- to`, resolved once all nodes are known.
struct EdgeLine {
  StringRef from;
  StringRef to;
  SourceLine line;
};

/// Reads a graph.txt line by line and builds the module.
class PipedreamImporter {
public:
  PipedreamImporter(llvm::SourceMgr &sourceMgr, MLIRContext *context);

  /// Runs the import; returns null after emitting an error.
  OwningOpRef<ModuleOp> import();

private:
  /// Splits the input into node records and edge lines.
  LogicalResult parseLines();
  /// Reads one node from its lines (one, or more for a long description).
  LogicalResult parseNode(ArrayRef<SourceLine> record);
  /// Reads the `name=value, ...` fields that start at `fields` in `line`.
  LogicalResult parseFields(SourceLine line, StringRef fields, Node &node);
  /// Parses `text`, the value of field `name`, as a finite number.
  LogicalResult parseNumber(SourceLine line, StringRef name, StringRef text,
                            double &number);
  /// Resolves the edges and orders the nodes topologically, ties broken by
  /// their order in the file.
  LogicalResult sortNodes(SmallVectorImpl<unsigned> &order);
  /// Reports a cycle among the nodes that could not be ordered, those whose
  /// `inDegree` (counting only edges from other such nodes) is not zero.
  /// Fails unless the graph is one piece: with two or more nodes, every
  /// node has an edge and every node is linked to the first.
  LogicalResult checkConnected(ArrayRef<std::pair<unsigned, unsigned>> edges);
  LogicalResult reportCycle(ArrayRef<std::pair<unsigned, unsigned>> edges,
                            ArrayRef<unsigned> inDegree);
  /// Builds the module, visiting nodes forward in `order`.
  OwningOpRef<ModuleOp> build(ArrayRef<unsigned> order);

  /// The location of `pos`, a position in `line`.
  FileLineColLoc getLoc(SourceLine line, const char *pos) const;
  /// The location of the start of `line`.
  FileLineColLoc getLoc(SourceLine line) const {
    return getLoc(line, line.text.data());
  }

  MLIRContext *context;
  StringRef text;
  StringAttr fileName;
  std::vector<Node> nodes;
  llvm::StringMap<unsigned> nodeIndices;
  std::vector<EdgeLine> edgeLines;
};
} // namespace

PipedreamImporter::PipedreamImporter(llvm::SourceMgr &sourceMgr,
                                     MLIRContext *context)
    : context(context) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  text = buffer->getBuffer();
  fileName = StringAttr::get(context, buffer->getBufferIdentifier());
}

FileLineColLoc PipedreamImporter::getLoc(SourceLine line,
                                         const char *pos) const {
  return FileLineColLoc::get(fileName, line.number,
                             static_cast<unsigned>(pos - line.text.data()) + 1);
}

LogicalResult PipedreamImporter::parseLines() {
  // The lines of the node being read, and whether its fields were seen.
  SmallVector<SourceLine> record;
  bool recordComplete = false;
  auto finishRecord = [&]() -> LogicalResult {
    if (record.empty())
      return success();
    LogicalResult result = parseNode(record);
    record.clear();
    return result;
  };

  unsigned number = 0;
  for (StringRef rest = text; !rest.empty();) {
    StringRef lineText;
    std::tie(lineText, rest) = rest.split('\n');
    SourceLine line{lineText.rtrim(), ++number};
    if (line.text.trim().empty())
      continue;

    if (isEdgeLine(line.text)) {
      if (failed(finishRecord()))
        return failure();
      auto [from, to] = line.text.trim().split(kSeparator);
      edgeLines.push_back({from, to, line});
    } else if (isNodeLine(line.text)) {
      if (failed(finishRecord()))
        return failure();
      record.push_back(line);
      recordComplete = line.text.split(kSeparator).second.contains(kSeparator);
    } else if (!record.empty() && !recordComplete) {
      // The description goes on over several lines.
      record.push_back(line);
      recordComplete = line.text.contains(kSeparator);
    } else {
      return emitError(getLoc(line, line.text.ltrim().data()))
             << "expected a node ('<id> -- <description> -- <fields>') or an "
                "edge ('<id> -- <id>')";
    }
  }
  if (failed(finishRecord()))
    return failure();
  if (nodes.empty())
    return emitError(FileLineColLoc::get(fileName, 1, 1))
           << "the graph has no nodes";
  return success();
}

LogicalResult PipedreamImporter::parseNode(ArrayRef<SourceLine> record) {
  SourceLine first = record.front();
  SourceLine last = record.back();
  auto [id, afterId] = first.text.split(kSeparator);
  // The fields follow the description after the next separator, which is
  // on the node's last line.
  StringRef lastText = record.size() == 1 ? afterId : last.text;
  size_t fieldsStart = lastText.find(kSeparator);
  if (fieldsStart == StringRef::npos)
    return emitError(getLoc(last, lastText.end()))
           << "expected ' -- forward_compute_time=..., "
              "backward_compute_time=..., activation_size=..., "
              "parameter_size=...' after the description of '"
           << id << "'";

  SmallVector<StringRef> pieces;
  if (record.size() == 1) {
    pieces.push_back(afterId.take_front(fieldsStart));
  } else {
    pieces.push_back(afterId);
    for (SourceLine line : record.drop_front().drop_back())
      pieces.push_back(line.text);
    pieces.push_back(last.text.take_front(fieldsStart));
  }
  Node node;
  node.id = id;
  node.line = first;
  node.description = llvm::join(
      llvm::map_range(pieces, [](StringRef piece) { return piece.trim(); }),
      " ");

  // A trailing " -- stage_id=<n>" is a partitioning decision, not a profile.
  StringRef fields = lastText.drop_front(fieldsStart + kSeparator.size())
                         .split(kSeparator)
                         .first;
  if (failed(parseFields(last, fields, node)))
    return failure();

  auto [it, inserted] = nodeIndices.try_emplace(id, nodes.size());
  if (!inserted) {
    InFlightDiagnostic diag = emitError(getLoc(first))
                              << "duplicate node '" << id << "'";
    diag.attachNote(getLoc(nodes[it->second].line)) << "first defined here";
    return diag;
  }
  nodes.push_back(std::move(node));
  return success();
}

LogicalResult PipedreamImporter::parseNumber(SourceLine line, StringRef name,
                                             StringRef text, double &number) {
  if (!llvm::to_float(text, number) || !std::isfinite(number))
    return emitError(getLoc(line, text.data()))
           << "bad number '" << text << "' for " << name;
  return success();
}

LogicalResult PipedreamImporter::parseFields(SourceLine line, StringRef fields,
                                             Node &node) {
  StringRef forwardText, backwardText, activationText, parameterText;
  SmallVector<StringRef> items;
  fields.split(items, ',');
  for (StringRef item : items) {
    item = item.trim();
    auto [name, value] = item.split('=');
    if (name.size() == item.size())
      return emitError(getLoc(line, item.data()))
             << "expected '<field>=<value>', got '" << item << "'";
    StringRef *slot = llvm::StringSwitch<StringRef *>(name)
                          .Case("forward_compute_time", &forwardText)
                          .Case("backward_compute_time", &backwardText)
                          .Case("activation_size", &activationText)
                          .Case("parameter_size", &parameterText)
                          .Default(nullptr);
    // Fields unknown here are not used.
    if (!slot)
      continue;
    if (slot->data())
      return emitError(getLoc(line, item.data())) << "duplicate field " << name;
    *slot = value.trim();
  }

  for (auto [name, value] :
       {std::make_pair("forward_compute_time", forwardText),
        std::make_pair("backward_compute_time", backwardText),
        std::make_pair("activation_size", activationText),
        std::make_pair("parameter_size", parameterText)})
    if (!value.data())
      return emitError(getLoc(line, fields.data()))
             << "missing field " << name << " in '" << node.id << "'";

  for (auto [name, value, ms] :
       {std::make_tuple("forward_compute_time", forwardText, &node.forwardMs),
        std::make_tuple("backward_compute_time", backwardText,
                        &node.backwardMs)}) {
    if (failed(parseNumber(line, name, value, *ms)))
      return failure();
    if (*ms < 0.0)
      return emitError(getLoc(line, value.data()))
             << "negative " << name << " '" << value << "'";
  }

  // Unused, but a bad value means a bad file: one size, or one per output
  // as "[a; b; ...]", each finite and non-negative.
  StringRef activations = activationText;
  bool isList = activations.consume_front("[");
  if (isList && !activations.consume_back("]"))
    return emitError(getLoc(line, activationText.data()))
           << "activation_size '" << activationText
           << "' is neither a number nor a list '[a; b; ...]'";
  SmallVector<StringRef> sizes;
  activations.split(sizes, ';');
  for (StringRef size : sizes) {
    double activationBytes = 0.0;
    if (failed(
            parseNumber(line, "activation_size", size.trim(), activationBytes)))
      return failure();
    if (activationBytes < 0.0)
      return emitError(getLoc(line, size.data()))
             << "negative activation_size '" << size.trim() << "'";
  }

  double bytes = 0.0;
  if (failed(parseNumber(line, "parameter_size", parameterText, bytes)))
    return failure();
  // The bound keeps the conversion to int64_t below well-defined.
  if (bytes < 0.0 || bytes != std::floor(bytes) || bytes >= 0x1p62)
    return emitError(getLoc(line, parameterText.data()))
           << "parameter_size '" << parameterText
           << "' is not a whole, non-negative number of bytes";
  node.parameterBytes = static_cast<int64_t>(bytes);
  if (node.parameterBytes % 4 != 0)
    return emitError(getLoc(line, parameterText.data()))
           << "parameter_size '" << parameterText
           << "' is not a multiple of 4 bytes (one f32)";
  return success();
}

LogicalResult PipedreamImporter::sortNodes(SmallVectorImpl<unsigned> &order) {
  std::vector<std::pair<unsigned, unsigned>> edges;
  edges.reserve(edgeLines.size());
  for (const EdgeLine &edge : edgeLines) {
    auto from = nodeIndices.find(edge.from);
    auto to = nodeIndices.find(edge.to);
    for (auto [id, it] :
         {std::make_pair(edge.from, from), std::make_pair(edge.to, to)})
      if (it == nodeIndices.end())
        return emitError(getLoc(edge.line, id.data()))
               << "unknown node '" << id << "' in edge";
    edges.emplace_back(from->second, to->second);
  }
  if (failed(checkConnected(edges)))
    return failure();

  // Kahn's algorithm; the ready node that comes first in the file goes first.
  std::vector<SmallVector<unsigned, 2>> successors(nodes.size());
  std::vector<unsigned> inDegree(nodes.size(), 0);
  for (auto [from, to] : edges) {
    successors[from].push_back(to);
    ++inDegree[to];
  }
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<>> ready;
  for (unsigned node = 0, e = nodes.size(); node != e; ++node)
    if (inDegree[node] == 0)
      ready.push(node);
  order.reserve(nodes.size());
  while (!ready.empty()) {
    unsigned node = ready.top();
    ready.pop();
    order.push_back(node);
    for (unsigned next : successors[node])
      if (--inDegree[next] == 0)
        ready.push(next);
  }
  if (order.size() == nodes.size())
    return success();
  return reportCycle(edges, inDegree);
}

LogicalResult PipedreamImporter::checkConnected(
    ArrayRef<std::pair<unsigned, unsigned>> edges) {
  if (nodes.size() < 2)
    return success();
  // Union-find over the nodes, ignoring the edges' direction.
  std::vector<unsigned> parent(nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](unsigned node) {
    while (parent[node] != node)
      node = parent[node] = parent[parent[node]];
    return node;
  };
  std::vector<bool> hasEdge(nodes.size(), false);
  for (auto [from, to] : edges) {
    hasEdge[from] = hasEdge[to] = true;
    parent[find(from)] = find(to);
  }
  for (unsigned node = 0, e = nodes.size(); node != e; ++node) {
    if (!hasEdge[node])
      return emitError(getLoc(nodes[node].line))
             << "node '" << nodes[node].id << "' has no edges, in a graph of "
             << nodes.size()
             << " nodes: is the file cut short? A profile lists its edges "
                "after its nodes";
    if (find(node) != find(0))
      return emitError(getLoc(nodes[node].line))
             << "the graph is not connected: node '" << nodes[node].id
             << "' is not linked to '" << nodes[0].id
             << "' by any path of edges: is the file cut short?";
  }
  return success();
}

LogicalResult
PipedreamImporter::reportCycle(ArrayRef<std::pair<unsigned, unsigned>> edges,
                               ArrayRef<unsigned> inDegree) {
  // Every node left over has a predecessor that is left over too: walking
  // back from one of them along such edges must come round to a node seen
  // before.
  constexpr unsigned kNone = ~0u;
  auto isLeftOver = [&](unsigned node) { return inDegree[node] != 0; };
  std::vector<unsigned> incoming(nodes.size(), kNone);
  for (auto [edge, ends] : llvm::enumerate(edges))
    if (isLeftOver(ends.first) && isLeftOver(ends.second))
      incoming[ends.second] = edge;

  std::vector<unsigned> visitedAt(nodes.size(), kNone);
  SmallVector<unsigned> walk;
  unsigned node =
      llvm::find_if(inDegree, [](unsigned degree) { return degree != 0; }) -
      inDegree.begin();
  while (visitedAt[node] == kNone) {
    visitedAt[node] = walk.size();
    walk.push_back(incoming[node]);
    node = edges[incoming[node]].first;
  }
  // The edges walked since `node` was first seen form the cycle, backwards.
  ArrayRef<unsigned> cycle = ArrayRef(walk).drop_front(visitedAt[node]);
  unsigned lastEdge = *llvm::max_element(cycle, [&](unsigned a, unsigned b) {
    return edgeLines[a].line.number < edgeLines[b].line.number;
  });
  std::string path = nodes[node].id.str();
  for (unsigned edge : llvm::reverse(cycle))
    path += (kSeparator + nodes[edges[edge].second].id).str();
  const EdgeLine &closing = edgeLines[lastEdge];
  return emitError(getLoc(closing.line, closing.from.data()))
         << "the edges form a cycle: " << path;
}

OwningOpRef<ModuleOp> PipedreamImporter::build(ArrayRef<unsigned> order) {
  TrainStepBuilder step(context, FileLineColLoc::get(fileName, 1, 1),
                        getModelName(fileName.getValue()), "pipedream");
  SmallVector<const Node *> layers;
  for (unsigned index : order)
    if (!nodes[index].isInput())
      layers.push_back(&nodes[index]);
  // Each layer's step name and location, made once for its forward and
  // backward steps.
  std::vector<std::string> names;
  SmallVector<Location> locations;
  names.reserve(layers.size());
  locations.reserve(layers.size());
  for (const Node *node : layers) {
    names.push_back((node->id + ": " + node->description).str());
    locations.push_back(getLoc(node->line));
  }

  for (auto [layer, node] : llvm::enumerate(layers))
    step.addForward(locations[layer], names[layer], node->forwardMs * 1000.0,
                    layer);

  Type f32 = Float32Type::get(context);
  for (int64_t layer = layers.size() - 1; layer >= 0; --layer) {
    const Node *node = layers[layer];
    SmallVector<GradientSpec, 1> gradients;
    if (node->parameterBytes > 0)
      gradients.push_back(
          {node->id, RankedTensorType::get({node->parameterBytes / 4}, f32)});
    step.addBackward(locations[layer], names[layer], node->backwardMs * 1000.0,
                     layer, gradients);
  }
  return step.finish();
}

OwningOpRef<ModuleOp> PipedreamImporter::import() {
  SmallVector<unsigned> order;
  if (failed(parseLines()) || failed(sortNodes(order)))
    return nullptr;
  return build(order);
}

OwningOpRef<ModuleOp> mlir::comm::importPipedream(llvm::SourceMgr &sourceMgr,
                                                  MLIRContext *context) {
  return PipedreamImporter(sourceMgr, context).import();
}
