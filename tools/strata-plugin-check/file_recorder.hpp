// The Recorder a worker uses: one line per event in <dir>/rank-<R>.txt, written with write(2) as it
// happens so that nothing is lost when the process dies, and a watchdog thread that fails a check
// still running after the limit and ends the process (a hung plugin cannot be recovered).
//
// File format, one event per line, tab-separated, read by job_results.cpp:
//   begin <name> | pass <name> <note> | fail <name> <detail> | skip <name> <why> |
//   cannot_run <name> <plugin's reason> | done
#pragma once

#include "check.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace strata::plugin_check {

class FileRecorder final : public Recorder {
 public:
  // Opens (truncates) `path`; throws std::runtime_error naming it when it cannot.
  FileRecorder(const std::string& path, std::chrono::seconds check_limit);
  ~FileRecorder() override;
  FileRecorder(const FileRecorder&) = delete;
  FileRecorder& operator=(const FileRecorder&) = delete;

  bool run(std::string_view name, const std::function<Verdict()>& body) override;
  void record(std::string_view name, const Verdict& verdict) override;
  // Marks the end of the worker's checks.
  void done();

 private:
  void write_line(std::string_view kind, std::string_view name, std::string_view detail);
  void watch();

  int fd_ = -1;
  std::chrono::seconds limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string running_;  // the check in progress; empty between checks
  std::chrono::steady_clock::time_point started_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace strata::plugin_check
