//===- MpiTestUtils.h - Helpers of the commrt tests under mpirun -*- C++
//-*-===//

#ifndef COMMRT_UNITTESTS_MPITESTUTILS_H
#define COMMRT_UNITTESTS_MPITESTUTILS_H

#include <mpi.h>

#include <cstring>
#include <vector>

namespace commrt::testing {

/// This rank's rank in MPI_COMM_WORLD, and its number of ranks.
inline int worldRank() {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int worldSize() {
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// Whether the `bytes` bytes at `data` are the same on every rank.
inline bool sameOnAllRanks(const void *data, size_t bytes) {
  std::vector<unsigned char> first(static_cast<const unsigned char *>(data),
                                   static_cast<const unsigned char *>(data) +
                                       bytes);
  MPI_Bcast(first.data(), static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
  // memcmp takes no null pointer, even for no bytes.
  int same = bytes == 0 || std::memcmp(first.data(), data, bytes) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return same;
}

} // namespace commrt::testing

#endif // COMMRT_UNITTESTS_MPITESTUTILS_H
