//===- Sparse.cpp - Sparse allreduce with residual over MPI ---------------===//
//
// Residual gradient compression as commrt_sparse_allreduce describes it:
// RedSync's top-k and threshold selection with an allgather of pairs, Zen's
// hash-balanced exchange, GradientFlow's chunked selection and exchange; and
// the lossless exchange of the nonzero rows of a gradient that is sparse by
// nature (an embedding's), by allgather or by Zen's exchange.
//
//===----------------------------------------------------------------------===//

#include "Sparse.h"
#include "Backend.h"
#include "MpiWait.h"
#include "Selection.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <vector>

using namespace commrt;

namespace {

/// The selected entries of one rank, or the reduced entries of an owner, as
/// (index, value) pairs in two arrays: `width` values per index (1 for an
/// entry, the row length for a row).
struct Pairs {
  explicit Pairs(int64_t width) : width(width) {}
  int64_t width;
  std::vector<int64_t> indices;
  std::vector<float> values;

  int64_t size() const { return static_cast<int64_t>(indices.size()); }
  void resize(int64_t pairs) {
    indices.resize(pairs);
    values.resize(pairs * width);
  }
  /// Empties the pairs, keeping their memory, for pairs of `rowWidth`.
  void clear(int64_t rowWidth) {
    width = rowWidth;
    indices.clear();
    values.clear();
  }
};

/// For each index below its size, the place of the index in a Pairs being
/// filled (addPairs), or -1. The table stays all -1 between uses: a use
/// (SlotUse) resets only the entries it set, so that an exchange of k rows
/// of a table of n costs O(k), not a pass over n.
class SlotTable {
public:
  /// The table, at least `indexCount` entries long.
  std::vector<int64_t> &atLeast(int64_t indexCount) {
    if (static_cast<int64_t>(slots.size()) < indexCount)
      slots.resize(indexCount, -1);
    return slots;
  }
  /// Resets the entries of `pairs`'s indices; frees a table longer than
  /// kKeptEntries instead, which the next use makes anew.
  void release(const Pairs &pairs) {
    if (static_cast<int64_t>(slots.size()) > kKeptEntries) {
      std::vector<int64_t>().swap(slots);
      return;
    }
    for (int64_t index : pairs.indices)
      slots[index] = -1;
  }

private:
  /// The longest table kept between uses (64 MiB): a table of rows is a
  /// few percent of its gradient, but one of single entries (top-k's hash
  /// exchange) is twice an f32 gradient, too much to hold for a step.
  static constexpr int64_t kKeptEntries = int64_t(1) << 23;
  std::vector<int64_t> slots;
};

/// The entries of a SlotTable that `pairs` sets, reset when it ends (on
/// every path out of a call, errors included).
class SlotUse {
public:
  SlotUse(SlotTable &table, int64_t indexCount, const Pairs &pairs)
      : table(table), slots(table.atLeast(indexCount)), pairs(pairs) {}
  ~SlotUse() { table.release(pairs); }
  SlotUse(const SlotUse &) = delete;
  SlotUse &operator=(const SlotUse &) = delete;
  std::vector<int64_t> &get() { return slots; }

private:
  SlotTable &table;
  std::vector<int64_t> &slots;
  const Pairs &pairs;
};

/// What an exchange keeps from one call to the next: the memory of its
/// buffers, so that a step's exchange writes into pages it has touched
/// before. Fresh buffers of a few MB each cost a page fault and a cleared
/// page per 4 KiB at every call (glibc maps them anew and returns them),
/// which profiles of the rows exchange showed as a large part of its CPU.
struct ExchangeBuffers {
  SlotTable slots;
  std::vector<char> sent, received;
  Pairs outgoing{1}, incoming{1}, reduced{1};
  /// The caller's own: its rank's pairs, all ranks' and their sums.
  Pairs local{1}, all{1}, summed{1};
};

/// A set of ExchangeBuffers for one exchange, taken from a pool that keeps
/// them from one call to the next whatever thread makes it (the Python
/// bridge runs each blocking call on a thread of its own); exchanges at
/// once on several threads (channels) take a set each. The sets keep the
/// largest call's sizes until the process ends.
class PooledBuffers {
public:
  PooledBuffers() {
    std::lock_guard<std::mutex> lock(pool().mutex);
    std::vector<std::unique_ptr<ExchangeBuffers>> &idle = pool().idle;
    if (idle.empty()) {
      buffers = std::make_unique<ExchangeBuffers>();
      return;
    }
    buffers = std::move(idle.back());
    idle.pop_back();
  }
  ~PooledBuffers() {
    std::lock_guard<std::mutex> lock(pool().mutex);
    pool().idle.push_back(std::move(buffers));
  }
  PooledBuffers(const PooledBuffers &) = delete;
  PooledBuffers &operator=(const PooledBuffers &) = delete;
  ExchangeBuffers &get() { return *buffers; }

private:
  struct Pool {
    std::mutex mutex;
    std::vector<std::unique_ptr<ExchangeBuffers>> idle;
  };
  /// Never destroyed: a channel thread may end an exchange while the
  /// process's statics are torn down.
  static Pool &pool() {
    static Pool *const instance = new Pool;
    return *instance;
  }
  std::unique_ptr<ExchangeBuffers> buffers;
};

/// Rows (pairs of `width` > 1 values) travel as records, an 8-byte index
/// followed by its row, one message per peer where entries need two (their
/// indices and values): MPI's type of one record, contiguous bytes, so that
/// counts stay counts of rows (ints for MPI). Frees what it made.
class RowRecords {
public:
  explicit RowRecords(int64_t width)
      : width(width), bytes(sizeof(int64_t) + width * sizeof(float)) {
    if (bytes <= INT_MAX &&
        MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &type) ==
            MPI_SUCCESS &&
        MPI_Type_commit(&type) == MPI_SUCCESS)
      made = true;
  }
  ~RowRecords() {
    if (made)
      MPI_Type_free(&type);
  }
  RowRecords(const RowRecords &) = delete;
  RowRecords &operator=(const RowRecords &) = delete;

  /// Fails where the type could not be made (a row longer than an int).
  commrt_status check() const {
    if (!made)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "rows of ", width,
                  " elements exceed what one MPI datatype describes");
    return COMMRT_SUCCESS;
  }
  MPI_Datatype get() const { return type; }

  /// `pairs`'s rows as records, in order, into `records`.
  void pack(const Pairs &pairs, std::vector<char> &records) const {
    records.resize(pairs.size() * bytes);
    for (int64_t i = 0; i < pairs.size(); ++i) {
      char *record = records.data() + i * bytes;
      std::memcpy(record, &pairs.indices[i], sizeof(int64_t));
      std::memcpy(record + sizeof(int64_t), pairs.values.data() + i * width,
                  width * sizeof(float));
    }
  }

  /// The `count` records at `records` into `pairs`.
  void unpack(const char *records, int64_t count, Pairs &pairs) const {
    pairs.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      const char *record = records + i * bytes;
      std::memcpy(&pairs.indices[i], record, sizeof(int64_t));
      std::memcpy(pairs.values.data() + i * width, record + sizeof(int64_t),
                  width * sizeof(float));
    }
  }

  const int64_t width;
  /// Bytes of one record.
  const int64_t bytes;

private:
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool made = false;
};

/// Fails on every rank alike when a count that MPI takes as an int, here
/// `total` (the same on every rank), is out of its range.
commrt_status checkIntCount(int64_t total, const char *what) {
  if (total > INT_MAX)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, what, " (", total,
                ") exceed the ", INT_MAX, " elements an MPI call takes");
  return COMMRT_SUCCESS;
}

/// The displacements of blocks of `counts` laid end to end, and their total.
int64_t displacements(const std::vector<int> &counts,
                      std::vector<int> &displs) {
  displs.assign(counts.size(), 0);
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    displs[i] = static_cast<int>(std::min<int64_t>(total, INT_MAX));
    total += counts[i];
  }
  return total;
}

/// Gathers every rank's `local` pairs into `all`, in rank order.
commrt_status allgatherPairs(ExchangeBuffers &buffers, const Pairs &local,
                             Pairs &all, MPI_Comm comm,
                             const TraceContext &trace) {
  int size;
  MPI_Comm_size(comm, &size);
  int64_t mine = local.size();
  // Counts in 64 bits, so that every rank sees the same total, in range or
  // not, and fails or goes on alike.
  std::vector<int64_t> wide(size);
  MPI_Request request;
  if (int error = MPI_Iallgather(&mine, 1, MPI_INT64_T, wide.data(), 1,
                                 MPI_INT64_T, comm, &request))
    return failMpi("MPI_Iallgather", error);
  COMMRT_TRY(waitFor(comm, request, "MPI_Iallgather"));
  int64_t total = 0;
  for (int64_t n : wide)
    total += n;
  COMMRT_TRY(checkIntCount(total, "the pairs of all ranks"));
  std::vector<int> counts(wide.begin(), wide.end()), displs;
  displacements(counts, displs);
  if (local.width > 1) {
    // Rows: one message of records.
    RowRecords records(local.width);
    COMMRT_TRY(records.check());
    std::vector<char> &sent = buffers.sent, &received = buffers.received;
    {
      TracePhase pack(trace, COMMRT_PHASE_EXCHANGE_PACK, size);
      pack.selected = mine;
      records.pack(local, sent);
    }
    received.resize(total * records.bytes);
    if (int error = MPI_Iallgatherv(
            sent.data(), static_cast<int>(mine), records.get(), received.data(),
            counts.data(), displs.data(), records.get(), comm, &request))
      return failMpi("MPI_Iallgatherv", error);
    COMMRT_TRY(waitFor(comm, request, "MPI_Iallgatherv"));
    TracePhase unpack(trace, COMMRT_PHASE_EXCHANGE_UNPACK, size);
    unpack.received = total;
    records.unpack(received.data(), total, all);
    return COMMRT_SUCCESS;
  }
  all.resize(total);
  // Indices and values travel at once.
  MPI_Request requests[2];
  if (int error =
          MPI_Iallgatherv(local.indices.data(), static_cast<int>(mine),
                          MPI_INT64_T, all.indices.data(), counts.data(),
                          displs.data(), MPI_INT64_T, comm, &requests[0]))
    return failMpi("MPI_Iallgatherv", error);
  if (int error =
          MPI_Iallgatherv(local.values.data(), static_cast<int>(mine),
                          MPI_FLOAT, all.values.data(), counts.data(),
                          displs.data(), MPI_FLOAT, comm, &requests[1])) {
    waitAll(comm, 1, requests, "MPI_Iallgatherv");
    return failMpi("MPI_Iallgatherv", error);
  }
  return waitAll(comm, 2, requests, "MPI_Iallgatherv");
}

/// Adds the `count` pairs (`indices`, `values`, `into.width` values each)
/// into `into`, in order: an index's first pair is appended, later ones are
/// added to it. `slot` maps each index (below its size) to its place in
/// `into`, -1 where it has none yet.
void addPairs(const int64_t *indices, const float *values, int64_t count,
              std::vector<int64_t> &slot, Pairs &into) {
  const int64_t width = into.width;
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = indices[i];
    const float *from = values + i * width;
    if (slot[index] < 0) {
      slot[index] = into.size();
      into.indices.push_back(index);
      into.values.insert(into.values.end(), from, from + width);
      continue;
    }
    float *to = into.values.data() + slot[index] * width;
    for (int64_t j = 0; j < width; ++j)
      to[j] += from[j];
  }
}

/// The last step of Zen's exchange: an owner adds up the `incoming` pairs it
/// received (indices below `indexCount`), in rank order as the allgather
/// exchange adds, and the owners' sums are gathered into `all`.
commrt_status reduceOwned(ExchangeBuffers &buffers, const Pairs &incoming,
                          int64_t indexCount, Pairs &all, MPI_Comm comm,
                          const TraceContext &trace, int size) {
  Pairs &reduced = buffers.reduced;
  reduced.clear(incoming.width);
  {
    TracePhase reduce(trace, COMMRT_PHASE_EXCHANGE_REDUCE, size);
    reduce.received = incoming.size();
    SlotUse slot(buffers.slots, indexCount, reduced);
    addPairs(incoming.indices.data(), incoming.values.data(), incoming.size(),
             slot.get(), reduced);
    reduce.selected = reduced.size();
  }
  return allgatherPairs(buffers, reduced, all, comm, trace);
}

/// Zen's exchange: `local`'s pairs (indices below `indexCount`) go to their
/// owners, which add them up, and the owners' sums are gathered into `all`
/// (each index at most once).
commrt_status hashExchange(ExchangeBuffers &buffers, const Pairs &local,
                           int64_t indexCount, Pairs &all, MPI_Comm comm,
                           const TraceContext &trace) {
  int size;
  MPI_Comm_size(comm, &size);
  const int64_t width = local.width;
  // What an owner receives is at most what all ranks send: when that fits
  // the int counts of MPI, so does everything after.
  int64_t total = local.size();
  MPI_Request request;
  if (int error = MPI_Iallreduce(MPI_IN_PLACE, &total, 1, MPI_INT64_T, MPI_SUM,
                                 comm, &request))
    return failMpi("MPI_Iallreduce", error);
  COMMRT_TRY(waitFor(comm, request, "MPI_Iallreduce"));
  COMMRT_TRY(checkIntCount(total, "the pairs of all ranks"));
  Pairs &outgoing = buffers.outgoing;
  outgoing.clear(width);
  outgoing.resize(local.size());
  std::vector<int64_t> bucketSizes;
  {
    TracePhase bucket(trace, COMMRT_PHASE_EXCHANGE_PACK, size);
    bucket.selected = local.size();
    bucketSizes = bucketByOwner(
        local.indices.data(), local.values.data(), local.size(), width, size,
        outgoing.indices.data(), outgoing.values.data());
  }
  std::vector<int> sendCounts(bucketSizes.begin(), bucketSizes.end());
  std::vector<int> sendDispls;
  displacements(sendCounts, sendDispls);

  std::vector<int> recvCounts(size);
  if (int error = MPI_Ialltoall(sendCounts.data(), 1, MPI_INT,
                                recvCounts.data(), 1, MPI_INT, comm, &request))
    return failMpi("MPI_Ialltoall", error);
  COMMRT_TRY(waitFor(comm, request, "MPI_Ialltoall"));
  std::vector<int> recvDispls;
  int64_t received = displacements(recvCounts, recvDispls);
  Pairs &incoming = buffers.incoming;
  incoming.clear(width);
  if (width > 1) {
    // Rows: one all-to-all of records.
    RowRecords records(width);
    COMMRT_TRY(records.check());
    std::vector<char> &sent = buffers.sent, &arrived = buffers.received;
    {
      TracePhase pack(trace, COMMRT_PHASE_EXCHANGE_PACK, size);
      pack.selected = outgoing.size();
      records.pack(outgoing, sent);
    }
    arrived.resize(received * records.bytes);
    if (int error =
            MPI_Ialltoallv(sent.data(), sendCounts.data(), sendDispls.data(),
                           records.get(), arrived.data(), recvCounts.data(),
                           recvDispls.data(), records.get(), comm, &request))
      return failMpi("MPI_Ialltoallv", error);
    COMMRT_TRY(waitFor(comm, request, "MPI_Ialltoallv"));
    {
      TracePhase unpack(trace, COMMRT_PHASE_EXCHANGE_UNPACK, size);
      unpack.received = received;
      records.unpack(arrived.data(), received, incoming);
    }
    return reduceOwned(buffers, incoming, indexCount, all, comm, trace, size);
  }
  incoming.resize(received);
  MPI_Request requests[2];
  if (int error = MPI_Ialltoallv(
          outgoing.indices.data(), sendCounts.data(), sendDispls.data(),
          MPI_INT64_T, incoming.indices.data(), recvCounts.data(),
          recvDispls.data(), MPI_INT64_T, comm, &requests[0]))
    return failMpi("MPI_Ialltoallv", error);
  if (int error = MPI_Ialltoallv(
          outgoing.values.data(), sendCounts.data(), sendDispls.data(),
          MPI_FLOAT, incoming.values.data(), recvCounts.data(),
          recvDispls.data(), MPI_FLOAT, comm, &requests[1])) {
    waitAll(comm, 1, requests, "MPI_Ialltoallv");
    return failMpi("MPI_Ialltoallv", error);
  }
  COMMRT_TRY(waitAll(comm, 2, requests, "MPI_Ialltoallv"));

  return reduceOwned(buffers, incoming, indexCount, all, comm, trace, size);
}

/// Divides the result by the `size` ranks where the reduction averages.
void average(const SparseArguments &args, int size) {
  if (args.reduce != COMMRT_AVG)
    return;
  for (int64_t i = 0; i < args.count; ++i)
    args.grad[i] /= static_cast<float>(size);
}

/// Exchanges the `local` pairs among the `size` ranks of `comm` as
/// `args.exchange` says, and writes their sums, dense, to `args.grad`
/// (`indexCount` indices of `local.width` elements), averaged where the
/// reduction says so.
commrt_status exchangePairs(const SparseArguments &args, const Pairs &local,
                            int64_t indexCount, MPI_Comm comm, int size) {
  PooledBuffers pooled;
  ExchangeBuffers &buffers = pooled.get();
  Pairs &all = buffers.all;
  all.clear(local.width);
  {
    TracePhase exchange(args.trace, COMMRT_PHASE_EXCHANGE, size);
    COMMRT_TRY(
        args.exchange == COMMRT_EXCHANGE_HASH
            ? hashExchange(buffers, local, indexCount, all, comm, args.trace)
            : allgatherPairs(buffers, local, all, comm, args.trace));
    exchange.selected = local.size();
    exchange.received = all.size();
  }

  TracePhase scatter(args.trace, COMMRT_PHASE_SCATTER, size);
  scatter.selected = local.size();
  scatter.received = all.size();
  std::fill(args.grad, args.grad + args.count, 0.0f);
  const int64_t width = local.width;
  for (int64_t i = 0; i < all.size(); ++i) {
    float *to = args.grad + all.indices[i] * width;
    const float *from = all.values.data() + i * width;
    for (int64_t j = 0; j < width; ++j)
      to[j] += from[j];
  }
  average(args, size);
  return COMMRT_SUCCESS;
}

/// Selects and exchanges pairs among the `size` ranks of `comm`; `acc` is in
/// `residual`.
commrt_status pairAllreduce(const SparseArguments &args, MPI_Comm comm,
                            int size) {
  const float *acc = args.residual;
  int64_t k = selectionSize(args.density, args.count);
  Pairs local(/*width=*/1);
  {
    TracePhase select(args.trace, COMMRT_PHASE_SELECT, size);
    local.indices = args.select == COMMRT_SELECT_TOPK
                        ? selectTopk(acc, args.count, k)
                        : selectThreshold(acc, args.count, k);
    for (int64_t index : local.indices)
      local.values.push_back(acc[index]);
    select.selected = local.size();
  }
  COMMRT_TRY(exchangePairs(args, local, args.count, comm, size));
  for (int64_t index : local.indices)
    args.residual[index] = 0.0f;
  return COMMRT_SUCCESS;
}

/// The lossless exchange of `grad`'s nonzero rows among the `size` ranks of
/// `comm`.
commrt_status denseRowsAllreduce(const SparseArguments &args, MPI_Comm comm,
                                 int size) {
  const int64_t width = args.chunkElements;
  const int64_t rows = args.count / width;
  Pairs local(width);
  {
    TracePhase select(args.trace, COMMRT_PHASE_SELECT, size);
    local.indices = nonzeroRows(args.grad, rows, width);
    local.values.reserve(local.indices.size() * width);
    for (int64_t row : local.indices)
      local.values.insert(local.values.end(), args.grad + row * width,
                          args.grad + (row + 1) * width);
    select.selected = local.size();
  }
  return exchangePairs(args, local, rows, comm, size);
}

/// GradientFlow's chunked selection and exchange among the `size` ranks of
/// `comm`; `acc` is in `residual`.
commrt_status chunkAllreduce(const SparseArguments &args, MPI_Comm comm,
                             int size) {
  const int64_t chunk = args.chunkElements;
  const int64_t chunks = (args.count - 1) / chunk + 1;
  COMMRT_TRY(checkIntCount(chunks, "the chunks"));
  auto chunkEnd = [&](int64_t c) {
    return std::min(args.count, (c + 1) * chunk);
  };

  std::vector<double> norms;
  {
    TracePhase select(args.trace, COMMRT_PHASE_SELECT, size);
    norms = chunkNorms(args.residual, args.count, chunk);
  }
  // From the norms' reduction to the chunks' allreduce, their packing
  // included.
  std::optional<TracePhase> exchange;
  exchange.emplace(args.trace, COMMRT_PHASE_EXCHANGE, size);
  int rank;
  MPI_Comm_rank(comm, &rank);
  std::vector<double> sums(rank == 0 ? chunks : 0);
  MPI_Request request;
  if (int error =
          MPI_Ireduce(norms.data(), sums.data(), static_cast<int>(chunks),
                      MPI_DOUBLE, MPI_SUM, 0, comm, &request))
    return failMpi("MPI_Ireduce", error);
  COMMRT_TRY(waitFor(comm, request, "MPI_Ireduce"));
  // Rank 0 decides, so that rounding differences cannot split the ranks.
  const int64_t picked = selectionSize(args.density, chunks);
  std::vector<int64_t> selected(picked);
  if (rank == 0)
    selected = pickChunks(sums, picked);
  if (int error = MPI_Ibcast(selected.data(), static_cast<int>(picked),
                             MPI_INT64_T, 0, comm, &request))
    return failMpi("MPI_Ibcast", error);
  COMMRT_TRY(waitFor(comm, request, "MPI_Ibcast"));

  int64_t packed = 0;
  for (int64_t c : selected)
    packed += chunkEnd(c) - c * chunk;
  COMMRT_TRY(checkIntCount(packed, "the selected chunks"));
  std::vector<float> buffer;
  buffer.reserve(packed);
  for (int64_t c : selected)
    buffer.insert(buffer.end(), args.residual + c * chunk,
                  args.residual + chunkEnd(c));
  if (int error =
          MPI_Iallreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(packed),
                         MPI_FLOAT, MPI_SUM, comm, &request))
    return failMpi("MPI_Iallreduce", error);
  COMMRT_TRY(waitFor(comm, request, "MPI_Iallreduce"));
  exchange->selected = packed;
  exchange.reset();

  TracePhase scatter(args.trace, COMMRT_PHASE_SCATTER, size);
  scatter.selected = packed;
  std::fill(args.grad, args.grad + args.count, 0.0f);
  const float *next = buffer.data();
  for (int64_t c : selected) {
    int64_t begin = c * chunk, end = chunkEnd(c);
    std::copy(next, next + (end - begin), args.grad + begin);
    std::fill(args.residual + begin, args.residual + end, 0.0f);
    next += end - begin;
  }
  average(args, size);
  return COMMRT_SUCCESS;
}

} // namespace

std::vector<int64_t> commrt::selectTopk(const float *acc, int64_t count,
                                        int64_t k) {
  // The radix passes of the device's top-k, then one pass to collect: a
  // few streaming passes, where a partial sort of the indices costs tens of
  // passes' time.
  const Cut cut = findTopkCut(acc, count, k);
  std::vector<int64_t> selected;
  selected.reserve(k);
  for (int64_t i = 0; i < count; ++i)
    if (cut.selects(magnitudeBits(acc[i]), i))
      selected.push_back(i);
  return selected;
}

std::vector<int64_t> commrt::selectThreshold(const float *acc, int64_t count,
                                             int64_t k) {
  const uint32_t threshold = findThreshold(acc, count, k);
  std::vector<int64_t> selected;
  selected.reserve(k + k / 8);
  for (int64_t i = 0; i < count; ++i)
    if (magnitudeBits(acc[i]) >= threshold)
      selected.push_back(i);
  return selected;
}

std::vector<int64_t> commrt::nonzeroRows(const float *grad, int64_t rows,
                                         int64_t rowElements) {
  std::vector<int64_t> touched;
  for (int64_t row = 0; row < rows; ++row) {
    const float *begin = grad + row * rowElements;
    // `x != 0` holds for NaN too: a NaN row is sent, as a dense allreduce
    // would carry it.
    if (std::any_of(begin, begin + rowElements,
                    [](float x) { return x != 0.0f; }))
      touched.push_back(row);
  }
  return touched;
}

std::vector<double> commrt::chunkNorms(const float *acc, int64_t count,
                                       int64_t chunkElements) {
  const int64_t chunks = (count - 1) / chunkElements + 1;
  std::vector<double> norms(chunks, 0.0);
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t end = std::min(count, (c + 1) * chunkElements);
    for (int64_t i = c * chunkElements; i < end; ++i)
      norms[c] += static_cast<double>(acc[i]) * acc[i];
  }
  return norms;
}

std::vector<int64_t> commrt::pickChunks(const std::vector<double> &norms,
                                        int64_t picked) {
  // A NaN norm (a NaN or infinity in some rank's chunk) counts as the
  // largest: the chunk is sent, so the NaN reaches every rank as a dense
  // allreduce would carry it, and leaves the residuals. Compared as it is,
  // NaN would break nth_element's ordering and pick arbitrary chunks.
  auto key = [&](int64_t chunk) {
    return std::isnan(norms[chunk]) ? std::numeric_limits<double>::infinity()
                                    : norms[chunk];
  };
  std::vector<int64_t> order(norms.size());
  std::iota(order.begin(), order.end(), 0);
  std::nth_element(order.begin(), order.begin() + (picked - 1), order.end(),
                   [&](int64_t a, int64_t b) {
                     double keyA = key(a), keyB = key(b);
                     return keyA > keyB || (keyA == keyB && a < b);
                   });
  order.resize(picked);
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<int64_t> commrt::bucketByOwner(const int64_t *indices,
                                           const float *values, int64_t count,
                                           int64_t width, int size,
                                           int64_t *outIndices,
                                           float *outValues) {
  std::vector<int> owners(count);
  std::vector<int64_t> bucketSizes(size, 0);
  for (int64_t i = 0; i < count; ++i)
    ++bucketSizes[owners[i] = hashOwner(indices[i], size)];
  std::vector<int64_t> next(size, 0);
  for (int r = 1; r < size; ++r)
    next[r] = next[r - 1] + bucketSizes[r - 1];
  for (int64_t i = 0; i < count; ++i) {
    int64_t slot = next[owners[i]]++;
    outIndices[slot] = indices[i];
    std::copy(values + i * width, values + (i + 1) * width,
              outValues + slot * width);
  }
  return bucketSizes;
}

commrt_status commrt::rowsAllreduce(const RowsArguments &args, MPI_Comm comm,
                                    ReducedRows &result) {
  int size;
  MPI_Comm_size(comm, &size);
  TracePhase call(args.trace, COMMRT_PHASE_CALL, size);
  const int64_t width = args.rowElements;
  PooledBuffers pooled;
  ExchangeBuffers &buffers = pooled.get();
  // Each row once, its duplicates added in the order given.
  Pairs &local = buffers.local;
  local.clear(width);
  {
    TracePhase select(args.trace, COMMRT_PHASE_SELECT, size);
    SlotUse slot(buffers.slots, args.rows, local);
    addPairs(args.indices, args.values, args.count, slot.get(), local);
    select.selected = local.size();
  }

  Pairs &all = buffers.all;
  all.clear(width);
  {
    TracePhase exchange(args.trace, COMMRT_PHASE_EXCHANGE, size);
    COMMRT_TRY(
        args.exchange == COMMRT_EXCHANGE_HASH
            ? hashExchange(buffers, local, args.rows, all, comm, args.trace)
            : allgatherPairs(buffers, local, all, comm, args.trace));
    exchange.selected = local.size();
    exchange.received = all.size();
  }

  TracePhase scatter(args.trace, COMMRT_PHASE_SCATTER, size);
  scatter.received = all.size();
  // Sum in rank order, then order the rows by index.
  Pairs &summed = buffers.summed;
  summed.clear(width);
  SlotUse slot(buffers.slots, args.rows, summed);
  addPairs(all.indices.data(), all.values.data(), all.size(), slot.get(),
           summed);
  result.indices = summed.indices;
  std::sort(result.indices.begin(), result.indices.end());
  result.values.resize(summed.values.size());
  const float divisor =
      args.reduce == COMMRT_AVG ? static_cast<float>(size) : 1.0f;
  for (size_t i = 0; i < result.indices.size(); ++i) {
    const float *from =
        summed.values.data() + slot.get()[result.indices[i]] * width;
    float *to = result.values.data() + i * width;
    for (int64_t j = 0; j < width; ++j)
      to[j] = args.reduce == COMMRT_AVG ? from[j] / divisor : from[j];
  }
  return COMMRT_SUCCESS;
}

commrt_status commrt::sparseAllreduce(const SparseArguments &args,
                                      MPI_Comm comm) {
  int size;
  MPI_Comm_size(comm, &size);
  TracePhase call(args.trace, COMMRT_PHASE_CALL, size);
  if (args.select == COMMRT_SELECT_ROWS)
    return denseRowsAllreduce(args, comm, size);
  {
    // acc = grad + residual, kept in the residual buffer until the result
    // is scattered.
    TracePhase accumulate(args.trace, COMMRT_PHASE_ACCUMULATE, size);
    for (int64_t i = 0; i < args.count; ++i)
      args.residual[i] += args.grad[i];
  }
  return args.select == COMMRT_SELECT_CHUNK ? chunkAllreduce(args, comm, size)
                                            : pairAllreduce(args, comm, size);
}
