//===- NcclSparseTest.cpp - commrt_sparse_allreduce on the GPU ------------===//
//
// One process, one rank: commrt_sparse_allreduce under the NCCL backend with
// device buffers, for every selection, exchange and reduction, against the
// same call on host buffers under the MPI backend, bit for bit, over two
// steps (the second on the first's residual). Also host buffers under NCCL
// (the host path over the bootstrap communicator) and the rejection of
// mixed host and device buffers. Skips without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "GpuTestUtils.h"
#include "RuntimeTestUtils.h"

#include <cuda_runtime.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

using commrt::testing::bitsOf;
using commrt::testing::gpuVisible;
using commrt::testing::SparseScheme;
using commrt::testing::sparseSchemeName;
using commrt::testing::validSparseSchemes;

namespace {

/// The inputs of two steps: two gradients and a first residual.
struct Inputs {
  std::vector<float> grads[2], residual;
};

/// Gaussian gradients whose chunk norms are distinct, or, with `ties`,
/// values of a few magnitudes, so that top-k and threshold selection split
/// runs of equal magnitudes.
Inputs makeInputs(int64_t count, bool ties) {
  std::mt19937 random(ties ? 41 : 29);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  Inputs inputs;
  for (auto &grad : inputs.grads) {
    grad.resize(count);
    for (int64_t i = 0; i < count; ++i)
      grad[i] = ties ? static_cast<float>(int(random() % 7) - 3) * 0.125f
                     : normal(random);
  }
  inputs.residual.resize(count);
  for (int64_t i = 0; i < count; ++i)
    inputs.residual[i] = ties ? 0.0f : normal(random) * 0.5f;
  return inputs;
}

/// What two steps leave in grad and residual after each step.
struct Results {
  std::vector<float> grads[2], residuals[2];
};

constexpr double kDensity = 0.01;
constexpr int64_t kChunk = 1000;

/// Runs two steps on host buffers with the backend in use.
Results runOnHost(const Inputs &inputs, const SparseScheme &scheme) {
  auto [select, exchange, reduce] = scheme;
  Results results;
  std::vector<float> residual = inputs.residual;
  for (int step = 0; step < 2; ++step) {
    std::vector<float> grad = inputs.grads[step];
    EXPECT_EQ(commrt_sparse_allreduce(grad.data(), residual.data(),
                                      static_cast<int64_t>(grad.size()),
                                      kDensity, select, exchange, reduce,
                                      kChunk),
              COMMRT_SUCCESS)
        << commrt_last_error();
    results.grads[step] = grad;
    results.residuals[step] = residual;
  }
  return results;
}

/// Runs two steps on device buffers with the backend in use.
Results runOnDevice(const Inputs &inputs, const SparseScheme &scheme) {
  auto [select, exchange, reduce] = scheme;
  const size_t count = inputs.residual.size();
  const size_t bytes = count * sizeof(float);
  Results results;
  float *grad = nullptr, *residual = nullptr;
  EXPECT_EQ(cudaMalloc(&grad, bytes), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&residual, bytes), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(residual, inputs.residual.data(), bytes,
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  for (int step = 0; step < 2; ++step) {
    EXPECT_EQ(cudaMemcpy(grad, inputs.grads[step].data(), bytes,
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(commrt_sparse_allreduce(grad, residual,
                                      static_cast<int64_t>(count), kDensity,
                                      select, exchange, reduce, kChunk),
              COMMRT_SUCCESS)
        << commrt_last_error();
    results.grads[step].resize(count);
    results.residuals[step].resize(count);
    EXPECT_EQ(cudaMemcpy(results.grads[step].data(), grad, bytes,
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(results.residuals[step].data(), residual, bytes,
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
  }
  cudaFree(grad);
  cudaFree(residual);
  return results;
}

/// Expects `actual` to equal `expected` bit for bit, step by step.
void expectSame(const Results &actual, const Results &expected) {
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    EXPECT_EQ(bitsOf(actual.grads[step]), bitsOf(expected.grads[step]));
    EXPECT_EQ(bitsOf(actual.residuals[step]), bitsOf(expected.residuals[step]));
  }
}

using NcclSparseTest = commrt::testing::NcclBackendTest<SparseScheme>;

TEST_P(NcclSparseTest, DeviceBuffersMatchTheHostBitForBit) {
  for (bool ties : {false, true}) {
    SCOPED_TRACE(ties ? "ties" : "gaussian");
    // Not a multiple of the chunk: the last chunk is short.
    Inputs inputs = makeInputs(100003, ties);
    ASSERT_EQ(commrt_init_backend(COMMRT_BACKEND_MPI), COMMRT_SUCCESS)
        << commrt_last_error();
    Results host = runOnHost(inputs, GetParam());
    ASSERT_EQ(commrt_init_backend(COMMRT_BACKEND_NCCL), COMMRT_SUCCESS)
        << commrt_last_error();
    {
      SCOPED_TRACE("device buffers under NCCL");
      expectSame(runOnDevice(inputs, GetParam()), host);
    }
    {
      SCOPED_TRACE("host buffers under NCCL");
      expectSame(runOnHost(inputs, GetParam()), host);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ValidSchemes, NcclSparseTest,
                         ::testing::ValuesIn(validSparseSchemes()),
                         sparseSchemeName);

TEST(NcclSparse, MixedHostAndDeviceBuffersAreRejected) {
  if (!gpuVisible())
    GTEST_SKIP() << "no CUDA device visible to run the NCCL backend";
  ASSERT_EQ(commrt_init_backend(COMMRT_BACKEND_NCCL), COMMRT_SUCCESS)
      << commrt_last_error();
  const int64_t count = 64;
  float *device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, count * sizeof(float)), cudaSuccess);
  std::vector<float> host(count, 1.0f);
  EXPECT_EQ(commrt_sparse_allreduce(device, host.data(), count, 0.5,
                                    COMMRT_SELECT_TOPK,
                                    COMMRT_EXCHANGE_ALLGATHER, COMMRT_SUM, 0),
            COMMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(commrt_last_error(),
               "commrt_sparse_allreduce: grad is device memory but residual "
               "is host memory: under the NCCL backend both must be device "
               "(or managed) memory, reduced on the GPU, or both host "
               "memory, reduced on the host");
  // The backend keeps working after the rejection.
  float *residual = nullptr;
  ASSERT_EQ(cudaMalloc(&residual, count * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(residual, 0, count * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device, host.data(), count * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  EXPECT_EQ(commrt_sparse_allreduce(device, residual, count, 1.0,
                                    COMMRT_SELECT_THRESHOLD,
                                    COMMRT_EXCHANGE_HASH, COMMRT_AVG, 0),
            COMMRT_SUCCESS)
      << commrt_last_error();
  std::vector<float> grad(count);
  ASSERT_EQ(cudaMemcpy(grad.data(), device, count * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(grad, host) << "density 1 on one rank returns acc";
  cudaFree(device);
  cudaFree(residual);
  EXPECT_EQ(commrt_init_backend(COMMRT_BACKEND_MPI), COMMRT_SUCCESS);
}

} // namespace
