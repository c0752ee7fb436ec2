// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json device=%S/Inputs/shared-host-device.json report=none" \
// RUN:   | FileCheck %s --check-prefix=RING-RATE
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json device=%S/Inputs/shared-host-gathered-device.json report=none" \
// RUN:   | FileCheck %s --check-prefix=GATHERED
// RUN: commopt-opt %s --comm-estimate="cluster=%S/Inputs/flat-4.json device=%S/Inputs/shared-host-collective-device.json report=none" \
// RUN:   | FileCheck %s --check-prefix=COLLECTIVE
// RUN: commopt-translate --export-timeline %s --timeline-cluster=%S/Inputs/flat-4.json \
// RUN:   --timeline-device=%S/Inputs/shared-host-gathered-device.json | FileCheck %s --check-prefix=TIMELINE
// RUN: not commopt-opt %s -o /dev/null --comm-estimate="device=%S/Inputs/bad-host-cpu-gathered.json" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// host_cpu.ns_per_gathered_byte prices the bytes that MPI's own
// collectives send (the sparse exchanges'), ns_per_sent_byte the others
// (the runtime's ring). On flat-4 a rank sends 1,572,864 B in the ring
// allreduce of 1 MiB (2 x 3/4 of it) and 2,184 B in the rows allgather:
// 3/4 of the 4 ranks' counts (32 B) and of their 10 rows as records of an
// 8-byte index and 64 B (2,880 B). A rank's CPU: half a core while all 4
// are busy on the 2 cores, for the 8000 us of compute and the allgather's
// 3.0406665625 us of local work (4001.52033328125 us), 1000 us a step,
// and the transport:
//  - without ns_per_gathered_byte, every byte at 1 ns: 1575.048 us, in all
//    6576.56833328125 us;
//  - with it at 3 ns, the allgather's 2,184 B cost 6.552 us: 6580.93633328125
//    us, 2 x 2.184 us more.
// RING-RATE: @step({{.*}}comm.estimate = {{{.*}}cpu_us = 6576.56833{{[0-9]*}} : f64
// GATHERED: @step({{.*}}comm.estimate = {{{.*}}cpu_us = 6580.93633{{[0-9]*}} : f64

// host_cpu.us_per_gathered_collective adds its CPU for each of the
// collectives MPI runs for the exchange (the allgather of rows runs two:
// the counts and the records), and host_cpu.local_cpu_scale scales the
// local work where cpu_scale scales the compute and step_us: 0.5 x (1.5 x
// 8000 + 1.2 x 3.0406665625) + 1.5 x 1000 + 1572.864 + 6.552 + 2 x 10 =
// 9101.2403999375 us.
// COLLECTIVE: @step({{.*}}comm.estimate = {{{.*}}cpu_us = 9101.24039{{[0-9]*}} : f64

// The timeline says which bytes MPI's own collectives send and how many
// collectives MPI runs, and says nothing of it for the others.
// TIMELINE: {"name":"dense","cat":"communication",{{.*}}"sent_bytes":1572864,"alone_host_bound_us":{{[0-9.]+}},"members"
// TIMELINE: {"name":"rows","cat":"communication",{{.*}}"sent_bytes":2184,"gathered_bytes":2184,"gathered_collectives":2,"alone_host_bound_us":{{[0-9.]+}},"members"

// BAD: error: comm-estimate: option 'device': {{.*}}bad-host-cpu-gathered.json: invalid device description: expected a non-negative number at device.host_cpu.ns_per_gathered_byte

func.func @step(%g: tensor<1000x16xf32>) -> (tensor<1000x16xf32>, tensor<262144xf32>) {
  %d = comm.compute () {cost_us = 8000.0 : f64, layer = 0 : i64, name = "backward", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %r = comm.allreduce %d {name = "dense", reduce = #comm.reduce<sum>} : tensor<262144xf32> -> tensor<262144xf32>
  %s = comm.sparse_allreduce %g {comm.coo_gradient, density = 0.01,
      select = #comm.select<rows>, exchange = #comm.exchange<allgather>,
      name = "rows"} : tensor<1000x16xf32> -> tensor<1000x16xf32>
  return %s, %r : tensor<1000x16xf32>, tensor<262144xf32>
}
