//===- MpiTraceTest.cpp - commrt_trace_* across MPI ranks -----------------===//
//
// Run under mpirun with any number of ranks (CTest uses 2 and 4). Records a
// started sparse allreduce of each scheme, a blocking dense allreduce with
// an f16 wire and a started fused f32 one, and checks the phases each rank
// recorded: every phase there, tagged with its call's tag, in the order the
// runtime runs them, within its call, and counting what was sent and
// received as the exchange did.
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

Recorded readEvents() {
  std::vector<commrt_trace_event> events(256);
  int64_t count = 0;
  EXPECT_EQ(commrt_trace_read(events.data(), 256, &count), COMMRT_SUCCESS);
  Recorded recorded;
  for (int64_t i = 0; i < count; ++i) {
    const commrt_trace_event &event = events[i];
    EXPECT_TRUE(recorded[event.tag].emplace(event.phase, event).second)
        << "two events of phase " << event.phase << " with tag " << event.tag;
  }
  return recorded;
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

  Recorded recorded = readEvents();
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
    } else if (tag == 2) {
      // The hash exchange gathers each index once: at most what was sent.
      EXPECT_GT(exchange.received, 0);
      EXPECT_LE(exchange.received, sentEverywhere);
    } else {
      // One chunk of 1000 elements of 20: the same on every rank.
      EXPECT_EQ(exchange.selected, 1000);
      EXPECT_EQ(exchange.received, 0);
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
