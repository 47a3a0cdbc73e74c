// RUN: m2n-opt %s -split-input-file -m2n-decompose -m2n-balance | FileCheck %s
// RUN: m2n-opt %s -split-input-file -m2n-decompose -m2n-balance=min-split-bytes=0 | FileCheck %s --check-prefix=SPLIT
// RUN: m2n-opt %s -split-input-file -m2n-decompose -m2n-balance="split=false min-split-bytes=0" | FileCheck %s --check-prefix=NOSPLIT

// Four replicas of a row-sharded tensor feed eight new ranks: decomposition
// alone would make ranks 0 and 1 send everything; balancing spreads the rows
// over all eight holders.
// CHECK-LABEL: m2n.refit @replicas
// CHECK:         slices {
// CHECK-NEXT:      0 -> 8 [0:1, 0:1024]
// CHECK-NEXT:      2 -> 9 [1:1, 0:1024]
// CHECK-NEXT:      4 -> 10 [2:1, 0:1024]
// CHECK-NEXT:      6 -> 11 [3:1, 0:1024]
// CHECK-NEXT:      1 -> 12 [4:1, 0:1024]
// CHECK-NEXT:      3 -> 13 [5:1, 0:1024]
// CHECK-NEXT:      5 -> 14 [6:1, 0:1024]
// CHECK-NEXT:      7 -> 15 [7:1, 0:1024]
// CHECK-NEXT:    }
m2n.refit @replicas {
  m2n.mesh @train shape [4, 2] ranks [0, 1, 2, 3, 4, 5, 6, 7]
  m2n.mesh @gen shape [8] ranks [8, 9, 10, 11, 12, 13, 14, 15]
  %w = m2n.tensor "w" : tensor<8x1024xf32>
  m2n.reshard %w from <@train, [R, S(0)]> to <@gen, [S(0)]> : tensor<8x1024xf32>
}

// -----

// One region with four holders: split among them when allowed and large
// enough, else sent whole by one.
// CHECK-LABEL: m2n.refit @split
// CHECK:         slices {
// CHECK-NEXT:      0 -> 4 [0:8, 0:4]
// CHECK-NEXT:    }
// SPLIT-LABEL: m2n.refit @split
// SPLIT:         slices {
// SPLIT-NEXT:      0 -> 4 [0:2, 0:4]
// SPLIT-NEXT:      1 -> 4 [2:2, 0:4]
// SPLIT-NEXT:      2 -> 4 [4:2, 0:4]
// SPLIT-NEXT:      3 -> 4 [6:2, 0:4]
// SPLIT-NEXT:    }
// NOSPLIT-LABEL: m2n.refit @split
// NOSPLIT:         slices {
// NOSPLIT-NEXT:      0 -> 4 [0:8, 0:4]
// NOSPLIT-NEXT:    }
m2n.refit @split {
  m2n.mesh @train shape [4] ranks [0, 1, 2, 3]
  m2n.mesh @gen shape [1] ranks [4]
  %w = m2n.tensor "w" : tensor<8x4xf32>
  m2n.reshard %w from <@train, [R]> to <@gen, [R]> : tensor<8x4xf32>
}

// -----

// Balancing weighs every tensor of the refit: the largest region goes to
// rank 0, the next two to rank 1, which then carries 12 bytes to rank 0's 16.
// CHECK-LABEL: m2n.refit @across_tensors
// CHECK:         tensor<4xf32> slices {
// CHECK-NEXT:      0 -> 2 [0:4]
// CHECK:         tensor<4xbf16> slices {
// CHECK-NEXT:      1 -> 2 [0:4]
// CHECK:         tensor<2xbf16> slices {
// CHECK-NEXT:      1 -> 2 [0:2]
m2n.refit @across_tensors {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [1] ranks [2]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.reshard %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32>
  %b = m2n.tensor "b" : tensor<4xbf16>
  m2n.reshard %b from <@train, [R]> to <@gen, [R]> : tensor<4xbf16>
  %c = m2n.tensor "c" : tensor<2xbf16>
  m2n.reshard %c from <@train, [R]> to <@gen, [R]> : tensor<2xbf16>
}
