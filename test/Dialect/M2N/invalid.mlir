// RUN: m2n-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

m2n.refit @r {
  // expected-error @+1 {{'train': mesh rank must be between 1 and 8, got 0}}
  m2n.mesh @train shape [] ranks []
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'train': mesh rank must be between 1 and 8, got 9}}
  m2n.mesh @train shape [1, 1, 1, 1, 1, 1, 1, 1, 1] ranks [0]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'train': mesh dimension 1 must be positive, got 0}}
  m2n.mesh @train shape [2, 0] ranks []
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'train': mesh dimension 0 must be positive, got -2}}
  m2n.mesh @train shape [-2] ranks [0, 1]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'train': mesh shape [2, 4] needs 8 ranks, got 7}}
  m2n.mesh @train shape [2, 4] ranks [0, 1, 2, 3, 4, 5, 6]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'gen': rank -1 at index 1 is negative}}
  m2n.mesh @gen shape [2] ranks [0, -1]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'gen': rank 5 appears twice (indices 0 and 2)}}
  m2n.mesh @gen shape [3] ranks [5, 6, 5]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'gen': 1 axis names for a mesh of rank 2}}
  m2n.mesh @gen shape [2, 2] axes ["dp"] ranks [0, 1, 2, 3]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'gen': axis name 'tp' appears twice}}
  m2n.mesh @gen shape [2, 2] axes ["tp", "tp"] ranks [0, 1, 2, 3]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'gen': axis 1 has an empty name}}
  m2n.mesh @gen shape [2, 2] axes ["tp", ""] ranks [0, 1, 2, 3]
}

// -----

m2n.refit @r {
  // expected-note @+1 {{see existing symbol definition here}}
  m2n.mesh @gen shape [2] ranks [0, 1]
  // expected-error @+1 {{redefinition of symbol named 'gen'}}
  m2n.mesh @gen shape [2] ranks [2, 3]
}

// -----

m2n.refit @r {
  // expected-note @+1 {{first declared here}}
  %a = m2n.tensor "w" : tensor<4xf32>
  // expected-error @+1 {{tensor "w" is declared twice}}
  %b = m2n.tensor "w" : tensor<4xf32>
}

// -----

m2n.refit @r {
  // expected-error @+1 {{tensor name must not be empty}}
  %a = m2n.tensor "" : tensor<4xf32>
}

// -----

m2n.refit @r {
  // expected-error @+1 {{tensor "w": element type 'complex<f32>' is not one that m2n moves}}
  %a = m2n.tensor "w" : tensor<4xcomplex<f32>>
}

// -----

m2n.refit @r {
  // expected-error @+1 {{tensor "w": element type 'si32' is not one that m2n moves}}
  %a = m2n.tensor "w" : tensor<4xsi32>
}

// -----

m2n.refit @r {
  // expected-error @+1 {{tensor "w": tensor rank must be between 0 and 8, got 9}}
  %a = m2n.tensor "w" : tensor<1x1x1x1x1x1x1x1x1xf32>
}

// -----

m2n.refit @r {
  // expected-error @+1 {{must be statically shaped tensor of any type values}}
  %a = m2n.tensor "w" : tensor<?xf32>
}

// -----

m2n.refit @r {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %a = m2n.tensor "w" : tensor<4xf32>
  // expected-error @+1 {{tensor "w": source mesh @nowhere is not a 'm2n.mesh' of this refit}}
  m2n.reshard %a from <@nowhere, [R]> to <@gen, [R]> : tensor<4xf32>
}

// -----

m2n.refit @r {
  m2n.mesh @train shape [2] ranks [0, 1]
  %a = m2n.tensor "w" : tensor<4xf32>
  // expected-error @+1 {{tensor "w": destination mesh @gen is not a 'm2n.mesh' of this refit}}
  m2n.reshard %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32>
}

// -----

m2n.refit @r {
  m2n.mesh @train shape [2, 2] ranks [0, 1, 2, 3]
  m2n.mesh @gen shape [2] ranks [4, 5]
  %a = m2n.tensor "w" : tensor<4xf32>
  // expected-error @+1 {{tensor "w": source layout on mesh @train: expected 2 placements, one per mesh axis, got 1}}
  m2n.reshard %a from <@train, [S(0)]> to <@gen, [R]> : tensor<4xf32>
}

// -----

m2n.refit @r {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %a = m2n.tensor "w" : tensor<4x4xf32>
  // expected-error @+1 {{tensor "w": destination layout on mesh @gen: placement 0 shards dimension 2 but the tensor has rank 2}}
  m2n.reshard %a from <@train, [R]> to <@gen, [S(2)]> : tensor<4x4xf32>
}

// -----

m2n.refit @r {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  // expected-error @+1 {{tensor "w" is resharded 2 times; a refit moves each tensor once}}
  %a = m2n.tensor "w" : tensor<4xf32>
  m2n.reshard %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32>
  m2n.reshard %a from <@train, [R]> to <@gen, [S(0)]> : tensor<4xf32>
}

// -----

m2n.refit @r {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %a = m2n.tensor "w" : tensor<4xf32>
  // expected-error @+1 {{tensor "w": source mesh @a is not a 'm2n.mesh' of this refit}}
  m2n.reshard %a from <@a, [R]> to <@gen, [R]> : tensor<4xf32>
  // A symbol that is not a mesh.
  m2n.refit @a {
  }
}

// -----

m2n.refit @r {
  m2n.mesh @train shape [2] ranks [0, 1]
  %a = "test.weights"() : () -> tensor<4xf32>
  // expected-error @+1 {{operand must be defined by 'm2n.tensor'}}
  m2n.reshard %a from <@train, [R]> to <@train, [R]> : tensor<4xf32>
}

// -----

m2n.refit @r {
  // expected-error @+1 {{expected placement 'R' or 'S(<dim>)'}}
  m2n.mesh @train shape [2] ranks [0, 1] {p = #m2n.placement<X>}
}

// -----

m2n.refit @r {
  // expected-error @+1 {{shard dimension must be non-negative, got -3}}
  m2n.mesh @train shape [2] ranks [0, 1] {p = #m2n.placement<S(-3)>}
}

// -----

// expected-error @+1 {{'m2n.mesh' op expects parent op 'm2n.refit'}}
m2n.mesh @loose shape [2] ranks [0, 1]

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  %b = m2n.tensor "b" : tensor<2xf32>
  // expected-error @+1 {{moves tensors of different types 'tensor<4xf32>' and 'tensor<2xf32>'}}
  "m2n.transfers"(%a, %b) <{src = #m2n.layout<@m, [R]>, dst = #m2n.layout<@m, [R]>, slices = array<i64>}> : (tensor<4xf32>, tensor<2xf32>) -> ()
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  // expected-error @+1 {{moves no tensor}}
  "m2n.transfers"() <{src = #m2n.layout<@m, [R]>, dst = #m2n.layout<@m, [R]>, slices = array<i64>}> : () -> ()
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  // expected-error @+1 {{slice table of 5 values is not a whole number of rows of 6}}
  "m2n.transfers"(%a) <{src = #m2n.layout<@m, [R]>, dst = #m2n.layout<@m, [R]>, slices = array<i64: 0, 1, 0, 0, 0>}> : (tensor<4xf32>) -> ()
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  // expected-error @+1 {{slice 0 forwards in round 0; forwarding needs a round of at least 1}}
  m2n.transfers %a from <@m, [R]> to <@m, [S(0)]> : tensor<4xf32> slices {
    0 -> 1 [0:2] forward
  }
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  // expected-error @+1 {{slice 1 has box 2:-2 in dimension 0, outside the tensor's 0:4}}
  m2n.transfers %a from <@m, [R]> to <@m, [S(0)]> : tensor<4xf32> slices {
    0 -> 1 [0:2]
    0 -> 1 [2:-2]
  }
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  // expected-error @+1 {{slice 0 has origin 3; expected 0 or 1}}
  "m2n.transfers"(%a) <{src = #m2n.layout<@m, [R]>, dst = #m2n.layout<@m, [R]>, slices = array<i64: 0, 1, 3, 0, 0, 4>}> : (tensor<4xf32>) -> ()
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4x4xf32>
  m2n.transfers %a from <@m, [R]> to <@m, [S(0)]> : tensor<4x4xf32> slices {
    // expected-error @+1 {{slice box has 1 dimensions, the tensor 2}}
    0 -> 1 [0:2]
  }
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  // expected-error @+1 {{tensor "a": destination layout on mesh @m: placement 0 shards dimension 1 but the tensor has rank 1}}
  m2n.transfers %a from <@m, [R]> to <@m, [S(1)]> : tensor<4xf32> slices {}
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  // expected-error @+1 {{tensor "a" is resharded 2 times; a refit moves each tensor once}}
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.reshard %a from <@m, [R]> to <@m, [R]> : tensor<4xf32>
  m2n.transfers %a from <@m, [R]> to <@m, [R]> : tensor<4xf32> slices {}
}

// -----

m2n.refit @r {
  // expected-error @+1 {{sends from rank 1 to itself}}
  m2n.messages {
    step 0 : 1 -> 1 bytes 4 parts [g0 s0 m0..1]
  }
}

// -----

m2n.refit @r {
  // expected-error @+1 {{part 0 has a negative index or an empty member range}}
  m2n.messages {
    step 0 : 0 -> 1 bytes 4 parts [g0 s0 m1..1]
  }
}

// -----

m2n.refit @r {
  // expected-error @+1 {{is zero-copy but has 2 parts}}
  m2n.messages {
    step 0 : 0 -> 1 bytes 4 zero_copy parts [g0 s0 m0..1, g0 s1 m0..1]
  }
}

// -----

m2n.refit @r {
  // expected-error @+1 {{message 0 has no part}}
  m2n.messages {
    step 0 : 0 -> 1 bytes 4 parts []
  }
}

// -----

m2n.refit @r {
  // expected-error @+1 {{has a negative step or byte count}}
  m2n.messages {
    step -1 : 0 -> 1 bytes 4 parts [g0 s0 m0..1]
  }
}

// -----

m2n.refit @r {
  // expected-error @+2 {{expected 'm<begin>..<end>'}}
  m2n.messages {
    step 0 : 0 -> 1 bytes 4 parts [g0 s0 x]
  }
}

// -----

// expected-error @+1 {{'m2n.refit' op @r: more than one m2n.messages}}
m2n.refit @r {
  m2n.messages {
    step 0 : 0 -> 1 bytes 4 parts [g0 s0 m0..1]
  }
  m2n.messages {
    step 0 : 1 -> 0 bytes 4 parts [g0 s1 m0..1]
  }
}

// -----

m2n.refit @r {
  // expected-error @+1 {{tables of 5 and 4 values are not whole numbers of rows of 6 and 4}}
  "m2n.messages"() <{table = array<i64: 0, 0, 1, 4, 0>, parts = array<i64: 0, 0, 0, 1>}> : () -> ()
}

// -----

m2n.refit @r {
  // expected-error @+1 {{message 0 has 2 parts, but 1 are left in the parts table}}
  "m2n.messages"() <{table = array<i64: 0, 0, 1, 4, 0, 2>, parts = array<i64: 0, 0, 0, 1>}> : () -> ()
}

// -----

m2n.refit @r {
  // expected-error @+1 {{the parts table has 1 parts that no message names}}
  "m2n.messages"() <{table = array<i64: 0, 0, 1, 4, 0, 1>, parts = array<i64: 0, 0, 0, 1, 0, 1, 0, 1>}> : () -> ()
}

// -----

m2n.refit @r {
  // expected-error @+1 {{message 0 has zero-copy flag 2; expected 0 or 1}}
  "m2n.messages"() <{table = array<i64: 0, 0, 1, 4, 2, 1>, parts = array<i64: 0, 0, 0, 1>}> : () -> ()
}

// -----

m2n.refit @r {
  // expected-error @+1 {{message 1 sends from rank 2 to itself}}
  m2n.messages {
    step 0 : 0 -> 1 bytes 4 parts [g0 s0 m0..1]
    step 0 : 2 -> 2 bytes 4 parts [g0 s1 m0..1]
  }
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  // expected-error @+1 {{slice 0 goes to every holder (*) but is not read from a source shard in round 0}}
  m2n.transfers %a from <@m, [R]> to <@m, [R]> : tensor<4xf32> slices {
    0 -> * [0:4] forward round 1
  }
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  // expected-error @+1 {{slice 0 goes to every holder (*) but is not read from a source shard in round 0}}
  m2n.transfers %a from <@m, [R]> to <@m, [R]> : tensor<4xf32> slices {
    0 -> * [0:4] round 2
  }
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %a = m2n.tensor "a" : tensor<4xf32>
  // expected-error @+1 {{slice 0: rank -1 is negative}}
  "m2n.transfers"(%a) <{src = #m2n.layout<@m, [R]>, dst = #m2n.layout<@m, [R]>, slices = array<i64: -1, -1, 0, 0, 0, 4>}> : (tensor<4xf32>) -> ()
}
