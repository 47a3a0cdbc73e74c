// RUN: m2n-opt %s -split-input-file -m2n-decompose | FileCheck %s
// RUN: m2n-opt %s -split-input-file -m2n-decompose='fan-out=0' | FileCheck %s --check-prefix=PER-RECEIVER

// Replicated source to sharded destination: each destination rank takes its
// rows from the first holder.
// CHECK-LABEL: m2n.refit @replicate_to_shard
// CHECK:         m2n.transfers %{{.*}} from <@train, [R]> to <@gen, [S(0)]> : tensor<8x4xf32> slices {
// CHECK-NEXT:      0 -> 2 [0:4, 0:4]
// CHECK-NEXT:      0 -> 3 [4:4, 0:4]
// CHECK-NEXT:    }
// CHECK-NOT:     m2n.reshard
m2n.refit @replicate_to_shard {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %w = m2n.tensor "w" : tensor<8x4xf32>
  m2n.reshard %w from <@train, [R]> to <@gen, [S(0)]> : tensor<8x4xf32>
}

// -----

// Sharded source to replicated destination: every destination rank gathers
// every shard, one fan-out slice per shard (to every holder of the box), or
// with fan-out=0 one slice per shard and receiver.
// CHECK-LABEL: m2n.refit @shard_to_replicate
// CHECK:         m2n.transfers %{{.*}} from <@train, [S(0)]> to <@gen, [R]> : tensor<6xbf16> slices {
// CHECK-NEXT:      0 -> * [0:3]
// CHECK-NEXT:      1 -> * [3:3]
// CHECK-NEXT:    }
// PER-RECEIVER-LABEL: m2n.refit @shard_to_replicate
// PER-RECEIVER:         slices {
// PER-RECEIVER-NEXT:      0 -> 2 [0:3]
// PER-RECEIVER-NEXT:      1 -> 2 [3:3]
// PER-RECEIVER-NEXT:      0 -> 3 [0:3]
// PER-RECEIVER-NEXT:      1 -> 3 [3:3]
// PER-RECEIVER-NEXT:    }
m2n.refit @shard_to_replicate {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %w = m2n.tensor "w" : tensor<6xbf16>
  m2n.reshard %w from <@train, [S(0)]> to <@gen, [R]> : tensor<6xbf16>
}

// -----

// A change of sharded dimension: each destination column block is cut by
// every source row block.
// CHECK-LABEL: m2n.refit @change_dim
// CHECK:         slices {
// CHECK-NEXT:      0 -> 2 [0:2, 0:2]
// CHECK-NEXT:      1 -> 2 [2:2, 0:2]
// CHECK-NEXT:      0 -> 3 [0:2, 2:2]
// CHECK-NEXT:      1 -> 3 [2:2, 2:2]
// CHECK-NEXT:    }
m2n.refit @change_dim {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %w = m2n.tensor "w" : tensor<4x4xf32>
  m2n.reshard %w from <@train, [S(0)]> to <@gen, [S(1)]> : tensor<4x4xf32>
}

// -----

// Nested, uneven and empty shards: 10 rows on a 2 x 2 mesh with
// [S(0), S(0)] hold 3, 2, 3, 2 rows; 5 over 4 gives 2, 2, 1, 0, and the
// empty shard receives nothing.
// CHECK-LABEL: m2n.refit @nested_uneven
// CHECK:         from <@train, [S(0), S(0)]> to <@gen, [S(0)]> : tensor<10xi8> slices {
// CHECK-NEXT:      0 -> 4 [0:3]
// CHECK-NEXT:      1 -> 4 [3:2]
// CHECK-NEXT:      2 -> 5 [5:3]
// CHECK-NEXT:      3 -> 5 [8:2]
// CHECK-NEXT:    }
// CHECK:         from <@train, [S(0), R]> to <@gen4, [S(0)]> : tensor<5xi8> slices {
// CHECK-NEXT:      0 -> 4 [0:2]
// CHECK-NEXT:      0 -> 5 [2:1]
// CHECK-NEXT:      2 -> 5 [3:1]
// CHECK-NEXT:      2 -> 6 [4:1]
// CHECK-NEXT:    }
m2n.refit @nested_uneven {
  m2n.mesh @train shape [2, 2] ranks [0, 1, 2, 3]
  m2n.mesh @gen shape [2] ranks [4, 5]
  m2n.mesh @gen4 shape [4] ranks [4, 5, 6, 7]
  %a = m2n.tensor "a" : tensor<10xi8>
  m2n.reshard %a from <@train, [S(0), S(0)]> to <@gen, [S(0)]> : tensor<10xi8>
  %b = m2n.tensor "b" : tensor<5xi8>
  m2n.reshard %b from <@train, [S(0), R]> to <@gen4, [S(0)]> : tensor<5xi8>
}

// -----

// Training and serving on the same ranks: what a rank already holds is a
// local copy (sender = receiver) and is never sent; a fan-out slice stands
// for those copies too.
// CHECK-LABEL: m2n.refit @colocated
// CHECK:         from <@all, [S(0)]> to <@all, [R]> : tensor<4xf32> slices {
// CHECK-NEXT:      0 -> * [0:2]
// CHECK-NEXT:      1 -> * [2:2]
// CHECK-NEXT:    }
// PER-RECEIVER-LABEL: m2n.refit @colocated
// PER-RECEIVER:         from <@all, [S(0)]> to <@all, [R]> : tensor<4xf32> slices {
// PER-RECEIVER-NEXT:      0 -> 0 [0:2]
// PER-RECEIVER-NEXT:      1 -> 0 [2:2]
// PER-RECEIVER-NEXT:      0 -> 1 [0:2]
// PER-RECEIVER-NEXT:      1 -> 1 [2:2]
// PER-RECEIVER-NEXT:    }
// CHECK:         from <@all, [S(0)]> to <@swapped, [S(0)]> : tensor<4xf32> slices {
// CHECK-NEXT:      1 -> 0 [2:2]
// CHECK-NEXT:      0 -> 1 [0:2]
// CHECK-NEXT:    }
m2n.refit @colocated {
  m2n.mesh @all shape [2] ranks [0, 1]
  m2n.mesh @swapped shape [2] ranks [1, 0]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.reshard %a from <@all, [S(0)]> to <@all, [R]> : tensor<4xf32>
  %b = m2n.tensor "b" : tensor<4xf32>
  m2n.reshard %b from <@all, [S(0)]> to <@swapped, [S(0)]> : tensor<4xf32>
}

// -----

// A 3-D source mesh with a replicated middle axis: each box has two
// holders and the first sends.
// CHECK-LABEL: m2n.refit @mesh_3d
// CHECK:         slices {
// CHECK-NEXT:      0 -> 8 [0:2, 0:2]
// CHECK-NEXT:      1 -> 8 [0:2, 2:2]
// CHECK-NEXT:      4 -> 8 [2:2, 0:2]
// CHECK-NEXT:      5 -> 8 [2:2, 2:2]
// CHECK-NEXT:    }
m2n.refit @mesh_3d {
  m2n.mesh @train shape [2, 2, 2] ranks [0, 1, 2, 3, 4, 5, 6, 7]
  m2n.mesh @gen shape [1] ranks [8]
  %w = m2n.tensor "w" : tensor<4x4xf16>
  m2n.reshard %w from <@train, [S(0), R, S(1)]> to <@gen, [R]> : tensor<4x4xf16>
}

// -----

// Tensors with the same shape, element type and layouts share one
// decomposition; a different element type gets its own.
// CHECK-LABEL: m2n.refit @shared
// CHECK:         %[[A:.*]] = m2n.tensor "a"
// CHECK:         %[[B:.*]] = m2n.tensor "b"
// CHECK:         %[[C:.*]] = m2n.tensor "c"
// CHECK:         m2n.transfers %[[A]], %[[C]] from <@train, [S(0)]> to <@gen, [S(0)]> : tensor<4xf32> slices {
// CHECK-NEXT:      0 -> 2 [0:2]
// CHECK-NEXT:      1 -> 3 [2:2]
// CHECK-NEXT:    }
// CHECK-NEXT:    m2n.transfers %[[B]] from <@train, [S(0)]> to <@gen, [S(0)]> : tensor<4xbf16> slices {
m2n.refit @shared {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.reshard %a from <@train, [S(0)]> to <@gen, [S(0)]> : tensor<4xf32>
  %b = m2n.tensor "b" : tensor<4xbf16>
  m2n.reshard %b from <@train, [S(0)]> to <@gen, [S(0)]> : tensor<4xbf16>
  %c = m2n.tensor "c" : tensor<4xf32>
  m2n.reshard %c from <@train, [S(0)]> to <@gen, [S(0)]> : tensor<4xf32>
}
