#!/usr/bin/env bash
#===- bundle.sh - What device-check.sh needs, built here -----------------===#
#
# Collects into BUNDLE (default .gpu-bundle, which git ignores) everything
# bench/gpu/device-check.sh runs on a lent GPU machine, which has CUDA,
# PyTorch and NCCL (PyTorch's) but no MPI, no MLIR and no build of
# commopt, and must build nothing:
#   bin/      the GPU and MPI test programs, commrt-mpi-device-bench, and
#             Open MPI's mpirun
#   lib/      libcommrt.so, the CUDA runtime it was built with, Open MPI's
#             and PMIx's libraries, and every library they need that is not
#             the C library's; not NCCL, whose library is too large to carry
#   fallback/ the C++ runtime (libstdc++, libgcc_s) the programs were built
#             against, for a machine whose own is older
#   prefix/   Open MPI's and PMIx's plugins and help files under the paths
#             they have under /usr here, for OPAL_PREFIX and
#             PMIX_INSTALL_PREFIX
#   plans/    FashionNet's plans of every kind (f32, f16, threshold, top-k
#             and chunk selections), made by commopt-opt and
#             commopt-translate from a profile exported here
#   data/     the first TRAIN_IMAGES Fashion-MNIST training images and the
#             whole test set, as the IDX files the example reads
#   BUILD-ID  the commit and the time it was made from
# It stays under 40 MiB (about 30), so that the working tree and it travel together
# (64 MiB). Run after bash scripts/build.sh (with CUDA and NCCL found).
#
# Usage: bench/gpu/bundle.sh
# Environment: BUILD (default build), BUNDLE (default .gpu-bundle),
# TRAIN_IMAGES (default 16384), PYTHON (default /usr/bin/python3).
#
#===----------------------------------------------------------------------===#

set -euo pipefail

source "$(dirname "$0")/../common.sh"
BUNDLE=${BUNDLE:-.gpu-bundle}
TRAIN_IMAGES=${TRAIN_IMAGES:-16384}
DATA=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

PROGRAMS=(
  unittests/Runtime/commrt-gpu-tests
  unittests/Runtime/commrt-gpu-mpi-tests
  unittests/Runtime/commrt-gpu-mpi-device-tests
  unittests/Runtime/commrt-mpi-device-tests
  unittests/Runtime/commrt-mpi-group-tests
  bin/commrt-mpi-device-bench
)
for program in "${PROGRAMS[@]}" lib/libcommrt.so bin/commopt-opt \
  bin/commopt-translate; do
  [[ -e $BUILD/$program ]] || {
    echo "bundle.sh: $BUILD/$program is missing: build with CUDA and NCCL" \
      "first (bash scripts/build.sh)" >&2
    exit 2
  }
done
for tool in mpirun ompi_info; do
  command -v "$tool" >/dev/null || {
    echo "bundle.sh: $tool is missing (bash scripts/install-deps.sh)" >&2
    exit 2
  }
done

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE"/{bin,lib,fallback,prefix,plans,data}

# Open MPI's directories, as it reports them: plugins and help files go
# under prefix/ at the same place relative to its prefix.
ompi_path() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
OMPI_PREFIX=$(ompi_path prefix)
OMPI_PKGLIBDIR=$(ompi_path pkglibdir)
OMPI_PKGDATADIR=$(ompi_path pkgdatadir)
relative() { echo "${1#"$OMPI_PREFIX"/}"; }
for dir in "$OMPI_PKGLIBDIR" "$OMPI_PKGDATADIR"; do
  mkdir -p "$BUNDLE/prefix/$(relative "$dir")"
  cp -rL "$dir/." "$BUNDLE/prefix/$(relative "$dir")/"
done
# PMIx, which Open MPI's launcher loads, has plugins of its own.
PMIX_LIB=$(readlink -f "$(ldconfig -p | awk '/libpmix.so.2 / {print $NF; exit}')")
PMIX_LIBDIR=$(dirname "$PMIX_LIB")
if [[ -d $PMIX_LIBDIR/pmix ]]; then
  mkdir -p "$BUNDLE/prefix/$(relative "$PMIX_LIBDIR")"
  cp -rL "$PMIX_LIBDIR/pmix" "$BUNDLE/prefix/$(relative "$PMIX_LIBDIR")/"
fi
PMIX_SHARE=$(dirname "$PMIX_LIBDIR")/share
[[ -d $PMIX_SHARE ]] &&
  mkdir -p "$BUNDLE/prefix/$(relative "$PMIX_SHARE")" &&
  cp -rL "$PMIX_SHARE/." "$BUNDLE/prefix/$(relative "$PMIX_SHARE")/"

for program in "${PROGRAMS[@]}"; do
  cp "$BUILD/$program" "$BUNDLE/bin/"
done
cp "$BUILD/lib/libcommrt.so" "$BUNDLE/lib/"
cp "$(readlink -f "$(command -v mpirun)")" "$BUNDLE/bin/mpirun"

# Every library the programs, libcommrt and Open MPI's plugins need, but the
# C library's own (the machine's are newer), the CUDA driver's (the
# machine's), NCCL (PyTorch's there) and the fabrics' (InfiniBand, UCX,
# libfabric, PSM): device-check.sh runs shared memory and TCP, and Open MPI
# passes over the plugins whose libraries are missing.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libresolv\.|libcuda\.|libnccl\.|libfabric\.|libuc[mpst]\.|libpsm|libinfinipath\.|libibverbs\.|librdmacm\.|libefa\.|libnl-|libmunge\.)'
find "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/prefix" -type f \( -perm -u+x -o \
  -name '*.so*' \) -print0 |
  xargs -0 ldd 2>/dev/null |
  awk '/=>/ && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $skip || -e $BUNDLE/lib/$name ]] && continue
    cp -L "$path" "$BUNDLE/lib/$name"
  done
# The machine's own C++ runtime serves PyTorch too: these only stand in
# where it is older than what the programs need.
mv "$BUNDLE"/lib/libstdc++.so.6 "$BUNDLE"/lib/libgcc_s.so.1 "$BUNDLE/fallback/"

# FashionNet's plans: its gradient profile on 4 ranks here, then each kind,
# as bench/training plans them (search=false: exactly the options given).
PYTHONPATH=examples/fashion_mnist mpirun -np 4 "$PYTHON" \
  tools/commopt-export/commopt-export.py fashion_mnist:make_model \
  --input-shape 1,28,28 --batch-size 64 --threads 1 --warmup 2 --steps 5 \
  --name fashion-mnist -o "$BUNDLE/plans/profile.json" >/dev/null
PLANS=(
  "f32|fusion=cost"
  "f16|fusion=cost wire=f16"
  "threshold-0.01|sparse=true density=0.01 sparse-select=threshold sparse-exchange=allgather"
  "topk-0.001|sparse=true density=0.001 sparse-select=topk sparse-exchange=hash"
  "chunk-0.01|sparse=true density=0.01 sparse-exchange=chunk sparse-chunk-elements=4096"
)
for entry in "${PLANS[@]}"; do
  name=${entry%%|*}
  "$BUILD/bin/commopt-translate" --import-grad-profile \
    "$BUNDLE/plans/profile.json" |
    "$BUILD/bin/commopt-opt" \
      --comm-optimize="cluster=bench/cluster/emulated-4x1gbit.json device=v100 search=false ${entry#*|}" |
    "$BUILD/bin/commopt-translate" --export-plan -o "$BUNDLE/plans/$name.json"
done

# The data: IDX files whose count says how many images follow.
"$PYTHON" - "$DATA" "$BUNDLE/data" "$TRAIN_IMAGES" <<'PYTHON'
import gzip, shutil, struct, sys
source, target, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
for kind, item_bytes in (("images-idx3", 28 * 28), ("labels-idx1", 1)):
    with gzip.open(f"{source}/train-{kind}-ubyte.gz") as f:
        data = f.read()
    header = 16 if item_bytes > 1 else 8
    count = struct.unpack(">I", data[4:8])[0]
    keep = min(keep, count)
    with gzip.open(f"{target}/train-{kind}-ubyte.gz", "wb") as f:
        f.write(data[:4] + struct.pack(">I", keep) + data[8:header] +
                data[header:header + keep * item_bytes])
    shutil.copy(f"{source}/t10k-{kind}-ubyte.gz", target)
PYTHON

echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes')" \
  "made $(date -u +%Y-%m-%dT%H:%MZ)" >"$BUNDLE/BUILD-ID"
size=$(du -sm "$BUNDLE" | cut -f1)
echo "bundle.sh: $BUNDLE holds ${size} MiB ($(cat "$BUNDLE/BUILD-ID"))"
if ((size > 40)); then
  echo "bundle.sh: over 40 MiB: it would not travel with the tree" >&2
  exit 1
fi
