//===- Hierarchy.h - The nodes of a communicator's ranks --------*- C++ -*-===//
//
// The two levels of the hierarchical allreduce, found once per communicator
// that plans run on, for both backends: the ranks of this rank's node, and
// its peers, the ranks holding the same place on every other node.
//
//===----------------------------------------------------------------------===//

#ifndef COMMRT_HIERARCHY_H
#define COMMRT_HIERARCHY_H

#include "commrt/commrt.h"

#include <mpi.h>

#include <cstdint>
#include <memory>

namespace commrt {

/// The two levels of a communicator over several nodes of equal size. Frees
/// both communicators.
struct Hierarchy {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm peers = MPI_COMM_NULL;
  /// This rank's place on its node, and the ranks of every node.
  int nodeRank = 0, nodeSize = 1;
  /// The lowest rank in the split communicator of this rank's node: the
  /// same on every rank of the node, a name of the node every rank agrees
  /// on.
  int nodeLeader = 0;

  Hierarchy() = default;
  Hierarchy(const Hierarchy &) = delete;
  Hierarchy &operator=(const Hierarchy &) = delete;
  ~Hierarchy();
};

/// Sets `out` to the two levels of `comm` (see Hierarchy), or to null where
/// its ranks do not form several nodes of equal size with more than one rank
/// each, for the flat allreduce. A node is the ranks sharing memory where
/// `ranksPerNode` is 0, else the ranks whose rank in the backend's
/// communicator, `baseRank`, divided by `ranksPerNode` is the same. A
/// node's ranks are ordered by their rank in `comm`. Collective over `comm`.
commrt_status makeHierarchy(MPI_Comm comm, int baseRank, int64_t ranksPerNode,
                            std::shared_ptr<Hierarchy> &out);

} // namespace commrt

#endif // COMMRT_HIERARCHY_H
