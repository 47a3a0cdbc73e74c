// RUN: m2n-opt %s -split-input-file -m2n-coalesce | FileCheck %s

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
