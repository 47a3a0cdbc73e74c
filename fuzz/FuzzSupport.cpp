//===- FuzzSupport.cpp - What the compiler's fuzzers share ----------------===//

#include "FuzzSupport.h"

#include "m2n/Compiler/CompileRefit.h"
#include "m2n/Dialect/M2N/IR/M2NDialect.h"
#include "m2n/plan.h"

#include "mlir/IR/Diagnostics.h"

#include <cstdio>

// LLVM's BumpPtrAllocator poisons the slabs it takes when built with ASan,
// as m2n's code that inlines it is, and unpoisons what it hands out; the
// system's MLIR, built without ASan, hands out memory from the same slabs
// without unpoisoning it. So poisoning by hand is off.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

namespace m2n::fuzz {
namespace {

// A compile of these takes milliseconds; a larger refit would slow the
// fuzzer down without reaching other code.
constexpr size_t kMaxRanks = 64; // over all meshes
constexpr int64_t kMaxRankId = 255;
constexpr size_t kMaxTensors = 16;
constexpr uint64_t kMaxBytes = 1 << 20; // over all tensors

/// The tensor's bytes, or UINT64_MAX when they pass 2^64.
uint64_t tensorBytes(const spec::TensorSpec &tensor) {
  uint64_t bytes = uint64_t(dtypeByteSize(tensor.dtype));
  for (int64_t extent : tensor.shape)
    if (__builtin_mul_overflow(bytes, uint64_t(extent), &bytes))
      return UINT64_MAX;
  return bytes;
}

} // namespace

FuzzContext::FuzzContext() : context(mlir::MLIRContext::Threading::DISABLED) {
  context.getOrLoadDialect<M2NDialect>();
  context.getDiagEngine().registerHandler([this](mlir::Diagnostic &diag) {
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
      ++errorCount;
    return mlir::success();
  });
}

bool isSmallRefit(const spec::RefitSpec &spec) {
  size_t ranks = 0;
  for (const spec::MeshSpec &mesh : spec.meshes) {
    ranks += mesh.ranks.size();
    for (int64_t rank : mesh.ranks)
      if (rank > kMaxRankId)
        return false;
  }
  if (ranks > kMaxRanks || spec.tensors.size() > kMaxTensors)
    return false;
  uint64_t bytes = 0;
  for (const spec::TensorSpec &tensor : spec.tensors)
    if (__builtin_add_overflow(bytes, tensorBytes(tensor), &bytes))
      return false;
  return bytes <= kMaxBytes;
}

/// Options that stretch the passes: small staging budgets and buckets,
/// relays and balance splits on and off. The budgets keep a refit of
/// kMaxBytes within a few hundred messages: the schedule's dependencies
/// grow with the square of them.
static void pickOptions(uint64_t seed, CompilePipelineOptions &options) {
  const int64_t staging[] = {int64_t(1) << 30, 1 << 16, 1 << 12};
  const int64_t buckets[] = {0, 1 << 12, 1 << 16};
  options.stagingBytes = staging[seed % 3];
  options.bucketBytes = buckets[(seed >> 2) % 3];
  options.relay = (seed >> 4) & 1;
  options.relayExchange = (seed >> 5) & 1;
  options.balanceSplit = (seed >> 6) & 1;
}

void checkLoads(const std::vector<uint8_t> &bytes) {
  m2n_plan_t plan = nullptr;
  m2n_status_t status = m2n_plan_load_memory(bytes.data(), bytes.size(), &plan);
  if (status) {
    std::fprintf(stderr,
                 "the runtime refuses a plan the compiler verified: %s\n",
                 m2n_status_message(status));
    check(false);
  }
  m2n_plan_destroy(plan);
}

void compileAndLoad(FuzzContext &context, mlir::ModuleOp module,
                    uint64_t seed) {
  CompilePipelineOptions options;
  pickOptions(seed, options);
  size_t errorsBefore = context.errors();
  mlir::FailureOr<CompiledRefit> compiled = compileRefit(module, options);
  if (mlir::failed(compiled)) {
    check(context.errors() > errorsBefore);
    return;
  }
  checkLoads(compiled->bytes);
}

uint64_t hashInput(const uint8_t *data, size_t size) {
  // FNV-1a.
  uint64_t hash = 0xcbf29ce484222325u;
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 0x100000001b3u;
  return hash;
}

} // namespace m2n::fuzz
