// RUN: m2n-opt %s -split-input-file -m2n-compile="staging-bytes=64" | FileCheck %s
// RUN: m2n-opt %s -split-input-file -m2n-compile="staging-bytes=64 report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: not m2n-opt %s -split-input-file -m2n-decompose -m2n-fuse -m2n-schedule=staging-bytes=16 2>&1 | FileCheck %s --check-prefix=TIGHT

// Three 32-byte packed messages leave rank 0, and its staging budget is 64
// bytes: two fit in a step, so there are two steps. Spread to balance rank
// 0's time, the first goes to step 0, the second to step 1, where rank 0
// is less busy, and the third to step 0 again.
// REPORT:      remark: refit @budget: 2 steps, 3 messages, 96 wire bytes, 0 local copy bytes, staging peak 64 bytes; predicted 70.0 us, lower bound 30.0 us (2.33x)
// CHECK-LABEL: m2n.refit @budget attributes {num_steps = 2 : i64, schedule_topology = {{.*}}, staging_budget = 64 : i64}
// CHECK:           step 0 : 0 -> 1 bytes 32 parts [g0 s0 m0..1]
// CHECK-NEXT:      step 0 : 0 -> 3 bytes 32 parts [g0 s2 m0..1]
// CHECK-NEXT:      step 1 : 0 -> 2 bytes 32 parts [g0 s1 m0..1]
// TIGHT: error: cannot schedule refit @budget: message from rank 0 to rank 1 (tensor "w") of 32 bytes needs more staging than the budget of 16 bytes per rank
m2n.refit @budget {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [3] ranks [1, 2, 3]
  %w = m2n.tensor "w" : tensor<4x6xf32>
  m2n.reshard %w from <@train, [R]> to <@gen, [S(1)]> : tensor<4x6xf32>
}

// -----

// Rank 0 sends each 16 MiB part of the tensor once, and the owners pass
// their parts to each other in a later step than they arrived. Of the
// schedules tried (forwards overlapping the source's sends over several
// step counts, or rounds one after another), the model finds the two
// rounds in turn fastest here. The parts are whole rows, zero-copy, so the
// tiny budget does not bind.
// REPORT:      remark: refit @relay: 2 steps, 16 messages, 268435456 wire bytes, 0 local copy bytes, staging peak 0 bytes
// CHECK-LABEL: m2n.refit @relay attributes {num_steps = 2 : i64
// CHECK:           step 0 : 0 -> 1 bytes 16777216 zero_copy parts [g0 s0 m0..1]
// CHECK-NEXT:      step 0 : 0 -> 2 bytes 16777216 zero_copy parts [g0 s1 m0..1]
// CHECK-NEXT:      step 0 : 0 -> 3 bytes 16777216 zero_copy parts [g0 s2 m0..1]
// CHECK-NEXT:      step 0 : 0 -> 4 bytes 16777216 zero_copy parts [g0 s3 m0..1]
// CHECK-NEXT:      step 1 : 1 -> 2 bytes 16777216 zero_copy parts [g0 s7 m0..1]
// CHECK:           step 1 : 4 -> 3 bytes 16777216 zero_copy parts [g0 s12 m0..1]
m2n.refit @relay {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [4] ranks [1, 2, 3, 4]
  %w = m2n.tensor "w" : tensor<4096x4096xf32>
  m2n.reshard %w from <@train, [R]> to <@gen, [R]> : tensor<4096x4096xf32>
}
