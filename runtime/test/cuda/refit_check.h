//===- refit_check.h - Expected shards and a host world -----------*- C++
//-*-===//
//
// Every byte of every tensor gets a value from (tensor index, byte index in
// the whole tensor), computed from a binding's box and the tensor's shape
// alone, never from the plan's instructions. Sources start with their
// bytes, destinations with the complement of theirs, so that a byte left
// unwritten or written wrong always shows.
//
// The host world runs a plan's ranks in one process on host memory, either
// walking runs the plain way (to check the tests' own planning and
// expectations) or through the GPU kernel's code on the host (to check the
// kernel's tiling without a GPU).
//
//===----------------------------------------------------------------------===//

#ifndef M2N_RUNTIME_TEST_CUDA_REFIT_CHECK_H
#define M2N_RUNTIME_TEST_CUDA_REFIT_CHECK_H

#include "plan_internal.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace m2n::test {

/// The encoding of byte `byte` of tensor `tensor`.
uint8_t encodedByte(uint32_t tensor, uint64_t byte);

/// The bytes of binding `binding` of `rank`: its box of the encoded tensor.
std::vector<uint8_t> expectedShard(const LoadedPlan &plan, uint32_t rank,
                                   uint32_t binding);

/// Each rank's buffers, on the host.
struct HostRank {
  std::vector<std::vector<uint8_t>> bindings;
  std::vector<uint8_t> staging;
};

/// Buffers for all ranks: sources hold their bytes, destinations the
/// complement of theirs.
std::vector<HostRank> initialBuffers(const LoadedPlan &plan);

/// Whether every binding (sources too: they must not change) holds its
/// expected bytes; names the first wrong byte.
::testing::AssertionResult checkBuffers(const LoadedPlan &plan,
                                        const std::vector<HostRank> &ranks);

enum class Walker { kReference, kKernelOnHost };

/// Runs all ranks of `plan` on `ranks` step by step.
void runHostWorld(const LoadedPlan &plan, std::vector<HostRank> &ranks,
                  Walker walker);

/// Bytes of all bindings of all ranks.
uint64_t totalBindingBytes(const LoadedPlan &plan);

/// The plan in `bytes`, loaded; fails the test when it does not load.
::testing::AssertionResult loadPlan(const std::vector<uint8_t> &bytes,
                                    m2n_plan_t *plan);

/// A status as a test result; frees it.
::testing::AssertionResult isOk(m2n_status_t status);

} // namespace m2n::test

#endif // M2N_RUNTIME_TEST_CUDA_REFIT_CHECK_H
