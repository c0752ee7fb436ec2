# What every bench/*/run.sh starts with: the checkout as the working
# directory, BUILD (default build) and PYTHON (default /usr/bin/python3),
# and the MPI settings its runs under mpirun need. Sourced, not run.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
# OpenMPI refuses root unless told, and packs more ranks than cores only
# when allowed; its single-copy mechanism needs ptrace rights containers
# lack.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
