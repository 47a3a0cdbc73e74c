//===- PlanPicture.h - A plan's traffic, drawn ------------------*- C++ -*-===//
//
// `m2n inspect --svg` and `--html` draw a plan's traffic (PlanTraffic.h):
// a heatmap of the bytes each sender sends each receiver over all steps,
// each rank's totals in bars beside the rows and under the columns, a
// colour scale, and a title with the plan's key figures, among them how far
// the busiest sender and receiver are above the average. Every cell and bar
// has a tooltip with its exact bytes. The SVG is standalone (no scripts, no
// external resources); the HTML page embeds it and adds a table of the
// steps: what each moves and its time by a cost model against the even
// share of the bound (StepTimes.h).
//
//===----------------------------------------------------------------------===//

#ifndef M2N_TOOLS_M2N_PLANPICTURE_H
#define M2N_TOOLS_M2N_PLANPICTURE_H

#include "PlanTraffic.h"
#include "StepTimes.h"

#include "m2n/plan_format.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace m2n::driver {

/// A picture draws at most this many ranks along each side; a plan with
/// more is drawn in blocks of consecutive ranks, and the picture says so.
constexpr uint32_t kMaxPictureCells = 128;

/// The ranks per block for a plan of `worldSize` ranks: 1 up to
/// kMaxPictureCells ranks, else the fewest that fit.
uint32_t pictureBlockSize(uint32_t worldSize);

/// The picture of a plan called `name` with this header and traffic, as a
/// standalone SVG file.
std::string drawSvg(llvm::StringRef name, const m2n_plan_header_t &header,
                    const Traffic &traffic);

/// An HTML page with the picture and a table of what each step moves and
/// how long it takes by `times`.
std::string drawHtml(llvm::StringRef name, const m2n_plan_header_t &header,
                     const Traffic &traffic, const StepTimes &times);

} // namespace m2n::driver

#endif // M2N_TOOLS_M2N_PLANPICTURE_H
