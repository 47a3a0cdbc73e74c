//===- Progress.cpp - One line of progress on a terminal ------------------===//

#include "Progress.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

namespace m2n::driver {

static bool shows(ProgressMode mode) {
  if (mode == ProgressMode::Auto)
    return llvm::sys::Process::StandardErrIsDisplayed();
  return mode == ProgressMode::Always;
}

ProgressLine::ProgressLine(ProgressMode mode)
    : enabled_(shows(mode)), start_(Clock::now()), phaseStart_(start_) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::begin(const std::string &label) {
  if (!enabled_)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_)
    return;
  label_ = label;
  phaseStart_ = Clock::now();
  draw();
  if (!ticker_.joinable())
    ticker_ = std::thread([this] { tick(); });
}

void ProgressLine::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_)
      return;
    finished_ = true;
    // Carriage returns only, no terminal escapes: blanks overwrite the line.
    if (drawn_ != 0)
      llvm::errs() << '\r' << std::string(drawn_, ' ') << '\r';
    drawn_ = 0;
  }
  wake_.notify_all();
  if (ticker_.joinable())
    ticker_.join();
}

void ProgressLine::draw() {
  auto seconds = [](Clock::duration duration) {
    return std::chrono::duration<double>(duration).count();
  };
  Clock::time_point now = Clock::now();
  std::string text =
      llvm::formatv("{0}  {1:F1} s ({2:F1} s in all)", label_,
                    seconds(now - phaseStart_), seconds(now - start_));
  size_t length = text.size();
  if (length < drawn_)
    text.append(drawn_ - length, ' ');
  llvm::errs() << '\r' << text;
  drawn_ = length;
}

void ProgressLine::tick() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!finished_) {
    wake_.wait_for(lock, std::chrono::milliseconds(250));
    if (!finished_)
      draw();
  }
}

} // namespace m2n::driver
