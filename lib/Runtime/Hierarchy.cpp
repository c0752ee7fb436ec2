//===- Hierarchy.cpp - The nodes of a communicator's ranks ----------------===//

#include "Hierarchy.h"

#include "Backend.h"
#include "MpiWait.h"

using namespace commrt;

Hierarchy::~Hierarchy() {
  if (node != MPI_COMM_NULL)
    MPI_Comm_free(&node);
  if (peers != MPI_COMM_NULL)
    MPI_Comm_free(&peers);
}

commrt_status commrt::makeHierarchy(MPI_Comm comm, int baseRank,
                                    int64_t ranksPerNode,
                                    std::shared_ptr<Hierarchy> &out) {
  out = nullptr;
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  auto made = std::make_shared<Hierarchy>();
  if (ranksPerNode > 0) {
    if (int error = MPI_Comm_split(
            comm, static_cast<int>(baseRank / ranksPerNode), rank, &made->node))
      return failMpi("MPI_Comm_split (node)", error);
  } else if (int error = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank,
                                             MPI_INFO_NULL, &made->node)) {
    return failMpi("MPI_Comm_split_type", error);
  }
  MPI_Comm_set_errhandler(made->node, MPI_ERRORS_RETURN);
  COMMRT_TRY(recordTransport(made->node));
  MPI_Comm_rank(made->node, &made->nodeRank);
  MPI_Comm_size(made->node, &made->nodeSize);
  // Whether every node has as many ranks: the maximum of q and of -q.
  int sizes[2] = {made->nodeSize, -made->nodeSize};
  if (int error = MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, comm))
    return failMpi("MPI_Allreduce (node sizes)", error);
  if (sizes[0] != -sizes[1] || made->nodeSize == 1 || made->nodeSize == size)
    return COMMRT_SUCCESS;
  if (int error = MPI_Allreduce(&rank, &made->nodeLeader, 1, MPI_INT, MPI_MIN,
                                made->node))
    return failMpi("MPI_Allreduce (node leader)", error);
  if (int error = MPI_Comm_split(comm, made->nodeRank, rank, &made->peers))
    return failMpi("MPI_Comm_split (peers)", error);
  MPI_Comm_set_errhandler(made->peers, MPI_ERRORS_RETURN);
  COMMRT_TRY(recordTransport(made->peers));
  out = std::move(made);
  return COMMRT_SUCCESS;
}
