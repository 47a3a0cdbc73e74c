// RUN: not m2n-translate --m2n-to-plan %s -split-input-file -o %t 2>&1 | FileCheck %s
// Nothing is written when the export fails.
// RUN: not ls %t

// CHECK: error: refit @not_scheduled is not scheduled; run m2n-compile first
m2n.refit @not_scheduled {
  m2n.mesh @m shape [1] ranks [0]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.reshard %a from <@m, [R]> to <@m, [R]> : tensor<4xf32>
}

// -----

// CHECK: error: the plan of refit @unsound is unsound: tensor 'a': rank 1 receives 2 of the 4 elements of its destination box [0:4]
m2n.refit @unsound attributes {num_steps = 1, staging_budget = 1024} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.transfers %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:2]
  }
  m2n.messages {
    step 0 : 0 -> 1 bytes 8 parts [g0 s0 m0..1]
  }
}

// -----

// CHECK: error: expected exactly one 'm2n.refit' to export
m2n.refit @one {}
m2n.refit @two {}

// -----

// A plan of an earlier stage passes m2n-verify but is not exported: its
// slices would travel in no message.
// CHECK: error: the plan of refit @unfused is unsound: {{.*}}travels in no message
m2n.refit @unfused attributes {staging_budget = 1024} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.transfers %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
  }
}

// -----

// A refit of no meshes verifies, but a plan file holds at least one rank.
// CHECK: error: the plan of refit @no_ranks is unsound: the plan has no ranks (a refit needs a mesh)
m2n.refit @no_ranks attributes {staging_budget = 1024} {
}
