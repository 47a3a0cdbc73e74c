//===- Inspect.cpp - m2n inspect: what a plan file does -------------------===//

#include "Commands.h"
#include "HumanUnits.h"
#include "PlanPicture.h"
#include "PlanTraffic.h"
#include "StepTimes.h"

#include "m2n/Plan/CostModel.h"
#include "m2n/plan.h"
#include "plan_internal.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
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

/// The plan's step times by `model` (StepTimes.h).
StepTimes stepTimes(const m2n_plan_header_t &header, const Summary &summary,
                    const plan::CostModel &model) {
  auto secondsOf = [&](const MessageInfo &message) {
    return model.messageSeconds(static_cast<int64_t>(message.sender),
                                static_cast<int64_t>(message.receiver),
                                static_cast<int64_t>(message.bytes));
  };
  StepTimes times;
  times.stepSeconds = model.getTopology().stepSeconds;
  times.bound = double(header.lower_bound_ns) * 1e-9;
  times.busiest.resize(header.step_count);
  times.loaded.assign(header.step_count, 0);
  // Over all steps first, to find the rank with the most work.
  std::vector<double> sending(header.world_size), receiving(header.world_size);
  for (const MessageInfo &message : summary.messages) {
    sending[message.sender] += secondsOf(message);
    receiving[message.receiver] += secondsOf(message);
  }
  bool loadedSends = true;
  for (bool send : {true, false})
    for (uint64_t rank = 0; rank < header.world_size; ++rank)
      if ((send ? sending : receiving)[rank] > times.loadedSeconds) {
        times.loadedSeconds = (send ? sending : receiving)[rank];
        times.loadedRank = rank;
        loadedSends = send;
      }
  std::fill(sending.begin(), sending.end(), 0.0);
  std::fill(receiving.begin(), receiving.end(), 0.0);
  std::vector<uint64_t> touched;
  auto settle = [&](uint64_t step) {
    llvm::sort(touched);
    touched.erase(llvm::unique(touched), touched.end());
    StepTimes::Busiest &most = times.busiest[step];
    for (bool send : {true, false})
      for (uint64_t rank : touched)
        if ((send ? sending : receiving)[rank] > most.seconds)
          most = {(send ? sending : receiving)[rank], rank, send};
    times.loaded[step] =
        (loadedSends ? sending : receiving)[times.loadedRank];
    for (uint64_t rank : touched)
      sending[rank] = receiving[rank] = 0;
    touched.clear();
  };
  // The messages are in step order.
  for (size_t i = 0; i < summary.messages.size(); ++i) {
    const MessageInfo &message = summary.messages[i];
    sending[message.sender] += secondsOf(message);
    receiving[message.receiver] += secondsOf(message);
    touched.push_back(message.sender);
    touched.push_back(message.receiver);
    if (i + 1 == summary.messages.size() ||
        summary.messages[i + 1].step != message.step)
      settle(message.step);
  }
  return times;
}

/// Per step, where the plan loses time against its lower bound: the step's
/// busiest rank by `model` and that rank's time against the even share
/// (the plan's lower bound over its steps), the step's time (its busiest
/// rank plus its own cost) over that share, the time in the step of the
/// rank with the most work in the plan, and the ranks that send (or
/// receive) anywhere in the plan but are idle in the step. The steps'
/// times add up to the model's time for the plan: fill, drain and
/// imbalance show as ratios above 1, a most loaded rank short of the
/// busiest, and many idle ranks.
void printSteps(const LoadedPlan &plan, const Summary &summary,
                const plan::CostModel &model) {
  const m2n_plan_header_t &header = plan.header();
  Traffic traffic = trafficOf(plan);
  StepTimes times = stepTimes(header, summary, model);
  llvm::raw_ostream &os = llvm::outs();
  os << llvm::formatv("{0,6} {1,9} {2,14} {3,13} {4,12} {5,12} {6,7} {7,12} "
                      "{8,12} {9,14}\n",
                      "step", "messages", "bytes", "busiest", "its us",
                      "share us", "x share", "loaded us", "idle senders",
                      "idle receivers");
  for (size_t s = 0; s < traffic.steps.size(); ++s) {
    const StepTraffic &step = traffic.steps[s];
    const StepTimes::Busiest &most = times.busiest[s];
    os << llvm::formatv("{0,6} {1,9} {2,14} {3,13} {4,12:F3} {5,12:F3} "
                        "{6,7:F2} {7,12:F3} {8,12} {9,14}\n",
                        s, step.messages, step.bytes, most.label(),
                        most.seconds * 1e6, times.share() * 1e6,
                        times.overShare(s), times.loaded[s] * 1e6,
                        traffic.senders - step.sendingRanks,
                        traffic.receivers - step.receivingRanks);
  }
  os << llvm::formatv("loaded: rank {0}, {1} of work in all\n"
                      "over {2} steps {3} by this topology (the plan's "
                      "predicted {4}), {5:F2}x its lower bound {6}\n",
                      times.loadedRank, humanSeconds(times.loadedSeconds),
                      traffic.steps.size(), humanSeconds(times.total()),
                      humanTime(header.predicted_ns), times.overBound(),
                      humanTime(header.lower_bound_ns));
}

/// Writes the pictures that `options` asks for: all of them, or on failure
/// none.
bool writePictures(const InspectOptions &options, const LoadedPlan &plan,
                   const Summary &summary, const plan::CostModel &model) {
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
    html = drawHtml(name, plan.header(), traffic,
                    stepTimes(plan.header(), summary, model));
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
  // The topology first: a bad file fails before the plan is read.
  plan::Topology topology;
  if (!options.topologyPath.empty()) {
    llvm::Expected<plan::Topology> read =
        plan::readTopology(options.topologyPath);
    if (!read) {
      llvm::errs() << llvm::toString(read.takeError()) << "\n";
      return 1;
    }
    topology = *read;
  }
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
  } else {
    const LoadedPlan &loaded = plan->plan;
    Summary summary = summarize(loaded);
    plan::CostModel model(topology);
    if (!writePictures(options, loaded, summary, model)) {
      result = 1;
    } else {
      if (options.json)
        printJson(loaded.header(), summary);
      else
        printText(options.planPath, loaded.header(), summary);
      if (options.steps)
        printSteps(loaded, summary, model);
    }
  }
  m2n_plan_destroy(plan);
  return result;
}

} // namespace m2n::driver
