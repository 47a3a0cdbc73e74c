//===- RandomRefitTest.cpp - Random refits against brute force ------------===//
//
// Random refits run through decompose, balance and coalesce. Each result
// must pass verifyPlan and a brute-force check that shares no code with the
// layout model: every element of every destination shard, found by
// simulating DTensor's rule element by element, is covered by exactly one
// slice, whose sender holds it by the same simulation. Fused by hand, each
// plan then runs on the reference executor. Other random refits go through
// the whole pipeline, relays, fusion and schedule included, and must verify
// and run right on the reference executor.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Balance.h"
#include "m2n/Plan/Coalesce.h"
#include "m2n/Plan/Decompose.h"
#include "m2n/Plan/Fuse.h"
#include "m2n/Plan/Reference.h"
#include "m2n/Plan/Relay.h"
#include "m2n/Plan/Schedule.h"
#include "m2n/Plan/Verify.h"

#include "PlanTestUtil.h"

#include "llvm/Support/ThreadPool.h"

#include <map>
#include <random>

using namespace m2n;
using namespace m2n::plan;
using namespace m2n::plan::test;

namespace {

/// Deterministic across standard libraries, unlike the distributions.
class Random {
public:
  explicit Random(uint32_t seed) : engine(seed) {}
  /// Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine() % uint64_t(hi - lo + 1));
  }
  bool oneIn(int64_t n) { return between(1, n) == 1; }
  template <typename T> void shuffle(std::vector<T> &values) {
    for (size_t i = values.size(); i > 1; --i)
      std::swap(values[i - 1], values[between(0, i - 1)]);
  }

private:
  std::mt19937 engine;
};

//===----------------------------------------------------------------------===//
// Random refits
//===----------------------------------------------------------------------===//

/// 1 to 3 axes, at most 8 ranks.
Shape randomMeshShape(Random &random) {
  while (true) {
    Shape shape(random.between(1, 3));
    int64_t size = 1;
    for (int64_t &dim : shape) {
      dim = random.between(1, 4);
      size *= dim;
    }
    if (size <= 8)
      return shape;
  }
}

/// Ranks drawn from a small pool, so that meshes overlap, coincide or are
/// disjoint by chance; sometimes a block apart from the pool.
std::vector<int64_t> randomRanks(Random &random, int64_t size) {
  std::vector<int64_t> ranks;
  if (random.oneIn(4)) {
    for (int64_t i = 0; i < size; ++i)
      ranks.push_back(16 + i);
    return ranks;
  }
  for (int64_t i = 0; i < 12; ++i)
    ranks.push_back(i);
  random.shuffle(ranks);
  ranks.resize(size);
  if (random.oneIn(2))
    std::sort(ranks.begin(), ranks.end());
  return ranks;
}

Shape randomTensorShape(Random &random) {
  // Now and then a scalar, which has no dimension to shard or split.
  Shape shape(random.oneIn(20) ? 0 : random.between(1, 3));
  for (int64_t &dim : shape)
    dim = random.oneIn(12) ? 0 : random.between(1, 9);
  return shape;
}

/// Each axis replicated or sharding a random dimension; sometimes two axes
/// shard the same dimension (nested sharding) on purpose.
Placements randomPlacements(Random &random, size_t meshRank,
                            int64_t tensorRank) {
  Placements placements(meshRank);
  for (Placement &placement : placements)
    placement = tensorRank == 0 || random.oneIn(3)
                    ? R
                    : S(random.between(0, tensorRank - 1));
  if (tensorRank > 0 && meshRank > 1 && random.oneIn(3)) {
    int64_t dim = random.between(0, tensorRank - 1);
    placements[0] = S(dim);
    placements[random.between(1, meshRank - 1)] = S(dim);
  }
  return placements;
}

spec::RefitSpec randomRefit(Random &random) {
  Refit refit;
  int64_t numMeshes = random.between(2, 3);
  std::vector<Shape> meshShapes;
  for (int64_t m = 0; m < numMeshes; ++m) {
    Shape shape = randomMeshShape(random);
    int64_t size = 1;
    for (int64_t dim : shape)
      size *= dim;
    // Sometimes a mesh over the very ranks of the one before, reshaped.
    if (m > 0 && random.oneIn(4)) {
      std::vector<int64_t> ranks = refit.spec.meshes.back().ranks;
      Shape flat = {static_cast<int64_t>(ranks.size())};
      refit.mesh("m" + std::to_string(m), flat, std::move(ranks));
      meshShapes.push_back(flat);
      continue;
    }
    refit.mesh("m" + std::to_string(m), shape, randomRanks(random, size));
    meshShapes.push_back(shape);
  }
  llvm::ArrayRef<DType> dtypes = allDTypes();
  int64_t numTensors = random.between(1, 4);
  for (int64_t t = 0; t < numTensors; ++t) {
    std::string name = "t" + std::to_string(t);
    // Sometimes the same layouts again, so that groups get members.
    if (t > 0 && random.oneIn(3)) {
      spec::TensorSpec copy = refit.spec.tensors.back();
      copy.name = name;
      refit.spec.tensors.push_back(copy);
      continue;
    }
    Shape shape = randomTensorShape(random);
    int64_t src = random.between(0, numMeshes - 1);
    // Mostly another mesh; sometimes the same one (colocated).
    int64_t dst = random.oneIn(5)
                      ? src
                      : (src + random.between(1, numMeshes - 1)) % numMeshes;
    int64_t tensorRank = static_cast<int64_t>(shape.size());
    refit.tensor(name, shape, "m" + std::to_string(src),
                 randomPlacements(random, meshShapes[src].size(), tensorRank),
                 "m" + std::to_string(dst),
                 randomPlacements(random, meshShapes[dst].size(), tensorRank),
                 dtypes[random.between(0, dtypes.size() - 1)]);
  }
  return refit.spec;
}

BalanceOptions randomBalanceOptions(Random &random) {
  BalanceOptions options;
  options.split = !random.oneIn(4);
  const int64_t thresholds[] = {0, 8, 64, int64_t(1) << 20};
  options.minSplitBytes = thresholds[random.between(0, 3)];
  return options;
}

//===----------------------------------------------------------------------===//
// Brute force, independent of the layout model
//===----------------------------------------------------------------------===//

int64_t product(const Shape &extents) {
  int64_t result = 1;
  for (int64_t extent : extents)
    result *= extent;
  return result;
}

/// Row-major coordinates of `linear` in `extents`.
Shape decode(int64_t linear, const Shape &extents) {
  Shape result(extents.size());
  for (size_t i = extents.size(); i-- > 0;) {
    result[i] = linear % extents[i];
    linear /= extents[i];
  }
  return result;
}

int64_t encodeIndex(const Shape &index, const Shape &extents) {
  int64_t linear = 0;
  for (size_t i = 0; i < extents.size(); ++i)
    linear = linear * extents[i] + index[i];
  return linear;
}

/// Whether the rank at `meshCoords` holds element `index` by DTensor's
/// rule: each Shard(d) axis of size k cuts the current extent [lo, hi) of
/// dim d into pieces of ceil(n / k), and the element must be in the
/// rank's piece.
bool simulateHolds(const Shape &shape, const Shape &meshShape,
                   const Placements &placements, const Shape &meshCoords,
                   const Shape &index) {
  Shape lo(shape.size(), 0);
  Shape hi = shape;
  for (size_t axis = 0; axis < placements.size(); ++axis) {
    if (placements[axis].isReplicate())
      continue;
    int64_t d = placements[axis].dim;
    int64_t k = meshShape[axis];
    int64_t pieceSize = (hi[d] - lo[d] + k - 1) / k;
    if (pieceSize == 0)
      return false;
    int64_t piece = (index[d] - lo[d]) / pieceSize;
    if (piece != meshCoords[axis])
      return false;
    int64_t start = lo[d] + piece * pieceSize;
    hi[d] = std::min(hi[d], start + pieceSize);
    lo[d] = start;
  }
  return true;
}

/// Per rank of the mesh, which elements of the tensor it holds.
std::map<int64_t, std::vector<bool>> simulate(const Shape &shape,
                                              const spec::MeshSpec &mesh,
                                              const Placements &placements) {
  int64_t elements = product(shape);
  std::map<int64_t, std::vector<bool>> holds;
  for (size_t r = 0; r < mesh.ranks.size(); ++r) {
    std::vector<bool> &held = holds[mesh.ranks[r]];
    held.resize(elements);
    Shape meshCoords = decode(static_cast<int64_t>(r), mesh.shape);
    for (int64_t e = 0; e < elements; ++e)
      held[e] = simulateHolds(shape, mesh.shape, placements, meshCoords,
                              decode(e, shape));
  }
  return holds;
}

/// The linear indices of the elements of `region`, enumerated one by one.
std::vector<int64_t> elementsOf(const Box &region, const Shape &shape) {
  std::vector<int64_t> result;
  Shape sizes = region.sizes;
  for (int64_t i = 0; i < product(sizes); ++i) {
    Shape index = decode(i, sizes);
    for (size_t d = 0; d < index.size(); ++d)
      index[d] += region.offsets[d];
    result.push_back(encodeIndex(index, shape));
  }
  return result;
}

/// An empty string when every destination element of the group arrives
/// exactly once from a rank that holds it; otherwise what is wrong.
std::string bruteForceCheck(const spec::RefitSpec &spec,
                            const TransferGroup &group) {
  const spec::TensorSpec &tensor = spec.tensors[group.members.front()];
  auto src = simulate(tensor.shape, *spec.findMesh(tensor.src.mesh),
                      tensor.src.placements);
  auto dst = simulate(tensor.shape, *spec.findMesh(tensor.dst.mesh),
                      tensor.dst.placements);
  int64_t elements = product(tensor.shape);
  std::map<int64_t, std::vector<int>> arrivals;
  for (const auto &[rank, held] : dst)
    arrivals[rank].assign(elements, 0);
  for (const Slice &slice : group.slices) {
    std::string what = "slice " + slice.box.str() + " from rank " +
                       std::to_string(slice.sender) + " to rank " +
                       std::to_string(slice.receiver);
    if (slice.origin != Origin::Source)
      return what + " is a relay";
    if (!src.count(slice.sender) || !dst.count(slice.receiver))
      return what + " names a rank off its mesh";
    for (size_t d = 0; d < tensor.shape.size(); ++d)
      if (slice.box.offsets[d] < 0 || slice.box.sizes[d] < 0 ||
          slice.box.offsets[d] + slice.box.sizes[d] > tensor.shape[d])
        return what + " lies outside the tensor";
    for (int64_t e : elementsOf(slice.box, tensor.shape)) {
      if (!src[slice.sender][e])
        return what + ": the sender lacks element " + std::to_string(e);
      if (!dst[slice.receiver][e])
        return what + ": the receiver does not want element " +
               std::to_string(e);
      ++arrivals[slice.receiver][e];
    }
  }
  for (const auto &[rank, held] : dst)
    for (int64_t e = 0; e < elements; ++e)
      if (held[e] && arrivals[rank][e] != 1)
        return "rank " + std::to_string(rank) + " receives element " +
               std::to_string(e) + " " + std::to_string(arrivals[rank][e]) +
               " times";
  return "";
}

std::string describe(const spec::RefitSpec &spec) {
  std::string text;
  for (const spec::MeshSpec &mesh : spec.meshes) {
    text += "mesh " + mesh.name + " shape";
    for (int64_t dim : mesh.shape)
      text += " " + std::to_string(dim);
    text += " ranks";
    for (int64_t rank : mesh.ranks)
      text += " " + std::to_string(rank);
    text += "\n";
  }
  for (const spec::TensorSpec &tensor : spec.tensors) {
    text += "tensor " + tensor.name + " " + dtypeName(tensor.dtype).str() +
            " " + fullBox(tensor.shape).str() + " " + tensor.src.mesh;
    for (const Placement &placement : tensor.src.placements)
      text += " " + placement.str();
    text += " -> " + tensor.dst.mesh;
    for (const Placement &placement : tensor.dst.placements)
      text += " " + placement.str();
    text += "\n";
  }
  return text;
}

/// What the random cases covered, so that the test shows it exercised
/// every feature it is meant to.
struct Coverage {
  int64_t localCopies = 0;
  int64_t splitRegions = 0;
  int64_t multiMemberGroups = 0;
  int64_t nestedSharding = 0;
  int64_t emptyDestinationBoxes = 0;
};

void countCoverage(const Plan &plan, const DecomposeStats &decomposed,
                   const BalanceStats &balanced, Coverage &coverage) {
  coverage.localCopies += decomposed.localCopies > 0;
  coverage.splitRegions += balanced.splitRegions > 0;
  for (const TransferGroup &group : plan.groups) {
    coverage.multiMemberGroups += group.members.size() > 1;
    const Placements &placements = group.src.placements;
    for (size_t a = 0; a < placements.size(); ++a)
      for (size_t b = a + 1; b < placements.size(); ++b)
        coverage.nestedSharding +=
            placements[a].isShard() && placements[a] == placements[b];
    const Mesh &mesh = plan.meshes[group.dst.mesh];
    for (int64_t i = 0; i < mesh.size(); ++i)
      if (product(group.shape) > 0 &&
          localBox(group.shape, mesh, group.dst.placements, i).empty()) {
        ++coverage.emptyDestinationBoxes;
        break;
      }
  }
}

TEST(RandomRefitTest, PipelineMatchesBruteForce) {
  constexpr int kCases = 1500;
  Coverage coverage;
  for (int seed = 0; seed < kCases; ++seed) {
    Random random(static_cast<uint32_t>(seed));
    spec::RefitSpec spec = randomRefit(random);
    Plan plan = planFromSpec(spec);
    DecomposeStats decomposed = decompose(plan);
    BalanceStats balanced = balance(plan, randomBalanceOptions(random));
    coalesce(plan);
    countCoverage(plan, decomposed, balanced, coverage);

    std::vector<std::string> problems = verifyPlan(plan);
    ASSERT_TRUE(problems.empty()) << "seed " << seed << "\n"
                                  << describe(spec) << joined(problems);
    ASSERT_LE(balanced.idealMaxSendBytes, balanced.maxSendBytesAfter)
        << "seed " << seed << "\n"
        << describe(spec);
    for (size_t g = 0; g < plan.groups.size(); ++g) {
      std::string wrong = bruteForceCheck(spec, plan.groups[g]);
      ASSERT_EQ(wrong, "") << "seed " << seed << ", group " << g << "\n"
                           << describe(spec);
    }

    fuseByHand(plan);
    problems = verifyPlan(plan);
    ASSERT_TRUE(problems.empty()) << "seed " << seed << " fused\n"
                                  << describe(spec) << joined(problems);
    ASSERT_EQ(runReference(plan), "") << "seed " << seed << "\n"
                                      << describe(spec);
  }
  EXPECT_GT(coverage.localCopies, kCases / 10);
  EXPECT_GT(coverage.splitRegions, kCases / 20);
  EXPECT_GT(coverage.multiMemberGroups, kCases / 10);
  EXPECT_GT(coverage.nestedSharding, kCases / 20);
  EXPECT_GT(coverage.emptyDestinationBoxes, kCases / 20);
}

/// A machine on which bandwidth, not latency, dominates even the few bytes
/// of these small tensors, so that relays pay and get exercised; every rank
/// on a node of its own or a few per node.
CostModel randomCostModel(Random &random) {
  Topology topology;
  topology.latencySeconds = 1e-12;
  topology.interNodeBandwidth = 1e3;
  topology.intraNodeBandwidth = 1e4;
  topology.ranksPerNode = random.between(0, 4);
  return CostModel(topology);
}

/// The whole pipeline, as m2n-compile runs it, with buckets and staging
/// budgets small enough that slices split, steps multiply and zero-copy
/// messages appear; every plan must verify and run right on the reference
/// executor, the schedule's refiner must never slow a plan and must speed
/// up some, and scheduled on two threads, refining its best candidate
/// beside the list schedules (as only large plans do by default), each
/// plan must be the same, whether a list wins or that candidate does.
TEST(RandomRefitTest, WholePipelineRunsRight) {
  constexpr int kCases = 1000;
  llvm::StdThreadPool pool(llvm::hardware_concurrency(2));
  int64_t relayed = 0, multiStep = 0, zeroCopy = 0, splits = 0, refined = 0;
  for (int seed = 0; seed < kCases; ++seed) {
    Random random(static_cast<uint32_t>(seed) + 100000);
    spec::RefitSpec spec = randomRefit(random);
    Plan plan = planFromSpec(spec);
    // Half the cases go through balance and relay with fan-out slices, as
    // m2n-compile does, and expand them before coalescing.
    DecomposeOptions decomposeOptions;
    decomposeOptions.fanOut = seed % 2 == 0;
    decompose(plan, decomposeOptions);
    balance(plan, randomBalanceOptions(random));
    CostModel model = randomCostModel(random);
    RelayStats relayStats = relay(plan, model, RelayOptions());
    ASSERT_EQ(expandFanOuts(plan), "") << "seed " << seed;
    coalesce(plan);
    int64_t bucket = random.between(1, 64);
    FuseStats fuseStats = fuse(plan, FuseOptions{bucket});
    ScheduleOptions scheduleOptions;
    scheduleOptions.stagingBudget = 2 * bucket + random.between(0, 64);
    scheduleOptions.model = &model;
    Plan threaded = plan;
    llvm::Expected<ScheduleStats> scheduled = schedule(plan, scheduleOptions);
    ASSERT_TRUE(bool(scheduled))
        << "seed " << seed << "\n"
        << describe(spec) << llvm::toString(scheduled.takeError());
    ScheduleOptions beside = scheduleOptions;
    beside.pool = &pool;
    beside.refineBesideListsFrom = 0;
    llvm::Expected<ScheduleStats> again = schedule(threaded, beside);
    ASSERT_TRUE(bool(again)) << "seed " << seed << "\n"
                             << llvm::toString(again.takeError());
    ASSERT_TRUE(threaded.messages == plan.messages) << "seed " << seed;

    std::vector<std::string> problems = verifyPlan(plan);
    ASSERT_TRUE(problems.empty()) << "seed " << seed << "\n"
                                  << describe(spec) << joined(problems);
    ASSERT_EQ(runReference(plan), "") << "seed " << seed << "\n"
                                      << describe(spec);
    // Refining never makes the schedule slower, and what the model says
    // of the plan written is at most what the refiner left, whose empty
    // steps are dropped.
    ASSERT_LE(scheduled->refinedSeconds,
              scheduled->candidateSeconds * (1 + 1e-9))
        << "seed " << seed << "\n"
        << describe(spec);
    ASSERT_LE(model.cost(plan).predictedSeconds,
              scheduled->refinedSeconds * (1 + 1e-9))
        << "seed " << seed << "\n"
        << describe(spec);
    refined +=
        scheduled->refinedSeconds < scheduled->candidateSeconds * (1 - 1e-6);
    relayed += relayStats.relayedRegions > 0;
    multiStep += scheduled->steps > 1;
    zeroCopy += fuseStats.zeroCopyMessages > 0;
    splits += fuseStats.splitSlices > 0;
  }
  EXPECT_GT(relayed, kCases / 20);
  EXPECT_GT(multiStep, kCases / 10);
  EXPECT_GT(zeroCopy, kCases / 10);
  EXPECT_GT(splits, kCases / 10);
  EXPECT_GT(refined, kCases / 50);
}

/// Fan-out slices stand for exactly the slices that decompose writes per
/// receiver, and balance and relay plan the same on them: expanded, the
/// slices are the same, on random refits.
TEST(RandomRefitTest, FanOutsStandForTheSlicesPerReceiver) {
  constexpr int kCases = 1000;
  int64_t withFanOuts = 0;
  for (int seed = 0; seed < kCases; ++seed) {
    Random random(static_cast<uint32_t>(seed) + 200000);
    spec::RefitSpec spec = randomRefit(random);
    Plan perReceiver = planFromSpec(spec);
    DecomposeStats expected = decompose(perReceiver);
    Plan fannedOut = planFromSpec(spec);
    DecomposeOptions options;
    options.fanOut = true;
    DecomposeStats stats = decompose(fannedOut, options);
    EXPECT_EQ(stats.remoteSlices, expected.remoteSlices) << "seed " << seed;
    EXPECT_EQ(stats.wireBytes, expected.wireBytes) << "seed " << seed;
    EXPECT_EQ(stats.localCopies, expected.localCopies) << "seed " << seed;
    EXPECT_EQ(stats.localBytes, expected.localBytes) << "seed " << seed;
    withFanOuts += hasFanOuts(fannedOut);

    BalanceOptions balanceOptions = randomBalanceOptions(random);
    CostModel model = randomCostModel(random);
    // The cost of a plan with fan-out slices counts the slices they stand
    // for; the C++ verifier takes none.
    PlanCost fannedCost = model.cost(fannedOut);
    PlanCost perReceiverCost = model.cost(perReceiver);
    EXPECT_EQ(fannedCost.wireBytes, perReceiverCost.wireBytes)
        << "seed " << seed;
    EXPECT_EQ(fannedCost.localCopyBytes, perReceiverCost.localCopyBytes)
        << "seed " << seed;
    EXPECT_EQ(fannedCost.messages, perReceiverCost.messages)
        << "seed " << seed;
    if (hasFanOuts(fannedOut)) {
      std::vector<std::string> problems = verifyPlan(fannedOut);
      ASSERT_FALSE(problems.empty()) << "seed " << seed;
      EXPECT_NE(problems.front().find("is a fan-out slice"),
                std::string::npos)
          << problems.front();
    }
    for (Plan *plan : {&perReceiver, &fannedOut}) {
      balance(*plan, balanceOptions);
      relay(*plan, model, RelayOptions());
    }
    ASSERT_EQ(expandFanOuts(fannedOut), "") << "seed " << seed;
    ASSERT_EQ(fannedOut.groups.size(), perReceiver.groups.size());
    for (size_t g = 0; g < perReceiver.groups.size(); ++g)
      ASSERT_EQ(fannedOut.groups[g].slices, perReceiver.groups[g].slices)
          << "seed " << seed << ", group " << g << "\n"
          << describe(spec);
  }
  EXPECT_GT(withFanOuts, kCases / 4);
}

/// Breaks one slice of the plan at random, in a way that may or may not
/// matter (another holder as sender is no fault).
void mutateSlice(Random &random, Plan &plan) {
  std::vector<TransferGroup *> groups;
  for (TransferGroup &group : plan.groups)
    if (!group.slices.empty())
      groups.push_back(&group);
  if (groups.empty())
    return;
  std::vector<Slice> &slices =
      groups[random.between(0, groups.size() - 1)]->slices;
  size_t i = random.between(0, slices.size() - 1);
  Slice &slice = slices[i];
  size_t d = slice.box.sizes.empty()
                 ? 0
                 : random.between(0, slice.box.sizes.size() - 1);
  switch (random.between(0, 5)) {
  case 0:
    slices.erase(slices.begin() + i);
    break;
  case 1:
    slices.push_back(slice);
    break;
  case 2:
    slice.sender = random.between(0, 20);
    break;
  case 3:
    slice.receiver = random.between(0, 20);
    break;
  case 4:
    if (!slice.box.sizes.empty())
      slice.box.offsets[d] += random.oneIn(2) ? 1 : -1;
    break;
  default:
    if (!slice.box.sizes.empty())
      slice.box.sizes[d] =
          std::max<int64_t>(1, slice.box.sizes[d] + (random.oneIn(2) ? 1 : -1));
    break;
  }
  sortSlices(slices);
}

/// Breaks one message of a fused plan at random, always for real.
void mutateMessage(Random &random, Plan &plan) {
  std::vector<Message> &messages = plan.messages;
  size_t m = random.between(0, messages.size() - 1);
  switch (random.between(0, 3)) {
  case 0:
    messages.erase(messages.begin() + m);
    break;
  case 1:
    messages.insert(messages.begin() + m, messages[m]);
    break;
  case 2:
    messages[m].bytes += random.oneIn(2) ? 1 : -1;
    break;
  default: {
    MessagePart &part = messages[m].parts.front();
    const TransferGroup &group = plan.groups[part.group];
    messages[m].bytes -= sliceBytes(group, group.slices[part.slice]);
    if (part.memberEnd - part.memberBegin > 1)
      --part.memberEnd;
    else
      messages.erase(messages.begin() + m);
    break;
  }
  }
}

TEST(RandomRefitTest, VerifyAgreesWithBruteForceOnBrokenPlans) {
  constexpr int kCases = 1000;
  int64_t caught = 0;
  for (int seed = 0; seed < kCases; ++seed) {
    Random random(static_cast<uint32_t>(seed) + 100000);
    spec::RefitSpec spec = randomRefit(random);
    Plan plan = planFromSpec(spec);
    decompose(plan);
    balance(plan, randomBalanceOptions(random));
    mutateSlice(random, plan);
    bool verifyFails = !verifyPlan(plan).empty();
    std::string bruteForce;
    for (size_t g = 0; g < plan.groups.size() && bruteForce.empty(); ++g)
      bruteForce = bruteForceCheck(spec, plan.groups[g]);
    ASSERT_EQ(verifyFails, !bruteForce.empty())
        << "seed " << seed << ": brute force says '" << bruteForce << "'\n"
        << describe(spec) << joined(verifyPlan(plan));
    caught += verifyFails;
  }
  // Most mutations break the plan.
  EXPECT_GT(caught, kCases / 2);
}

TEST(RandomRefitTest, VerifyAndReferenceCatchBrokenMessages) {
  constexpr int kCases = 1000;
  int64_t tried = 0;
  for (int seed = 0; seed < kCases; ++seed) {
    Random random(static_cast<uint32_t>(seed) + 200000);
    spec::RefitSpec spec = randomRefit(random);
    Plan plan = planFromSpec(spec);
    decompose(plan);
    fuseByHand(plan);
    if (plan.messages.empty())
      continue;
    ++tried;
    mutateMessage(random, plan);
    EXPECT_FALSE(verifyPlan(plan).empty()) << "seed " << seed << "\n"
                                           << describe(spec);
    EXPECT_NE(runReference(plan), "") << "seed " << seed << "\n"
                                      << describe(spec);
  }
  EXPECT_GT(tried, kCases / 2);
}

} // namespace
