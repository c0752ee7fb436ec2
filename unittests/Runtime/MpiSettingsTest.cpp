//===- MpiSettingsTest.cpp - The MPI settings the runtime asks for --------===//
//
// A binary of its own, where commrt_init initialises MPI: the runtime sets
// OpenMPI's TCP eager limit to a ring piece unless the environment set it,
// and OpenMPI runs with that value (read back through MPI_T). CTest runs it
// without the variable and with a value of the user's, which
// COMMRT_TEST_EXPECTED_EAGER_LIMIT repeats.
//
//===----------------------------------------------------------------------===//

#include "RingAllreduce.h"
#include "RuntimeTestUtils.h"

#include <mpi.h>

#include <cstdlib>
#include <string>

namespace {

/// Reads the MPI_T control variable `name` as an integer into `value`;
/// false where OpenMPI has no such variable.
bool readControlVariable(const char *name, long long &value) {
  int index;
  if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS)
    return false;
  char found[256];
  int nameLength = sizeof(found), verbosity, bind, scope;
  MPI_Datatype type;
  MPI_T_enum enumtype;
  if (MPI_T_cvar_get_info(index, found, &nameLength, &verbosity, &type,
                          &enumtype, nullptr, nullptr, &bind,
                          &scope) != MPI_SUCCESS)
    return false;
  MPI_T_cvar_handle handle;
  int count;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS)
    return false;
  unsigned long long raw = 0;
  bool read = MPI_T_cvar_read(handle, &raw) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&handle);
  if (type == MPI_INT)
    value = *reinterpret_cast<int *>(&raw);
  else if (type == MPI_UNSIGNED)
    value = *reinterpret_cast<unsigned *>(&raw);
  else
    value = static_cast<long long>(raw);
  return read;
}

TEST(MpiSettings, RingPiecesGoEagerlyOverTcp) {
  const char *expected = std::getenv("COMMRT_TEST_EXPECTED_EAGER_LIMIT");
  const std::string limit =
      expected ? expected : std::to_string(commrt::kTcpEagerLimitBytes);
  ASSERT_EQ(commrt_init(), COMMRT_SUCCESS) << commrt_last_error();
  const char *set = std::getenv("OMPI_MCA_btl_tcp_eager_limit");
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(std::string(set), limit);

  int provided;
  ASSERT_EQ(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
  long long value = -1;
  ASSERT_TRUE(readControlVariable("btl_tcp_eager_limit", value))
      << "OpenMPI has no btl_tcp_eager_limit";
  EXPECT_EQ(std::to_string(value), limit);
  MPI_T_finalize();
}

} // namespace
