//===- Parallel.cpp - Working on a plan's groups at once ------------------===//

#include "m2n/Plan/Parallel.h"

#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <numeric>

using namespace m2n;
using namespace m2n::plan;

void m2n::plan::forEachIndex(size_t count, llvm::ThreadPoolInterface *pool,
                             llvm::function_ref<void(size_t)> fn) {
  if (!pool || pool->getMaxConcurrency() < 2 || count < 2) {
    for (size_t i = 0; i < count; ++i)
      fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < count;)
      fn(i);
  };
  // The calling thread works too, so that the work gets done even while
  // the pool's threads are busy elsewhere; helpers that start late find
  // nothing left.
  llvm::ThreadPoolTaskGroup helpers(*pool);
  for (unsigned i = 1; i < std::min<size_t>(pool->getMaxConcurrency(), count);
       ++i)
    helpers.async(work);
  work();
  helpers.wait();
}

void m2n::plan::forEachGroup(const Plan &plan, llvm::ThreadPoolInterface *pool,
                             llvm::function_ref<void(size_t)> fn) {
  std::vector<size_t> order(plan.groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.groups[a].slices.size() > plan.groups[b].slices.size();
  });
  forEachIndex(order.size(), pool, [&](size_t i) { fn(order[i]); });
}
