// RUN: m2n-opt %s -m2n-compile | m2n-translate --m2n-to-plan -o %t.m2n
// RUN: m2n inspect --disassemble %t.m2n | FileCheck %s

// Three tensors of one shape and layouts form one group: each rank binds
// them consecutively, and one record packs, unpacks or copies a slice of
// all three (binding b + m for member m; staging one slice further per
// member), so the plan's size does not grow with a model's layers.

// CHECK:      plan v2.0 world 3 tensors 3 steps 1
// CHECK:      rank 0: bindings 3 instructions 5
// CHECK-NEXT:   binding 0: tensor 0 "a" source [0:2, 0:6] 48 bytes
// CHECK-NEXT:   binding 1: tensor 1 "b" source [0:2, 0:6] 48 bytes
// CHECK-NEXT:   binding 2: tensor 2 "c" source [0:2, 0:6] 48 bytes
// CHECK-NEXT:   step 0
// CHECK-NEXT:   pack binding 0 +0 -> staging +0: 2 runs of 12 bytes, levels [2 x (24, 12)], members 3
// CHECK-NEXT:   pack binding 0 +12 -> staging +72: 2 runs of 12 bytes, levels [2 x (24, 12)], members 3
// CHECK-NEXT:   send to 1 staging [0, 72)
// CHECK-NEXT:   send to 2 staging [72, 144)
// CHECK:      rank 1: bindings 6 instructions 6
// CHECK:        binding 3: tensor 0 "a" destination [0:4, 0:3] 48 bytes
// CHECK-NEXT:   binding 4: tensor 1 "b" destination [0:4, 0:3] 48 bytes
// CHECK-NEXT:   binding 5: tensor 2 "c" destination [0:4, 0:3] 48 bytes
// CHECK-NEXT:   copy binding 0 +0 -> binding 3 +24: 2 runs of 12 bytes, levels [2 x (24, 12)], members 3
// CHECK:        unpack staging +72 -> binding 3 +0: 1 run of 24 bytes, members 3
// CHECK:      rank 2: bindings 3 instructions 5
// CHECK:        unpack staging +0 -> binding 0 +0: 1 run of 24 bytes, members 3
// CHECK-NEXT:   unpack staging +72 -> binding 0 +24: 1 run of 24 bytes, members 3

m2n.refit @members {
  m2n.mesh @train shape [2] ranks [0, 1]
  m2n.mesh @gen shape [2] ranks [1, 2]
  %a = m2n.tensor "a" : tensor<4x6xf32>
  %b = m2n.tensor "b" : tensor<4x6xf32>
  %c = m2n.tensor "c" : tensor<4x6xf32>
  m2n.reshard %a from <@train, [S(0)]> to <@gen, [S(1)]> : tensor<4x6xf32>
  m2n.reshard %b from <@train, [S(0)]> to <@gen, [S(1)]> : tensor<4x6xf32>
  m2n.reshard %c from <@train, [S(0)]> to <@gen, [S(1)]> : tensor<4x6xf32>
}
