// The whole pipeline on the built-in example, and its report.
// RUN: m2n-translate --import-m2n-spec %m2n_src_root/examples/llama-mini.json | m2n-opt -m2n-compile | FileCheck %s
// RUN: m2n-translate --import-m2n-spec %m2n_src_root/examples/llama-mini.json | m2n-opt -m2n-compile=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// The passes that rewrite slices refuse to run after fusion.
// RUN: m2n-translate --import-m2n-spec %m2n_src_root/examples/llama-mini.json | not m2n-opt -m2n-decompose -m2n-fuse -m2n-balance 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not m2n-opt %s -m2n-decompose -m2n-fuse -m2n-coalesce 2>&1 | FileCheck %s --check-prefix=ORDER-COALESCE
// RUN: not m2n-opt %s -m2n-decompose -m2n-fuse -m2n-relay 2>&1 | FileCheck %s --check-prefix=ORDER-RELAY
// A topology file that is not there, or not valid, is named.
// RUN: not m2n-opt %s -m2n-compile=topology=%t.missing.json 2>&1 | FileCheck %s --check-prefix=NO-TOPOLOGY
// RUN: echo '{"latency_us": -1}' > %t.bad.json
// RUN: not m2n-opt %s -m2n-compile=topology=%t.bad.json 2>&1 | FileCheck %s --check-prefix=BAD-TOPOLOGY

// CHECK-LABEL: m2n.refit @llama_mini attributes {num_steps = 1 : i64, schedule_topology = {{.*}}, staging_budget = 1073741824 : i64}
// CHECK-NOT:     m2n.reshard
// CHECK:         m2n.transfers
// CHECK:         m2n.messages {
// CHECK-COUNT-26: {{^ *}}step 0 :
// CHECK-NEXT:    }

// REPORT: remark: refit @llama_mini: 1 steps, 26 messages, 7680000 wire bytes, 0 local copy bytes, staging peak 1920000 bytes

// NO-TOPOLOGY: error: {{.*}}missing.json
// BAD-TOPOLOGY: bad.json: error: latency_us: {{.*}}

// ORDER: error: m2n-balance must run before m2n-fuse: refit @llama_mini already has messages
// ORDER-COALESCE: error: m2n-coalesce must run before m2n-fuse: refit @r already has messages
// ORDER-RELAY: error: m2n-relay must run before m2n-fuse: refit @r already has messages

m2n.refit @r {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [2, 3]
  %w = m2n.tensor "w" : tensor<4x4xf32>
  m2n.reshard %w from <@train, [S(0)]> to <@gen, [S(1)]> : tensor<4x4xf32>
}
