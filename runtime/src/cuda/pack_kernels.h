//===- pack_kernels.h - Strided copies of many walks in one launch -*- C++
//-*-===//
//
// COPY, PACK and UNPACK records all move strided runs (m2n_plan_runs_t).
// The executor gathers the records of one kind and step into a batch and
// moves the whole batch with one kernel launch. A batch is a table of
// walks in device memory, uploaded once per executor; walks name their
// buffers by index into a small device table of base pointers (the rank's
// bindings, then its staging buffer), which binding rewrites.
//
// The kernel splits the batch's bytes into equal tiles, whatever the walks'
// shapes: each walk starts at a 16-byte aligned offset of one byte space
// (`begins`, a prefix sum), and each warp copies whole tiles, so that work
// is even across walks and runs.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_CUDA_PACK_KERNELS_H
#define M2N_CUDA_PACK_KERNELS_H

#include "m2n/plan_format.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace m2n::cuda {

/// One record's runs, as the kernel reads them. `runs` is the product of
/// the counts; level i repeats count[i] times, advancing fromStride[i] and
/// toStride[i] bytes, outermost first, as in m2n_plan_runs_t.
struct Walk {
  uint32_t from = 0; // index into the base pointer table
  uint32_t to = 0;
  uint32_t levels = 0;
  uint32_t reserved = 0;
  uint64_t fromOffset = 0;
  uint64_t toOffset = 0;
  uint64_t runBytes = 0;
  uint64_t runs = 1;
  int64_t count[M2N_PLAN_MAX_LEVELS] = {};
  int64_t fromStride[M2N_PLAN_MAX_LEVELS] = {};
  int64_t toStride[M2N_PLAN_MAX_LEVELS] = {};
};

/// The same runs in fewer, longer pieces: levels of one repetition go,
/// an innermost level that is contiguous on both sides joins the run, and
/// adjacent levels that nest densely on both sides merge. Sets `runs`.
Walk simplifyWalk(const Walk &walk);

/// A batch in device memory: `walks` and their `begins` (records + 1
/// offsets; the last is the padded total).
struct RunsBatch {
  const Walk *walks = nullptr;
  const uint64_t *begins = nullptr;
  uint32_t records = 0;
  uint64_t bytes = 0; // moved, without padding
  uint32_t tileShift = 0;
  uint64_t tiles = 0;
  bool empty() const { return records == 0; }
};

/// Lays out many batches in one host image, uploaded with one copy.
class RunsTableBuilder {
public:
  /// Adds a batch of walks (simplified here) and returns its index.
  /// `smCount` sizes the tiles so that small batches still spread over
  /// the device.
  uint32_t addBatch(const std::vector<Walk> &walks, int smCount);
  /// The image to upload.
  const std::vector<uint8_t> &image() const { return image_; }
  /// Batch `index` with its pointers into the image uploaded at `device`.
  RunsBatch batch(uint32_t index, const uint8_t *device) const;

private:
  struct Placed {
    uint64_t walksOffset;
    uint64_t beginsOffset;
    RunsBatch batch; // pointers unset
  };
  std::vector<uint8_t> image_;
  std::vector<Placed> placed_;
};

/// Enqueues the batch on `stream`: the kernel reads buffer i's base from
/// `bases[i]` in device memory. Nothing for an empty batch.
cudaError_t launchRuns(const RunsBatch &batch, uint8_t *const *bases,
                       int smCount, cudaStream_t stream);

/// The kernel's own code, lane by lane on the host, over a batch whose
/// walks and bases are in host memory: tests check the tiling and the
/// alignment paths with it where there is no GPU.
void emulateRuns(const RunsBatch &batch, uint8_t *const *bases);

} // namespace m2n::cuda

#endif // M2N_CUDA_PACK_KERNELS_H
