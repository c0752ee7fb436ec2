//===- SparseKernelsTest.cpp - The sparse kernels against the host --------===//
//
// Every kernel of cuda/SparseKernels.h against its host reference (Selection
// and Sparse.cpp): histograms bin for bin, selections index for index, sums
// bit for bit, chunk norms within 1e-12 relative (they add in another
// order). Skips without a CUDA device.
//
//===----------------------------------------------------------------------===//

#include "cuda/SparseKernels.h"
#include "GpuTestUtils.h"
#include "Selection.h"
#include "Sparse.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace commrt;
using commrt::testing::bitsOf;
using commrt::testing::DeviceArray;
using commrt::testing::gpuVisible;

namespace {

/// A named data set of gradient-like values.
struct DataSet {
  std::string name;
  std::vector<float> values;
};

/// Gaussian values (with a zero, a negative zero and a denormal), values
/// spread over 40 binades, and values of 5 magnitudes (ties everywhere);
/// sizes not multiples of the block size.
std::vector<DataSet> dataSets() {
  std::mt19937 random(17);
  std::vector<DataSet> sets;
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  DataSet gaussian{"gaussian", std::vector<float>((1 << 20) + 37)};
  for (float &x : gaussian.values)
    x = normal(random);
  gaussian.values[3] = 0.0f;
  gaussian.values[4] = -0.0f;
  gaussian.values[5] = 1e-40f;
  sets.push_back(std::move(gaussian));
  std::uniform_real_distribution<float> exponent(-30.0f, 10.0f);
  DataSet wide{"wide", std::vector<float>(300001)};
  for (size_t i = 0; i < wide.values.size(); ++i)
    wide.values[i] = (i % 3 ? 1.0f : -1.0f) * std::exp2(exponent(random));
  sets.push_back(std::move(wide));
  DataSet ties{"ties", std::vector<float>(200003)};
  for (size_t i = 0; i < ties.values.size(); ++i)
    ties.values[i] =
        (i % 2 ? -0.25f : 0.25f) * static_cast<float>((i * 7919) % 5);
  sets.push_back(std::move(ties));
  return sets;
}

/// Selection sizes to try on `count` entries: tiny, 0.1%, 1%, 10%, all.
std::vector<int64_t> sizesFor(int64_t count) {
  return {1,           7,          std::max<int64_t>(count / 1000, 1),
          count / 100, count / 10, count - 1,
          count};
}

class SparseKernelsTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!gpuVisible())
      GTEST_SKIP() << "no CUDA device visible to run the kernels";
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  }
  void TearDown() override {
    if (stream)
      cudaStreamDestroy(stream);
  }

  /// The device histogram of pass `pass` with prefix `prefix`.
  std::vector<int64_t> deviceHistogram(const DeviceArray<float> &acc,
                                       int64_t count, int pass,
                                       uint32_t prefix) {
    DeviceArray<unsigned long long> bins(RadixSearch::kMaxBins);
    EXPECT_EQ(commrt::cuda::histogram(acc.get(), count, pass, prefix,
                                      bins.get(), stream),
              cudaSuccess);
    std::vector<unsigned long long> counts =
        bins.download(RadixSearch::bins(pass));
    return std::vector<int64_t>(counts.begin(), counts.end());
  }

  /// Selects by `cut` on the device and checks the indices against
  /// `expected` and the values against `values` at them.
  void checkSelection(const DeviceArray<float> &acc,
                      const std::vector<float> &values, Cut cut,
                      const std::vector<int64_t> &expected) {
    const auto count = static_cast<int64_t>(values.size());
    DeviceArray<unsigned long long> counter(1);
    ASSERT_EQ(commrt::cuda::countSelected(acc.get(), count, cut, counter.get(),
                                          stream),
              cudaSuccess);
    const auto selected = static_cast<int64_t>(counter.download()[0]);
    ASSERT_EQ(selected, static_cast<int64_t>(expected.size()));
    DeviceArray<int64_t> indices(selected), number(1);
    DeviceArray<float> picked(selected);
    size_t tempBytes = 0;
    ASSERT_EQ(commrt::cuda::select(acc.get(), count, cut, nullptr, nullptr,
                                   nullptr, nullptr, tempBytes, stream),
              cudaSuccess);
    DeviceArray<char> temp(tempBytes);
    ASSERT_EQ(commrt::cuda::select(acc.get(), count, cut, indices.get(),
                                   picked.get(), number.get(), temp.get(),
                                   tempBytes, stream),
              cudaSuccess);
    EXPECT_EQ(number.download()[0], selected);
    EXPECT_EQ(indices.download(), expected);
    std::vector<float> expectedValues;
    for (int64_t i : expected)
      expectedValues.push_back(values[i]);
    EXPECT_EQ(bitsOf(picked.download()), bitsOf(expectedValues));
  }

  /// Runs `check(values, acc, count, k)` on every data set, with `acc` its
  /// `count` values on the device, for every selection size `k`; stops at
  /// the first fatal failure.
  template <typename Check> void forEachSelection(Check check) {
    for (const DataSet &set : dataSets()) {
      SCOPED_TRACE(set.name);
      const auto count = static_cast<int64_t>(set.values.size());
      DeviceArray<float> acc(set.values);
      for (int64_t k : sizesFor(count)) {
        SCOPED_TRACE("k = " + std::to_string(k));
        check(set.values, acc, count, k);
        if (HasFatalFailure())
          return;
      }
    }
  }

  /// Pinned and device bins for the searches.
  struct Search {
    DeviceArray<unsigned long long> device{RadixSearch::kMaxBins};
    unsigned long long *pinned = nullptr;
    Search() {
      EXPECT_EQ(cudaMallocHost(&pinned, RadixSearch::kMaxBins *
                                            sizeof(unsigned long long)),
                cudaSuccess);
    }
    ~Search() { cudaFreeHost(pinned); }
    /// The bins as the searches take them.
    commrt::cuda::SearchBuffers buffers() const {
      return {device.get(), pinned};
    }
  };

  cudaStream_t stream = nullptr;
};

TEST_F(SparseKernelsTest, AccumulateAddsTheGradient) {
  std::vector<float> grad = dataSets()[0].values;
  std::vector<float> residual(grad.rbegin(), grad.rend());
  DeviceArray<float> deviceGrad(grad), deviceResidual(residual);
  ASSERT_EQ(commrt::cuda::accumulate(deviceResidual.get(), deviceGrad.get(),
                                     static_cast<int64_t>(grad.size()), stream),
            cudaSuccess);
  for (size_t i = 0; i < grad.size(); ++i)
    residual[i] += grad[i];
  EXPECT_EQ(bitsOf(deviceResidual.download()), bitsOf(residual));
}

TEST_F(SparseKernelsTest, HistogramsMatchTheHostInEveryPass) {
  for (const DataSet &set : dataSets()) {
    SCOPED_TRACE(set.name);
    const auto count = static_cast<int64_t>(set.values.size());
    DeviceArray<float> acc(set.values);
    // The passes a search runs, and passes under prefixes it would not
    // reach: those of the largest, a middle and the smallest nonzero key.
    std::vector<uint32_t> prefixes;
    for (float x : {set.values[0], set.values[count / 2], 1e-40f, 3.0f})
      prefixes.push_back(magnitudeBits(x));
    for (uint32_t prefix : prefixes)
      for (int pass = 0; pass < RadixSearch::kPasses; ++pass) {
        SCOPED_TRACE("pass " + std::to_string(pass) + ", prefix " +
                     std::to_string(prefix));
        std::array<int64_t, RadixSearch::kMaxBins> host;
        histogramPass(set.values.data(), count, pass, prefix, host);
        EXPECT_EQ(deviceHistogram(acc, count, pass, prefix),
                  std::vector<int64_t>(host.begin(),
                                       host.begin() + RadixSearch::bins(pass)));
      }
  }
}

TEST_F(SparseKernelsTest, ThresholdSelectionMatchesTheHost) {
  Search search;
  forEachSelection([&](const std::vector<float> &values,
                       const DeviceArray<float> &acc, int64_t count,
                       int64_t k) {
    uint32_t threshold = 0;
    ASSERT_EQ(commrt::cuda::findThreshold(acc.get(), count, k, search.buffers(),
                                          stream, threshold),
              cudaSuccess);
    EXPECT_EQ(threshold, findThreshold(values.data(), count, k));
    checkSelection(acc, values, Cut{threshold, count},
                   selectThreshold(values.data(), count, k));
  });
}

TEST_F(SparseKernelsTest, TopkMatchesTheHost) {
  Search search;
  forEachSelection([&](const std::vector<float> &values,
                       const DeviceArray<float> &acc, int64_t count,
                       int64_t k) {
    Cut cut{};
    ASSERT_EQ(commrt::cuda::findTopkCut(acc.get(), count, k, search.buffers(),
                                        stream, cut),
              cudaSuccess);
    Cut host = findTopkCut(values.data(), count, k);
    EXPECT_EQ(cut.key, host.key);
    EXPECT_EQ(cut.tiesBelow, host.tiesBelow);
    checkSelection(acc, values, cut, selectTopk(values.data(), count, k));
  });
}

TEST_F(SparseKernelsTest, SelectMarkedCompactsInIndexOrder) {
  const int64_t count = 1000003;
  std::mt19937 random(3);
  std::vector<unsigned char> marks(count, 0);
  std::vector<float> source(count);
  std::vector<int64_t> expected;
  std::vector<float> expectedValues;
  for (int64_t i = 0; i < count; ++i) {
    source[i] = static_cast<float>(i) * 0.5f;
    if (random() % 97 == 0) {
      marks[i] = 1;
      expected.push_back(i);
      expectedValues.push_back(source[i]);
    }
  }
  DeviceArray<unsigned char> deviceMarks(marks);
  DeviceArray<float> deviceSource(source), values(expected.size());
  DeviceArray<int64_t> indices(expected.size()), number(1);
  size_t tempBytes = 0;
  ASSERT_EQ(commrt::cuda::selectMarked(nullptr, count, nullptr, nullptr,
                                       nullptr, nullptr, nullptr, tempBytes,
                                       stream),
            cudaSuccess);
  DeviceArray<char> temp(tempBytes);
  ASSERT_EQ(commrt::cuda::selectMarked(
                deviceMarks.get(), count, deviceSource.get(), indices.get(),
                values.get(), number.get(), temp.get(), tempBytes, stream),
            cudaSuccess);
  EXPECT_EQ(number.download()[0], static_cast<int64_t>(expected.size()));
  EXPECT_EQ(indices.download(), expected);
  EXPECT_EQ(bitsOf(values.download()), bitsOf(expectedValues));
}

TEST_F(SparseKernelsTest, ScatterAddSumsRanksInOrder) {
  // Three ranks' pairs, distinct indices within a rank, overlapping across
  // ranks, with fractions whose sums round: applied rank after rank, as the
  // host does, the sums are the host's bit for bit.
  const int64_t count = 500009;
  std::mt19937 random(23);
  std::vector<float> target(count, 0.0f);
  std::vector<unsigned char> expectedMarks(count, 0);
  DeviceArray<float> deviceTarget(target);
  DeviceArray<unsigned char> marks(count);
  ASSERT_EQ(cudaMemset(marks.get(), 0, count), cudaSuccess);
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<int64_t> indices;
    std::vector<float> values;
    for (int64_t i = rank; i < count; i += 1 + random() % 50) {
      indices.push_back(i);
      values.push_back(static_cast<float>(random() % 2001 - 1000) / 3.0f);
    }
    std::shuffle(indices.begin(), indices.end(), random);
    for (size_t j = 0; j < indices.size(); ++j) {
      target[indices[j]] += values[j];
      expectedMarks[indices[j]] = 1;
    }
    DeviceArray<int64_t> deviceIndices(indices);
    DeviceArray<float> deviceValues(values);
    ASSERT_EQ(commrt::cuda::scatterAdd(
                  deviceTarget.get(), deviceIndices.get(), deviceValues.get(),
                  static_cast<int64_t>(indices.size()), marks.get(), stream),
              cudaSuccess);
    // The arrays are freed at the end of this iteration.
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  EXPECT_EQ(bitsOf(deviceTarget.download()), bitsOf(target));
  EXPECT_EQ(marks.download(), expectedMarks);
}

TEST_F(SparseKernelsTest, ZeroAtFillZeroAndDivide) {
  std::vector<float> data = dataSets()[1].values;
  const auto count = static_cast<int64_t>(data.size());
  std::vector<int64_t> indices = {0, 5, count / 2, count - 1};
  DeviceArray<float> deviceData(data);
  DeviceArray<int64_t> deviceIndices(indices);
  ASSERT_EQ(
      commrt::cuda::zeroAt(deviceData.get(), deviceIndices.get(), 4, stream),
      cudaSuccess);
  ASSERT_EQ(commrt::cuda::divide(deviceData.get(), count, 3.0f, stream),
            cudaSuccess);
  for (int64_t i : indices)
    data[i] = 0.0f;
  for (float &x : data)
    x /= 3.0f;
  EXPECT_EQ(bitsOf(deviceData.download()), bitsOf(data));
  ASSERT_EQ(commrt::cuda::fillZero(deviceData.get(), count, stream),
            cudaSuccess);
  EXPECT_EQ(deviceData.download(), std::vector<float>(count, 0.0f));
}

TEST_F(SparseKernelsTest, ChunkNormsMatchTheHost) {
  const std::vector<float> values = dataSets()[1].values;
  const auto count = static_cast<int64_t>(values.size());
  DeviceArray<float> acc(values);
  for (int64_t chunk : {int64_t(1), int64_t(7), int64_t(256), int64_t(4096),
                        int64_t(32768), count, count + 5}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    std::vector<double> host = chunkNorms(values.data(), count, chunk);
    DeviceArray<double> norms(host.size());
    ASSERT_EQ(
        commrt::cuda::chunkNorms(acc.get(), count, chunk, norms.get(), stream),
        cudaSuccess);
    std::vector<double> device = norms.download();
    for (size_t c = 0; c < host.size(); ++c)
      ASSERT_LE(std::fabs(device[c] - host[c]), 1e-12 * std::fabs(host[c]))
          << "chunk " << c << ": " << device[c] << " vs " << host[c];
  }
}

TEST_F(SparseKernelsTest, PackAndUnpackChunks) {
  // 10 chunks of 1000 and a short last one of 7; the last is picked.
  const int64_t chunk = 1000, count = 10 * chunk + 7;
  std::vector<float> acc(count);
  for (int64_t i = 0; i < count; ++i)
    acc[i] = static_cast<float>(i) + 0.25f;
  const std::vector<int64_t> chunks = {0, 3, 4, 10};
  const auto picked = static_cast<int64_t>(chunks.size());
  std::vector<float> expected;
  for (int64_t c : chunks)
    for (int64_t e = 0; e < chunk; ++e)
      expected.push_back(c * chunk + e < count ? acc[c * chunk + e] : 0.0f);
  DeviceArray<float> deviceAcc(acc), packed(picked * chunk);
  DeviceArray<int64_t> deviceChunks(chunks);
  ASSERT_EQ(commrt::cuda::packChunks(deviceAcc.get(), count, chunk,
                                     deviceChunks.get(), picked, packed.get(),
                                     stream),
            cudaSuccess);
  EXPECT_EQ(bitsOf(packed.download()), bitsOf(expected));

  // Unpacked into zeroed grad, with the residual (here acc) zeroed there.
  std::vector<float> grad(count, 0.0f), residual = acc;
  for (int64_t c : chunks)
    for (int64_t i = c * chunk; i < std::min(count, (c + 1) * chunk); ++i) {
      grad[i] = acc[i];
      residual[i] = 0.0f;
    }
  DeviceArray<float> deviceGrad(std::vector<float>(count, 0.0f));
  ASSERT_EQ(commrt::cuda::unpackChunks(
                packed.get(), count, chunk, deviceChunks.get(), picked,
                deviceGrad.get(), deviceAcc.get(), stream),
            cudaSuccess);
  EXPECT_EQ(bitsOf(deviceGrad.download()), bitsOf(grad));
  EXPECT_EQ(bitsOf(deviceAcc.download()), bitsOf(residual));
}

} // namespace
