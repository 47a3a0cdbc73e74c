//===- PlanPicture.cpp - A plan's traffic, drawn --------------------------===//
//
// The layout, top to bottom: the title lines; the receivers' labels; the
// matrix (senders down, receivers across) with the send bars to its right;
// the receive bars under it; the colour scale. The colour of a cell is
// linear in its bytes, so a cell twice as dark moves about twice as much,
// and the bars carry a dashed line at the average of the non-zero bars, so
// that an imbalance shows without reading a number.
//
//===----------------------------------------------------------------------===//

#include "PlanPicture.h"
#include "HumanUnits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace m2n::driver {
namespace {

constexpr int kPad = 16;
constexpr int kTitleLine = 18;
/// Room above the matrix for the receivers' caption and labels.
constexpr int kColumnHeader = 34;
/// The length of the longest bar.
constexpr int kBar = 120;
/// The matrix's side, in pixels, for many ranks; few ranks get cells of at
/// most kMaxCell pixels.
constexpr int kMatrixBudget = 512;
constexpr int kMinCell = kMatrixBudget / static_cast<int>(kMaxPictureCells);
constexpr int kMaxCell = 24;
/// Of a 12px sans-serif character, and of the title's 14px bold ones,
/// generously, to size the picture to its text without measuring fonts.
constexpr int kCharWidth = 7;
constexpr int kBoldCharWidth = 9;
constexpr int kLegendWidth = 200;
/// A ratio of busiest to average from which the title marks it.
constexpr double kImbalanced = 1.25;

constexpr const char *kEmptyFill = "#f4f4f4";
constexpr const char *kBarFill = "#4878a8";
constexpr const char *kAlarmFill = "#b30000";

/// The colour scale, light to dark: yellow, orange, red, wine.
constexpr std::array<std::array<int, 3>, 5> kRamp = {{{255, 237, 160},
                                                      {254, 178, 76},
                                                      {252, 110, 51},
                                                      {218, 30, 35},
                                                      {128, 0, 38}}};

std::string escaped(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// The colour of `fraction` (0, 1] of the scale.
std::string colourOf(double fraction) {
  double position = std::clamp(fraction, 0.0, 1.0) * (kRamp.size() - 1);
  size_t low = std::min(static_cast<size_t>(position), kRamp.size() - 2);
  double t = position - low;
  std::string colour = "#";
  for (size_t channel = 0; channel < 3; ++channel) {
    double value = kRamp[low][channel] +
                   t * (kRamp[low + 1][channel] - kRamp[low][channel]);
    colour += llvm::formatv("{0:x-2}", static_cast<int>(std::lround(value)));
  }
  return colour;
}

/// The average over the ranks that are not idle: in a refit half the ranks
/// may only send and the other half only receive, and an average over all
/// would make a balanced plan look twice as uneven.
double activeAverage(const std::vector<uint64_t> &perRank) {
  uint64_t total = 0, active = 0;
  for (uint64_t bytes : perRank)
    if (bytes != 0) {
      total += bytes;
      ++active;
    }
  return active ? double(total) / active : 0;
}

/// The busiest rank (the lowest of a tie), and how it compares.
struct Busiest {
  uint32_t rank = 0;
  uint64_t bytes = 0;
  /// Ranks that are not idle, and the busiest one's bytes over their
  /// average.
  uint64_t active = 0;
  double ratio = 0;
};

Busiest busiestOf(const std::vector<uint64_t> &perRank) {
  Busiest busiest;
  auto top = std::max_element(perRank.begin(), perRank.end());
  if (top == perRank.end() || *top == 0)
    return busiest;
  busiest.rank = static_cast<uint32_t>(top - perRank.begin());
  busiest.bytes = *top;
  busiest.active = llvm::count_if(perRank, [](uint64_t b) { return b != 0; });
  busiest.ratio = *top / activeAverage(perRank);
  return busiest;
}

struct TitleLine {
  std::string text;
  /// Marked: an imbalance worth a look.
  bool alarming = false;
};

/// "busiest sender: rank 3, 1.50 KiB, 2.00x the average of 4 senders".
TitleLine busiestLine(llvm::StringRef role,
                      const std::vector<uint64_t> &perRank) {
  Busiest busiest = busiestOf(perRank);
  return {llvm::formatv("busiest {0}: rank {1}, {2}, {3:F2}x the average of "
                        "{4}",
                        role, busiest.rank, humanBytes(busiest.bytes),
                        busiest.ratio, counted(busiest.active, role)),
          busiest.ratio >= kImbalanced};
}

class Picture {
public:
  Picture(llvm::StringRef name, const m2n_plan_header_t &header,
          const Traffic &traffic);

  /// The <svg> element.
  std::string svg() const;

private:
  void layOut();
  /// Who row or column `cell` stands for: "rank 5" or "ranks 3-5".
  std::string ranksOf(uint32_t cell) const;
  int cellCentre(uint32_t cell) const { return cell * cell_ + cell_ / 2; }

  void drawTitle(llvm::raw_ostream &os) const;
  void drawAxes(llvm::raw_ostream &os) const;
  void drawCells(llvm::raw_ostream &os) const;
  void drawSendBars(llvm::raw_ostream &os) const;
  void drawReceiveBars(llvm::raw_ostream &os) const;
  void drawLegend(llvm::raw_ostream &os) const;

  std::string name_;
  uint32_t worldSize_;
  uint32_t blockSize_;
  /// The traffic as drawn: per rank, or per block of ranks.
  Traffic cells_;
  std::vector<TitleLine> title_;
  uint64_t maxCell_ = 0, maxSend_ = 0, maxReceive_ = 0;

  // Pixels.
  int cell_ = 0, side_ = 0;
  int left_ = 0, top_ = 0;
  int barsLeft_ = 0, barsTop_ = 0, legendTop_ = 0;
  int width_ = 0, height_ = 0;
};

Picture::Picture(llvm::StringRef name, const m2n_plan_header_t &header,
                 const Traffic &traffic)
    : name_(name.str()), worldSize_(traffic.size),
      blockSize_(pictureBlockSize(traffic.size)),
      cells_(blockSize_ == 1 ? traffic : inBlocks(traffic, blockSize_)) {
  title_.push_back({llvm::formatv("{0}: {1}, {2}, {3}, {4}, {5} on the wire",
                                  name_, counted(worldSize_, "rank"),
                                  counted(header.tensor_count, "tensor"),
                                  counted(header.step_count, "step"),
                                  counted(traffic.messageCount, "message"),
                                  humanBytes(traffic.wireBytes))});
  if (traffic.messageCount == 0) {
    title_.push_back({"no messages: nothing crosses between ranks"});
  } else {
    title_.push_back(busiestLine("sender", traffic.sendBytes));
    title_.push_back(busiestLine("receiver", traffic.receiveBytes));
  }
  std::string copies = "no local copies";
  if (traffic.localCopyTotal)
    copies = "local copies " + humanBytes(traffic.localCopyTotal) +
             " within ranks (not drawn)";
  double bound = header.lower_bound_ns
                     ? double(header.predicted_ns) / header.lower_bound_ns
                     : 1.0;
  title_.push_back(
      {llvm::formatv("{0}; predicted {1}, {2:F2}x the lower bound", copies,
                     humanTime(header.predicted_ns), bound)});
  if (blockSize_ > 1) {
    uint32_t last = worldSize_ % blockSize_;
    title_.push_back(
        {llvm::formatv("{0} ranks drawn in {1} blocks of {2}{3}: each cell and "
                       "bar is a block's total",
                       worldSize_, cells_.size, blockSize_,
                       last ? llvm::formatv(" (the last of {0})", last).str()
                            : std::string())});
  }
  maxCell_ = *llvm::max_element(cells_.bytes);
  maxSend_ = *llvm::max_element(cells_.sendBytes);
  maxReceive_ = *llvm::max_element(cells_.receiveBytes);
  layOut();
}

void Picture::layOut() {
  cell_ = std::clamp(kMatrixBudget / static_cast<int>(cells_.size), kMinCell,
                     kMaxCell);
  side_ = cell_ * static_cast<int>(cells_.size);
  int labelChars = static_cast<int>(std::to_string(worldSize_ - 1).size());
  left_ = kPad + 18 + labelChars * kCharWidth;
  top_ = kPad + static_cast<int>(title_.size()) * kTitleLine + kColumnHeader;
  barsLeft_ = left_ + side_ + 8;
  barsTop_ = top_ + side_ + 8;
  legendTop_ = barsTop_ + kBar + 36;
  int text = 0;
  for (size_t i = 0; i < title_.size(); ++i)
    text = std::max(text, static_cast<int>(title_[i].text.size()) *
                              (i == 0 ? kBoldCharWidth : kCharWidth));
  width_ = std::max(
      {barsLeft_ + kBar + 48, 2 * kPad + text, left_ + kLegendWidth + 120});
  height_ = legendTop_ + 40 + kPad;
}

std::string Picture::ranksOf(uint32_t cell) const {
  uint32_t first = cell * blockSize_;
  uint32_t last = std::min(first + blockSize_, worldSize_) - 1;
  if (first == last)
    return llvm::formatv("rank {0}", first);
  return llvm::formatv("ranks {0}-{1}", first, last);
}

void Picture::drawTitle(llvm::raw_ostream &os) const {
  for (size_t i = 0; i < title_.size(); ++i) {
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\"", kPad,
                        kPad + 12 + i * kTitleLine);
    if (i == 0)
      os << " font-size=\"14\" font-weight=\"bold\"";
    if (title_[i].alarming)
      os << " fill=\"" << kAlarmFill << "\" font-weight=\"bold\"";
    os << ">" << escaped(title_[i].text) << "</text>\n";
  }
}

void Picture::drawAxes(llvm::raw_ostream &os) const {
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#444\">receivers"
                      "</text>\n",
                      left_, top_ - 20);
  int middle = top_ + side_ / 2;
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#444\" "
                      "text-anchor=\"middle\" transform=\"rotate(-90 {0} "
                      "{1})\">senders</text>\n",
                      kPad + 8, middle);
  // Labels every `step` cells, far enough apart that the widest numbers
  // do not touch.
  int widest = static_cast<int>(std::to_string(worldSize_ - 1).size()) * 6 + 8;
  uint32_t step = 1;
  for (uint32_t nice : {2, 5, 10, 20, 50})
    if (static_cast<int>(step) * cell_ < widest)
      step = nice;
  os << "<g font-size=\"10\" fill=\"#444\">\n";
  for (uint32_t cell = 0; cell < cells_.size; cell += step) {
    uint32_t rank = cell * blockSize_;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">"
                        "{2}</text>\n",
                        left_ + cellCentre(cell), top_ - 5, rank);
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">{2}"
                        "</text>\n",
                        left_ - 4, top_ + cellCentre(cell) + 3, rank);
  }
  os << "</g>\n";
}

void Picture::drawCells(llvm::raw_ostream &os) const {
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{2}\" "
                      "fill=\"{3}\" stroke=\"#bbb\"/>\n",
                      left_, top_, side_, kEmptyFill);
  for (uint32_t sender = 0; sender < cells_.size; ++sender)
    for (uint32_t receiver = 0; receiver < cells_.size; ++receiver) {
      uint64_t bytes = cells_.pairBytes(sender, receiver);
      if (bytes == 0)
        continue;
      os << llvm::formatv(
          "<rect class=\"cell\" x=\"{0}\" y=\"{1}\" width=\"{2}\" "
          "height=\"{2}\" fill=\"{3}\"><title>{4} to {5}: {6} in "
          "{7}</title></rect>\n",
          left_ + receiver * cell_, top_ + sender * cell_, cell_,
          colourOf(double(bytes) / maxCell_), ranksOf(sender),
          ranksOf(receiver), counted(bytes, "byte"),
          counted(cells_.pairMessages(sender, receiver), "message"));
    }
}

/// The gap between bars, so that neighbours stay apart where there is room.
int barGap(int cell) { return cell >= 6 ? 1 : 0; }

void Picture::drawSendBars(llvm::raw_ostream &os) const {
  if (maxSend_ == 0)
    return;
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#444\">sends (max {2})"
                      "</text>\n",
                      barsLeft_, top_ - 20, humanBytes(maxSend_));
  int gap = barGap(cell_);
  for (uint32_t cell = 0; cell < cells_.size; ++cell) {
    uint64_t bytes = cells_.sendBytes[cell];
    if (bytes == 0)
      continue;
    std::string copies =
        cells_.localCopyBytes[cell]
            ? ", copies " + counted(cells_.localCopyBytes[cell], "byte") +
                  " locally"
            : std::string();
    os << llvm::formatv(
        "<rect class=\"send\" x=\"{0}\" y=\"{1}\" width=\"{2}\" "
        "height=\"{3}\" fill=\"{4}\"><title>{5} {6} {7} in {8}{9}"
        "</title></rect>\n",
        barsLeft_, top_ + cell * cell_ + gap,
        std::max<int64_t>(1, std::lround(double(bytes) / maxSend_ * kBar)),
        cell_ - 2 * gap, kBarFill, ranksOf(cell),
        blockSize_ > 1 ? "send" : "sends", counted(bytes, "byte"),
        counted(cells_.sendMessages[cell], "message"), copies);
  }
  double average =
      barsLeft_ + activeAverage(cells_.sendBytes) / maxSend_ * kBar;
  os << llvm::formatv("<line x1=\"{0:F1}\" y1=\"{1}\" x2=\"{0:F1}\" y2=\"{2}\" "
                      "stroke=\"#222\" stroke-dasharray=\"3 2\"/>\n"
                      "<text x=\"{0:F1}\" y=\"{3}\" font-size=\"10\" "
                      "text-anchor=\"middle\">avg</text>\n",
                      average, top_ - 2, top_ + side_ + 2, top_ - 5);
}

void Picture::drawReceiveBars(llvm::raw_ostream &os) const {
  if (maxReceive_ == 0)
    return;
  os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#444\">receives (max "
                      "{2})</text>\n",
                      left_, barsTop_ + kBar + 16, humanBytes(maxReceive_));
  int gap = barGap(cell_);
  for (uint32_t cell = 0; cell < cells_.size; ++cell) {
    uint64_t bytes = cells_.receiveBytes[cell];
    if (bytes == 0)
      continue;
    os << llvm::formatv(
        "<rect class=\"receive\" x=\"{0}\" y=\"{1}\" width=\"{2}\" "
        "height=\"{3}\" fill=\"{4}\"><title>{5} {6} {7} in {8}"
        "</title></rect>\n",
        left_ + cell * cell_ + gap, barsTop_, cell_ - 2 * gap,
        std::max<int64_t>(1, std::lround(double(bytes) / maxReceive_ * kBar)),
        kBarFill, ranksOf(cell), blockSize_ > 1 ? "receive" : "receives",
        counted(bytes, "byte"),
        counted(cells_.receiveMessages[cell], "message"));
  }
  double average =
      barsTop_ + activeAverage(cells_.receiveBytes) / maxReceive_ * kBar;
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1:F1}\" x2=\"{2}\" y2=\"{1:F1}\" "
                      "stroke=\"#222\" stroke-dasharray=\"3 2\"/>\n"
                      "<text x=\"{3}\" y=\"{4:F1}\" font-size=\"10\">avg"
                      "</text>\n",
                      left_ - 2, average, left_ + side_ + 2, left_ + side_ + 4,
                      average + 3);
}

void Picture::drawLegend(llvm::raw_ostream &os) const {
  if (maxCell_ == 0)
    return;
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"{1}\" fill=\"#444\">bytes per cell, over all steps: "
      "{2}</text>\n",
      left_, legendTop_,
      blockSize_ > 1 ? "a block of senders to a block of receivers"
                     : "one sender to one receiver");
  int bar = legendTop_ + 6;
  os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"10\" "
                      "fill=\"url(#m2n-ramp)\" stroke=\"#999\"/>\n",
                      left_, bar, kLegendWidth);
  os << llvm::formatv(
      "<g font-size=\"10\" fill=\"#444\">\n"
      "<text x=\"{0}\" y=\"{1}\">0</text>\n"
      "<text x=\"{2}\" y=\"{1}\" text-anchor=\"middle\">{3}</text>\n"
      "<text x=\"{4}\" y=\"{1}\" text-anchor=\"end\">{5}<title>{6}"
      "</title></text>\n"
      "<rect x=\"{7}\" y=\"{8}\" width=\"10\" height=\"10\" fill=\"{9}\" "
      "stroke=\"#bbb\"/>\n"
      "<text x=\"{10}\" y=\"{11}\">no traffic</text>\n</g>\n",
      left_, bar + 22, left_ + kLegendWidth / 2, humanBytes(maxCell_ / 2),
      left_ + kLegendWidth, humanBytes(maxCell_), counted(maxCell_, "byte"),
      left_ + kLegendWidth + 16, bar, kEmptyFill, left_ + kLegendWidth + 30,
      bar + 9);
}

std::string Picture::svg() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                      "font-family=\"sans-serif\" font-size=\"12\">\n",
                      width_, height_);
  os << "<title>" << escaped(name_) << ": traffic between ranks</title>\n";
  os << "<defs><linearGradient id=\"m2n-ramp\">";
  for (size_t i = 0; i < kRamp.size(); ++i)
    os << llvm::formatv("<stop offset=\"{0:F2}\" stop-color=\"{1}\"/>",
                        double(i) / (kRamp.size() - 1),
                        colourOf(double(i) / (kRamp.size() - 1)));
  os << "</linearGradient></defs>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  drawTitle(os);
  drawAxes(os);
  drawCells(os);
  drawSendBars(os);
  drawReceiveBars(os);
  drawLegend(os);
  os << "</svg>\n";
  return text;
}

/// A table cell: the rank and its bytes, or a dash in a step without
/// messages.
std::string rankAndBytes(uint64_t messages, uint32_t rank, uint64_t bytes) {
  if (messages == 0)
    return "<td>-</td><td>-</td>";
  return llvm::formatv("<td>{0}</td><td>{1}</td>", rank, bytes);
}

/// A step loses visibly when it takes more than this over the even share.
constexpr double kShadedOverShare = 1.10;

/// The table of steps: what each moves; its time by the cost model against
/// the even share, as `--steps` prints it (shaded where it loses); and the
/// ranks that send (receive) anywhere in the plan but not in the step: a
/// pipeline's fill and drain show as many.
void writeStepTable(llvm::raw_ostream &os, const Traffic &traffic,
                    const StepTimes &times) {
  os << "<table>\n<thead><tr><th>step</th><th>messages</th><th>bytes</th>"
        "<th>largest message</th><th>busiest</th><th>its µs</th>"
        "<th>share µs</th><th>× share</th><th>loaded µs</th>"
        "<th>busiest sender</th><th>its bytes</th><th>busiest receiver</th>"
        "<th>its bytes</th><th>idle senders</th><th>idle receivers</th>"
        "</tr></thead>\n<tbody>\n";
  for (size_t index = 0; index < traffic.steps.size(); ++index) {
    const StepTraffic &step = traffic.steps[index];
    const StepTimes::Busiest &most = times.busiest[index];
    double over = times.overShare(index);
    os << (over > kShadedOverShare ? "<tr class=\"over\">" : "<tr>")
       << llvm::formatv("<td>{0}</td><td>{1}</td><td title=\"{2}\">{3}"
                        "</td><td>{4}</td>",
                        index, step.messages, humanBytes(step.bytes),
                        step.bytes, step.largestMessage)
       << llvm::formatv("<td>{0}</td><td>{1:F3}</td><td>{2:F3}</td>"
                        "<td>{3:F2}</td><td>{4:F3}</td>",
                        step.messages ? most.label() : "-", most.seconds * 1e6,
                        times.share() * 1e6, over, times.loaded[index] * 1e6)
       << rankAndBytes(step.messages, step.busiestSender,
                       step.busiestSenderBytes)
       << rankAndBytes(step.messages, step.busiestReceiver,
                       step.busiestReceiverBytes)
       << llvm::formatv("<td>{0}</td><td>{1}</td></tr>\n",
                        traffic.senders - step.sendingRanks,
                        traffic.receivers - step.receivingRanks);
  }
  os << "</tbody>\n</table>\n";
}

} // namespace

uint32_t pictureBlockSize(uint32_t worldSize) {
  return std::max<uint32_t>(1, (worldSize + kMaxPictureCells - 1) /
                                   kMaxPictureCells);
}

std::string drawSvg(llvm::StringRef name, const m2n_plan_header_t &header,
                    const Traffic &traffic) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" +
         Picture(name, header, traffic).svg();
}

std::string drawHtml(llvm::StringRef name, const m2n_plan_header_t &header,
                     const Traffic &traffic, const StepTimes &times) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Well-formed XML too, so that tools can read it as such.
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
        "<meta charset=\"utf-8\"/>\n<title>"
     << escaped(name)
     << ": traffic between ranks</title>\n<style>\n"
        "body { font-family: sans-serif; margin: 16px; }\n"
        "table { border-collapse: collapse; font-size: 13px; }\n"
        "th, td { padding: 2px 10px; text-align: right; "
        "border-bottom: 1px solid #ddd; }\n"
        "tr.over td { background: #fde0dc; }\n"
        "</style>\n</head>\n<body>\n"
     << Picture(name, header, traffic).svg()
     << "<h2>Steps</h2>\n<p>Bytes moved in each step (hover over the "
        "picture for the exact bytes of a cell or bar), and its time by the "
        "cost model (its busiest rank's and the step's own cost) against "
        "the even share, the lower bound over the steps; steps more than "
     << llvm::formatv("{0:F2}", kShadedOverShare)
     << "× the share are shaded. The loaded rank, " << times.loadedRank
     << ", has the most work in the plan (" << humanSeconds(times.loadedSeconds)
     << "). The steps take " << humanSeconds(times.total())
     << " (the plan predicts " << humanTime(header.predicted_ns) << "), "
     << llvm::formatv("{0:F2}", times.overBound()) << "× the lower bound of "
     << humanTime(header.lower_bound_ns) << ".</p>\n";
  writeStepTable(os, traffic, times);
  os << "</body>\n</html>\n";
  return text;
}

} // namespace m2n::driver
