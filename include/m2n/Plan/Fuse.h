//===- Fuse.h - Packing slices into messages --------------------*- C++ -*-===//

#ifndef M2N_PLAN_FUSE_H
#define M2N_PLAN_FUSE_H

#include "m2n/Plan/Plan.h"
#include "m2n/Plan/Schedule.h"

#include <optional>

namespace m2n::plan {

struct FuseOptions {
  /// The most bytes of one packed message (at least 1; smaller values count
  /// as 1). Only a single element larger than the bucket exceeds it.
  int64_t bucketBytes = int64_t(64) << 20;
  /// The most bytes of a zero-copy message, which takes no staging and so
  /// may exceed a bucket that the staging budget keeps small; 0 is the
  /// bucket.
  int64_t zeroCopyBytes = 0;
  /// When positive, each pair's bytes from each root (the source-side rank
  /// they left from) are cut into this many chunks by their place among
  /// them, a message never spans two chunks, and a pair's messages go chunk
  /// after chunk: the k-th forwards of a pair then pass on the k-th
  /// messages of the source side's pairs. 0: no chunks.
  int64_t pairChunks = 0;
  /// The most bytes of one packed message between two ranks of one node
  /// (see ranksPerNode), whose link is faster than a NIC: a message whose
  /// latency takes the same share of its time carries more. 0 is the
  /// bucket.
  int64_t nodeBucketBytes = 0;
  /// Ranks r and s share a node when r / ranksPerNode == s / ranksPerNode;
  /// 0: no two do.
  int64_t ranksPerNode = 0;
};

struct FuseStats {
  int64_t messages = 0;
  int64_t zeroCopyMessages = 0;
  /// Slices split to fit a bucket.
  int64_t splitSlices = 0;
};

/// Packs the remote slices of every member between one (sender, receiver)
/// pair within a round, across tensors, into messages of at most bucketBytes
/// (a slice larger than a bucket is first split along its outermost
/// dimension). A slice that is contiguous in both buffers and fills at least
/// half a bucket goes as zero-copy messages of at most zeroCopyBytes each:
/// it takes no staging. Messages get step = round; schedule()
/// assigns the real steps. Replaces any messages the plan had.
FuseStats fuse(Plan &plan, const FuseOptions &options);

/// The messages that fuse() would give `plan`, leaving `plan` as it is: for
/// estimates that need the fused plan's messages but not the plan itself.
/// Where fuse() would split slices, the messages' parts name the slices of
/// the split plan.
std::vector<Message> fusedMessages(const Plan &plan,
                                   const FuseOptions &options);

/// Fuses `plan` as fuse() does, but for a plan that forwards anything also
/// tries smaller messages and messages cut into chunks per pair, and for
/// any plan larger messages between two ranks of one node (options'
/// nodeBucketBytes), and keeps the messages that the model, scheduling
/// each in `schedule`'s budget, finds fastest (finer ones by over 1%). A
/// forward waits for every message that brings its bytes, and a pipeline's
/// steps are about a share of the busiest rank's work: with messages large
/// against that share, the forwards start late and the steps pack unevenly;
/// with messages too small, their latencies add up. The smaller buckets are
/// options' halved, in turn while each schedules faster than the last, down to
/// the busiest rank's bytes over kPipelineMessages, which is tried when it is
/// under half of options' (Llama-3-8B fsdp32 -> dp12,tp8 flat: 1.26x the bound
/// at the default bucket and at that smallest one, 1.20x at a quarter). The
/// chunks (kPipelineChunks per pair and root, see FuseOptions::pairChunks) make
/// a pipeline in which every source-side rank feeds each of its receivers a
/// chunk at a time, and each forward passes on one chunk of every root.
constexpr int64_t kPipelineMessages = 512;
constexpr int64_t kPipelineChunks = 32;
/// Where it scheduled the messages it keeps, their schedule is put in
/// `scheduled` (when given), else that is left empty.
FuseStats fuseForSchedule(Plan &plan, const FuseOptions &options,
                          const ScheduleOptions &schedule,
                          std::optional<ScheduledMessages> *scheduled = nullptr);

} // namespace m2n::plan

#endif // M2N_PLAN_FUSE_H
