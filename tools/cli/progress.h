// Progress of long commands on stderr: a bar redrawn in place on a terminal, plain lines elsewhere.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace oneflow {
namespace cli {

// Shows how far a job of `total` steps is. Nothing appears for jobs that end within a second, so
// quick runs and scripted use stay quiet. On a terminal (isatty(stderr)) the line
// "label [#####.....] 12/40  3.1 s" is redrawn at most 10 times a second and cleared at the end;
// otherwise a plain line "oneflow: label: 12/40 (3.1 s)" is printed at most every 5 seconds, and a
// last one when the job ends. stdout is never touched.
//
// A job of unknown length (total 0: one long call, such as loading a model) shows the elapsed
// time, redrawn by a thread of its own since nobody calls Update meanwhile.
class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();  // calls Finish(); while an exception unwinds, only clears the bar
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` steps are complete (cheap: a clock read; draws only when due).
  void Update(int64_t done);
  // Starts a new phase of the same job (e.g. "writing" after "loading") with its own step count.
  void Phase(std::string label, int64_t total);
  // Ends the display: clears the bar, or prints the last plain line if any line was printed.
  void Finish();

 private:
  using Clock = std::chrono::steady_clock;
  void UpdateLocked(int64_t done);
  void Draw(bool last);

  std::mutex mu_;  // the ticker thread draws too
  std::condition_variable stop_;
  std::thread ticker_;
  std::string label_;
  int64_t total_ = 0, done_ = 0;
  bool tty_ = false;
  bool shown_ = false;  // something was printed
  bool finished_ = false;
  int uncaught_ = 0;  // std::uncaught_exceptions() at construction: unwinding prints no "done"
  Clock::time_point start_, last_draw_;
};

}  // namespace cli
}  // namespace oneflow
