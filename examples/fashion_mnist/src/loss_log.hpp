// --loss-log: rank 0 writes "global_step loss" per optimizer step, the loss the mean over the
// global batch (%.9e), so that runs at different world sizes can be compared line by line.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace strata::fmnist {

class LossLog {
 public:
  explicit LossLog(const std::string& path) : file_(std::fopen(path.c_str(), "w")) {
    if (file_ == nullptr) {
      throw std::runtime_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
    }
  }
  ~LossLog() { std::fclose(file_); }
  LossLog(const LossLog&) = delete;
  LossLog& operator=(const LossLog&) = delete;
  void write(uint64_t global_step, double loss) {
    std::fprintf(file_, "%llu %.9e\n", static_cast<unsigned long long>(global_step), loss);
  }

 private:
  std::FILE* file_;
};


}  // namespace strata::fmnist
