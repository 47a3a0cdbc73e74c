//===- program.cpp - Decoding a rank's part of a plan ---------------------===//

#include "program.h"

namespace m2n {
namespace {

Transfer transferOf(const Instruction &inst) {
  const m2n_plan_transfer_t &record = inst.transfer;
  Transfer transfer;
  transfer.send =
      inst.opcode == M2N_OP_SEND || inst.opcode == M2N_OP_SEND_DIRECT;
  transfer.direct =
      inst.opcode == M2N_OP_SEND_DIRECT || inst.opcode == M2N_OP_RECV_DIRECT;
  transfer.peer = record.peer;
  transfer.binding = record.binding;
  transfer.offset = record.staging_offset;
  transfer.bytes = record.bytes;
  return transfer;
}

} // namespace

// The plan's order is already the execution order; validation guarantees
// that COPYs precede the first STEP and that every other record follows one.
Program decodeProgram(const LoadedPlan &plan, uint32_t rank) {
  Program program;
  for (const Instruction &inst : plan.instructions(rank)) {
    switch (inst.opcode) {
    case M2N_OP_STEP:
      program.steps.emplace_back();
      program.steps.back().step = inst.step;
      break;
    case M2N_OP_COPY:
      program.copies.push_back(walkOf(inst));
      break;
    case M2N_OP_PACK:
      program.steps.back().packs.push_back(walkOf(inst));
      break;
    case M2N_OP_UNPACK:
      program.steps.back().unpacks.push_back(walkOf(inst));
      break;
    case M2N_OP_SEND:
    case M2N_OP_RECV:
    case M2N_OP_SEND_DIRECT:
    case M2N_OP_RECV_DIRECT:
      program.steps.back().transfers.push_back(transferOf(inst));
      break;
    }
  }
  return program;
}

} // namespace m2n
