// RUN: m2n-opt %s -split-input-file -verify-diagnostics

// IR a user or a fuzzer can write that would crash a pass, make the
// compiler allocate by a rank id, or let the export drop or invent work:
// each is a diagnostic.

// A generic-form tensor without its name.
"m2n.refit"() <{sym_name = "r"}> ({
  // expected-error @+1 {{requires attribute 'name'}}
  %0 = "m2n.tensor"() : () -> tensor<2xf32>
}) : () -> ()

// -----

m2n.refit @r {
  // expected-error @+1 {{'m': rank 9223372036854775807 at index 1 is beyond the largest rank id, 1048575}}
  m2n.mesh @m shape [2] ranks [0, 9223372036854775807]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{'m': rank 2147483648 at index 0 is beyond the largest rank id, 1048575}}
  m2n.mesh @m shape [1] ranks [2147483648]
}

// -----

m2n.refit @r {
  // expected-error @+1 {{tensor name contains a NUL byte}}
  %w = m2n.tensor "a\00b" : tensor<4xf32>
}

// -----

m2n.refit @r {
  // expected-error @+1 {{tensor name "__metadata__" is the key safetensors files keep for metadata}}
  %w = m2n.tensor "__metadata__" : tensor<4xf32>
}

// -----

m2n.refit @r {
  // expected-error @+1 {{tensor "w": the tensor's size in bytes overflows 64 bits}}
  %w = m2n.tensor "w" : tensor<2305843009213693952x2xf64>
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %w = m2n.tensor "w" : tensor<4xf32>
  // expected-error @+1 {{slice 0: rank 4611686018427387904 is beyond the largest rank id, 1048575}}
  m2n.transfers %w from <@m, [S(0)]> to <@m, [R]> : tensor<4xf32> slices {
    0 -> 4611686018427387904 [0:2]
  }
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %w = m2n.tensor "w" : tensor<4xf32>
  // expected-error @+1 {{slice 0 has box 9223372036854775807:1 in dimension 0, outside the tensor's 0:4}}
  m2n.transfers %w from <@m, [S(0)]> to <@m, [R]> : tensor<4xf32> slices {
    0 -> 1 [9223372036854775807:1]
  }
}

// -----

m2n.refit @r {
  m2n.mesh @m shape [2] ranks [0, 1]
  %w = m2n.tensor "w" : tensor<4xf32>
  // expected-error @+1 {{slice 0 is in round 4294967297, outside [0, 2^31)}}
  m2n.transfers %w from <@m, [S(0)]> to <@m, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:2] round 4294967297
  }
}

// -----

// num_steps 0 with messages: the export would drop every message.
// expected-error @+1 {{@zero: num_steps is 0, but message 0 is in step 0}}
m2n.refit @zero attributes {num_steps = 0, staging_budget = 1024} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.transfers %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
  }
  m2n.messages {
    step 0 : 0 -> 1 bytes 16 parts [g0 s0 m0..1]
  }
}

// -----

// A step count near 2^63: tables by step would follow it.
// expected-error @+1 {{@huge: num_steps is 9223372036854775807 with 1 messages}}
m2n.refit @huge attributes {num_steps = 9223372036854775807, staging_budget = 1024} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.transfers %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
  }
  m2n.messages {
    step 0 : 0 -> 1 bytes 16 parts [g0 s0 m0..1]
  }
}

// -----

// A message outside the steps.
// expected-error @+1 {{@outside: num_steps is 1, but message 0 is in step 3}}
m2n.refit @outside attributes {num_steps = 1, staging_budget = 1024} {
  m2n.mesh @train shape [1] ranks [0]
  m2n.mesh @gen shape [1] ranks [1]
  %a = m2n.tensor "a" : tensor<4xf32>
  m2n.transfers %a from <@train, [R]> to <@gen, [R]> : tensor<4xf32> slices {
    0 -> 1 [0:4]
  }
  m2n.messages {
    step 3 : 0 -> 1 bytes 16 parts [g0 s0 m0..1]
  }
}

// -----

m2n.refit @r {
  // expected-error @+1 {{rank 9223372036854775807 is beyond the largest rank id, 1048575}}
  m2n.messages {
    step 0 : 0 -> 9223372036854775807 bytes 16 parts [g0 s0 m0..1]
  }
}

// -----

// num_steps 0 on a refit without messages is no schedule either.
// expected-error @+1 {{@none: num_steps is 0 with 0 messages; it must be between 1 and the number of messages}}
m2n.refit @none attributes {num_steps = 0} {
}
