// --loss-log: rank 0 writes "global_step loss" per optimizer step, the loss the mean over the
// global batch (%.9e), so that runs at different world sizes can be compared line by line. A run
// resumed from a checkpoint keeps the lines of the steps up to it and continues the file, so a
// job restarted after a failure leaves every step once (the steps it redoes are written again).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>  // std::rename
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace strata::fmnist {

class LossLog {
 public:
  // resumed_at: the global step of the checkpoint this run resumed from (none: a fresh run).
  // A resumed run writes the kept lines to a new file and renames it over the old one, so a crash
  // in between leaves the old log whole.
  explicit LossLog(const std::string& path, std::optional<uint64_t> resumed_at = std::nullopt) {
    const std::string kept = resumed_at ? lines_through(path, *resumed_at) : std::string();
    const std::string written = resumed_at ? path + ".partial" : path;
    file_ = std::fopen(written.c_str(), "w");
    if (file_ == nullptr) {
      throw std::runtime_error(written + ": cannot open for writing (" + std::strerror(errno) + ")");
    }
    if (!resumed_at) return;
    std::fputs(kept.c_str(), file_);
    if (std::fflush(file_) != 0 || std::rename(written.c_str(), path.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      std::fclose(file_);
      throw std::runtime_error(path + ": cannot replace it with the steps up to the checkpoint (" + why + ")");
    }
  }
  ~LossLog() { std::fclose(file_); }
  LossLog(const LossLog&) = delete;
  LossLog& operator=(const LossLog&) = delete;
  void write(uint64_t global_step, double loss) {
    std::fprintf(file_, "%llu %.9e\n", static_cast<unsigned long long>(global_step), loss);
    std::fflush(file_);  // a rank killed mid-run leaves whole lines
  }

 private:
  // The lines of an earlier run's log whose step is at most `last_step`.
  static std::string lines_through(const std::string& path, uint64_t last_step) {
    std::ifstream in(path);
    std::string line, kept;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      unsigned long long step = 0;
      if (fields >> step && step <= last_step) kept += line + "\n";
    }
    return kept;
  }

  std::FILE* file_ = nullptr;
};

}  // namespace strata::fmnist
