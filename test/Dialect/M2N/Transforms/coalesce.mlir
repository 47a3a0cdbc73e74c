// RUN: m2n-opt %s -split-input-file -m2n-coalesce -verify-diagnostics | FileCheck %s

// Adjacent boxes between the same ranks merge, repeatedly, into one.
// CHECK-LABEL: m2n.refit @adjacent
// CHECK:         slices {
// CHECK-NEXT:      1 -> 5 [0:8, 0:4]
// CHECK-NEXT:    }
m2n.refit @adjacent {
  m2n.mesh @train shape [4] ranks [0, 1, 2, 3]
  m2n.mesh @gen shape [1] ranks [5]
  %w = m2n.tensor "w" : tensor<8x4xf32>
  m2n.transfers %w from <@train, [R]> to <@gen, [R]> : tensor<8x4xf32> slices {
    1 -> 5 [0:2, 0:4]
    1 -> 5 [2:2, 0:4]
    1 -> 5 [4:4, 0:2]
    1 -> 5 [4:4, 2:2]
  }
}

// -----

// Nothing merges across senders, rounds or origins, nor boxes that touch
// but do not line up.
// CHECK-LABEL: m2n.refit @apart
// CHECK:         slices {
// CHECK-NEXT:      0 -> 5 [0:2, 0:4]
// CHECK-NEXT:      1 -> 5 [2:2, 0:4]
// CHECK-NEXT:      1 -> 5 [4:2, 0:2]
// CHECK-NEXT:      1 -> 5 [6:2, 0:4]
// CHECK-NEXT:      1 -> 5 [4:2, 2:2] round 1
// CHECK-NEXT:    }
m2n.refit @apart {
  m2n.mesh @train shape [4] ranks [0, 1, 2, 3]
  m2n.mesh @gen shape [1] ranks [5]
  %w = m2n.tensor "w" : tensor<8x4xf32>
  m2n.transfers %w from <@train, [R]> to <@gen, [R]> : tensor<8x4xf32> slices {
    0 -> 5 [0:2, 0:4]
    1 -> 5 [2:2, 0:4]
    1 -> 5 [4:2, 0:2]
    1 -> 5 [6:2, 0:4]
    1 -> 5 [4:2, 2:2] round 1
  }
}

// -----

// Fan-out slices are written out first as the slices they stand for: one
// to every holder of the destination box, a local copy where the holder
// has the box in its source shard (rank 1); then those merge.
// CHECK-LABEL: m2n.refit @fan_out
// CHECK:         slices {
// CHECK-NEXT:      1 -> 1 [0:4]
// CHECK-NEXT:      0 -> 2 [0:4]
// CHECK-NEXT:      0 -> 3 [0:4]
// CHECK-NEXT:    }
m2n.refit @fan_out {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [3] ranks [1, 2, 3]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> * [0:2]
    0 -> * [2:2]
  }
}

// -----

// expected-error @+1 {{refit @straddles: group 0 has a fan-out slice whose box lies in no one destination box}}
m2n.refit @straddles {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [2] ranks [1, 2]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [R]> to <@gen, [S(0)]> : tensor<4xf32> slices {
    0 -> * [1:2]
  }
}
