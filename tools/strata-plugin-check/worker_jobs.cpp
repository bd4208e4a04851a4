#include "worker_jobs.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace strata::plugin_check {
namespace fs = std::filesystem;
namespace {

// Total bytes of the results files: grows with every line any rank writes.
uintmax_t progress(const std::string& dir) {
  uintmax_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind("rank-", 0) == 0) total += entry.file_size(ec);
  }
  return total;
}

std::string tail_of(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(line);
    if (last.size() > lines) last.erase(last.begin());
  }
  std::string out;
  for (const std::string& l : last) out += (out.empty() ? "" : "\n") + l;
  return out;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

JobEnd run_job(const JobSpec& spec) {
  const std::string log = spec.results_dir + "/output.log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a stop reaches everything it started
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot start " + spec.argv[0] + ": " + std::strerror(rc));

  JobEnd end;
  uintmax_t seen = progress(spec.results_dir);
  auto idle_since = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uintmax_t now_seen = progress(spec.results_dir);
    const auto now = std::chrono::steady_clock::now();
    if (now_seen != seen) {
      seen = now_seen;
      idle_since = now;
    } else if (now - idle_since > spec.idle_limit) {
      end.timed_out = true;
      kill(-pid, SIGTERM);
      for (int i = 0; i < 60 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
  }
  end.exit_code = exit_code(status);
  end.output_tail = tail_of(log, 6);
  return end;
}

std::string self_executable() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot read /proc/self/exe: " + ec.message());
  return self.string();
}

std::string find_launcher() {
  const fs::path beside = fs::path(self_executable()).parent_path() / "strata-run";
  if (access(beside.c_str(), X_OK) == 0) return beside.string();
  const char* path = std::getenv("PATH");
  std::string dirs = path == nullptr ? "" : path;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos
                                                                           : colon - start);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / "strata-run";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  throw std::runtime_error("strata-run (the launcher) is neither beside " + self_executable() +
                           " nor on PATH: the comm and sharding checks start their ranks with it");
}

}  // namespace strata::plugin_check
