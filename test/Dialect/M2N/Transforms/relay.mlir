// Every rank on a node of its own, so every message crosses a 46 GB/s NIC.
// Chains and trees only:
// RUN: m2n-opt %s -split-input-file -m2n-decompose -m2n-balance -m2n-relay="topology=%S/Inputs/one-rank-per-node.json chunk-bytes=16777216 exchange=false" | FileCheck %s
// With exchanges:
// RUN: m2n-opt %s -split-input-file -m2n-decompose -m2n-balance -m2n-relay="topology=%S/Inputs/one-rank-per-node.json" | FileCheck %s --check-prefix=EXCHANGE

// One source and four replicas of a 64 MiB tensor: sending it four times
// would keep rank 0's link busy four times as long. Instead rank 0 sends
// each 16 MiB chunk once and the replicas forward it along a chain; chunk c
// reaches hop h in round c + h - 1, so the hops overlap.
// With exchanges, rank 0 sends each of four 16 MiB parts once, to its
// owner, and each owner passes its part to the three others in round 1.
// EXCHANGE-LABEL: m2n.refit @chain
// EXCHANGE:         slices {
// EXCHANGE-NEXT:      0 -> 1 [0:1024, 0:4096]
// EXCHANGE-NEXT:      0 -> 2 [1024:1024, 0:4096]
// EXCHANGE-NEXT:      0 -> 3 [2048:1024, 0:4096]
// EXCHANGE-NEXT:      0 -> 4 [3072:1024, 0:4096]
// EXCHANGE-NEXT:      2 -> 1 [1024:1024, 0:4096] forward round 1
// EXCHANGE-NEXT:      3 -> 1 [2048:1024, 0:4096] forward round 1
// EXCHANGE-NEXT:      4 -> 1 [3072:1024, 0:4096] forward round 1
// EXCHANGE-NEXT:      1 -> 2 [0:1024, 0:4096] forward round 1
// EXCHANGE:           3 -> 4 [2048:1024, 0:4096] forward round 1
// EXCHANGE-NEXT:    }
// EXCHANGE-LABEL: m2n.refit @small
// EXCHANGE:         slices {
// EXCHANGE-NEXT:      0 -> * [0:32, 0:32]
// EXCHANGE-NEXT:    }
// CHECK-LABEL: m2n.refit @chain
// CHECK:         slices {
// CHECK-NEXT:      0 -> 1 [0:1024, 0:4096]
// CHECK-NEXT:      0 -> 1 [1024:1024, 0:4096] round 1
// CHECK-NEXT:      1 -> 2 [0:1024, 0:4096] forward round 1
// CHECK-NEXT:      0 -> 1 [2048:1024, 0:4096] round 2
// CHECK-NEXT:      1 -> 2 [1024:1024, 0:4096] forward round 2
// CHECK-NEXT:      2 -> 3 [0:1024, 0:4096] forward round 2
// CHECK-NEXT:      0 -> 1 [3072:1024, 0:4096] round 3
// CHECK-NEXT:      1 -> 2 [2048:1024, 0:4096] forward round 3
// CHECK-NEXT:      2 -> 3 [1024:1024, 0:4096] forward round 3
// CHECK-NEXT:      3 -> 4 [0:1024, 0:4096] forward round 3
// CHECK-NEXT:      1 -> 2 [3072:1024, 0:4096] forward round 4
// CHECK-NEXT:      2 -> 3 [2048:1024, 0:4096] forward round 4
// CHECK-NEXT:      3 -> 4 [1024:1024, 0:4096] forward round 4
// CHECK-NEXT:      2 -> 3 [3072:1024, 0:4096] forward round 5
// CHECK-NEXT:      3 -> 4 [2048:1024, 0:4096] forward round 5
// CHECK-NEXT:      3 -> 4 [3072:1024, 0:4096] forward round 6
// CHECK-NEXT:    }
m2n.refit @chain {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [4] ranks [1, 2, 3, 4]
  %w = m2n.tensor "w" : tensor<4096x4096xf32>
  m2n.reshard %w from <@train, [R]> to <@gen, [R]> : tensor<4096x4096xf32>
}

// -----

// A 4 KiB tensor costs little more than a message's latency: forwarding
// would only add hops, so the source sends directly: the fan-out slice
// from decompose stays as it is, for m2n-coalesce to write out.
// CHECK-LABEL: m2n.refit @small
// CHECK:         slices {
// CHECK-NEXT:      0 -> * [0:32, 0:32]
// CHECK-NEXT:    }
m2n.refit @small {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [4] ranks [1, 2, 3, 4]
  %w = m2n.tensor "w" : tensor<32x32xf32>
  m2n.reshard %w from <@train, [R]> to <@gen, [R]> : tensor<32x32xf32>
}

// -----

// Four data-parallel replicas of a two-way tensor-parallel layout: each
// tensor-parallel shard leaves the source side once and travels down the
// replicas that need it, one chain per shard.
// CHECK-LABEL: m2n.refit @tp_replicas
// CHECK:         slices {
// CHECK-NEXT:      0 -> 2 [0:2048, 0:4096]
// CHECK-NEXT:      1 -> 3 [4096:2048, 0:4096]
// CHECK-NEXT:      0 -> 2 [2048:2048, 0:4096] round 1
// CHECK-NEXT:      1 -> 3 [6144:2048, 0:4096] round 1
// CHECK-NEXT:      2 -> 4 [0:2048, 0:4096] forward round 1
// CHECK-NEXT:      3 -> 5 [4096:2048, 0:4096] forward round 1
// CHECK-NEXT:      2 -> 4 [2048:2048, 0:4096] forward round 2
// CHECK-NEXT:      3 -> 5 [6144:2048, 0:4096] forward round 2
// CHECK-NEXT:      4 -> 6 [0:2048, 0:4096] forward round 2
// CHECK-NEXT:      5 -> 7 [4096:2048, 0:4096] forward round 2
// CHECK-NEXT:      4 -> 6 [2048:2048, 0:4096] forward round 3
// CHECK-NEXT:      5 -> 7 [6144:2048, 0:4096] forward round 3
// CHECK-NEXT:      6 -> 8 [0:2048, 0:4096] forward round 3
// CHECK-NEXT:      7 -> 9 [4096:2048, 0:4096] forward round 3
// CHECK-NEXT:      6 -> 8 [2048:2048, 0:4096] forward round 4
// CHECK-NEXT:      7 -> 9 [6144:2048, 0:4096] forward round 4
// CHECK-NEXT:    }
m2n.refit @tp_replicas {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [4, 2] axes ["dp", "tp"] ranks [2, 3, 4, 5, 6, 7, 8, 9]
  %w = m2n.tensor "w" : tensor<8192x4096xbf16>
  m2n.reshard %w from <@train, [S(0)]> to <@gen, [R, S(0)]> : tensor<8192x4096xbf16>
}
