//===- Parallel.cpp - Working on a plan's groups at once ------------------===//

#include "m2n/Plan/Parallel.h"

#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <numeric>

using namespace m2n;
using namespace m2n::plan;

void m2n::plan::forEachGroup(const Plan &plan, llvm::ThreadPoolInterface *pool,
                             llvm::function_ref<void(size_t)> fn) {
  size_t count = plan.groups.size();
  if (!pool || pool->getMaxConcurrency() < 2 || count < 2) {
    for (size_t g = 0; g < count; ++g)
      fn(g);
    return;
  }
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.groups[a].slices.size() > plan.groups[b].slices.size();
  });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < count;)
      fn(order[i]);
  };
  // The calling thread works too, so that the groups get done even while
  // the pool's threads are busy elsewhere; helpers that start late find
  // nothing left.
  llvm::ThreadPoolTaskGroup helpers(*pool);
  for (unsigned i = 1; i < std::min<size_t>(pool->getMaxConcurrency(), count);
       ++i)
    helpers.async(work);
  work();
  helpers.wait();
}
