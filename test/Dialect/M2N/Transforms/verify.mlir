// RUN: m2n-opt %s -split-input-file -m2n-verify -verify-diagnostics

// Hand-broken plans: each is a compiler bug that m2n-verify must catch.

// expected-error @+1 {{the plan of refit @missing is unsound: tensor 'w': rank 2 receives 2 of the 4 elements of its destination box [0:4]}}
m2n.refit @missing {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [1] ranks [2]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [S(0)]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 2 [0:2]
  }
}

// -----

// expected-error @+2 {{the plan of refit @twice is unsound: tensor 'w': slice [1:3] from rank 1 to rank 2 (round 0): rank 1 does not hold it in the source layout (it holds [2:2])}}
// expected-note @+1 {{tensor 'w': rank 2 receives [1:1] twice: in slice [0:2] from rank 0 to rank 2 (round 0) and in slice [1:3] from rank 1 to rank 2 (round 0)}}
m2n.refit @twice {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [1] ranks [2]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [S(0)]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 2 [0:2]
    1 -> 2 [1:3]
  }
}

// -----

// expected-error @+1 {{the plan of refit @not_holder is unsound: tensor 'w': slice [2:2] from rank 0 to rank 2 (round 0): rank 0 does not hold it in the source layout (it holds [0:2])}}
m2n.refit @not_holder {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [1] ranks [2]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [S(0)]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 2 [0:2]
    0 -> 2 [2:2]
  }
}

// -----

// expected-error @+1 {{the plan of refit @early_relay is unsound: message 1 (step 0, rank 1 -> rank 2): forwards [0:4] of tensor 'w', which reaches rank 1 only in step 0 (message 0 (step 0, rank 0 -> rank 1))}}
m2n.refit @early_relay attributes {num_steps = 1, staging_budget = 1024} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [2] ranks [1, 2]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
    1 -> 2 [0:4] forward round 1
  }
  m2n.messages {
    step 0 : 0 -> 1 bytes 16 parts [g0 s0 m0..1]
    step 0 : 1 -> 2 bytes 16 parts [g0 s1 m0..1]
  }
}

// -----

// expected-error @+1 {{the plan of refit @bytes is unsound: message 0 (step 0, rank 0 -> rank 1): has 12 bytes but its parts hold 16}}
m2n.refit @bytes attributes {num_steps = 1, staging_budget = 1024} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
  }
  m2n.messages {
    step 0 : 0 -> 1 bytes 12 parts [g0 s0 m0..1]
  }
}

// -----

// expected-error @+2 {{the plan of refit @staging is unsound: rank 0 stages 16 bytes in step 0, over the budget of 8}}
// expected-note @+1 {{rank 1 stages 16 bytes in step 0, over the budget of 8}}
m2n.refit @staging attributes {num_steps = 1, staging_budget = 8} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
  }
  m2n.messages {
    step 0 : 0 -> 1 bytes 16 parts [g0 s0 m0..1]
  }
}

// -----

// expected-error @+1 {{the plan of refit @unsent is unsound: tensor 'a': slice [0:4] from rank 0 to rank 1 (round 0): tensor 'b' travels in no message}}
m2n.refit @unsent attributes {num_steps = 1, staging_budget = 1024} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %a = m2n.tensor "a" : tensor<4xf32>
  %b = m2n.tensor "b" : tensor<4xf32>
  m2n.transfers %a, %b from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
  }
  m2n.messages {
    step 0 : 0 -> 1 bytes 16 parts [g0 s0 m0..1]
  }
}

// -----

m2n.refit @bad_part {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.transfers %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
  }
  // expected-error @+1 {{message 0: part 0 names a slice or member that group 0 does not have}}
  m2n.messages {
    step 0 : 0 -> 1 bytes 16 parts [g0 s3 m0..1]
  }
}

// -----

m2n.refit @not_decomposed {
  m2n.mesh @m shape [1] ranks [0]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.reshard %a from <@m, [R]> to <@m, [R]> : tensor<4xf32>
}
// expected-error @-5 {{refit @not_decomposed has reshards left; run m2n-decompose first}}

// -----

// Fan-out slices are checked as the slices they stand for: rank 2 holds
// the source box and copies it locally, which is sound; rank 3 would get
// it from rank 1, which is not on the source mesh.
// expected-error @+1 {{the plan of refit @fan_out is unsound: tensor 'w': slice [0:4] from rank 1 to rank 3 (round 0): rank 1 is not on the source mesh 'train'}}
m2n.refit @fan_out {
  m2n.mesh @train shape [2] ranks [0, 2]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %w = m2n.tensor "w" : tensor<4xf32>
  m2n.transfers %w from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    1 -> * [0:4]
  }
}
