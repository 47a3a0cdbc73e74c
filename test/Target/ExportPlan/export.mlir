// RUN: m2n-opt %s -m2n-compile | m2n-translate --m2n-to-plan -o %t.m2n
// RUN: m2n inspect --disassemble %t.m2n | FileCheck %s
// RUN: m2n inspect %t.m2n | FileCheck %s --check-prefix=SUMMARY
// RUN: m2n inspect --json %t.m2n | FileCheck %s --check-prefix=JSON

// Rows split over ranks 0 and 1 become columns split over ranks 1 and 2:
// rank 1 keeps its own rows by a local copy, and every message is packed
// on the sender and unpacked on the receiver.

// CHECK:      plan v2.0 world 3 tensors 1 steps 1 staging_budget 1073741824 hash
// CHECK-NEXT: summary wire_bytes 72 local_copy_bytes 24 messages 3
// CHECK-NEXT: tensor 0 "w" F32 [4, 6]
// CHECK-NEXT: rank 0: bindings 1 instructions 5 staging 48 send 48 receive 0
// CHECK-NEXT:   binding 0: tensor 0 "w" source [0:2, 0:6] 48 bytes
// CHECK-NEXT:   step 0
// CHECK-NEXT:   pack binding 0 +0 -> staging +0: 2 runs of 12 bytes, levels [2 x (24, 12)]
// CHECK-NEXT:   pack binding 0 +12 -> staging +24: 2 runs of 12 bytes, levels [2 x (24, 12)]
// CHECK-NEXT:   send to 1 staging [0, 24)
// CHECK-NEXT:   send to 2 staging [24, 48)
// CHECK-NEXT: rank 1: bindings 2 instructions 6 staging 48 send 24 receive 24
// CHECK-NEXT:   binding 0: tensor 0 "w" source [2:2, 0:6] 48 bytes
// CHECK-NEXT:   binding 1: tensor 0 "w" destination [0:4, 0:3] 48 bytes
// CHECK-NEXT:   copy binding 0 +0 -> binding 1 +24: 2 runs of 12 bytes, levels [2 x (24, 12)]
// CHECK-NEXT:   step 0
// CHECK-NEXT:   pack binding 0 +12 -> staging +0: 2 runs of 12 bytes, levels [2 x (24, 12)]
// CHECK-NEXT:   recv from 0 staging [24, 48)
// CHECK-NEXT:   send to 2 staging [0, 24)
// CHECK-NEXT:   unpack staging +24 -> binding 1 +0: 1 run of 24 bytes
// CHECK-NEXT: rank 2: bindings 1 instructions 5 staging 48 send 0 receive 48
// CHECK-NEXT:   binding 0: tensor 0 "w" destination [0:4, 3:3] 48 bytes
// CHECK-NEXT:   step 0
// CHECK-NEXT:   recv from 0 staging [0, 24)
// CHECK-NEXT:   recv from 1 staging [24, 48)
// CHECK-NEXT:   unpack staging +0 -> binding 0 +0: 1 run of 24 bytes
// CHECK-NEXT:   unpack staging +24 -> binding 0 +24: 1 run of 24 bytes

// SUMMARY:      3 ranks, 1 tensor, 1 step, 3 messages
// SUMMARY-NEXT: 72 B on the wire, 24 B copied locally, staging budget 1.00 GiB per rank
// SUMMARY-NEXT: predicted 40.0 µs, lower bound 30.0 µs (1.33x)
// SUMMARY-NEXT:   rank        sends     receives  messages      staging
// SUMMARY-NEXT:      0         48 B          0 B         2         48 B
// SUMMARY-NEXT:      1         24 B         24 B         1         48 B
// SUMMARY-NEXT:      2          0 B         48 B         0         48 B

// JSON:      "local_copy_bytes": 24,
// JSON:      "messages": [
// JSON-NEXT:   {
// JSON-NEXT:     "bytes": 24,
// JSON-NEXT:     "dst": 1,
// JSON-NEXT:     "src": 0,
// JSON-NEXT:     "step": 0
// JSON-NEXT:   },
// JSON:      "wire_bytes": 72,
// JSON:      "world_size": 3

m2n.refit @small {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [1, 2]
  %w = m2n.tensor "w" : tensor<4x6xf32>
  m2n.reshard %w from <@train, [S(0)]> to <@gen, [S(1)]> : tensor<4x6xf32>
}
