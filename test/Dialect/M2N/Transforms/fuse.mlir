// RUN: m2n-opt %s -split-input-file -m2n-decompose -m2n-fuse | FileCheck %s
// RUN: m2n-opt %s -split-input-file -m2n-decompose -m2n-fuse=bucket-bytes=24 | FileCheck %s --check-prefix=SMALL

// The slices of every tensor between one pair of ranks travel in one
// message: both members of the [4, 4] group and the [6] tensor.
// CHECK-LABEL: m2n.refit @across_tensors
// CHECK:           step 0 : 0 -> 2 bytes 70 parts [g0 s0 m0..2, g1 s0 m0..1]
// CHECK-NEXT:      step 0 : 0 -> 3 bytes 6 parts [g1 s2 m0..1]
// CHECK-NEXT:      step 0 : 1 -> 2 bytes 6 parts [g1 s1 m0..1]
// CHECK-NEXT:      step 0 : 1 -> 3 bytes 70 parts [g0 s1 m0..2, g1 s3 m0..1]
// CHECK-NEXT:  }
m2n.refit @across_tensors {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %a = m2n.tensor "a" : tensor<4x4xf32>
  m2n.reshard %a from <@train, [S(0)]> to <@gen, [S(0)]> : tensor<4x4xf32>
  %b = m2n.tensor "b" : tensor<4x4xf32>
  m2n.reshard %b from <@train, [S(0)]> to <@gen, [S(0)]> : tensor<4x4xf32>
  %c = m2n.tensor "c" : tensor<6xbf16>
  m2n.reshard %c from <@train, [S(0)]> to <@gen, [R]> : tensor<6xbf16>
}

// -----

// A [2, 4] slice of a [2, 8] source shard is two runs there, so it is
// packed; with a 24-byte bucket its 32 bytes split into rows, each then
// one run on both sides and at least half a bucket: zero-copy.
// CHECK-LABEL: m2n.refit @split
// CHECK:           step 0 : 0 -> 2 bytes 32 parts [g0 s0 m0..1]
// SMALL-LABEL: m2n.refit @split
// SMALL:         slices {
// SMALL-NEXT:      0 -> 2 [0:1, 0:4]
// SMALL-NEXT:      0 -> 2 [1:1, 0:4]
// SMALL-NEXT:      1 -> 2 [2:1, 0:4]
// SMALL-NEXT:      1 -> 2 [3:1, 0:4]
// SMALL-NEXT:      0 -> 3 [0:1, 4:4]
// SMALL-NEXT:      0 -> 3 [1:1, 4:4]
// SMALL-NEXT:      1 -> 3 [2:1, 4:4]
// SMALL-NEXT:      1 -> 3 [3:1, 4:4]
// SMALL-NEXT:    }
// SMALL-NEXT:    m2n.messages {
// SMALL-NEXT:      step 0 : 0 -> 2 bytes 16 zero_copy parts [g0 s0 m0..1]
// SMALL-NEXT:      step 0 : 0 -> 2 bytes 16 zero_copy parts [g0 s1 m0..1]
m2n.refit @split {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %a = m2n.tensor "a" : tensor<4x8xf32>
  m2n.reshard %a from <@train, [S(0)]> to <@gen, [S(1)]> : tensor<4x8xf32>
}

// -----

// A slice that is one run in both shards moves straight between the
// tensors, in pieces of at most a bucket that are each one run too; with
// the default bucket of tens of MiB, 2 KiB slices are packed instead.
// CHECK-LABEL: m2n.refit @zero_copy
// CHECK:           step 0 : 0 -> 2 bytes 4096 parts [g0 s0 m0..1, g1 s0 m0..1]
// SMALL-LABEL: m2n.refit @zero_copy
// SMALL:           step 0 : 0 -> 2 bytes 24 zero_copy parts [g0 s0 m0..1]
// SMALL-NEXT:      step 0 : 0 -> 2 bytes 24 zero_copy parts [g0 s1 m0..1]
// SMALL-NEXT:      step 0 : 0 -> 2 bytes 16 zero_copy parts [g0 s2 m0..1]
// SMALL-NOT:     bytes 2048
m2n.refit @zero_copy {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %a = m2n.tensor "a" : tensor<64x16xf32>
  m2n.reshard %a from <@train, [S(0)]> to <@gen, [S(0)]> : tensor<64x16xf32>
  %b = m2n.tensor "b" : tensor<16x64xf32>
  m2n.reshard %b from <@train, [S(1)]> to <@gen, [S(1)]> : tensor<16x64xf32>
}
