//===- MpiTraceTest.cpp - commrt_trace_* across MPI ranks -----------------===//
//
// Run under mpirun with any number of ranks (CTest uses 2 and 4). Records a
// started sparse allreduce of each scheme, a blocking dense allreduce with
// an f16 wire, a started fused f32 one and the rows exchanges, and checks
// the phases each rank recorded: every phase there, tagged with its call's
// tag, in the order the runtime runs them, within its call, and counting
// what was sent and received as the exchange did; and an exchange's own
// passes (packing, unpacking, an owner's sum) within its exchange phase.
//
//===----------------------------------------------------------------------===//

#include "commrt/commrt.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <map>
#include <vector>

namespace {

/// The events read after a run, by tag and then phase (one of each).
using Recorded = std::map<int64_t, std::map<int32_t, commrt_trace_event>>;
/// A sparse exchange's own passes, by tag, in the order they ended.
using Passes = std::map<int64_t, std::vector<commrt_trace_event>>;

bool isExchangePass(int32_t phase) {
  return phase == COMMRT_PHASE_EXCHANGE_PACK ||
         phase == COMMRT_PHASE_EXCHANGE_UNPACK ||
         phase == COMMRT_PHASE_EXCHANGE_REDUCE;
}

Recorded readEvents(Passes *passes = nullptr) {
  std::vector<commrt_trace_event> events(256);
  int64_t count = 0;
  EXPECT_EQ(commrt_trace_read(events.data(), 256, &count), COMMRT_SUCCESS);
  Recorded recorded;
  for (int64_t i = 0; i < count; ++i) {
    const commrt_trace_event &event = events[i];
    if (isExchangePass(event.phase)) {
      if (passes)
        (*passes)[event.tag].push_back(event);
      continue;
    }
    EXPECT_TRUE(recorded[event.tag].emplace(event.phase, event).second)
        << "two events of phase " << event.phase << " with tag " << event.tag;
  }
  return recorded;
}

/// Expects `passes`, each of the phases `kinds` in order, to lie within
/// `call`'s exchange phase one after the other, with CPU times that add up
/// to at most the exchange's.
void expectPasses(const std::map<int32_t, commrt_trace_event> &call,
                  const std::vector<commrt_trace_event> &passes,
                  std::initializer_list<commrt_trace_phase> kinds) {
  ASSERT_EQ(call.count(COMMRT_PHASE_EXCHANGE), 1u);
  const commrt_trace_event &exchange = call.at(COMMRT_PHASE_EXCHANGE);
  ASSERT_EQ(passes.size(), kinds.size());
  double previousEnd = exchange.begin_us, cpuUs = 0;
  size_t index = 0;
  for (commrt_trace_phase kind : kinds) {
    const commrt_trace_event &pass = passes[index++];
    SCOPED_TRACE("pass " + std::to_string(index));
    EXPECT_EQ(pass.phase, kind);
    EXPECT_GE(pass.begin_us, previousEnd);
    EXPECT_LE(pass.begin_us, pass.end_us);
    EXPECT_LE(pass.end_us, exchange.end_us);
    EXPECT_GE(pass.cpu_us, 0.0);
    EXPECT_EQ(pass.channel, exchange.channel);
    EXPECT_EQ(pass.kind, exchange.kind);
    cpuUs += pass.cpu_us;
    previousEnd = pass.end_us;
  }
  EXPECT_LE(cpuUs, exchange.cpu_us);
}

/// Expects the phases of one call, `phases` in order, each within the call
/// and after the one before; each with the CPU time of the thread that ran
/// it, which for phases run one after the other on the call's thread add up
/// to at most the call's.
void expectOrdered(const std::map<int32_t, commrt_trace_event> &call,
                   std::initializer_list<commrt_trace_phase> phases) {
  ASSERT_EQ(call.count(COMMRT_PHASE_CALL), 1u);
  const commrt_trace_event &whole = call.at(COMMRT_PHASE_CALL);
  double previousEnd = whole.begin_us;
  double phasesCpuUs = 0;
  for (commrt_trace_phase phase : phases) {
    ASSERT_EQ(call.count(phase), 1u) << "no phase " << phase;
    const commrt_trace_event &event = call.at(phase);
    EXPECT_LE(event.begin_us, event.end_us);
    EXPECT_GE(event.begin_us, previousEnd) << "phase " << phase;
    EXPECT_LE(event.end_us, whole.end_us) << "phase " << phase;
    EXPECT_GE(event.cpu_us, 0.0) << "phase " << phase;
    phasesCpuUs += event.cpu_us;
    previousEnd = event.end_us;
  }
  EXPECT_LE(phasesCpuUs, whole.cpu_us);
  EXPECT_EQ(call.size(), phases.size() + 1 + call.count(COMMRT_PHASE_QUEUED));
  // No thread runs a collective while it waits for its channel.
  if (call.count(COMMRT_PHASE_QUEUED))
    EXPECT_EQ(call.at(COMMRT_PHASE_QUEUED).cpu_us, -1.0);
}

TEST(MpiTrace, PhasesOfEveryCollective) {
  int size = commrt_size();
  const int64_t count = 20000;
  std::vector<float> grad(count), residual(count, 0.0f);
  for (int64_t i = 0; i < count; ++i)
    grad[i] = static_cast<float>((i * 7919 + commrt_rank() * 31) % 1000) - 500;
  ASSERT_EQ(commrt_trace_start(1024), COMMRT_SUCCESS);

  // Tags 1-3: a started sparse allreduce of each scheme.
  const commrt_select selects[] = {COMMRT_SELECT_TOPK, COMMRT_SELECT_THRESHOLD,
                                   COMMRT_SELECT_CHUNK};
  const commrt_exchange exchanges[] = {
      COMMRT_EXCHANGE_ALLGATHER, COMMRT_EXCHANGE_HASH, COMMRT_EXCHANGE_CHUNK};
  for (int scheme = 0; scheme < 3; ++scheme) {
    commrt_trace_tag(scheme + 1);
    int64_t handle = 0;
    ASSERT_EQ(commrt_sparse_allreduce_start(grad.data(), residual.data(), count,
                                            0.01, selects[scheme],
                                            exchanges[scheme], COMMRT_AVG, 1000,
                                            /*channel=*/0, &handle),
              COMMRT_SUCCESS);
    ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS);
  }
  // Tag 4: blocking, packed into f16. Tag 5: started, two buffers, f32.
  commrt_trace_tag(4);
  std::vector<float> dense(count, 1.0f), other(300, 2.0f);
  ASSERT_EQ(
      commrt_allreduce_wire(dense.data(), count, COMMRT_F16, COMMRT_AVG, 1.0f),
      COMMRT_SUCCESS);
  commrt_trace_tag(5);
  void *buffers[] = {dense.data(), other.data()};
  int64_t counts[] = {count, 300};
  int64_t handle = 0;
  ASSERT_EQ(commrt_fused_allreduce_start(buffers, counts, 2, COMMRT_F32,
                                         COMMRT_SUM, COMMRT_WIRE_NONE, 1.0f,
                                         /*channel=*/1, &handle),
            COMMRT_SUCCESS);
  ASSERT_EQ(commrt_wait(handle), COMMRT_SUCCESS);
  ASSERT_EQ(commrt_trace_stop(), COMMRT_SUCCESS);
  // Not recorded: tracing is off.
  commrt_trace_tag(6);
  ASSERT_EQ(commrt_allreduce(dense.data(), count, COMMRT_F32, COMMRT_SUM),
            COMMRT_SUCCESS);

  Passes passes;
  Recorded recorded = readEvents(&passes);
  ASSERT_EQ(recorded.size(), 5u);
  for (int tag = 1; tag <= 3; ++tag) {
    SCOPED_TRACE("sparse tag " + std::to_string(tag));
    const auto &call = recorded[tag];
    expectOrdered(call, {COMMRT_PHASE_ACCUMULATE, COMMRT_PHASE_SELECT,
                         COMMRT_PHASE_EXCHANGE, COMMRT_PHASE_SCATTER});
    // A pass over 20,000 values: work the thread's CPU clock sees.
    EXPECT_GT(call.at(COMMRT_PHASE_SELECT).cpu_us, 0.0);
    ASSERT_EQ(call.count(COMMRT_PHASE_QUEUED), 1u);
    const commrt_trace_event &queued = call.at(COMMRT_PHASE_QUEUED);
    EXPECT_LE(queued.end_us, call.at(COMMRT_PHASE_CALL).begin_us + 1.0);
    for (const auto &[phase, event] : call) {
      EXPECT_EQ(event.elements, count);
      EXPECT_EQ(event.channel, 0);
      EXPECT_EQ(event.ranks, size);
      EXPECT_EQ(event.kind, COMMRT_TRACE_SPARSE + selects[tag - 1]);
    }
    const commrt_trace_event &exchange = call.at(COMMRT_PHASE_EXCHANGE);
    EXPECT_GT(exchange.selected, 0);
    int64_t sentEverywhere = 0;
    MPI_Allreduce(&exchange.selected, &sentEverywhere, 1, MPI_INT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    if (tag == 1) {
      // Top-k sends exactly k; the allgather brings every rank's pairs.
      EXPECT_EQ(exchange.selected, 200);
      EXPECT_EQ(exchange.received, sentEverywhere);
      EXPECT_EQ(passes.count(tag), 0u) << "no pass between its messages";
    } else if (tag == 2) {
      // The hash exchange gathers each index once: at most what was sent.
      EXPECT_GT(exchange.received, 0);
      EXPECT_LE(exchange.received, sentEverywhere);
      // Its pairs bucketed by owner, then the owner's sum of those sent to
      // it: what every rank received is what every rank sent.
      expectPasses(call, passes[tag],
                   {COMMRT_PHASE_EXCHANGE_PACK, COMMRT_PHASE_EXCHANGE_REDUCE});
      const commrt_trace_event &bucket = passes[tag][0];
      const commrt_trace_event &reduce = passes[tag][1];
      EXPECT_EQ(bucket.selected, exchange.selected);
      int64_t receivedEverywhere = 0, ownedEverywhere = 0;
      MPI_Allreduce(&reduce.received, &receivedEverywhere, 1, MPI_INT64_T,
                    MPI_SUM, MPI_COMM_WORLD);
      MPI_Allreduce(&reduce.selected, &ownedEverywhere, 1, MPI_INT64_T, MPI_SUM,
                    MPI_COMM_WORLD);
      EXPECT_EQ(receivedEverywhere, sentEverywhere);
      // The owners' sums are what is gathered.
      EXPECT_EQ(ownedEverywhere, exchange.received);
    } else {
      // One chunk of 1000 elements of 20: the same on every rank.
      EXPECT_EQ(exchange.selected, 1000);
      EXPECT_EQ(exchange.received, 0);
      EXPECT_EQ(passes.count(tag), 0u);
    }
    EXPECT_EQ(call.at(COMMRT_PHASE_SCATTER).received, exchange.received);
  }
  {
    SCOPED_TRACE("blocking f16");
    const auto &call = recorded[4];
    expectOrdered(
        call, {COMMRT_PHASE_PACK, COMMRT_PHASE_EXCHANGE, COMMRT_PHASE_UNPACK});
    EXPECT_EQ(call.count(COMMRT_PHASE_QUEUED), 0u);
    EXPECT_EQ(call.at(COMMRT_PHASE_CALL).channel, -1);
    EXPECT_EQ(call.at(COMMRT_PHASE_CALL).kind, COMMRT_F16);
  }
  {
    SCOPED_TRACE("started fused f32");
    const auto &call = recorded[5];
    EXPECT_EQ(call.count(COMMRT_PHASE_QUEUED), 1u);
    EXPECT_EQ(call.at(COMMRT_PHASE_CALL).elements, count + 300);
    EXPECT_EQ(call.at(COMMRT_PHASE_CALL).channel, 1);
    EXPECT_EQ(call.at(COMMRT_PHASE_CALL).kind, COMMRT_WIRE_NONE);
    EXPECT_EQ(call.count(COMMRT_PHASE_EXCHANGE), 1u);
  }
  EXPECT_EQ(commrt_trace_dropped(), 0);
}

TEST(MpiTrace, PassesOfTheRowsExchanges) {
  const int rank = commrt_rank(), size = commrt_size();
  // Rank r passes rows r .. r + 9, row 3 twice: neighbours' rows collide.
  const int64_t width = 8, rows = 100;
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < 10; ++i)
    indices.push_back(rank + i);
  indices.push_back(rank + 3);
  std::vector<float> values(indices.size() * width, 1.0f);
  const int64_t distinct = size + 9;
  ASSERT_EQ(commrt_trace_start(256), COMMRT_SUCCESS);
  const commrt_exchange exchanges[] = {COMMRT_EXCHANGE_ALLGATHER,
                                       COMMRT_EXCHANGE_HASH};
  for (int tag = 1; tag <= 2; ++tag) {
    commrt_trace_tag(tag);
    commrt_rows result = {};
    ASSERT_EQ(commrt_rows_allreduce(0, indices.data(), values.data(),
                                    static_cast<int64_t>(indices.size()), rows,
                                    width, exchanges[tag - 1], COMMRT_SUM,
                                    &result),
              COMMRT_SUCCESS);
    EXPECT_EQ(result.count, distinct);
    commrt_rows_free(&result);
  }
  ASSERT_EQ(commrt_trace_stop(), COMMRT_SUCCESS);
  Passes passes;
  Recorded recorded = readEvents(&passes);
  ASSERT_EQ(recorded.size(), 2u);
  {
    SCOPED_TRACE("allgather");
    const auto &call = recorded[1];
    expectOrdered(call, {COMMRT_PHASE_SELECT, COMMRT_PHASE_EXCHANGE,
                         COMMRT_PHASE_SCATTER});
    // The rank's 10 distinct rows packed, every rank's unpacked.
    expectPasses(call, passes[1],
                 {COMMRT_PHASE_EXCHANGE_PACK, COMMRT_PHASE_EXCHANGE_UNPACK});
    EXPECT_EQ(passes[1][0].selected, 10);
    EXPECT_EQ(passes[1][1].received, 10 * size);
  }
  {
    SCOPED_TRACE("hash");
    const auto &call = recorded[2];
    expectOrdered(call, {COMMRT_PHASE_SELECT, COMMRT_PHASE_EXCHANGE,
                         COMMRT_PHASE_SCATTER});
    // Bucketed and packed for the owners, unpacked and added up there, the
    // owners' sums packed and every owner's unpacked.
    expectPasses(call, passes[2],
                 {COMMRT_PHASE_EXCHANGE_PACK, COMMRT_PHASE_EXCHANGE_PACK,
                  COMMRT_PHASE_EXCHANGE_UNPACK, COMMRT_PHASE_EXCHANGE_REDUCE,
                  COMMRT_PHASE_EXCHANGE_PACK, COMMRT_PHASE_EXCHANGE_UNPACK});
    const std::vector<commrt_trace_event> &hash = passes[2];
    EXPECT_EQ(hash[0].selected, 10);
    EXPECT_EQ(hash[1].selected, 10);
    EXPECT_EQ(hash[3].received, hash[2].received);
    EXPECT_EQ(hash[4].selected, hash[3].selected);
    EXPECT_EQ(hash[5].received, distinct);
    int64_t owned = 0, sent = 0, received = 0;
    MPI_Allreduce(&hash[3].selected, &owned, 1, MPI_INT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    MPI_Allreduce(&hash[1].selected, &sent, 1, MPI_INT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    MPI_Allreduce(&hash[2].received, &received, 1, MPI_INT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    EXPECT_EQ(owned, distinct);
    EXPECT_EQ(received, sent);
  }
  EXPECT_EQ(commrt_trace_dropped(), 0);
}

TEST(MpiTrace, CapacityDropsAndCounts) {
  ASSERT_EQ(commrt_trace_start(2), COMMRT_SUCCESS);
  std::vector<float> dense(100, 1.0f);
  commrt_trace_tag(7);
  // The first two phases to end (packing, the exchange) fit; the unpacking
  // and the call are dropped.
  void *buffers[] = {dense.data(), dense.data() + 50};
  int64_t counts[] = {50, 50};
  ASSERT_EQ(commrt_fused_allreduce(buffers, counts, 2, COMMRT_F32, COMMRT_AVG,
                                   COMMRT_F16, 1.0f),
            COMMRT_SUCCESS);
  ASSERT_EQ(commrt_trace_stop(), COMMRT_SUCCESS);
  std::vector<commrt_trace_event> events(8);
  int64_t count = 0;
  ASSERT_EQ(commrt_trace_read(events.data(), 8, &count), COMMRT_SUCCESS);
  EXPECT_EQ(count, 2);
  EXPECT_GE(commrt_trace_dropped(), 2);
  EXPECT_EQ(commrt_trace_start(0), COMMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(commrt_trace_read(nullptr, 1, &count),
            COMMRT_ERROR_INVALID_ARGUMENT);
}

} // namespace
