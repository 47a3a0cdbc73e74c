//===- Reference.cpp - Executing a plan element by element ----------------===//
//
// Every copy walks its box one element at a time and computes each
// element's place in a buffer from its global index, sharing no code with
// the strided-run arithmetic that the real runtime uses. The messages of a
// step are all packed before any is unpacked, as the ranks run them
// concurrently, so a relay that forwards bytes arriving in its own step
// reads bytes that are not there yet and fails.
//
//===----------------------------------------------------------------------===//

#include "m2n/Plan/Reference.h"

#include "LayoutIndex.h"

#include <algorithm>
#include <map>

using namespace m2n;
using namespace m2n::plan;

namespace {

/// A rank's bytes of one tensor in one layout: row-major over its box, and
/// in a destination which elements have arrived.
struct Shard {
  Box box;
  std::vector<uint8_t> bytes;
  std::vector<bool> written;
};

uint64_t mix(uint64_t x) {
  // splitmix64's finalizer: every input bit changes about half the output.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The value of element `linear` (row-major in the whole tensor) of tensor
/// `tensor`, as `elementBytes` little-endian bytes.
void encode(int64_t tensor, int64_t linear, int64_t elementBytes,
            uint8_t *out) {
  uint64_t value =
      mix(mix(static_cast<uint64_t>(tensor)) ^ static_cast<uint64_t>(linear));
  for (int64_t b = 0; b < elementBytes; ++b)
    out[b] = static_cast<uint8_t>(value >> (8 * (b % 8)));
}

/// Calls `fn(index)` for the global index of every element of `box`, in
/// row-major order.
template <typename Fn> void forEachElement(const Box &box, Fn fn) {
  if (box.volume() <= 0)
    return;
  std::vector<int64_t> index = box.offsets;
  while (true) {
    fn(index);
    size_t d = index.size();
    while (d > 0 && ++index[d - 1] == box.offsets[d - 1] + box.sizes[d - 1]) {
      index[d - 1] = box.offsets[d - 1];
      --d;
    }
    if (d == 0)
      return;
  }
}

/// The row-major position of global `index` in `box` (or in the tensor, for
/// its full box).
int64_t positionIn(const Box &box, const std::vector<int64_t> &index) {
  int64_t position = 0;
  for (size_t d = 0; d < index.size(); ++d)
    position = position * box.sizes[d] + (index[d] - box.offsets[d]);
  return position;
}

std::string indexStr(const std::vector<int64_t> &index) {
  std::string result = "[";
  for (size_t d = 0; d < index.size(); ++d)
    result += (d ? ", " : "") + std::to_string(index[d]);
  return result + "]";
}

class Executor {
public:
  explicit Executor(const Plan &plan) : plan(plan) {}
  std::string run();

private:
  std::string allocate();
  std::string localCopies();
  std::string runStep(const std::vector<size_t> &messages);
  std::string pack(const Message &message, std::vector<uint8_t> &bytes);
  std::string unpack(const Message &message, const std::vector<uint8_t> &bytes);
  std::string check();

  /// The rank's shard of a tensor, or null when it has none.
  Shard *shard(std::vector<std::map<int64_t, Shard>> &shards, int64_t tensor,
               int64_t rank);
  /// The part's slice, or an error.
  std::string partSlice(const MessagePart &part, const Slice *&slice);
  /// Copies element `index` of tensor `tensor` from a source shard to a
  /// destination shard of rank `rank`.
  std::string copyElement(int64_t tensor, int64_t elementBytes,
                          const std::vector<int64_t> &index, const Shard &from,
                          Shard &to, int64_t rank);
  std::string tensorName(int64_t tensor) const {
    return "tensor '" + plan.tensors[tensor].name + "'";
  }

  const Plan &plan;
  std::vector<std::map<int64_t, Shard>> sources, destinations;
};

std::string Executor::allocate() {
  sources.resize(plan.tensors.size());
  destinations.resize(plan.tensors.size());
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    const TransferGroup &group = plan.groups[g];
    if (!isValidLayout(plan, group.shape, group.src) ||
        !isValidLayout(plan, group.shape, group.dst))
      return "group " + std::to_string(g) + " has an invalid layout";
    int64_t elementBytes = group.elementBytes();
    Box tensorBox = fullBox(group.shape);
    for (int32_t tensor : group.members) {
      if (tensor < 0 || tensor >= static_cast<int32_t>(plan.tensors.size()))
        return "group " + std::to_string(g) + " names tensor " +
               std::to_string(tensor) + ", which does not exist";
      const Mesh &srcMesh = plan.meshes[group.src.mesh];
      for (int64_t i = 0; i < srcMesh.size(); ++i) {
        Shard &source = sources[tensor][srcMesh.ranks[i]];
        source.box = localBox(group.shape, srcMesh, group.src.placements, i);
        source.bytes.resize(source.box.volume() * elementBytes);
        forEachElement(source.box, [&](const std::vector<int64_t> &index) {
          encode(tensor, positionIn(tensorBox, index), elementBytes,
                 &source.bytes[positionIn(source.box, index) * elementBytes]);
        });
      }
      const Mesh &dstMesh = plan.meshes[group.dst.mesh];
      for (int64_t i = 0; i < dstMesh.size(); ++i) {
        Shard &destination = destinations[tensor][dstMesh.ranks[i]];
        destination.box =
            localBox(group.shape, dstMesh, group.dst.placements, i);
        destination.bytes.resize(destination.box.volume() * elementBytes);
        destination.written.resize(destination.box.volume());
      }
    }
  }
  return "";
}

Shard *Executor::shard(std::vector<std::map<int64_t, Shard>> &shards,
                       int64_t tensor, int64_t rank) {
  auto it = shards[tensor].find(rank);
  return it == shards[tensor].end() ? nullptr : &it->second;
}

std::string Executor::copyElement(int64_t tensor, int64_t elementBytes,
                                  const std::vector<int64_t> &index,
                                  const Shard &from, Shard &to, int64_t rank) {
  int64_t target = positionIn(to.box, index);
  if (to.written[target])
    return tensorName(tensor) + ": rank " + std::to_string(rank) +
           " receives element " + indexStr(index) + " twice";
  std::copy_n(&from.bytes[positionIn(from.box, index) * elementBytes],
              elementBytes, &to.bytes[target * elementBytes]);
  to.written[target] = true;
  return "";
}

std::string Executor::localCopies() {
  for (const TransferGroup &group : plan.groups) {
    for (const Slice &slice : group.slices) {
      if (!slice.isLocalCopy() || slice.origin != Origin::Source)
        continue;
      for (int32_t tensor : group.members) {
        Shard *from = shard(sources, tensor, slice.sender);
        Shard *to = shard(destinations, tensor, slice.receiver);
        if (!isWithinTensor(slice.box, group.shape) || !from || !to ||
            !contains(from->box, slice.box) || !contains(to->box, slice.box))
          return tensorName(tensor) + ": rank " + std::to_string(slice.sender) +
                 " cannot copy " + slice.box.str() + " locally";
        std::string error;
        forEachElement(slice.box, [&](const std::vector<int64_t> &index) {
          if (error.empty())
            error = copyElement(tensor, group.elementBytes(), index, *from, *to,
                                slice.receiver);
        });
        if (!error.empty())
          return error;
      }
    }
  }
  return "";
}

std::string Executor::partSlice(const MessagePart &part, const Slice *&slice) {
  if (part.group < 0 || part.group >= static_cast<int32_t>(plan.groups.size()))
    return "a part names group " + std::to_string(part.group);
  const TransferGroup &group = plan.groups[part.group];
  if (part.slice < 0 ||
      part.slice >= static_cast<int32_t>(group.slices.size()) ||
      part.memberBegin < 0 || part.memberBegin > part.memberEnd ||
      part.memberEnd > static_cast<int32_t>(group.members.size()))
    return "a part names slice " + std::to_string(part.slice) + " members [" +
           std::to_string(part.memberBegin) + ", " +
           std::to_string(part.memberEnd) + ") of group " +
           std::to_string(part.group) + ", which do not exist";
  slice = &group.slices[part.slice];
  if (!isWithinTensor(slice->box, group.shape))
    return "a part's slice " + slice->box.str() + " lies outside its tensor";
  return "";
}

std::string Executor::pack(const Message &message,
                           std::vector<uint8_t> &bytes) {
  for (const MessagePart &part : message.parts) {
    const Slice *slice = nullptr;
    if (std::string error = partSlice(part, slice); !error.empty())
      return error;
    const TransferGroup &group = plan.groups[part.group];
    bool fromDestination = slice->origin == Origin::Destination;
    int64_t elementBytes = group.elementBytes();
    for (int32_t k = part.memberBegin; k < part.memberEnd; ++k) {
      int32_t tensor = group.members[k];
      Shard *from = shard(fromDestination ? destinations : sources, tensor,
                          message.sender);
      if (!from || !contains(from->box, slice->box))
        return tensorName(tensor) + ": rank " + std::to_string(message.sender) +
               " does not hold " + slice->box.str() + " to send";
      std::string error;
      forEachElement(slice->box, [&](const std::vector<int64_t> &index) {
        int64_t position = positionIn(from->box, index);
        if (fromDestination && !from->written[position] && error.empty())
          error = tensorName(tensor) + ": rank " +
                  std::to_string(message.sender) + " forwards element " +
                  indexStr(index) + " before it arrived";
        const uint8_t *element = &from->bytes[position * elementBytes];
        bytes.insert(bytes.end(), element, element + elementBytes);
      });
      if (!error.empty())
        return error;
    }
  }
  if (static_cast<int64_t>(bytes.size()) != message.bytes)
    return "the message has " + std::to_string(message.bytes) +
           " bytes but its parts pack " + std::to_string(bytes.size());
  return "";
}

std::string Executor::unpack(const Message &message,
                             const std::vector<uint8_t> &bytes) {
  size_t offset = 0;
  for (const MessagePart &part : message.parts) {
    const Slice *slice = nullptr;
    if (std::string error = partSlice(part, slice); !error.empty())
      return error;
    const TransferGroup &group = plan.groups[part.group];
    int64_t elementBytes = group.elementBytes();
    for (int32_t k = part.memberBegin; k < part.memberEnd; ++k) {
      int32_t tensor = group.members[k];
      Shard *to = shard(destinations, tensor, message.receiver);
      if (!to || !contains(to->box, slice->box))
        return tensorName(tensor) + ": rank " +
               std::to_string(message.receiver) + " has no room for " +
               slice->box.str();
      std::string error;
      forEachElement(slice->box, [&](const std::vector<int64_t> &index) {
        int64_t position = positionIn(to->box, index);
        if (to->written[position] && error.empty())
          error = tensorName(tensor) + ": rank " +
                  std::to_string(message.receiver) + " receives element " +
                  indexStr(index) + " twice";
        std::copy_n(&bytes[offset], elementBytes,
                    &to->bytes[position * elementBytes]);
        to->written[position] = true;
        offset += elementBytes;
      });
      if (!error.empty())
        return error;
    }
  }
  return "";
}

std::string Executor::runStep(const std::vector<size_t> &messages) {
  std::vector<std::vector<uint8_t>> packed(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string error = pack(plan.messages[messages[i]], packed[i]);
    if (!error.empty())
      return "message " + std::to_string(messages[i]) + ": " + error;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string error = unpack(plan.messages[messages[i]], packed[i]);
    if (!error.empty())
      return "message " + std::to_string(messages[i]) + ": " + error;
  }
  return "";
}

std::string Executor::check() {
  for (size_t tensor = 0; tensor < destinations.size(); ++tensor) {
    if (plan.tensors[tensor].group < 0 ||
        plan.tensors[tensor].group >= static_cast<int32_t>(plan.groups.size()))
      return tensorName(tensor) + " belongs to no group";
    const TransferGroup &group = plan.groups[plan.tensors[tensor].group];
    int64_t elementBytes = group.elementBytes();
    Box tensorBox = fullBox(group.shape);
    std::vector<uint8_t> expected(elementBytes);
    for (const auto &[rank, destination] : destinations[tensor]) {
      std::string error;
      forEachElement(destination.box, [&](const std::vector<int64_t> &index) {
        if (!error.empty())
          return;
        int64_t position = positionIn(destination.box, index);
        std::string where = tensorName(tensor) + ": rank " +
                            std::to_string(rank) + ", element " +
                            indexStr(index);
        if (!destination.written[position]) {
          error = where + " was never written";
          return;
        }
        encode(tensor, positionIn(tensorBox, index), elementBytes,
               expected.data());
        if (!std::equal(expected.begin(), expected.end(),
                        destination.bytes.begin() + position * elementBytes))
          error = where + " holds the wrong value";
      });
      if (!error.empty())
        return error;
    }
  }
  return "";
}

std::string Executor::run() {
  if (std::string error = allocate(); !error.empty())
    return error;
  if (std::string error = localCopies(); !error.empty())
    return error;
  std::vector<size_t> order(plan.messages.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.messages[a].step < plan.messages[b].step;
  });
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    while (end < order.size() &&
           plan.messages[order[end]].step == plan.messages[order[begin]].step)
      ++end;
    std::vector<size_t> step(order.begin() + begin, order.begin() + end);
    if (std::string error = runStep(step); !error.empty())
      return error;
    begin = end;
  }
  return check();
}

} // namespace

std::string m2n::plan::runReference(const Plan &plan) {
  return Executor(plan).run();
}
