//===- Inspect.cpp - m2n inspect: what a plan file does -------------------===//

#include "Commands.h"
#include "HumanUnits.h"
#include "PlanPicture.h"
#include "PlanTraffic.h"

#include "m2n/plan.h"
#include "plan_internal.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace m2n::driver {
namespace {

struct MessageInfo {
  uint64_t step, sender, receiver, bytes;
};

struct RankInfo {
  uint64_t sendBytes = 0, receiveBytes = 0, messages = 0, stagingBytes = 0;
};

/// Every message, read off its sender's instructions, in step order per
/// sender; and each rank's traffic.
struct Summary {
  std::vector<MessageInfo> messages;
  std::vector<RankInfo> ranks;
};

Summary summarize(const LoadedPlan &plan) {
  Summary summary;
  summary.ranks.resize(plan.worldSize());
  for (uint32_t rank = 0; rank < plan.worldSize(); ++rank) {
    if (const m2n_plan_rank_header_t *header = plan.rankHeader(rank)) {
      summary.ranks[rank].sendBytes = header->send_bytes;
      summary.ranks[rank].receiveBytes = header->receive_bytes;
      summary.ranks[rank].stagingBytes = header->staging_bytes;
    }
    uint64_t step = 0;
    for (const Instruction &instruction : plan.instructions(rank)) {
      if (instruction.opcode == M2N_OP_STEP)
        step = instruction.step;
      if (instruction.opcode != M2N_OP_SEND &&
          instruction.opcode != M2N_OP_SEND_DIRECT)
        continue;
      summary.messages.push_back(
          {step, rank, instruction.transfer.peer, instruction.transfer.bytes});
      ++summary.ranks[rank].messages;
    }
  }
  llvm::stable_sort(summary.messages,
                    [](const MessageInfo &a, const MessageInfo &b) {
                      return a.step < b.step;
                    });
  return summary;
}

void printJson(const m2n_plan_header_t &header, const Summary &summary) {
  llvm::json::Array messages, ranks;
  for (const MessageInfo &message : summary.messages)
    messages.push_back(llvm::json::Object{{"step", message.step},
                                          {"src", message.sender},
                                          {"dst", message.receiver},
                                          {"bytes", message.bytes}});
  for (size_t rank = 0; rank < summary.ranks.size(); ++rank) {
    const RankInfo &info = summary.ranks[rank];
    ranks.push_back(llvm::json::Object{{"rank", rank},
                                       {"send_bytes", info.sendBytes},
                                       {"receive_bytes", info.receiveBytes},
                                       {"messages", info.messages},
                                       {"staging_bytes", info.stagingBytes}});
  }
  llvm::json::Object root{
      {"world_size", header.world_size},
      {"tensors", header.tensor_count},
      {"steps", header.step_count},
      {"staging_budget", header.staging_budget},
      {"wire_bytes", header.wire_bytes},
      {"local_copy_bytes", header.local_copy_bytes},
      {"predicted_seconds", header.predicted_ns * 1e-9},
      {"lower_bound_seconds", header.lower_bound_ns * 1e-9},
      {"messages", std::move(messages)},
      {"ranks", std::move(ranks)}};
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(root)))
               << "\n";
}

void printText(llvm::StringRef path, const m2n_plan_header_t &header,
               const Summary &summary) {
  llvm::raw_ostream &os = llvm::outs();
  double ratio = header.lower_bound_ns
                     ? double(header.predicted_ns) / header.lower_bound_ns
                     : 1.0;
  os << path << ": " << counted(header.world_size, "rank") << ", "
     << counted(header.tensor_count, "tensor") << ", "
     << counted(header.step_count, "step") << ", "
     << counted(summary.messages.size(), "message") << "\n"
     << humanBytes(header.wire_bytes) << " on the wire, "
     << humanBytes(header.local_copy_bytes) << " copied locally, staging "
     << "budget " << humanBytes(header.staging_budget) << " per rank\n"
     << llvm::formatv("predicted {0}, lower bound {1} ({2:F2}x)\n",
                      humanTime(header.predicted_ns),
                      humanTime(header.lower_bound_ns), ratio)
     << llvm::formatv("{0,6} {1,12} {2,12} {3,9} {4,12}\n", "rank", "sends",
                      "receives", "messages", "staging");
  for (size_t rank = 0; rank < summary.ranks.size(); ++rank) {
    const RankInfo &info = summary.ranks[rank];
    os << llvm::formatv("{0,6} {1,12} {2,12} {3,9} {4,12}\n", rank,
                        humanBytes(info.sendBytes),
                        humanBytes(info.receiveBytes), info.messages,
                        humanBytes(info.stagingBytes));
  }
}

/// Per step, where the plan loses against an even spread: the step's
/// busiest rank (sending or receiving, whichever is further above its
/// side's even share) against the share each rank that sends (or receives)
/// anywhere in the plan would carry if the step's bytes were spread evenly,
/// and the ranks idle in the step. Fill, drain and imbalance show as high
/// ratios and many idle ranks. Bytes, not seconds: the plan file does not
/// say what the links were.
void printSteps(const LoadedPlan &plan) {
  Traffic traffic = trafficOf(plan);
  uint32_t senders = traffic.senders, receivers = traffic.receivers;
  llvm::raw_ostream &os = llvm::outs();
  os << llvm::formatv("{0,6} {1,9} {2,14} {3,13} {4,14} {5,14} {6,7} {7,12} "
                      "{8,14}\n",
                      "step", "messages", "bytes", "busiest", "its bytes",
                      "even share", "x even", "idle senders", "idle receivers");
  double busiestTotal = 0, evenTotal = 0;
  for (size_t s = 0; s < traffic.steps.size(); ++s) {
    const StepTraffic &step = traffic.steps[s];
    double sendShare = senders ? double(step.bytes) / senders : 0;
    double receiveShare = receivers ? double(step.bytes) / receivers : 0;
    double sendRatio = sendShare > 0 ? step.busiestSenderBytes / sendShare : 0;
    double receiveRatio =
        receiveShare > 0 ? step.busiestReceiverBytes / receiveShare : 0;
    bool sending = sendRatio >= receiveRatio;
    uint64_t bytes =
        sending ? step.busiestSenderBytes : step.busiestReceiverBytes;
    double share = sending ? sendShare : receiveShare;
    std::string rank =
        (sending ? "send " : "recv ") +
        std::to_string(sending ? step.busiestSender : step.busiestReceiver);
    os << llvm::formatv("{0,6} {1,9} {2,14} {3,13} {4,14} {5,14:F0} {6,7:F2} "
                        "{7,12} {8,14}\n",
                        s, step.messages, step.bytes, rank, bytes, share,
                        sending ? sendRatio : receiveRatio,
                        senders - step.sendingRanks,
                        receivers - step.receivingRanks);
    busiestTotal += double(bytes);
    evenTotal += share;
  }
  os << llvm::formatv("over {0} steps the busiest ranks carry {1:F0} bytes, "
                      "{2:F2}x the even shares' {3:F0}\n",
                      traffic.steps.size(), busiestTotal,
                      evenTotal > 0 ? busiestTotal / evenTotal : 1.0,
                      evenTotal);
}

/// Writes the pictures that `options` asks for: all of them, or on failure
/// none.
bool writePictures(const InspectOptions &options, const LoadedPlan &plan) {
  if (options.svgPath.empty() && options.htmlPath.empty())
    return true;
  Traffic traffic = trafficOf(plan);
  // The file's name, not its path: the picture may travel.
  llvm::StringRef name = llvm::sys::path::filename(options.planPath);
  std::string svg, html;
  std::vector<FileContents> files;
  if (!options.svgPath.empty()) {
    svg = drawSvg(name, plan.header(), traffic);
    files.push_back({options.svgPath, svg});
  }
  if (!options.htmlPath.empty()) {
    html = drawHtml(name, plan.header(), traffic);
    files.push_back({options.htmlPath, html});
  }
  return writeFilesAtomically(files, {options.planPath});
}

/// Prints a status's message and frees it.
int fail(m2n_status_t status) {
  llvm::errs() << "error: " << m2n_status_message(status) << "\n";
  m2n_status_free(status);
  return 1;
}

} // namespace

int inspect(const InspectOptions &options) {
  m2n_plan_t plan = nullptr;
  // Inspection runs nothing: the structural checks keep it within the
  // file, and the proof of what the plan computes is m2n run's to make.
  if (m2n_status_t status = m2n_plan_load_file_flags(
          options.planPath.c_str(), M2N_PLAN_LOAD_TRUSTED, &plan))
    return fail(status);
  int result = 0;
  if (options.disassemble) {
    char *text = nullptr;
    if (m2n_status_t status = m2n_plan_disassemble(plan, options.rank, &text))
      result = fail(status);
    else
      llvm::outs() << text;
    m2n_free(text);
  } else if (!writePictures(options, plan->plan)) {
    result = 1;
  } else {
    const LoadedPlan &loaded = plan->plan;
    Summary summary = summarize(loaded);
    if (options.json)
      printJson(loaded.header(), summary);
    else
      printText(options.planPath, loaded.header(), summary);
    if (options.steps)
      printSteps(loaded);
  }
  m2n_plan_destroy(plan);
  return result;
}

} // namespace m2n::driver
