//===- Passes.td - m2n compiler passes ---------------------*- tablegen -*-===//

#ifndef M2N_DIALECT_M2N_TRANSFORMS_PASSES_TD
#define M2N_DIALECT_M2N_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposePass : Pass<"m2n-decompose", "mlir::ModuleOp"> {
  let summary = "Decompose each reshard into slice transfers";
  let description = [{
    Replaces the `m2n.reshard`s of every `m2n.refit` by `m2n.transfers`: one
    per distinct (shape, element type, source layout, destination layout),
    computed once and shared by every tensor with that key. For each
    destination rank and each region of its destination box, exactly one
    slice: a local copy when the rank holds the region in its source shard,
    otherwise a transfer from the first rank that holds it. Regions are the
    intersections with the distinct source boxes, which are disjoint, so no
    byte reaches a rank twice.

    A destination box that several ranks hold (replicas) gets one fan-out
    slice `S -> * [box]` per region instead of one slice per holder: with
    many replicas those would be most of the plan. `m2n-balance` and
    `m2n-relay` work on fan-out slices; every other pass first replaces
    them by the slices they stand for. `fan-out=false` writes those slices
    at once.
  }];
  let dependentDialects = ["::m2n::M2NDialect"];
  let options = [
    Option<"fanOut", "fan-out", "bool", /*default=*/"true",
           "One fan-out slice per region of a replicated destination box">,
  ];
  let statistics = [
    Statistic<"numGroups", "groups", "Distinct decompositions computed">,
    Statistic<"numRemoteSlices", "remote-slices", "Slices sent between ranks">,
    Statistic<"numLocalCopies", "local-copies", "Slices copied within a rank">,
    Statistic<"wireBytes", "wire-bytes", "Bytes sent between ranks">,
    Statistic<"localBytes", "local-bytes", "Bytes copied within ranks">,
  ];
}

def BalancePass : Pass<"m2n-balance", "mlir::ModuleOp"> {
  let summary = "Choose senders among the ranks that hold each region";
  let description = [{
    Where a region is held by several source ranks (replication), picks the
    sender so that the busiest sender of the whole refit carries as little
    as possible, splitting a region among its holders when that helps.
    Deterministic.
  }];
  let options = [
    Option<"split", "split", "bool", /*default=*/"true",
           "Split regions among their holders when that helps">,
    Option<"minSplitBytes", "min-split-bytes", "int64_t",
           /*default=*/"int64_t(1) << 20",
           "Never split regions smaller than this many bytes">,
  ];
  let statistics = [
    Statistic<"maxSendBefore", "max-send-bytes-before",
              "Bytes of the busiest sender before balancing">,
    Statistic<"maxSendAfter", "max-send-bytes-after",
              "Bytes of the busiest sender after balancing">,
    Statistic<"idealMaxSend", "ideal-max-send-bytes",
              "A lower bound on the busiest sender's bytes">,
    Statistic<"splitRegions", "split-regions", "Regions split among holders">,
  ];
}

def RelayPass : Pass<"m2n-relay", "mlir::ModuleOp"> {
  let summary = "Forward regions among the destination ranks that need them";
  let description = [{
    When one region must reach many destination ranks (replicated
    destinations), lets the ranks that received it forward it to the others
    in later rounds, where the cost model says that is faster: an exchange
    (the region cut into a part per receiver, each part sent once to its
    owner, which passes it to the receivers of its node and to one entry
    receiver per other node, which passes it on within its node; where
    receivers share a node with a holder, they take the region from it
    over the node's links and feed the parts to the other nodes), or a
    chain or tree pipelined in chunks. A tensor held in many pieces that
    many receivers need whole is gathered instead: each piece goes to one
    receiver, and runs of pieces that double round by round cross the nodes
    and then each node (Bruck's allgather), as single boxes, so the plan
    grows with pieces plus receivers, not with their product. Each relayed
    byte then leaves the source side once.
  }];
  let options = [
    Option<"exchange", "exchange", "bool", /*default=*/"true",
           "Consider exchanges and gathers among the receivers, not only "
           "chains and trees">,
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"0",
           "Bytes per pipelined chunk of a chain or tree (0: chosen by the "
           "cost model)">,
    Option<"maxRounds", "max-rounds", "int32_t", /*default=*/"64",
           "The most relay rounds">,
    Option<"topology", "topology", "std::string", /*default=*/"\"\"",
           "A JSON topology file for the cost model (default: H200 nodes)">,
  ];
  let statistics = [
    Statistic<"relayedRegions", "relayed-regions",
              "Regions forwarded among destination ranks">,
    Statistic<"sourceSendsSaved", "source-sends-saved",
              "Sends from the source side saved">,
    Statistic<"rounds", "rounds", "Relay rounds">,
  ];
}

def CoalescePass : Pass<"m2n-coalesce", "mlir::ModuleOp"> {
  let summary = "Merge slices that are adjacent on both sides";
  let description = [{
    Merges the slices of a `m2n.transfers` that go between the same ranks in
    the same round and whose boxes are adjacent, so each remaining slice is
    as large as possible; a slice's strided runs are then the fewest.
  }];
  let statistics = [
    Statistic<"slicesBefore", "slices-before", "Slices before">,
    Statistic<"slicesAfter", "slices-after", "Slices after">,
  ];
}

def FusePass : Pass<"m2n-fuse", "mlir::ModuleOp"> {
  let summary = "Pack slices between each pair of ranks into messages";
  let description = [{
    Packs all slices between one (sender, receiver) pair within a round,
    across tensors, into messages (rows of `m2n.messages`) of at most
    `bucket-bytes`, splitting larger slices. A slice contiguous on both sides that fills at least half
    a message goes zero-copy, in a message of its own. A bucket never
    exceeds half the staging budget, so that a step can always hold one
    message each way. A pair's forwards are packed root after root (the
    source-side rank their bytes left from), and a first hop's closes
    where the bytes of the next source-side message that brought them
    begin, once it holds a quarter of a bucket. Without an explicit
    `bucket-bytes`, a plan that forwards is also fused in messages of its
    busiest rank's bytes over 512, in buckets halved from the model's while
    each halving schedules faster than the last, and in 32 chunks per pair
    and root (a forward passing on one chunk of every root); the finer
    messages are kept where the cost model, scheduling each, finds them
    more than 1% faster. The two fastest uniform buckets (for a plan
    without forwards, the model's) are then tried with a larger bucket
    between two ranks of one node, as much larger as the node's links are
    faster than a NIC, and kept where faster. Messages fused for the cost
    model are written scheduled, with the topology recorded as
    `schedule_topology`, so that m2n-schedule keeps their schedule.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"0",
           "The most bytes of a packed message (0: from the cost model)">,
    Option<"stagingBytes", "staging-bytes", "int64_t",
           /*default=*/"int64_t(1) << 30",
           "The staging budget per rank that m2n-schedule will keep">,
    Option<"topology", "topology", "std::string", /*default=*/"\"\"",
           "A JSON topology file for the cost model (default: H200 nodes)">,
  ];
  let statistics = [
    Statistic<"numMessages", "messages", "Messages">,
    Statistic<"numZeroCopy", "zero-copy-messages", "Zero-copy messages">,
    Statistic<"numSplitSlices", "split-slices", "Slices split to fit">,
  ];
}

def SchedulePass : Pass<"m2n-schedule", "mlir::ModuleOp"> {
  let summary = "Order messages into steps under a staging budget";
  let description = [{
    Places every message in a step: each forward after the messages that
    bring its bytes to its sender (rounds do not run in lockstep: direct
    sends, forwards and the fill and drain of pipelines overlap), each
    rank's staging bytes per step within the budget, each rank's seconds by
    the cost model spread evenly over the steps, and messages sorted so
    that every rank issues its sends and receives in an order that matches
    its peers. Several schedules are built (message by message into a few
    step counts, rounds one after another, and list schedules that fill
    steps one after another with the ready messages that fit a share of
    the busiest rank's work) and the one the cost model finds fastest is
    kept. Records `num_steps`, `staging_budget` and `schedule_topology` on
    the refit; a refit that already records this budget and topology keeps
    its schedule. With
    `report`, a remark gives each plan's steps, messages, bytes, staging
    peak, and the cost model's time against the lower bound.
  }];
  let options = [
    Option<"stagingBytes", "staging-bytes", "int64_t",
           /*default=*/"int64_t(1) << 30",
           "Staging bytes (pack and unpack buffers) per rank">,
    Option<"topology", "topology", "std::string", /*default=*/"\"\"",
           "A JSON topology file for the cost model (default: H200 nodes)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Report each plan's size and predicted time as a remark">,
  ];
  let statistics = [
    Statistic<"numSteps", "steps", "Steps">,
    Statistic<"stagingPeak", "staging-peak-bytes",
              "The most staging bytes of a rank in a step">,
  ];
}

def VerifyPass : Pass<"m2n-verify", "mlir::ModuleOp"> {
  let summary = "Check that a plan moves every byte exactly once";
  let description = [{
    Checks every `m2n.refit`: every destination byte is written exactly
    once, from a rank that holds it as a source or received it in an
    earlier round; once fused, every slice travels in exactly one message
    whose bytes add up; once scheduled, relays come after what they
    forward, and staging stays within the budget. A violation is a compiler
    bug: the pass fails and lists the problems.
  }];
}

#endif // M2N_DIALECT_M2N_TRANSFORMS_PASSES_TD
