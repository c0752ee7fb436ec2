//===- ChannelThread.h - A thread that runs a channel's work ----*- C++ -*-===//
//
// A channel's asynchronous collectives run on a thread of the channel's own,
// one after the other in the order they were started, so that every rank
// issues them to the channel's communicator in the same order while the
// caller goes on. The MPI backend runs every collective of a channel there;
// the NCCL backend issues there the work of a channel that has run a sparse
// allreduce, whose steps wait for the host.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_CHANNELTHREAD_H
#define COMMRT_CHANNELTHREAD_H

#include "Backend.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace commrt {

/// The outcome of a task on a channel's thread, which the task sets once and
/// the caller's operation waits for.
class TaskOutcome {
public:
  /// Records `status` (and, when it failed, the calling thread's last error)
  /// and wakes the waiters.
  void finish(commrt_status status) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      result = status;
      if (status != COMMRT_SUCCESS)
        message = commrt_last_error();
      done.store(true, std::memory_order_release);
    }
    finished.notify_all();
  }

  /// Whether finish() was called.
  bool isDone() const { return done.load(std::memory_order_acquire); }

  /// Blocks until finish() was called and returns its status, with its
  /// message as the calling thread's last error.
  commrt_status wait() {
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [&] { return isDone(); });
    if (result != COMMRT_SUCCESS)
      return setLastError(result, message);
    return COMMRT_SUCCESS;
  }

  /// Blocks until finish() was called or `seconds` have passed; returns
  /// whether finish() was called.
  bool waitFor(double seconds) {
    std::unique_lock<std::mutex> lock(mutex);
    return finished.wait_for(lock, std::chrono::duration<double>(seconds),
                             [&] { return isDone(); });
  }

private:
  std::atomic<bool> done{false};
  std::mutex mutex;
  std::condition_variable finished;
  commrt_status result = COMMRT_SUCCESS;
  std::string message;
};

/// A thread that runs the tasks submitted to it one after the other, in
/// order, started by the first.
class ChannelThread {
public:
  ChannelThread() = default;
  ~ChannelThread() { stop(); }
  ChannelThread(const ChannelThread &) = delete;
  ChannelThread &operator=(const ChannelThread &) = delete;

  /// Queues `task`; starts the thread with the first.
  commrt_status submit(std::function<void()> task) {
    if (!thread.joinable()) {
      try {
        thread = std::thread([this] { serve(); });
      } catch (const std::system_error &error) {
        return fail(COMMRT_ERROR_BACKEND,
                    "cannot start the channel's thread: ", error.what());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(task));
    }
    wake.notify_one();
    return COMMRT_SUCCESS;
  }

  /// Runs the queued tasks to the end, then stops the thread. The owner
  /// calls it before freeing what the tasks use.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_one();
    if (thread.joinable())
      thread.join();
  }

private:
  /// The thread's body: runs queued tasks until stopped with an empty queue.
  void serve() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty())
          return;
        task = std::move(queue.front());
        queue.pop_front();
      }
      task();
    }
  }

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> queue;
  bool stopping = false;
  std::thread thread;
};

} // namespace commrt

#endif // COMMRT_CHANNELTHREAD_H
