//===- MpiBackend.cpp - Allreduce over MPI, with f16/bf16 user ops --------===//

#include "Backend.h"
#include "WireFormat.h"

#include <algorithm>
#include <climits>
#include <vector>

using namespace commrt;

namespace {

float add(float a, float b) { return a + b; }
float maximum(float a, float b) { return std::max(a, b); }
float minimum(float a, float b) { return std::min(a, b); }

/// An MPI_User_function combining 16-bit floats elementwise through float.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float),
          float (*Combine)(float, float)>
void combine16(void *in, void *inOut, int *length, MPI_Datatype *) {
  const auto *lhs = static_cast<const uint16_t *>(in);
  auto *rhs = static_cast<uint16_t *>(inOut);
  for (int i = 0; i < *length; ++i)
    rhs[i] = Narrow(Combine(Widen(lhs[i]), Widen(rhs[i])));
}

/// The user functions for f16 and bf16, indexed by [dtype - COMMRT_F16]
/// [reduce]; AVG sums (the division follows the allreduce).
MPI_User_function *const kUserFunctions16[2][4] = {
    {combine16<halfToFloat, floatToHalf, add>,
     combine16<halfToFloat, floatToHalf, add>,
     combine16<halfToFloat, floatToHalf, maximum>,
     combine16<halfToFloat, floatToHalf, minimum>},
    {combine16<bfloat16ToFloat, floatToBFloat16, add>,
     combine16<bfloat16ToFloat, floatToBFloat16, add>,
     combine16<bfloat16ToFloat, floatToBFloat16, maximum>,
     combine16<bfloat16ToFloat, floatToBFloat16, minimum>}};

/// Divides the `count` elements of `data` by `size`.
template <typename T> void divide(T *data, int64_t count, int size) {
  for (int64_t i = 0; i < count; ++i)
    data[i] /= size;
}

/// Divides the `count` 16-bit floats at `data` by `size` through float.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void divide16(uint16_t *data, int64_t count, int size) {
  for (int64_t i = 0; i < count; ++i)
    data[i] = Narrow(Widen(data[i]) / static_cast<float>(size));
}

class MpiBackend final : public Backend {
public:
  /// Sets up the backend on `comm`. The type and op constructors report
  /// errors on MPI_COMM_WORLD, where they are fatal by default; they fail
  /// only when MPI is out of memory.
  explicit MpiBackend(MPI_Comm comm) : comm(comm) {
    MPI_Comm_size(comm, &size);
    MPI_Type_contiguous(2, MPI_BYTE, &type16);
    MPI_Type_commit(&type16);
    for (int type = 0; type < 2; ++type)
      for (int reduce = 0; reduce < 4; ++reduce)
        MPI_Op_create(kUserFunctions16[type][reduce], /*commute=*/1,
                      &ops16[type][reduce]);
  }

  ~MpiBackend() override {
    for (auto &opsOfType : ops16)
      for (MPI_Op &op : opsOfType)
        MPI_Op_free(&op);
    MPI_Type_free(&type16);
  }

  commrt_backend kind() const override { return COMMRT_BACKEND_MPI; }

  commrt_status allreduce(void *buffer, int64_t count, commrt_dtype dtype,
                          commrt_reduce reduce) override {
    if (commrt_status status = allreduceChunked(buffer, count, dtype, reduce))
      return status;
    if (reduce == COMMRT_AVG)
      divideBySize(buffer, count, dtype);
    return COMMRT_SUCCESS;
  }

  commrt_status allreduceWire(float *buffer, int64_t count, commrt_dtype wire,
                              commrt_reduce reduce, float prescale) override {
    std::vector<uint16_t> packed(count);
    packWire(buffer, packed.data(), count, wire, prescale);
    if (commrt_status status =
            allreduceChunked(packed.data(), count, wire, wireReduce(reduce)))
      return status;
    unpackWire(packed.data(), buffer, count, wire,
               wireUnpackScale(reduce, prescale, size));
    return COMMRT_SUCCESS;
  }

private:
  /// MPI_Allreduce in place, in pieces of at most INT_MAX elements since MPI
  /// counts are ints. AVG is reduced as SUM.
  commrt_status allreduceChunked(void *buffer, int64_t count,
                                 commrt_dtype dtype, commrt_reduce reduce) {
    static const MPI_Op builtinOps[] = {MPI_SUM, MPI_SUM, MPI_MAX, MPI_MIN};
    bool is16 = dtype == COMMRT_F16 || dtype == COMMRT_BF16;
    MPI_Datatype type = is16                  ? type16
                        : dtype == COMMRT_F32 ? MPI_FLOAT
                                              : MPI_DOUBLE;
    MPI_Op op = is16 ? ops16[dtype - COMMRT_F16][reduce] : builtinOps[reduce];
    auto *bytes = static_cast<char *>(buffer);
    for (int64_t done = 0; done < count;) {
      int chunk = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      if (int error =
              MPI_Allreduce(MPI_IN_PLACE, bytes + done * elementSize(dtype),
                            chunk, type, op, comm))
        return failMpi("MPI_Allreduce", error);
      done += chunk;
    }
    return COMMRT_SUCCESS;
  }

  /// Divides the reduced sum at `buffer` by the number of ranks.
  void divideBySize(void *buffer, int64_t count, commrt_dtype dtype) const {
    switch (dtype) {
    case COMMRT_F32:
      return divide(static_cast<float *>(buffer), count, size);
    case COMMRT_F64:
      return divide(static_cast<double *>(buffer), count, size);
    case COMMRT_F16:
      return divide16<halfToFloat, floatToHalf>(static_cast<uint16_t *>(buffer),
                                                count, size);
    case COMMRT_BF16:
      return divide16<bfloat16ToFloat, floatToBFloat16>(
          static_cast<uint16_t *>(buffer), count, size);
    }
  }

  MPI_Comm comm;
  int size = 0;
  /// A 2-byte contiguous type carrying f16 and bf16 elements.
  MPI_Datatype type16 = MPI_DATATYPE_NULL;
  /// User ops for [f16, bf16] x commrt_reduce.
  MPI_Op ops16[2][4] = {};
};

} // namespace

std::unique_ptr<Backend> commrt::createMpiBackend(MPI_Comm comm) {
  return std::make_unique<MpiBackend>(comm);
}
