//===- Progress.h - One line of progress on a terminal ----------*- C++ -*-===//
//
// Long compiles and runs say what they are doing on one line of stderr,
// rewritten in place. The line appears only where a person watches: when
// stderr is a terminal, unless forced on or off, so that pipes, logs and
// tests see nothing of it.
//
//===----------------------------------------------------------------------===//

#ifndef M2N_TOOLS_M2N_PROGRESS_H
#define M2N_TOOLS_M2N_PROGRESS_H

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace m2n::driver {

/// Auto shows progress when stderr is a terminal.
enum class ProgressMode { Auto, Always, Never };

/// The progress line. While a phase runs it shows the phase's label and how
/// long the phase and the whole command have taken, and keeps those times
/// current; a quiet line does nothing at all.
class ProgressLine {
public:
  explicit ProgressLine(ProgressMode mode);
  /// Erases the line.
  ~ProgressLine();
  ProgressLine(const ProgressLine &) = delete;
  ProgressLine &operator=(const ProgressLine &) = delete;

  bool enabled() const { return enabled_; }

  /// Starts a phase called `label` and draws it at once. Any thread may
  /// call it.
  void begin(const std::string &label);

  /// Stops drawing and erases the line, so that what follows (an error,
  /// the command's output) starts on a clean line; later phases draw
  /// nothing.
  void finish();

private:
  using Clock = std::chrono::steady_clock;

  /// Redraws the line with the current times; needs `mutex_`.
  void draw();
  /// Keeps the times current while a phase runs.
  void tick();

  bool enabled_;
  bool finished_ = false;
  std::string label_;
  Clock::time_point start_;
  Clock::time_point phaseStart_;
  /// Characters on the line now, to blank what a shorter line leaves.
  size_t drawn_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
};

} // namespace m2n::driver

#endif // M2N_TOOLS_M2N_PROGRESS_H
