#include "file_recorder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <stdexcept>

namespace strata::plugin_check {
namespace {

// One event per line: tabs and newlines inside a detail would split it.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

FileRecorder::FileRecorder(const std::string& path, std::chrono::seconds check_limit)
    : limit_(check_limit) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot create the results file");
  watchdog_ = std::thread([this] { watch(); });
}

FileRecorder::~FileRecorder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  watchdog_.join();
  ::close(fd_);
}

void FileRecorder::write_line(std::string_view kind, std::string_view name,
                              std::string_view detail) {
  std::string line(kind);
  if (!name.empty()) line += "\t" + one_line(name) + "\t" + one_line(detail);
  line += "\n";
  // One write per line, so a line is whole even if the process is killed right after.
  if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::perror("strata-plugin-check: writing results");
  }
}

bool FileRecorder::run(std::string_view name, const std::function<Verdict()>& body) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    write_line("begin", name, "");
    running_ = std::string(name);
    started_ = std::chrono::steady_clock::now();
  }
  wake_.notify_all();
  Verdict verdict;
  try {
    verdict = body();
  } catch (const std::exception& e) {
    verdict = Verdict::fail(e.what());
  } catch (...) {
    verdict = Verdict::fail("an exception that is not a std::exception");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.clear();
  }
  record(name, verdict);
  return verdict.outcome != Outcome::Fail;
}

void FileRecorder::record(std::string_view name, const Verdict& verdict) {
  static constexpr const char* kinds[] = {"pass", "fail", "skip", "cannot_run"};
  std::lock_guard<std::mutex> lock(mutex_);
  write_line(kinds[static_cast<int>(verdict.outcome)], name, verdict.detail);
}

void FileRecorder::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  write_line("done", "", "");
}

void FileRecorder::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (running_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto deadline = started_ + limit_;
    const std::string name = running_;
    if (wake_.wait_until(lock, deadline) == std::cv_status::timeout && running_ == name &&
        std::chrono::steady_clock::now() >= deadline) {
      write_line("fail", name,
                 "still running after " + std::to_string(limit_.count()) +
                     " s (a hang? every rank must return from every call)");
      std::fprintf(stderr, "strata-plugin-check: check %s still running after %lld s; exiting\n",
                   name.c_str(), static_cast<long long>(limit_.count()));
      ::_exit(3);
    }
  }
}

}  // namespace strata::plugin_check
