//===- CollectiveCost.cpp - Alpha-beta costs of collectives ---------------===//
//
// The formulas of docs/CostModel.md, section "Collective costs". Notation in
// the comments: p ranks, q ranks per node, m = p / q nodes, n bytes; a and b
// are a level's alpha (us) and beta (us per byte), with suffix f for the flat
// level, i for intra-node and e for inter-node.
//
//===----------------------------------------------------------------------===//

#include "CommOpt/Analysis/CollectiveCost.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace mlir;
using namespace mlir::comm;

/// ceil(log2(p)) as a double.
static double ceilLog2(int64_t p) {
  return static_cast<double>(llvm::Log2_64_Ceil(static_cast<uint64_t>(p)));
}

/// One ring pass over `p` ranks of one level (the reduce-scatter or allgather
/// half of a ring allreduce): (p-1) a + (p-1)/p n b.
static CollectiveCost ringPass(const LinkLevel &level, int64_t p,
                               double bytes) {
  if (p <= 1)
    return {};
  double steps = static_cast<double>(p - 1);
  double sent = steps / static_cast<double>(p) * bytes;
  return {steps * level.alphaUs, sent * level.betaUsPerByte, sent};
}

/// Van de Geijn's broadcast over `p` ranks of one level (binomial scatter,
/// then ring allgather): (ceil(lg p) + p - 1) a + 2 (p-1)/p n b.
static CollectiveCost scatterAllgatherBroadcast(const LinkLevel &level,
                                                int64_t p, double bytes) {
  if (p <= 1)
    return {};
  double frac = static_cast<double>(p - 1) / static_cast<double>(p);
  return {(ceilLog2(p) + static_cast<double>(p - 1)) * level.alphaUs,
          2.0 * frac * bytes * level.betaUsPerByte, 2.0 * frac * bytes};
}

/// Reduce-scatter and allgather have the same cost form in every algorithm.
/// `cost` and what every collective costs within a step beyond its
/// messages (ClusterModel::collectiveOverheadUs), on more than one rank.
static CollectiveCost withOverhead(const ClusterModel &cluster,
                                   CollectiveCost cost) {
  if (cluster.ranks > 1)
    cost.latencyUs += cluster.collectiveOverheadUs;
  return cost;
}

/// `cost` and what staging the collective's device buffers through host
/// memory adds (ClusterModel::staging), on more than one rank: copying
/// `bytesIn` bytes to the host before it and `bytesOut` bytes back after
/// it.
static CollectiveCost withStagedCopies(const ClusterModel &cluster,
                                       CollectiveCost cost, double bytesIn,
                                       double bytesOut) {
  const DeviceStaging &staging = cluster.staging;
  if (staging.isDescribed() && cluster.ranks > 1)
    cost.latencyUs += staging.copyUs(bytesIn) + staging.copyUs(bytesOut);
  return cost;
}

/// What the runtime's staged ring (lib/Runtime/StagedRing.h) adds to the
/// link's `linkUs` for an allreduce of `bytes` bytes over `p` > 2 ranks.
/// One device queue runs, in order, the copies to the host of every
/// segment a rank sends from the device (the reduce-scatter's p - 1 and the
/// first all-gather step's: n bytes in all), the copies to the device of
/// every segment received (2 (p-1)/p n bytes) and a reduction per received
/// reduce-scatter piece: a copy or kernel per piece of each. The queue works
/// while the pieces travel, so only what it needs beyond the link counts,
/// and the first piece's copy out and the last one's copy in, which nothing
/// overlaps.
static double stagedRingExtraUs(const DeviceStaging &staging, int64_t p,
                                double bytes, double linkUs) {
  const double pd = static_cast<double>(p);
  const double segment = bytes / pd;
  const double pieces = std::max(1.0, std::ceil(segment / staging.pieceBytes));
  const double launches = pieces * (pd + 2.0 * (pd - 1.0) + (pd - 1.0));
  const double queueUs =
      (bytes + 2.0 * (pd - 1.0) / pd * bytes) / (staging.copyGBps * 1e3) +
      launches * staging.launchUs;
  const double firstAndLast =
      2.0 * staging.copyUs(std::min(segment, staging.pieceBytes));
  return std::max(0.0, queueUs - linkUs) + firstAndLast;
}

static CollectiveCost halfAllreduceCost(const ClusterModel &cluster,
                                        double totalBytes) {
  if (cluster.hasRegimes())
    return halfAllreduceCost(cluster.forBytes(totalBytes), totalBytes);
  int64_t p = cluster.ranks;
  if (p <= 1)
    return {};
  const LinkLevel &flat = cluster.flatLevel();
  switch (cluster.algorithm) {
  case AllreduceAlgorithm::Ring:
    // (p-1) af + (p-1)/p n bf.
    return ringPass(flat, p, totalBytes);
  case AllreduceAlgorithm::Tree: {
    // Recursive halving / doubling (Bruck for any p): ceil(lg p) af +
    // (p-1)/p n bf.
    double frac = static_cast<double>(p - 1) / static_cast<double>(p);
    return {ceilLog2(p) * flat.alphaUs, frac * totalBytes * flat.betaUsPerByte,
            frac * totalBytes};
  }
  case AllreduceAlgorithm::Hierarchical:
    // Inside each node over q ranks, then across the m nodes: the q rings
    // that cross nodes at once share the node's link, which carries
    // (m-1)/m n bytes in total.
    return ringPass(cluster.intra, cluster.ranksPerNode, totalBytes) +
           ringPass(cluster.inter, cluster.nodes(), totalBytes);
  }
  llvm_unreachable("unknown allreduce algorithm");
}

/// The messages of an allreduce (see allreduceCost), without the
/// per-collective overhead.
static CollectiveCost allreduceLinkCost(const ClusterModel &cluster,
                                        double bytes,
                                        AllreduceAlgorithm algorithm) {
  // A level's figures for this size (LinkLevel::regimes), as a calibration
  // sweep measured collectives of this size.
  if (cluster.hasRegimes())
    return allreduceLinkCost(cluster.forBytes(bytes), bytes, algorithm);
  int64_t p = cluster.ranks;
  if (p <= 1)
    return {};
  const LinkLevel &flat = cluster.flatLevel();
  switch (algorithm) {
  case AllreduceAlgorithm::Ring: {
    // Reduce-scatter + allgather: 2(p-1) af + 2(p-1)/p n bf.
    CollectiveCost pass = ringPass(flat, p, bytes);
    return pass + pass;
  }
  case AllreduceAlgorithm::Tree:
    // Pipelined (double) binary tree, reduce then broadcast:
    // 2 ceil(lg p) af + 2 n bf.
    return {2.0 * ceilLog2(p) * flat.alphaUs, 2.0 * bytes * flat.betaUsPerByte,
            2.0 * bytes};
  case AllreduceAlgorithm::Hierarchical: {
    // Intra-node reduce-scatter, inter-node ring allreduce of the shards,
    // intra-node allgather: 2(q-1) ai + 2(q-1)/q n bi + 2(m-1) ae +
    // 2(m-1)/m n be.
    CollectiveCost intra = ringPass(cluster.intra, cluster.ranksPerNode, bytes);
    CollectiveCost inter = ringPass(cluster.inter, cluster.nodes(), bytes);
    return intra + intra + inter + inter;
  }
  }
  llvm_unreachable("unknown allreduce algorithm");
}

CollectiveCost comm::allreduceCost(const ClusterModel &cluster, double bytes,
                                   AllreduceAlgorithm algorithm) {
  assert(bytes >= 0 && "negative message size");
  CollectiveCost cost =
      withOverhead(cluster, allreduceLinkCost(cluster, bytes, algorithm));
  // The runtime stages a ring allreduce over more than two ranks in pieces
  // that overlap the link, anything else whole.
  if (cluster.staging.isDescribed() && algorithm == AllreduceAlgorithm::Ring &&
      cluster.ranks > 2) {
    cost.latencyUs += stagedRingExtraUs(cluster.staging, cluster.ranks, bytes,
                                        cost.totalUs());
    return cost;
  }
  return withStagedCopies(cluster, cost, bytes, bytes);
}

CollectiveCost comm::allreduceCost(const ClusterModel &cluster, double bytes) {
  return allreduceCost(cluster, bytes, cluster.algorithm);
}

CollectiveCost comm::reduceScatterCost(const ClusterModel &cluster,
                                       double totalBytes) {
  assert(totalBytes >= 0 && "negative message size");
  // Staged: the buffers in, the shard out.
  return withStagedCopies(
      cluster, withOverhead(cluster, halfAllreduceCost(cluster, totalBytes)),
      totalBytes, totalBytes / static_cast<double>(cluster.ranks));
}

CollectiveCost comm::allgatherCost(const ClusterModel &cluster,
                                   double totalBytes) {
  assert(totalBytes >= 0 && "negative message size");
  // Staged: the shard in, the buffers out.
  return withStagedCopies(
      cluster, withOverhead(cluster, halfAllreduceCost(cluster, totalBytes)),
      totalBytes / static_cast<double>(cluster.ranks), totalBytes);
}

/// The bandwidth term of an exchange across `cluster`'s several nodes in
/// which every rank sends (p-1)/p of `bytesPerRank`, split evenly among the
/// others: each node's link carries its q ranks' shares for the other
/// nodes, q (m-1)/m n bytes, while the (q-1)/p n bytes per rank for local
/// peers go over the intra-node links at the same time.
static double crossNodeExchangeUs(const ClusterModel &cluster,
                                  double bytesPerRank) {
  double q = static_cast<double>(cluster.ranksPerNode);
  double md = static_cast<double>(cluster.nodes());
  double interUs =
      q * (md - 1) / md * bytesPerRank * cluster.inter.betaUsPerByte;
  double intraUs = (q - 1) / static_cast<double>(cluster.ranks) * bytesPerRank *
                   cluster.intra.betaUsPerByte;
  return std::max(interUs, intraUs);
}

/// The messages of an all-to-all (see allToAllCost), without the
/// per-collective overhead.
static CollectiveCost allToAllLinkCost(const ClusterModel &cluster,
                                       double bytesPerRank) {
  if (cluster.hasRegimes())
    return allToAllLinkCost(cluster.forBytes(bytesPerRank), bytesPerRank);
  int64_t p = cluster.ranks;
  if (p <= 1)
    return {};
  double pd = static_cast<double>(p);
  int64_t m = cluster.nodes();
  if (m == 1) {
    // Pairwise exchange: (p-1) ai + (p-1)/p n bi.
    return ringPass(cluster.intra, p, bytesPerRank);
  }
  // Pairwise exchange across nodes: (p-1) ae latency terms.
  return {(pd - 1) * cluster.inter.alphaUs,
          crossNodeExchangeUs(cluster, bytesPerRank),
          (pd - 1) / pd * bytesPerRank};
}

/// The messages of one of MPI's own nonblocking collectives as Open MPI's
/// libnbc runs the sparse exchanges' allgather(v) and all-to-all(v)
/// (CollectiveBackend::Mpi): every message of a rank is posted at once
/// (libnbc's linear schedules), so the messages pay a level's alpha once
/// and share the rank's link, a + (p-1)/p n b where the rank sends (p-1)/p
/// of `bytesPerRank` (an allgather of n bytes in all sends as much as an
/// all-to-all of n bytes a rank). Across nodes every rank of a node
/// receives its own copy of every block from other nodes, where a ring
/// forwards one copy inside the node (crossNodeExchangeUs).
static CollectiveCost postedAtOnceLinkCost(const ClusterModel &cluster,
                                           double bytesPerRank) {
  if (cluster.hasRegimes()) {
    // A size's fitted figures split a ring's time between its steps'
    // alpha and beta, and the split is loose: a regime may pair a large
    // alpha with a beta faster than the link, which, paid once, leaves the
    // bytes faster than the link carries them. The messages take the
    // time the size's figures give, but no less than the bytes take at
    // the link's rate (each level's own beta, above its regimes, where
    // alpha hardly counts). Adding that alpha to the link's time instead
    // priced the 4-rank exchanges of bench/embedding 7-14% over their
    // time measured alone.
    ClusterModel sized = cluster.forBytes(bytesPerRank);
    CollectiveCost fitted = postedAtOnceLinkCost(sized, bytesPerRank);
    ClusterModel linkRate = sized;
    linkRate.intra = LinkLevel{0.0, cluster.intra.betaUsPerByte, {}};
    linkRate.inter = LinkLevel{0.0, cluster.inter.betaUsPerByte, {}};
    CollectiveCost atLinkRate = postedAtOnceLinkCost(linkRate, bytesPerRank);
    return fitted.totalUs() >= atLinkRate.totalUs() ? fitted : atLinkRate;
  }
  int64_t p = cluster.ranks;
  if (p <= 1)
    return {};
  double pd = static_cast<double>(p);
  double sent = (pd - 1) / pd * bytesPerRank;
  if (cluster.nodes() == 1)
    return {cluster.intra.alphaUs, sent * cluster.intra.betaUsPerByte, sent};
  return {cluster.inter.alphaUs, crossNodeExchangeUs(cluster, bytesPerRank),
          sent};
}

/// The messages of libnbc's binomial allreduce (Open MPI 4.1 runs it below
/// 64 KiB, and for every in-place allreduce whatever its size): a
/// reduction up a binomial tree, then a broadcast down it, 2 ceil(lg p)
/// rounds of one message of all `bytes` each on the flat level.
static CollectiveCost binomialAllreduceLinkCost(const ClusterModel &cluster,
                                                double bytes) {
  if (cluster.hasRegimes())
    return binomialAllreduceLinkCost(cluster.forBytes(bytes), bytes);
  int64_t p = cluster.ranks;
  if (p <= 1)
    return {};
  const LinkLevel &flat = cluster.flatLevel();
  double rounds = 2.0 * ceilLog2(p);
  return {rounds * flat.alphaUs, rounds * bytes * flat.betaUsPerByte,
          rounds * bytes};
}

/// The messages of a broadcast (see broadcastCost), without the
/// per-collective overhead.
static CollectiveCost broadcastLinkCost(const ClusterModel &cluster,
                                        double bytes) {
  if (cluster.hasRegimes())
    return broadcastLinkCost(cluster.forBytes(bytes), bytes);
  int64_t p = cluster.ranks;
  if (p <= 1)
    return {};
  const LinkLevel &flat = cluster.flatLevel();
  switch (cluster.algorithm) {
  case AllreduceAlgorithm::Ring:
    return scatterAllgatherBroadcast(flat, p, bytes);
  case AllreduceAlgorithm::Tree:
    // Binomial tree: ceil(lg p) (af + n bf).
    return {ceilLog2(p) * flat.alphaUs,
            ceilLog2(p) * bytes * flat.betaUsPerByte, ceilLog2(p) * bytes};
  case AllreduceAlgorithm::Hierarchical:
    // Across the nodes' leaders, then inside every node.
    return scatterAllgatherBroadcast(cluster.inter, cluster.nodes(), bytes) +
           scatterAllgatherBroadcast(cluster.intra, cluster.ranksPerNode,
                                     bytes);
  }
  llvm_unreachable("unknown allreduce algorithm");
}

CollectiveCost comm::allToAllCost(const ClusterModel &cluster,
                                  double bytesPerRank) {
  assert(bytesPerRank >= 0 && "negative message size");
  return withOverhead(cluster, allToAllLinkCost(cluster, bytesPerRank));
}

CollectiveCost comm::broadcastCost(const ClusterModel &cluster, double bytes) {
  assert(bytes >= 0 && "negative message size");
  return withStagedCopies(
      cluster, withOverhead(cluster, broadcastLinkCost(cluster, bytes)), bytes,
      bytes);
}

SparseLocalWork comm::sparseLocalWork(SparseSelectScheme select,
                                      SparseExchangeScheme scheme,
                                      const SparseGradient &gradient,
                                      int64_t ranks, bool average) {
  SparseLocalWork work;
  if (ranks <= 1)
    return work;
  double n = static_cast<double>(gradient.denseElements);
  double v = static_cast<double>(gradient.valueBytes);
  double pairBytes = v + static_cast<double>(gradient.indexBytes);
  double k = gradient.density * n;
  work.elements = n;
  // acc = grad + residual: two reads and a write.
  work.accumulateBytes = 3 * n * v;
  // The result starts as zeros (one write); AVG divides it (a read and a
  // write).
  work.scatterBytes = n * v + (average ? 2 * n * v : 0);
  switch (select) {
  case SparseSelectScheme::Threshold:
    // At most three radix passes (digits of 11, 10 and 10 bits) to find the
    // threshold, one to collect the entries above it.
    work.selectBytes = 4 * n * v;
    break;
  case SparseSelectScheme::Topk:
    // The threshold's passes, one more to break ties by index, one to
    // collect.
    work.selectBytes = 5 * n * v;
    break;
  case SparseSelectScheme::Rows: {
    // No residual to add; one pass to find the touched rows, which are
    // copied into the pairs; the received rows are added into the zeroed
    // result (a read and a write each).
    double row =
        static_cast<double>(std::max<int64_t>(gradient.rowElements, 1));
    double rows = n / row;
    double touched = gradient.density * rows;
    // The rows all ranks touch together: what the hash exchange receives,
    // and the rows of every result.
    const double reduced =
        std::min(rows * gradient.reducedDensity.value_or(
                            unionDensity(gradient.density, ranks)),
                 rows);
    const double received = scheme == SparseExchangeScheme::Hash
                                ? reduced
                                : static_cast<double>(ranks) * touched;
    work.accumulateBytes = 0;
    work.entries = received * row;
    if (gradient.coo) {
      // Every pass of commrt_rows_allreduce (lib/Runtime/Sparse.cpp), in
      // accesses of a row: the rank's rows are added up into pairs (a read
      // and a write each) and packed into records (a read and a write). The
      // allgather unpacks the p k received rows (a read and a write) and
      // adds them into one pair per index: a read of each, a write of the
      // first of an index, a read and a write of every later one. The hash
      // exchange buckets the rank's rows by owner and packs them (two
      // copies); an owner unpacks the k rows it receives, on average, and
      // adds them up (a copy, a read and a write), packs its share of the
      // reduced rows and unpacks all of them (a copy each), and adds them
      // into pairs (one read and one write each: no index repeats). Both
      // copy the sums out in index order, AVG's division on the way (a read
      // and a write). Each pass that adds looks every row it adds up in an
      // index table and resets the entries it set after: 16 bytes a row
      // (the table stays all -1 between calls, so no pass over its n/w
      // entries).
      const double rowBytes = row * v;
      const double tableBytesPerRow = 16;
      work.elements = touched * row;
      work.selectBytes = touched * (2 * rowBytes + tableBytesPerRow);
      if (scheme == SparseExchangeScheme::Hash) {
        const double accesses = 2 * touched + 2 * touched + 2 * touched +
                                3 * touched +
                                2 * reduced / static_cast<double>(ranks) +
                                2 * reduced + 2 * reduced + 2 * reduced;
        work.scatterBytes =
            accesses * rowBytes + (touched + reduced) * tableBytesPerRow;
      } else {
        const double repeats = std::max(0.0, received - reduced);
        const double accesses = 2 * touched + 2 * received + received +
                                reduced + 2 * repeats + 2 * reduced;
        work.scatterBytes = accesses * rowBytes + received * tableBytesPerRow;
      }
      return work;
    }
    work.selectBytes = n * v;
    work.scatterBytes += touched * row * 2 * v + received * row * 3 * v;
    return work;
  }
  case SparseSelectScheme::Chunk: {
    // One pass for the chunk norms; the chosen chunks are packed, unpacked
    // into the result and cleared from the residual.
    int64_t chunks = llvm::divideCeil(
        gradient.denseElements, std::max<int64_t>(gradient.chunkElements, 1));
    double chosen = std::min(
        std::ceil(gradient.density * static_cast<double>(chunks) - 1e-9) *
            static_cast<double>(gradient.chunkElements),
        n);
    work.selectBytes = n * v;
    work.scatterBytes += 5 * chosen * v;
    work.entries = chosen;
    return work;
  }
  }
  // The sent entries are read as pairs (collected) and cleared from the
  // residual; the received pairs are added into the result (a read and a
  // write each).
  double received = static_cast<double>(ranks) * k;
  if (scheme == SparseExchangeScheme::Hash)
    received = std::min(n * gradient.reducedDensity.value_or(
                                unionDensity(gradient.density, ranks)),
                        n);
  work.scatterBytes += k * (pairBytes + v) + received * (pairBytes + 2 * v);
  work.entries = received;
  return work;
}

double comm::rowsTouchedAt(llvm::ArrayRef<double> rowsTouched, int64_t ranks) {
  assert(!rowsTouched.empty() && ranks >= 1 && "nothing to read");
  double at = std::log2(static_cast<double>(ranks));
  auto last = static_cast<double>(rowsTouched.size() - 1);
  if (at == last)
    return rowsTouched.back();
  if (at > last) {
    // Past the measured ranks, the others are taken as independent: each
    // further group of 2^last ranks misses a row with the same chance.
    double missed = 1.0 - rowsTouched.back();
    return 1.0 - std::pow(missed, std::exp2(at - last));
  }
  auto below = static_cast<size_t>(std::floor(at));
  double weight = at - static_cast<double>(below);
  return rowsTouched[below] +
         weight * (rowsTouched[below + 1] - rowsTouched[below]);
}

double comm::unionDensity(double density, int64_t ranks) {
  assert(density >= 0 && density <= 1 && "density out of [0, 1]");
  // 1 - (1 - d)^p, written to stay accurate for tiny d.
  return -std::expm1(static_cast<double>(ranks) * std::log1p(-density));
}

/// The exchange of sparseAllreduceCost, without staging.
static CollectiveCost sparseExchangeCost(const ClusterModel &cluster,
                                         SparseExchangeScheme scheme,
                                         const SparseGradient &gradient) {
  assert(gradient.denseElements >= 0 && "negative element count");
  assert(gradient.density > 0 && gradient.density <= 1 &&
         "density out of (0, 1]");
  assert(gradient.valueBytes > 0 && gradient.indexBytes >= 0 &&
         "bad element sizes");
  int64_t p = cluster.ranks;
  if (p <= 1)
    return {};
  // A pair carries one index and `rowElements` values: an entry of a lossy
  // selection, or a whole row of the lossless one.
  double row = static_cast<double>(std::max<int64_t>(gradient.rowElements, 1));
  double n = static_cast<double>(gradient.denseElements) / row;
  double valueBytes = static_cast<double>(gradient.valueBytes) * row;
  // Expected number of pairs each rank sends.
  double k = gradient.density * n;

  // Every collective the runtime issues (lib/Runtime/Sparse.cpp,
  // NcclSparse.cpp) is priced: counts travel as 8-byte integers, indices
  // and values as separate messages. They run back to back within one
  // runtime call, on the thread that runs it, so the call pays the
  // per-collective overhead (handing the work to a channel, the ranks'
  // arrival) once, not once per message. NCCL runs the allgathers as rings
  // and the all-to-alls pairwise; MPI posts all their messages at once
  // (postedAtOnceLinkCost) and reduces a count on a binomial tree.
  double pd = static_cast<double>(p);
  double indexBytes = static_cast<double>(gradient.indexBytes);
  constexpr double kCountBytes = 8;
  // Rows travel as records, an index and its row in one message; entries
  // as two messages, indices and values.
  const bool records = gradient.rowElements > 1;
  const bool mpi = cluster.backend == CollectiveBackend::Mpi;
  // Each of them is one collective (CollectiveCost::gatheredCollectives).
  auto one = [](CollectiveCost cost) {
    cost.gatheredCollectives = 1;
    return cost;
  };
  auto allgather = [&](double totalBytes) {
    return one(mpi ? postedAtOnceLinkCost(cluster, totalBytes)
                   : halfAllreduceCost(cluster, totalBytes));
  };
  auto allToAll = [&](double bytesPerRank) {
    return one(mpi ? postedAtOnceLinkCost(cluster, bytesPerRank)
                   : allToAllLinkCost(cluster, bytesPerRank));
  };
  // The ranks' pair counts, then all indices and all values: three
  // allgathers of `pairs` pairs in all (two for rows).
  auto allgatherPairs = [&](double pairs) {
    CollectiveCost counts = allgather(pd * kCountBytes);
    if (records)
      return counts + allgather(pairs * (indexBytes + valueBytes));
    return counts + allgather(pairs * indexBytes) +
           allgather(pairs * valueBytes);
  };
  // The pairs to their owners: two all-to-alls (one for rows).
  auto sendToOwners = [&] {
    if (records)
      return allToAll(k * (indexBytes + valueBytes));
    return allToAll(k * indexBytes) + allToAll(k * valueBytes);
  };

  switch (scheme) {
  case SparseExchangeScheme::Allgather:
    // Every rank receives every rank's k pairs.
    return withOverhead(cluster, allgatherPairs(pd * k));
  case SparseExchangeScheme::Hash: {
    // The total pair count (an allreduce of one count), the counts for each
    // owner (an all-to-all of one 4-byte count per peer), then each rank's k
    // pairs to the owners of their hash partitions (indices and values, two
    // all-to-alls); each owner then holds 1/p of the reduced result, n u
    // pairs in all, which every rank gathers.
    double u =
        gradient.reducedDensity.value_or(unionDensity(gradient.density, p));
    assert(u >= 0 && u <= 1 && "reduced density out of [0, 1]");
    CollectiveCost total =
        one(mpi ? binomialAllreduceLinkCost(cluster, kCountBytes)
                : allreduceLinkCost(cluster, kCountBytes, cluster.algorithm));
    return withOverhead(cluster, total + allToAll(pd * 4) + sendToOwners() +
                                     allgatherPairs(n * u));
  }
  case SparseExchangeScheme::Chunk: {
    assert(gradient.chunkElements > 0 && gradient.normBytes > 0 &&
           "bad chunk parameters");
    int64_t chunks =
        llvm::divideCeil(gradient.denseElements, gradient.chunkElements);
    // The C chunk norms are reduced to rank 0 (priced as the broadcast it
    // mirrors), which picks ceil(d C) chunks and broadcasts their indices;
    // the selected chunks' values are allreduced dense: by the cluster's
    // algorithm on NCCL, and on MPI by MPI_Iallreduce in place, which
    // Open MPI's libnbc always runs up and down a binomial tree. The
    // epsilon keeps a d C that is whole up to rounding from counting one
    // chunk more.
    double selected =
        std::ceil(gradient.density * static_cast<double>(chunks) - 1e-9);
    double selectedElements =
        std::min(selected * static_cast<double>(gradient.chunkElements), n);
    double valuesBytes = selectedElements * valueBytes;
    CollectiveCost values =
        one(mpi ? binomialAllreduceLinkCost(cluster, valuesBytes)
                : allreduceLinkCost(cluster, valuesBytes, cluster.algorithm));
    return withOverhead(
        cluster,
        one(broadcastLinkCost(cluster,
                              static_cast<double>(chunks) *
                                  static_cast<double>(gradient.normBytes))) +
            one(broadcastLinkCost(cluster, selected * kCountBytes)) + values);
  }
  }
  llvm_unreachable("unknown sparse exchange scheme");
}

CollectiveCost comm::sparseAllreduceCost(const ClusterModel &cluster,
                                         SparseExchangeScheme scheme,
                                         const SparseGradient &gradient) {
  // Staged: the gradient, and the residual of a lossy selection (a rows
  // gradient has none), in and out whole; a COO gradient's rows are host
  // memory (commrt_rows_allreduce).
  const double buffers = gradient.coo ? 0 : gradient.rowElements > 1 ? 1 : 2;
  const double bytes = buffers * static_cast<double>(gradient.denseElements) *
                       static_cast<double>(gradient.valueBytes);
  return withStagedCopies(
      cluster, sparseExchangeCost(cluster, scheme, gradient), bytes, bytes);
}
