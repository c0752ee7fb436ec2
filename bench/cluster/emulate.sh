#!/usr/bin/env bash
#===- emulate.sh - An emulated cluster of MPI hosts on one machine --------===#
#
# Builds a small "cluster" out of network namespaces so that MPI traffic
# between hosts goes through a real TCP stack and a shaped link:
#
#   commopt-ns0 .. commopt-ns<N-1>   one namespace per host ("node"), with
#                                    R ranks each (default 1); the ranks of
#                                    one host share memory (OpenMPI's vader),
#                                    as the GPUs of a node share NVLink
#   commopt-p<i> <-> commopt-h<i>    a veth pair per host, the h end on a bridge
#   commopt-br0                      the bridge (the "switch"), with an address
#                                    of its own so that mpirun, which runs in
#                                    the root namespace, reaches the daemons
#
# Both ends of every veth are shaped with tc's tbf (netem and fq are not
# available here, so no latency is injected: small messages pay only the TCP
# stack's own cost). All addresses are on a private test subnet that is not
# this machine's (checked before anything is created); nothing is routed
# anywhere else.
#
# Usage:
#   emulate.sh up N RATE [R]   create N hosts shaped at RATE (1gbit, 10gbit,
#                              or any tc rate such as 500mbit), R ranks each
#   emulate.sh down            delete everything this script creates
#   emulate.sh run N RATE [R] -- PROGRAM [ARGS...]
#                              up, then mpirun -np N*R PROGRAM ARGS... with R
#                              consecutive ranks per host (ranks 0..R-1 on
#                              the first), then down (also on failure and on
#                              Ctrl-C)
#   emulate.sh mpirun-args     print the mpirun flags for a cluster that is up
#
# Environment: COMMOPT_CLUSTER_SUBNET (default 10.77.0), the first three
# octets of the /24 to use; COMMOPT_CLUSTER_MTU (default 1500, Ethernet's;
# 9000 for jumbo frames), the links' MTU: TCP over 1500-byte frames carries
# at most 1448 / 1514 = 95.6% of the shaped rate as payload, over 9000-byte
# frames 99.3%; COMMOPT_CLUSTER_DIR (default
# /tmp/commopt-emulated-cluster), where the hostfile and rsh agent go.
# Needs root (ip netns, tc).
#
#===----------------------------------------------------------------------===#

# errtrace: the ERR trap of `up` must also fire inside its functions.
set -Eeuo pipefail

SUBNET=${COMMOPT_CLUSTER_SUBNET:-10.77.0}
MTU=${COMMOPT_CLUSTER_MTU:-1500}
STATE_DIR=${COMMOPT_CLUSTER_DIR:-/tmp/commopt-emulated-cluster}
BRIDGE=commopt-br0
# The bridge takes .254; hosts take .1 .. .N, so at most 253 hosts.
BRIDGE_ADDR=$SUBNET.254
MAX_HOSTS=253

die() {
  echo "emulate.sh: $*" >&2
  exit 2
}

usage() {
  sed -n '/^# Usage:/,/^# Needs root/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Turns a preset or tc rate into the rate tc gets; rejects anything tc would
# misread, so that a typo fails here and not half-way through `up`.
parse_rate() {
  case "$1" in
  [0-9]*bit | [0-9]*bps) echo "$1" ;;
  *) die "bad rate '$1' (expected e.g. 1gbit, 10gbit, 500mbit)" ;;
  esac
}

parse_count() {
  [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= MAX_HOSTS)) ||
    die "bad host count '$1' (expected 1..$MAX_HOSTS)"
  echo "$1"
}

# Ranks per host: enough for a node of 8 GPUs' worth, more than this
# machine's cores already.
parse_ranks_per_host() {
  [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= 64)) ||
    die "bad ranks per host '$1' (expected 1..64)"
  echo "$1"
}

# Refuses a subnet this machine already uses, so that the test hosts can never
# shadow or leak into a real network.
check_subnet_unused() {
  if ip -4 addr show | grep -v "$BRIDGE" | grep -q "inet $SUBNET\."; then
    die "subnet $SUBNET.0/24 is in use on this machine; set COMMOPT_CLUSTER_SUBNET"
  fi
  if ip -4 route show | grep -v "$BRIDGE" | grep -q "^$SUBNET\.0/24"; then
    die "subnet $SUBNET.0/24 is routed on this machine; set COMMOPT_CLUSTER_SUBNET"
  fi
}

# Deletes every namespace, veth and the bridge this script may have made.
# Idempotent and quiet: it runs from traps, possibly after a partial `up`.
down() {
  local ns link
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^commopt-ns' || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns delete "$ns" 2>/dev/null || true
  done
  # Deleting a namespace deletes its veth end and with it the pair; this
  # catches host ends left by a failure between creating and moving a pair.
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' |
    cut -d@ -f1 | grep '^commopt-' || true); do
    ip link delete "$link" 2>/dev/null || true
  done
  rm -rf "$STATE_DIR"
}

up() {
  local n rate per i ns
  n=$(parse_count "$1")
  rate=$(parse_rate "$2")
  per=$(parse_ranks_per_host "${3:-1}")
  [[ "$MTU" =~ ^[0-9]+$ ]] && ((MTU >= 576 && MTU <= 9000)) ||
    die "bad COMMOPT_CLUSTER_MTU '$MTU' (expected 576..9000)"
  [[ $(id -u) == 0 ]] || die "needs root (ip netns, tc)"
  if ip netns list | grep -q '^commopt-ns'; then
    die "a cluster is already up; run '$0 down' first"
  fi
  check_subnet_unused

  mkdir -p "$STATE_DIR"
  ip link add "$BRIDGE" mtu "$MTU" type bridge
  ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up

  : >"$STATE_DIR/hostfile"
  for ((i = 0; i < n; i++)); do
    ns=commopt-ns$i
    ip netns add "$ns"
    ip link add "commopt-h$i" mtu "$MTU" type veth peer name "commopt-p$i" \
      mtu "$MTU"
    ip link set "commopt-p$i" netns "$ns"
    ip link set "commopt-h$i" master "$BRIDGE"
    ip link set "commopt-h$i" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$SUBNET.$((i + 1))/24" dev "commopt-p$i"
    ip -n "$ns" link set "commopt-p$i" up
    # Both directions: the host end shapes what the bridge sends into the
    # namespace, the namespace end what the rank sends out. burst 256kb is
    # enough for 10gbit at the kernel's timer granularity.
    tc qdisc add dev "commopt-h$i" root tbf rate "$rate" burst 256kb latency 50ms
    ip netns exec "$ns" tc qdisc add dev "commopt-p$i" root tbf rate "$rate" \
      burst 256kb latency 50ms
    # R slots per host: the ranks of one namespace share memory, those of
    # different namespaces only the shaped link.
    echo "$SUBNET.$((i + 1)) slots=$per" >>"$STATE_DIR/hostfile"
  done

  # mpirun starts its daemons through this "rsh": OpenMPI passes ssh-style
  # options, then the host, then the command line. The host's last octet
  # names the namespace, and the command runs there through sh, as ssh would.
  cat >"$STATE_DIR/rsh-agent" <<EOF
#!/bin/sh
# Generated by bench/cluster/emulate.sh: runs "host command..." inside the
# network namespace of that host.
while [ \$# -gt 0 ]; do
  case "\$1" in
    -o|-p|-l|-i|-F) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=\$1; shift
case "\$host" in
  $SUBNET.*) ;;
  *) echo "rsh-agent: unknown host \$host" >&2; exit 1 ;;
esac
index=\$((\${host##*.} - 1))
ns=commopt-ns\$index
# Every namespace looks like a host of its own to OpenMPI: a hostname of its
# own (a UTS namespace), or the daemons all call themselves the same and
# mpirun cannot tell them apart, and a TMPDIR of its own, or their session
# directories collide.
mkdir -p "$STATE_DIR/tmp/\$ns"
exec ip netns exec "\$ns" unshare --uts sh -c \
  'hostname "\$0"; export TMPDIR="\$1"; shift; exec sh -c "\$*"' \
  "\$ns" "$STATE_DIR/tmp/\$ns" "\$@"
EOF
  chmod +x "$STATE_DIR/rsh-agent"
  echo "$n $rate $per" >"$STATE_DIR/cluster"
  echo "emulate.sh: $n hosts x $per ranks at $rate on $SUBNET.0/24 (hostfile $STATE_DIR/hostfile)" >&2
}

# The flags that put R consecutive ranks on each host and keep MPI's traffic
# between hosts (the TCP BTL and the daemons' out-of-band channel) on the
# test subnet; ranks of one host talk through shared memory.
mpirun_args() {
  [[ -f "$STATE_DIR/cluster" ]] || die "no cluster is up"
  local n per
  n=$(awk '{print $1}' "$STATE_DIR/cluster")
  per=$(awk '{print $3}' "$STATE_DIR/cluster")
  local args=(-np "$((n * per))" --hostfile "$STATE_DIR/hostfile"
    --map-by "ppr:$per:node"
    --mca plm_rsh_agent "$STATE_DIR/rsh-agent"
    --mca btl tcp,self,vader
    --mca btl_vader_single_copy_mechanism none
    --mca btl_tcp_if_include "$SUBNET.0/24"
    --mca oob_tcp_if_include "$SUBNET.0/24"
    # OpenMPI busy-polls while it waits; with more ranks than cores a spinning
    # rank holds its core for a whole timeslice, and a 4-byte allreduce on 4
    # ranks over 2 cores took 16-32 ms instead of ~80 us. Yielding fixes it.
    --mca mpi_yield_when_idle 1
    # The emulated hosts are one machine: its cores serve every rank, which
    # the training bridge's measured timeline records (host_ranks).
    -x "COMMOPT_HOST_RANKS=$((n * per))")
  [[ $(id -u) == 0 ]] && args+=(--allow-run-as-root)
  printf '%s\n' "${args[@]}"
}

run() {
  local n rate per=1
  [[ $# -ge 3 ]] || usage
  n=$1 rate=$2
  if [[ "$3" == "--" ]]; then
    shift 3
  else
    [[ $# -ge 4 && "$4" == "--" ]] || usage
    per=$3
    shift 4
  fi
  [[ $# -ge 1 ]] || usage
  # Tear down whatever happens: normal exit, a failing mpirun (set -e), or a
  # signal. The signal traps exit so that the EXIT trap runs once.
  trap down EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  up "$n" "$rate" "$per"
  local flags
  mapfile -t flags < <(mpirun_args)
  mpirun "${flags[@]}" "$@"
}

[[ $# -ge 1 ]] || usage
cmd=$1
shift
case "$cmd" in
up)
  [[ $# -eq 2 || $# -eq 3 ]] || usage
  # A failed `up` leaves nothing behind.
  trap 'down' ERR
  up "$@"
  trap - ERR
  ;;
down) down ;;
run) run "$@" ;;
mpirun-args) mpirun_args ;;
*) usage ;;
esac
