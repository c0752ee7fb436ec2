//===- Validation.cpp - Checks of the entry points' arguments -------------===//

#include "Validation.h"
#include "WireFormat.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace commrt;

namespace {

/// The most digests COMMRT_CHECKS_FIRST_OF_EACH remembers; it forgets them
/// all when full, as every rank of a correct program does at the same call.
constexpr size_t kMaxCheckedCollectives = 1 << 16;

/// The digests of arguments that ranks compare: FNV-1a, begun at
/// kDigestStart, each value mixed in by mixIntoDigest.
constexpr uint64_t kDigestStart = 14695981039346656037ull;
void mixIntoDigest(uint64_t &digest, uint64_t value) {
  digest = (digest ^ value) * 1099511628211ull;
}

/// A digest of the names and values of `arguments`.
uint64_t digestOf(const std::vector<SharedArgument> &arguments) {
  uint64_t hash = kDigestStart;
  for (const SharedArgument &argument : arguments) {
    for (const char *c = argument.name; *c; ++c)
      mixIntoDigest(hash, static_cast<unsigned char>(*c));
    mixIntoDigest(hash, static_cast<uint64_t>(argument.value));
  }
  return hash;
}

/// Fails unless `buffer` and `count` describe a buffer.
commrt_status checkBuffer(const void *buffer, int64_t count) {
  if (count < 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "count ", count, " is negative");
  if (!buffer && count > 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "buffer is null but count is ",
                count);
  return COMMRT_SUCCESS;
}

/// Fails unless `dtype` is a commrt_dtype.
commrt_status checkDtype(int32_t dtype) {
  return checkEnum("dtype", dtype, "commrt_dtype", COMMRT_F32, COMMRT_BF16);
}

/// Fails unless `reduce` is a commrt_reduce.
commrt_status checkReduce(int32_t reduce) {
  return checkEnum("reduce", reduce, "commrt_reduce", COMMRT_SUM, COMMRT_MIN);
}

/// Fails unless `prescale` is a finite nonzero number.
commrt_status checkPrescale(float prescale) {
  if (!std::isfinite(prescale) || prescale == 0.0f)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "prescale ", prescale,
                " is not a finite nonzero number");
  return COMMRT_SUCCESS;
}

/// Fails unless `wire` is COMMRT_WIRE_NONE or a 16-bit commrt_dtype
/// narrower than the (valid) `dtype`.
commrt_status checkWire(int32_t wire, int32_t dtype) {
  static const char *const names[] = {"f32", "f64", "f16", "bf16"};
  if (wire == COMMRT_WIRE_NONE)
    return COMMRT_SUCCESS;
  if (wire != COMMRT_F16 && wire != COMMRT_BF16)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "wire ", wire,
                " is not COMMRT_WIRE_NONE (-1), COMMRT_F16 (2) or "
                "COMMRT_BF16 (3)");
  if (elementSize(static_cast<commrt_dtype>(wire)) >=
      elementSize(static_cast<commrt_dtype>(dtype)))
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "wire ", wire, " (", names[wire],
                ") is not narrower than dtype ", dtype, " (", names[dtype],
                "); COMMRT_WIRE_NONE (-1) sends the dtype itself");
  return COMMRT_SUCCESS;
}

/// Fails unless `channel` is one of the `channels` channels.
commrt_status checkChannel(int32_t channel, int channels) {
  if (channel < 0 || channel >= channels)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "channel ", channel,
                " is out of range (expected 0..", channels - 1,
                "; COMMRT_CHANNELS sets the number of channels)");
  return COMMRT_SUCCESS;
}

/// Fails unless `root` is a rank of `comm`.
commrt_status checkRoot(int32_t root, MPI_Comm comm) {
  int size;
  MPI_Comm_size(comm, &size);
  if (root < 0 || root >= size)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "root ", root,
                " is out of range (expected 0..", size - 1, ")");
  return COMMRT_SUCCESS;
}

/// Fails when `handle`, where a start stores its handle, is null.
commrt_status checkHandlePointer(const int64_t *handle) {
  if (!handle)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "handle is null");
  return COMMRT_SUCCESS;
}

/// Validates the arguments of a sparse allreduce (see commrt.h).
commrt_status checkSparse(const float *grad, const float *residual,
                          int64_t count, double density, int32_t select,
                          int32_t exchange, int32_t reduce,
                          int64_t chunkElements) {
  if (count < 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "count ", count, " is negative");
  if (!grad && count > 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "grad is null but count is ",
                count);
  COMMRT_TRY(checkEnum("select", select, "commrt_select", COMMRT_SELECT_TOPK,
                       COMMRT_SELECT_ROWS));
  // The lossless rows exchange keeps no residual.
  const bool lossless = select == COMMRT_SELECT_ROWS;
  if (!residual && count > 0 && !lossless)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "residual is null but count is ",
                count);
  if (count > 0 && !lossless && grad < residual + count &&
      residual < grad + count)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "grad and residual overlap");
  if (!(density > 0.0 && density <= 1.0))
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "density ", density,
                " is not in (0, 1]");
  COMMRT_TRY(checkEnum("exchange", exchange, "commrt_exchange",
                       COMMRT_EXCHANGE_ALLGATHER, COMMRT_EXCHANGE_CHUNK));
  if (reduce != COMMRT_SUM && reduce != COMMRT_AVG)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "reduce ", reduce,
                " is not COMMRT_SUM (0) or COMMRT_AVG (1)");
  if ((select == COMMRT_SELECT_CHUNK) != (exchange == COMMRT_EXCHANGE_CHUNK))
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "select ", select,
                " does not go with exchange ", exchange,
                ": chunk selection (2) goes with the chunk exchange (2) and "
                "only with it");
  if ((select == COMMRT_SELECT_CHUNK || lossless) && chunkElements <= 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "chunk_elements ", chunkElements,
                " is not positive");
  if (lossless && count % chunkElements != 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "count ", count,
                " is not a whole number of rows of chunk_elements (",
                chunkElements, ")");
  return COMMRT_SUCCESS;
}

/// The most elements a fused allreduce takes: their bytes fit an int64_t.
constexpr int64_t kMaxElements = INT64_MAX / 8;

/// Validates the arguments of a fused allreduce and fills `plan` with its
/// nonempty buffers, and `digest` with a digest of `counts`.
commrt_status makeFusedPlan(void *const *buffers, const int64_t *counts,
                            int32_t nbuffers, int32_t dtype, int32_t reduce,
                            int32_t wire, float prescale, Plan &plan,
                            int64_t &digest) {
  if (nbuffers < 1)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "nbuffers ", nbuffers,
                " is less than 1");
  if (!buffers)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "buffers is null");
  if (!counts)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "counts is null");
  uint64_t hash = kDigestStart;
  for (int32_t i = 0; i < nbuffers; ++i) {
    int64_t count = counts[i];
    if (count < 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "counts[", i, "] ", count,
                  " is negative");
    if (!buffers[i] && count > 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "buffers[", i,
                  "] is null but counts[", i, "] is ", count);
    if (count > kMaxElements - plan.total)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "counts add up to more than ",
                  kMaxElements, " elements");
    plan.total += count;
    mixIntoDigest(hash, static_cast<uint64_t>(count));
    if (count > 0) {
      plan.buffers.push_back(buffers[i]);
      plan.counts.push_back(count);
    }
  }
  digest = static_cast<int64_t>(hash);
  COMMRT_TRY(checkDtype(dtype));
  COMMRT_TRY(checkWire(wire, dtype));
  COMMRT_TRY(checkReduce(reduce));
  COMMRT_TRY(checkPrescale(prescale));
  plan.dtype = static_cast<commrt_dtype>(dtype);
  plan.reduce = static_cast<commrt_reduce>(reduce);
  plan.wire = wire;
  plan.prescale = prescale;
  return COMMRT_SUCCESS;
}

/// The arguments of a fused allreduce that all ranks must pass alike.
std::vector<SharedArgument> fusedArguments(int32_t nbuffers, const Plan &plan,
                                           int64_t digest, int32_t dtype,
                                           int32_t reduce, int32_t wire,
                                           float prescale) {
  return {{"nbuffers", nbuffers},
          {"total count", plan.total},
          {"counts", digest, SharedArgument::Show::Nothing},
          {"dtype", dtype},
          {"wire", wire},
          {"reduce", reduce},
          {"prescale", floatBits(prescale), SharedArgument::Show::FloatValues}};
}

} // namespace

commrt_status commrt::checkTypedBuffer(const void *buffer, int64_t count,
                                       int32_t dtype) {
  COMMRT_TRY(checkBuffer(buffer, count));
  return checkDtype(dtype);
}

int commrt::checksFromEnvironment() {
  const char *value = std::getenv("COMMRT_CHECK");
  if (!value || std::strcmp(value, "first") == 0)
    return COMMRT_CHECKS_FIRST_OF_EACH;
  if (std::strcmp(value, "0") == 0)
    return COMMRT_CHECKS_OFF;
  if (std::strcmp(value, "1") == 0)
    return COMMRT_CHECKS_EVERY_CALL;
  return -1;
}

commrt_status commrt::backendFromEnvironment(commrt_backend &backend) {
  const char *name = std::getenv("COMMRT_BACKEND");
  if (!name || std::strcmp(name, "auto") == 0)
    return COMMRT_SUCCESS;
  if (std::strcmp(name, "mpi") == 0)
    backend = COMMRT_BACKEND_MPI;
  else if (std::strcmp(name, "nccl") == 0)
    backend = COMMRT_BACKEND_NCCL;
  else
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_BACKEND=", name,
                " is not one of mpi, nccl, auto");
  return COMMRT_SUCCESS;
}

commrt_status commrt::channelsFromEnvironment(int &channels) {
  channels = COMMRT_DEFAULT_CHANNELS;
  const char *text = std::getenv("COMMRT_CHANNELS");
  if (!text)
    return COMMRT_SUCCESS;
  char *end;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > COMMRT_MAX_CHANNELS)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_CHANNELS=", text,
                " is not a number in 1..", COMMRT_MAX_CHANNELS);
  channels = static_cast<int>(value);
  return COMMRT_SUCCESS;
}

commrt_status commrt::allreduceFromEnvironment(AllreduceConfig &config) {
  config = AllreduceConfig();
  if (const char *name = std::getenv("COMMRT_ALLREDUCE")) {
    if (std::strcmp(name, "auto") == 0)
      config.algorithm = AllreduceAlgorithm::Auto;
    else if (std::strcmp(name, "mpi") == 0)
      config.algorithm = AllreduceAlgorithm::Mpi;
    else if (std::strcmp(name, "ring") == 0)
      config.algorithm = AllreduceAlgorithm::Ring;
    else if (std::strcmp(name, "hierarchical") == 0)
      config.algorithm = AllreduceAlgorithm::Hierarchical;
    else
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_ALLREDUCE=", name,
                  " is not one of auto, mpi, ring, hierarchical");
  }
  if (const char *text = std::getenv("COMMRT_RING_MIN_BYTES")) {
    char *end;
    errno = 0;
    long long value = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE || value < 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_RING_MIN_BYTES=", text,
                  " is not a number of bytes (0 or more)");
    config.ringMinBytes = value;
  }
  if (const char *text = std::getenv("COMMRT_RANKS_PER_NODE")) {
    char *end;
    errno = 0;
    long long value = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE || value < 1 ||
        value > INT_MAX)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "COMMRT_RANKS_PER_NODE=", text,
                  " is not a number of ranks (1 or more)");
    config.ranksPerNode = value;
  }
  return COMMRT_SUCCESS;
}

commrt_status commrt::nonNegativeFromEnvironment(const char *name,
                                                 double &value,
                                                 const char *expected) {
  const char *text = std::getenv(name);
  if (!text)
    return COMMRT_SUCCESS;
  char *end;
  double read = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(read) || read < 0.0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, name, "=", text, " is not ",
                expected);
  value = read;
  return COMMRT_SUCCESS;
}

commrt_status commrt::settingsFromEnvironment(int checks, int &channels,
                                              AllreduceConfig &allreduce) {
  COMMRT_TRY(channelsFromEnvironment(channels));
  COMMRT_TRY(allreduceFromEnvironment(allreduce));
  if (checks < 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT,
                "COMMRT_CHECK=", std::getenv("COMMRT_CHECK"),
                " is not one of 0, 1, first");
  return COMMRT_SUCCESS;
}

commrt_status
commrt::agreeAlways(MPI_Comm comm, ConsistencyChecks &checks,
                    commrt_status localStatus,
                    const std::vector<SharedArgument> &arguments) {
  // One MAX-allreduce of [invalid rank or -1, values..., ~values...]: the
  // maximum of ~v is ~min(v), and ~ cannot overflow.
  const int n = static_cast<int>(arguments.size());
  std::vector<int64_t> values(1 + 2 * n);
  int rank;
  MPI_Comm_rank(comm, &rank);
  values[0] = localStatus == COMMRT_SUCCESS ? -1 : rank;
  for (int i = 0; i < n; ++i) {
    values[1 + i] = arguments[i].value;
    values[1 + n + i] = ~arguments[i].value;
  }
  ++checks.run;
  if (int error = MPI_Allreduce(MPI_IN_PLACE, values.data(), 1 + 2 * n,
                                MPI_INT64_T, MPI_MAX, comm))
    return failMpi("MPI_Allreduce (consistency check)", error);
  if (localStatus != COMMRT_SUCCESS)
    return localStatus;
  if (values[0] >= 0)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, "rank ", values[0],
                " passed an invalid argument");
  for (int i = 0; i < n; ++i) {
    int64_t max = values[1 + i], min = ~values[1 + n + i];
    if (min == max)
      continue;
    const char *name = arguments[i].name;
    switch (arguments[i].show) {
    case SharedArgument::Show::Range:
      return fail(COMMRT_ERROR_MISMATCH, "ranks disagree on ", name, " (min ",
                  min, ", max ", max, ")");
    case SharedArgument::Show::FloatValues:
      return fail(COMMRT_ERROR_MISMATCH, "ranks disagree on ", name, " (",
                  floatFromBits(static_cast<uint32_t>(min)), " and ",
                  floatFromBits(static_cast<uint32_t>(max)), ")");
    case SharedArgument::Show::Nothing:
      return fail(COMMRT_ERROR_MISMATCH, "ranks disagree on ", name);
    }
  }
  return COMMRT_SUCCESS;
}

commrt_status commrt::agree(MPI_Comm comm, ConsistencyChecks &checks,
                            commrt_status localStatus,
                            const std::vector<SharedArgument> &arguments) {
  switch (checks.mode) {
  case COMMRT_CHECKS_EVERY_CALL:
    return agreeAlways(comm, checks, localStatus, arguments);
  case COMMRT_CHECKS_FIRST_OF_EACH: {
    uint64_t digest = digestOf(arguments);
    if (checks.checked.count(digest))
      return localStatus;
    commrt_status status = agreeAlways(comm, checks, localStatus, arguments);
    if (status == COMMRT_SUCCESS) {
      if (checks.checked.size() == kMaxCheckedCollectives)
        checks.checked.clear();
      checks.checked.insert(digest);
    }
    return status;
  }
  default:
    return localStatus;
  }
}

commrt_status commrt::checkEnum(const char *name, int32_t value,
                                const char *type, int32_t first, int32_t last) {
  if (value < first || value > last)
    return fail(COMMRT_ERROR_INVALID_ARGUMENT, name, " ", value, " is not a ",
                type, " (expected ", first, "..", last, ")");
  return COMMRT_SUCCESS;
}

Checked commrt::checkAllreduce(const void *buffer, int64_t count, int32_t dtype,
                               int32_t reduce) {
  auto check = [&]() -> commrt_status {
    COMMRT_TRY(checkTypedBuffer(buffer, count, dtype));
    return checkReduce(reduce);
  };
  return {check(), {{"count", count}, {"dtype", dtype}, {"reduce", reduce}}};
}

Checked commrt::checkAllreduceWire(const float *buffer, int64_t count,
                                   int32_t wire, int32_t reduce,
                                   float prescale) {
  auto check = [&]() -> commrt_status {
    COMMRT_TRY(checkBuffer(buffer, count));
    COMMRT_TRY(checkEnum("wire", wire, "16-bit commrt_dtype", COMMRT_F16,
                         COMMRT_BF16));
    COMMRT_TRY(checkReduce(reduce));
    return checkPrescale(prescale);
  };
  return {check(), {{"count", count}, {"wire", wire}, {"reduce", reduce}}};
}

Checked commrt::checkBroadcast(const void *buffer, int64_t count, int32_t dtype,
                               int32_t root, MPI_Comm comm) {
  auto check = [&]() -> commrt_status {
    COMMRT_TRY(checkTypedBuffer(buffer, count, dtype));
    return checkRoot(root, comm);
  };
  return {check(), {{"count", count}, {"dtype", dtype}, {"root", root}}};
}

Checked commrt::checkAllgather(const void *send, const void *recv,
                               const int64_t *counts, int32_t dtype,
                               MPI_Comm comm, int64_t &total) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  total = 0;
  // A digest of the counts: every rank must pass the same.
  uint64_t hash = kDigestStart;
  auto check = [&]() -> commrt_status {
    if (!counts)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "counts is null");
    for (int r = 0; r < size; ++r) {
      if (counts[r] < 0)
        return fail(COMMRT_ERROR_INVALID_ARGUMENT, "counts[", r, "] ",
                    counts[r], " is negative");
      if (counts[r] > kMaxElements - total)
        return fail(COMMRT_ERROR_INVALID_ARGUMENT,
                    "counts add up to more than ", kMaxElements, " elements");
      total += counts[r];
      mixIntoDigest(hash, static_cast<uint64_t>(counts[r]));
    }
    if (!send && counts[rank] > 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT,
                  "send is null but this rank's count, counts[", rank, "], is ",
                  counts[rank]);
    if (!recv && total > 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT,
                  "recv is null but the counts add up to ", total);
    return checkDtype(dtype);
  };
  commrt_status status = check();
  return {
      status,
      {{"total count", total},
       {"counts", static_cast<int64_t>(hash), SharedArgument::Show::Nothing},
       {"dtype", dtype}}};
}

Checked commrt::checkFusedAllreduce(void *const *buffers, const int64_t *counts,
                                    int32_t nbuffers, int32_t dtype,
                                    int32_t reduce, int32_t wire,
                                    float prescale, Plan &plan) {
  int64_t digest = 0;
  commrt_status status = makeFusedPlan(buffers, counts, nbuffers, dtype, reduce,
                                       wire, prescale, plan, digest);
  return {status, fusedArguments(nbuffers, plan, digest, dtype, reduce, wire,
                                 prescale)};
}

Checked commrt::checkShardedCollective(PlanKind kind, void *const *buffers,
                                       const int64_t *counts, int32_t nbuffers,
                                       const void *shard, int64_t shardCount,
                                       int ranks, int32_t dtype, int32_t reduce,
                                       int32_t wire, float prescale,
                                       Plan &plan) {
  Checked checked = checkFusedAllreduce(buffers, counts, nbuffers, dtype,
                                        reduce, wire, prescale, plan);
  plan.kind = kind;
  plan.shard = const_cast<void *>(shard);
  const int64_t needed = (plan.total + ranks - 1) / ranks;
  if (checked.status == COMMRT_SUCCESS && shardCount != needed)
    checked.status =
        fail(COMMRT_ERROR_INVALID_ARGUMENT, "shard_count is ", shardCount,
             ", but a flat tensor of ", plan.total, " elements on ", ranks,
             " ranks has shards of ", needed);
  else if (checked.status == COMMRT_SUCCESS && plan.total > 0 && !shard)
    checked.status =
        fail(COMMRT_ERROR_INVALID_ARGUMENT,
             "shard is null, and the buffers hold ", plan.total, " elements");
  // A reduce-scatter and an all-gather of the same buffers are different
  // collectives.
  checked.shared.push_back({"collective", static_cast<int64_t>(kind)});
  return checked;
}

Checked commrt::checkMixedAllreduce(void *const *buffers, const int64_t *counts,
                                    const int32_t *narrowed, int32_t nbuffers,
                                    int32_t dtype, int32_t reduce, int32_t wire,
                                    float prescale, Plan &plan) {
  int64_t digest = 0;
  // A digest of the flags, so that ranks agree on which buffers narrow.
  uint64_t flagsHash = kDigestStart;
  auto check = [&]() -> commrt_status {
    COMMRT_TRY(makeFusedPlan(buffers, counts, nbuffers, dtype, reduce, wire,
                             prescale, plan, digest));
    if (wire == COMMRT_WIRE_NONE)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT,
                  "wire is COMMRT_WIRE_NONE (-1): a mixed allreduce narrows "
                  "some buffers to COMMRT_F16 or COMMRT_BF16");
    if (!narrowed)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "narrowed is null");
    std::vector<uint8_t> flags;
    for (int32_t i = 0; i < nbuffers; ++i) {
      if (narrowed[i] != 0 && narrowed[i] != 1)
        return fail(COMMRT_ERROR_INVALID_ARGUMENT, "narrowed[", i, "] ",
                    narrowed[i], " is not 0 or 1");
      mixIntoDigest(flagsHash, static_cast<uint64_t>(narrowed[i]));
      if (counts[i] > 0)
        flags.push_back(static_cast<uint8_t>(narrowed[i]));
    }
    bool anyNarrow = std::count(flags.begin(), flags.end(), 1) > 0;
    bool anyFull = std::count(flags.begin(), flags.end(), 0) > 0;
    if (anyNarrow && anyFull) {
      plan.narrowed = std::move(flags);
    } else if (!anyNarrow) {
      // Nothing narrows: the data travels as it is, unscaled.
      plan.wire = COMMRT_WIRE_NONE;
      plan.prescale = 1.0f;
    }
    return COMMRT_SUCCESS;
  };
  commrt_status status = check();
  std::vector<SharedArgument> shared =
      fusedArguments(nbuffers, plan, digest, dtype, reduce, wire, prescale);
  shared.push_back({"narrowed", static_cast<int64_t>(flagsHash),
                    SharedArgument::Show::Nothing});
  return {status, std::move(shared)};
}

Checked commrt::checkSparseAllreduce(const float *grad, const float *residual,
                                     int64_t count, double density,
                                     int32_t select, int32_t exchange,
                                     int32_t reduce, int64_t chunkElements) {
  int64_t densityBits;
  std::memcpy(&densityBits, &density, sizeof densityBits);
  return {checkSparse(grad, residual, count, density, select, exchange, reduce,
                      chunkElements),
          {{"count", count},
           {"density", densityBits, SharedArgument::Show::Nothing},
           {"select", select},
           {"exchange", exchange},
           {"reduce", reduce},
           {"chunk_elements", chunkElements}}};
}

Checked commrt::checkRowsAllreduce(const int64_t *indices, const float *values,
                                   int64_t count, int64_t rows,
                                   int64_t rowElements, int32_t exchange,
                                   int32_t reduce, const commrt_rows *result) {
  auto check = [&]() -> commrt_status {
    if (!result)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "result is null");
    if (count < 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "count ", count,
                  " is negative");
    if (rows <= 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "rows ", rows,
                  " is not positive");
    if (rowElements <= 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "row_elements ", rowElements,
                  " is not positive");
    if (count > 0 && (!indices || !values))
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, indices ? "values" : "indices",
                  " is null but count is ", count);
    if (exchange != COMMRT_EXCHANGE_ALLGATHER &&
        exchange != COMMRT_EXCHANGE_HASH)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "exchange ", exchange,
                  " is not COMMRT_EXCHANGE_ALLGATHER (0) or "
                  "COMMRT_EXCHANGE_HASH (1)");
    if (reduce != COMMRT_SUM && reduce != COMMRT_AVG)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "reduce ", reduce,
                  " is not COMMRT_SUM (0) or COMMRT_AVG (1)");
    for (int64_t i = 0; i < count; ++i)
      if (indices[i] < 0 || indices[i] >= rows)
        return fail(COMMRT_ERROR_INVALID_ARGUMENT, "indices[", i,
                    "] = ", indices[i], " is not a row of the ", rows);
    return COMMRT_SUCCESS;
  };
  return {check(),
          {{"rows", rows},
           {"row_elements", rowElements},
           {"exchange", exchange},
           {"reduce", reduce}}};
}

Checked commrt::checkStart(Checked checked, int32_t channel, int channels,
                           const int64_t *handle) {
  auto check = [&]() -> commrt_status {
    COMMRT_TRY(checked.status);
    COMMRT_TRY(checkChannel(channel, channels));
    return checkHandlePointer(handle);
  };
  checked.status = check();
  checked.shared.push_back({"channel", channel});
  return checked;
}

Checked commrt::checkGroupSplit(int64_t id, int32_t color,
                                const int32_t *group) {
  auto check = [&]() -> commrt_status {
    if (color < 0)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "color ", color,
                  " is negative");
    if (!group)
      return fail(COMMRT_ERROR_INVALID_ARGUMENT, "group is null");
    return COMMRT_SUCCESS;
  };
  return {check(), {{"split id", id}}};
}

Checked commrt::inGroup(Checked checked, int32_t group) {
  checked.shared.push_back({"group", group});
  return checked;
}

Checked commrt::withAlgorithm(Checked checked, int32_t algorithm, Plan &plan) {
  if (checked.status == COMMRT_SUCCESS) {
    int32_t kind = algorithm & ((1 << COMMRT_TRANSPORT_SHIFT) - 1);
    int32_t transport = algorithm >> COMMRT_TRANSPORT_SHIFT;
    if (kind > COMMRT_ALGORITHM_HIERARCHICAL ||
        transport < COMMRT_BACKEND_AUTO || transport > COMMRT_BACKEND_NCCL) {
      checked.status =
          fail(COMMRT_ERROR_INVALID_ARGUMENT, "algorithm ", algorithm,
               " is not a commrt_algorithm (0..3)",
               transport > 0 ? ", with or without a commrt_backend (0..2) "
                               "shifted left by COMMRT_TRANSPORT_SHIFT as its "
                               "transport"
                             : "");
    } else {
      plan.algorithm = static_cast<commrt_algorithm>(kind);
      plan.transport = static_cast<commrt_backend>(transport);
    }
  }
  checked.shared.push_back({"algorithm", algorithm});
  return checked;
}

Plan commrt::singlePlan(void *buffer, int64_t count, int32_t dtype,
                        int32_t reduce, int32_t wire, float prescale) {
  Plan plan;
  if (count > 0) {
    plan.buffers.push_back(buffer);
    plan.counts.push_back(count);
  }
  plan.total = count;
  plan.dtype = static_cast<commrt_dtype>(dtype);
  plan.reduce = static_cast<commrt_reduce>(reduce);
  plan.wire = wire;
  plan.prescale = prescale;
  return plan;
}
