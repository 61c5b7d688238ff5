// Progress display for long CLI jobs (bench iterations, conversions).
#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <exception>

namespace oneflow {
namespace cli {
namespace {

constexpr double kQuietSeconds = 1.0;  // jobs shorter than this show nothing
constexpr double kTtyRedrawSeconds = 0.1;
constexpr double kPlainLineSeconds = 5.0;
constexpr int kBarWidth = 30;

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), tty_(::isatty(STDERR_FILENO) == 1),
      uncaught_(std::uncaught_exceptions()), start_(Clock::now()), last_draw_(start_) {
  if (total_ > 0) return;
  ticker_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!finished_) {
      stop_.wait_for(lock, std::chrono::milliseconds(100));
      if (!finished_) UpdateLocked(done_);
    }
  });
}

Progress::~Progress() {
  if (std::uncaught_exceptions() > uncaught_ && !tty_) {  // the error line says how it ended
    std::lock_guard<std::mutex> lock(mu_);
    shown_ = false;
  }
  Finish();
}

void Progress::Update(int64_t done) {
  std::lock_guard<std::mutex> lock(mu_);
  UpdateLocked(done);
}

void Progress::UpdateLocked(int64_t done) {
  done_ = done;
  const Clock::time_point now = Clock::now();
  if (finished_ || Seconds(now - start_) < kQuietSeconds) return;
  if (shown_ && Seconds(now - last_draw_) < (tty_ ? kTtyRedrawSeconds : kPlainLineSeconds)) return;
  last_draw_ = now;
  Draw(false);
}

void Progress::Phase(std::string label, int64_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shown_ && !tty_) Draw(true);  // the plain log gets the end of the phase before the next one
  label_ = std::move(label);
  total_ = total;
  UpdateLocked(0);
}

void Progress::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    if (shown_) {
      if (tty_) {
        std::fputs("\r\033[K", stderr);  // the bar goes; the command's own output says how it ended
        std::fflush(stderr);
      } else {
        Draw(true);
      }
    }
  }
  stop_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void Progress::Draw(bool last) {
  const double elapsed = Seconds(Clock::now() - start_);
  char count[64] = "";
  if (total_ > 0)
    std::snprintf(count, sizeof count, "%lld/%lld", static_cast<long long>(done_), static_cast<long long>(total_));
  if (tty_) {
    std::string bar;
    if (total_ > 0) {
      const int filled = static_cast<int>(kBarWidth * static_cast<double>(done_) / static_cast<double>(total_));
      bar = " [" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(kBarWidth - filled), '.') + "]";
    }
    std::fprintf(stderr, "\r\033[K%s%s %s  %.1f s", label_.c_str(), bar.c_str(), count, elapsed);
  } else {
    std::fprintf(stderr, "oneflow: %s: %s%s(%.1f s)%s\n", label_.c_str(), count, count[0] ? " " : "", elapsed,
                 last ? " done" : "");
  }
  std::fflush(stderr);
  shown_ = true;
}

}  // namespace cli
}  // namespace oneflow
