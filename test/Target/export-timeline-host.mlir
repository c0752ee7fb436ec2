// RUN: commopt-translate --export-timeline %s \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json \
// RUN:   --timeline-device=%S/../Transforms/Inputs/shared-host-device.json \
// RUN:   | FileCheck %s --check-prefix=SHARED
// RUN: commopt-translate --export-timeline %s \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json \
// RUN:   --timeline-device=%S/../Transforms/Inputs/shared-host-timed-alone-scaled-device.json \
// RUN:   | FileCheck %s --check-prefix=SCALED
// RUN: commopt-translate --export-timeline %s \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json \
// RUN:   --timeline-device=%S/../Transforms/Inputs/shared-host-timed-alone-local-device.json \
// RUN:   | FileCheck %s --check-prefix=LOCAL
// RUN: commopt-translate --export-timeline %s \
// RUN:   --timeline-cluster=%S/../Transforms/Inputs/two-ranks-shared-channels.json \
// RUN:   | FileCheck %s --check-prefix=NO-HOST

// Where the device describes its host, every collective's event carries
// the host's bound on it run alone by ranks in step (alone_host_bound_us):
// the cores' time for the ranks' CPU in it (its local work, scaled as the
// host's sharing scales CPU work, and its transport's), plus its time on
// the network less the cores' time for the transport in that.
//
// shared-host: 4 ranks on 2 cores, 1 ns of CPU per byte sent. The 1 MiB
// allreduce (1034 us, no local work) needs 1048.576 us of transport CPU a
// rank, 2097.152 us of the 2 cores, more than its network time: the bound
// is the cores'.
// SHARED: "name":"w",{{.*}}"dur":1034,{{.*}}"local_us":0,"sent_bytes":1048576,"alone_host_bound_us":2097.152,
//
// The rows exchange (207.875 us, of which 171.845 us local work, priced at
// half a core a rank: 4 ranks timed together on 2 cores) sends 6175.273
// bytes: CPU 0.5 x 171.845 + 6.175 = 92.098 us a rank, 184.195 us of the
// cores, plus its network time, 207.875 - 171.845 = 36.030 us, less the
// cores' time for the transport, 12.351: 207.875 us, its own time.
// SHARED: "name":"embedding.weight",{{.*}}"dur":207.87502{{[0-9]*}},{{.*}}"local_us":171.84448{{[0-9]*}},"sent_bytes":6175.2734375,"gathered_bytes":6175.2734375,"gathered_collectives":5,"alone_host_bound_us":207.87502{{[0-9]*}},
//
// shared-host-timed-alone-scaled: the work timed by one rank alone (a
// whole core), scaled by 1.5 as the ranks share the cores, and 0.25 ns of
// CPU per byte. The allreduce: 262.144 us of transport CPU a rank, 524.288
// of the cores, less than its network time: the bound is the network's,
// 1034 us. The rows exchange: 1.5 x 171.845 + 1.544 = 259.311 us a rank,
// 518.621 us of the cores, plus 36.030 - 3.088 = 32.943 us: 551.564 us.
// SCALED: "name":"w",{{.*}}"alone_host_bound_us":1034,
// SCALED: "name":"embedding.weight",{{.*}}"alone_host_bound_us":551.56398{{[0-9]*}},
//
// shared-host-timed-alone-local: the same, with the local work scaled by
// local_cpu_scale 1.1 instead, and 20 us of CPU for each of the 5
// collectives MPI runs for the hash exchange. The allreduce runs none:
// still 1034 us. The rows exchange: 1.1 x 171.845 + 1.544 + 100 = 290.573
// us a rank, 581.145 us of the cores, and the transport's 203.088 us of
// the cores cover its network time: 581.145 us.
// LOCAL: "name":"w",{{.*}}"alone_host_bound_us":1034,
// LOCAL: "name":"embedding.weight",{{.*}}"gathered_collectives":5,"alone_host_bound_us":581.145{{[0-9]*}},
//
// Without a host, no bound.
// NO-HOST-NOT: alone_host_bound_us

func.func @blocking() -> tensor<262144xf32> {
  %g = comm.compute () {cost_us = 8000.0 : f64, layer = 0 : i64, name = "backward", phase = #comm.phase<backward>} : () -> tensor<262144xf32>
  %r = comm.allreduce %g {name = "w", reduce = #comm.reduce<avg>} : tensor<262144xf32> -> tensor<262144xf32>
  comm.compute () {cost_us = 2000.0 : f64, name = "other", phase = #comm.phase<backward>} : () -> ()
  return %r : tensor<262144xf32>
}

func.func @rows(%g: tensor<1000x64xf32>) -> tensor<1000x64xf32> {
  %0 = comm.sparse_allreduce %g
      {density = 0.015625, select = #comm.select<rows>,
       exchange = #comm.exchange<hash>, reduce = #comm.reduce<avg>,
       name = "embedding.weight"}
      : tensor<1000x64xf32> -> tensor<1000x64xf32>
  return %0 : tensor<1000x64xf32>
}
