//===- FakeDeviceQueue.h - A StagingQueue over host memory ------*- C++ -*-===//
//
// The runtime's queue of device work (StagingQueue, StagedRing.h) where the
// "device memory" is host memory: what the tests of the staged ring and of
// the MPI backend's device buffers drive them with on CPUs.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_UNITTESTS_FAKEDEVICEQUEUE_H
#define COMMRT_UNITTESTS_FAKEDEVICEQUEUE_H

#include "ReduceElements.h"
#include "StagedRing.h"
#include "WireFormat.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace commrt::testing {

using Clock = std::chrono::steady_clock;

inline double microsecondsSince(Clock::time_point origin) {
  return std::chrono::duration<double, std::micro>(Clock::now() - origin)
      .count();
}

/// A StagingQueue whose device memory is host memory. A thread of its own
/// runs the work in the order it was enqueued; a copy takes `usPerKiB`
/// microseconds per KiB before its bytes move, as a copy engine's transfer
/// would, and a copy to the host ends only once `beforeCopyOutEnds` (if set)
/// returns, called with how many copies to the host ran before it. It logs
/// when each copy ran.
class FakeDeviceQueue final : public commrt::StagingQueue {
public:
  enum class Kind { ToHost, ToDevice, Reduce, Convert, Mark };
  /// A copy as it ran: its host side (the source of a copy to the device,
  /// the destination of one to the host), and when it began and ended.
  struct Ran {
    Kind kind;
    const void *host;
    double beginUs, endUs;
  };

  FakeDeviceQueue(commrt_dtype type, commrt_reduce reduce, double usPerKiB,
                  Clock::time_point origin,
                  std::function<void(size_t)> beforeCopyOutEnds = {})
      : type(type), reduceKind(reduce), usPerKiB(usPerKiB), origin(origin),
        beforeCopyOutEnds(std::move(beforeCopyOutEnds)),
        worker([this] { runWork(); }) {}
  ~FakeDeviceQueue() override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    worker.join();
  }

  commrt_status copyToHost(void *to, const void *from, size_t bytes) override {
    return enqueue({Kind::ToHost, to, from, bytes, 0, 0});
  }
  commrt_status copyToDevice(void *to, const void *from,
                             size_t bytes) override {
    return enqueue({Kind::ToDevice, to, from, bytes, 0, 0});
  }
  commrt_status reduce(const void *from, void *into, int64_t count) override {
    return enqueue({Kind::Reduce, into, from, 0, count, 0});
  }
  commrt_status convert(const std::vector<Conversion> &conversions,
                        commrt_dtype from, commrt_dtype to,
                        double scale) override {
    Work work{Kind::Convert, nullptr, nullptr, 0, 0, 0};
    work.task = [conversions, from, to, scale] {
      for (const Conversion &conversion : conversions)
        commrt::convert(conversion.input, from, conversion.output, to,
                        conversion.count, scale);
    };
    return enqueue(std::move(work));
  }
  commrt_status mark(int64_t &marker) override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      marker = ++lastMarker;
    }
    return enqueue({Kind::Mark, nullptr, nullptr, 0, 0, marker});
  }
  commrt_status reached(int64_t marker, bool &done) override {
    done = finishedMarker.load() >= marker;
    return COMMRT_SUCCESS;
  }
  commrt_status waitFor(int64_t marker) override {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return finishedMarker.load() >= marker; });
    return COMMRT_SUCCESS;
  }

  /// The copies as they ran, once the queue is idle.
  std::vector<Ran> copies() {
    std::lock_guard<std::mutex> lock(mutex);
    return log;
  }

private:
  struct Work {
    Kind kind;
    void *to;
    const void *from;
    size_t bytes;
    int64_t count;
    int64_t marker;
    /// What a conversion does.
    std::function<void()> task = {};
  };

  commrt_status enqueue(Work work) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      pending.push_back(work);
    }
    changed.notify_all();
    return COMMRT_SUCCESS;
  }

  void runWork() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stopping || !pending.empty(); });
      if (pending.empty())
        return;
      Work work = pending.front();
      pending.pop_front();
      lock.unlock();
      const double beginUs = microsecondsSince(origin);
      switch (work.kind) {
      case Kind::ToHost:
      case Kind::ToDevice:
        std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(
            usPerKiB * static_cast<double>(work.bytes) / 1024));
        if (work.kind == Kind::ToHost && beforeCopyOutEnds)
          beforeCopyOutEnds(copiesOut++);
        std::memcpy(work.to, work.from, work.bytes);
        break;
      case Kind::Reduce:
        commrt::reduceElements(work.from, work.to, work.count, type,
                               reduceKind);
        break;
      case Kind::Convert:
        work.task();
        break;
      case Kind::Mark:
        break;
      }
      const double endUs = microsecondsSince(origin);
      lock.lock();
      if (work.kind == Kind::ToHost)
        log.push_back({work.kind, work.to, beginUs, endUs});
      else if (work.kind == Kind::ToDevice)
        log.push_back({work.kind, work.from, beginUs, endUs});
      else if (work.kind == Kind::Mark)
        finishedMarker = work.marker;
      changed.notify_all();
    }
  }

  const commrt_dtype type;
  const commrt_reduce reduceKind;
  const double usPerKiB;
  const Clock::time_point origin;
  const std::function<void(size_t)> beforeCopyOutEnds;
  /// Copies to the host run so far (the worker's).
  size_t copiesOut = 0;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Work> pending;
  std::vector<Ran> log;
  int64_t lastMarker = 0;
  std::atomic<int64_t> finishedMarker{0};
  bool stopping = false;
  std::thread worker;
};

} // namespace commrt::testing

#endif // COMMRT_UNITTESTS_FAKEDEVICEQUEUE_H
