//===- GpuTestUtils.h - Helpers shared by the GPU tests ---------*- C++ -*-===//
//
// For the suites of commrt-gpu-tests, which need the CUDA runtime: whether a
// GPU is visible, device memory freed with its owner, bit patterns of floats
// to compare results exactly, and suites that run under the NCCL backend.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_UNITTESTS_GPUTESTUTILS_H
#define COMMRT_UNITTESTS_GPUTESTUTILS_H

#include "commrt/commrt.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace commrt::testing {

/// Whether a CUDA device is visible to this process.
inline bool gpuVisible() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

/// The bit patterns of `values`, so that comparisons tell -0 from 0 and
/// compare NaNs.
inline std::vector<uint32_t> bitsOf(const std::vector<float> &values) {
  std::vector<uint32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

/// Device memory of `count` elements of `T`, freed on destruction.
template <typename T> class DeviceArray {
public:
  explicit DeviceArray(size_t count) : count(count) {
    EXPECT_EQ(cudaMalloc(&data, std::max<size_t>(count, 1) * sizeof(T)),
              cudaSuccess);
  }
  explicit DeviceArray(const std::vector<T> &host) : DeviceArray(host.size()) {
    upload(host);
  }
  ~DeviceArray() { cudaFree(data); }
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;

  /// The device pointer.
  T *get() const { return data; }

  /// The number of elements.
  size_t size() const { return count; }

  /// Copies `host` (at most `count` elements) to the device.
  void upload(const std::vector<T> &host) {
    ASSERT_LE(host.size(), count);
    ASSERT_EQ(cudaMemcpy(data, host.data(), host.size() * sizeof(T),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
  }

  /// The first `n` elements, copied to the host once the device is idle.
  std::vector<T> download(size_t n) const {
    std::vector<T> host(n);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(
        cudaMemcpy(host.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost),
        cudaSuccess);
    return host;
  }

  /// Every element, copied to the host.
  std::vector<T> download() const { return download(count); }

private:
  T *data = nullptr;
  size_t count;
};

/// A parameterised suite that runs under the NCCL backend: skipped without
/// a visible GPU, and back on the MPI backend afterwards.
template <typename Param>
class NcclBackendTest : public ::testing::TestWithParam<Param> {
protected:
  void SetUp() override {
    if (!gpuVisible())
      GTEST_SKIP() << "no CUDA device visible to run the NCCL backend";
  }
  void TearDown() override {
    if (gpuVisible())
      EXPECT_EQ(commrt_init_backend(COMMRT_BACKEND_MPI), COMMRT_SUCCESS);
  }
};

} // namespace commrt::testing

#endif // COMMRT_UNITTESTS_GPUTESTUTILS_H
