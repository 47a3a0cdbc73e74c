// RUN: m2n-opt %s -split-input-file | FileCheck %s
// Round trip: what m2n-opt prints it parses back to the same text.
// RUN: m2n-opt %s -split-input-file | m2n-opt -split-input-file | FileCheck %s
// The generic form parses back too.
// RUN: m2n-opt %s -split-input-file -mlir-print-op-generic | m2n-opt -split-input-file | FileCheck %s

// CHECK-LABEL: m2n.refit @disjoint
// CHECK-NEXT:    m2n.mesh @train shape [2, 4] axes ["dp", "tp"] ranks [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK-NEXT:    m2n.mesh @gen shape [4] ranks [8, 9, 10, 11]
// CHECK-NEXT:    %[[W:.*]] = m2n.tensor "layers.0.mlp.up.weight" : tensor<14336x4096xbf16>
// CHECK-NEXT:    m2n.reshard %[[W]] from <@train, [R, S(0)]> to <@gen, [S(0)]> : tensor<14336x4096xbf16>
m2n.refit @disjoint {
  m2n.mesh @train shape [2, 4] axes ["dp", "tp"] ranks [0, 1, 2, 3, 4, 5, 6, 7]
  m2n.mesh @gen shape [4] ranks [8, 9, 10, 11]
  %w = m2n.tensor "layers.0.mlp.up.weight" : tensor<14336x4096xbf16>
  m2n.reshard %w from <@train, [R, S(0)]> to <@gen, [S(0)]> : tensor<14336x4096xbf16>
}

// -----

// Training and serving on the same ranks, in another order.
// CHECK-LABEL: m2n.refit @colocated
// CHECK-NEXT:    m2n.mesh @train shape [4] ranks [0, 1, 2, 3]
// CHECK-NEXT:    m2n.mesh @gen shape [2, 2] ranks [3, 2, 1, 0]
// CHECK-NEXT:    %[[B:.*]] = m2n.tensor "bias" : tensor<10xf32>
// CHECK-NEXT:    m2n.reshard %[[B]] from <@train, [S(0)]> to <@gen, [S(0), S(0)]> : tensor<10xf32>
m2n.refit @colocated {
  m2n.mesh @train shape [4] ranks [0, 1, 2, 3]
  m2n.mesh @gen shape [2, 2] ranks [3, 2, 1, 0]
  %b = m2n.tensor "bias" : tensor<10xf32>
  m2n.reshard %b from <@train, [S(0)]> to <@gen, [S(0), S(0)]> : tensor<10xf32>
}

// -----

// One side on many meshes: two pipeline stages and an expert mesh.
// CHECK-LABEL: m2n.refit @pipeline
// CHECK-NEXT:    m2n.mesh @stage0 shape [2] ranks [0, 1]
// CHECK-NEXT:    m2n.mesh @stage1 shape [2] ranks [2, 3]
// CHECK-NEXT:    m2n.mesh @experts shape [2, 2] axes ["ep", "tp"] ranks [0, 1, 2, 3]
// CHECK-NEXT:    m2n.mesh @gen shape [2, 2, 2] ranks [4, 5, 6, 7, 8, 9, 10, 11]
// CHECK-NEXT:    %[[A:.*]] = m2n.tensor "layers.0.attn.qkv" : tensor<96x64xbf16>
// CHECK-NEXT:    m2n.reshard %[[A]] from <@stage0, [S(1)]> to <@gen, [R, S(0), S(0)]> : tensor<96x64xbf16>
// CHECK-NEXT:    %[[E:.*]] = m2n.tensor "layers.1.experts" : tensor<8x64x32xf8E4M3FN>
// CHECK-NEXT:    m2n.reshard %[[E]] from <@experts, [S(0), S(2)]> to <@gen, [S(0), R, S(1)]> : tensor<8x64x32xf8E4M3FN>
m2n.refit @pipeline {
  m2n.mesh @stage0 shape [2] ranks [0, 1]
  m2n.mesh @stage1 shape [2] ranks [2, 3]
  m2n.mesh @experts shape [2, 2] axes ["ep", "tp"] ranks [0, 1, 2, 3]
  m2n.mesh @gen shape [2, 2, 2] ranks [4, 5, 6, 7, 8, 9, 10, 11]
  %a = m2n.tensor "layers.0.attn.qkv" : tensor<96x64xbf16>
  m2n.reshard %a from <@stage0, [S(1)]> to <@gen, [R, S(0), S(0)]> : tensor<96x64xbf16>
  %e = m2n.tensor "layers.1.experts" : tensor<8x64x32xf8E4M3FN>
  m2n.reshard %e from <@experts, [S(0), S(2)]> to <@gen, [S(0), R, S(1)]> : tensor<8x64x32xf8E4M3FN>
}

// -----

// Every element type that m2n moves, a rank-0 and an empty tensor.
// CHECK-LABEL: m2n.refit @dtypes
// CHECK-COUNT-15: m2n.tensor
// CHECK:         m2n.tensor "scalar" : tensor<f32>
// CHECK-NEXT:    m2n.tensor "empty" : tensor<0x4xf32>
m2n.refit @dtypes {
  m2n.tensor "bf16" : tensor<2xbf16>
  m2n.tensor "f16" : tensor<2xf16>
  m2n.tensor "f32" : tensor<2xf32>
  m2n.tensor "f64" : tensor<2xf64>
  m2n.tensor "f8_e4m3" : tensor<2xf8E4M3FN>
  m2n.tensor "f8_e5m2" : tensor<2xf8E5M2>
  m2n.tensor "i8" : tensor<2xi8>
  m2n.tensor "u8" : tensor<2xui8>
  m2n.tensor "i16" : tensor<2xi16>
  m2n.tensor "u16" : tensor<2xui16>
  m2n.tensor "i32" : tensor<2xi32>
  m2n.tensor "u32" : tensor<2xui32>
  m2n.tensor "i64" : tensor<2xi64>
  m2n.tensor "u64" : tensor<2xui64>
  m2n.tensor "bool" : tensor<2xi1>
  m2n.tensor "scalar" : tensor<f32>
  m2n.tensor "empty" : tensor<0x4xf32>
}

// -----

// The attributes on their own.
// CHECK-LABEL: m2n.refit @attributes
// CHECK-SAME:    layout = #m2n.layout<@m, [R, S(2)]>
// CHECK-SAME:    replicate = #m2n.placement<R>
// CHECK-SAME:    shard = #m2n.placement<S(1)>
m2n.refit @attributes attributes {
    replicate = #m2n.placement<R>, shard = #m2n.placement<S(1)>,
    layout = #m2n.layout<@m, [R, S(2)]>} {
}

// -----

// A decomposed, fused and scheduled refit.
// CHECK-LABEL: m2n.refit @plan attributes {num_steps = 2 : i64, staging_budget = 1024 : i64}
// CHECK-NEXT:    m2n.mesh @train shape [2] ranks [0, 1]
// CHECK-NEXT:    m2n.mesh @gen shape [2] ranks [2, 3]
// CHECK-NEXT:    %[[A:.*]] = m2n.tensor "a" : tensor<8x6xf32>
// CHECK-NEXT:    %[[B:.*]] = m2n.tensor "b" : tensor<8x6xf32>
// CHECK-NEXT:    m2n.transfers %[[A]], %[[B]] from <@train, [S(0)]> to <@gen, [R]> : tensor<8x6xf32> slices {
// CHECK-NEXT:      0 -> 2 [0:4, 0:6]
// CHECK-NEXT:      1 -> 2 [4:4, 0:6]
// CHECK-NEXT:      2 -> 3 [0:8, 0:6] forward round 1
// CHECK-NEXT:      1 -> 1 [4:0, 0:6] round 2
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[C:.*]] = m2n.tensor "c" : tensor<4xbf16>
// CHECK-NEXT:    m2n.transfers %[[C]] from <@train, [R]> to <@train, [R]> : tensor<4xbf16> slices {}
// CHECK-NEXT:    m2n.messages {
// CHECK-NEXT:      step 0 : 0 -> 2 bytes 192 parts [g0 s0 m0..2]
// CHECK-NEXT:      step 0 : 1 -> 2 bytes 192 parts [g0 s1 m0..1, g0 s1 m1..2]
// CHECK-NEXT:      step 1 : 2 -> 3 bytes 192 zero_copy parts [g0 s2 m0..1]
m2n.refit @plan attributes {num_steps = 2, staging_budget = 1024} {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %a = m2n.tensor "a" : tensor<8x6xf32>
  %b = m2n.tensor "b" : tensor<8x6xf32>
  m2n.transfers %a, %b from <@train, [S(0)]> to <@gen, [R]> : tensor<8x6xf32> slices {
    0 -> 2 [0:4, 0:6]
    1 -> 2 [4:4, 0:6]
    2 -> 3 [0:8, 0:6] forward round 1
    1 -> 1 [4:0, 0:6] round 2
  }
  %c = m2n.tensor "c" : tensor<4xbf16>
  m2n.transfers %c from <@train, [R]> to <@train, [R]> : tensor<4xbf16> slices {}
  m2n.messages {
    step 0 : 0 -> 2 bytes 192 parts [g0 s0 m0..2]
    step 0 : 1 -> 2 bytes 192 parts [g0 s1 m0..1, g0 s1 m1..2]
    step 1 : 2 -> 3 bytes 192 zero_copy parts [g0 s2 m0..1]
  }
}

// -----

// Fan-out slices, to every holder of the destination box, round-trip.
// CHECK-LABEL: m2n.refit @fan_out
// CHECK:         m2n.transfers %{{.*}} from <@train, [S(0)]> to <@gen, [R]> : tensor<8xf32> slices {
// CHECK-NEXT:      0 -> * [0:4]
// CHECK-NEXT:      1 -> * [4:4]
// CHECK-NEXT:    }
m2n.refit @fan_out {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %w = m2n.tensor "w" : tensor<8xf32>
  m2n.transfers %w from <@train, [S(0)]> to <@gen, [R]> : tensor<8xf32> slices {
    0 -> * [0:4]
    1 -> * [4:4]
  }
}
