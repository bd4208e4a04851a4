#include "supervisor.hpp"

#include "local_launch.hpp"
#include "output.hpp"
#include "remote.hpp"
#include "signals.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

namespace strata::run {
namespace {

using Clock = std::chrono::steady_clock;

struct Rank {
  const RankTask* task = nullptr;
  ChildProcess child;
  bool alive = false;
  bool started = false;  // local: always; remote: the marker line has arrived
  Clock::time_point spawned;
  std::string prefix;
  std::string last_stderr_line;
  LineSplitter out_lines;
  LineSplitter err_lines;
};

class Supervisor {
 public:
  Supervisor(const std::vector<RankTask>& tasks, const SupervisorOptions& options)
      : options_(options), ranks_(tasks.size()) {
    for (size_t i = 0; i < tasks.size(); ++i) ranks_[i].task = &tasks[i];
  }

  JobOutcome run() {
    signal_fd_ = install_signal_pipe();
    for (Rank& rank : ranks_) {
      if (stopping_) break;  // a signal or a failure during start-up
      try {
        start(rank);
      } catch (const std::exception& e) {  // fork or pipe failed: end the ranks already started
        stop(1, std::string("strata-run: ") + e.what());
      }
      drain_signals();
    }
    loop();
    return outcome_;
  }

 private:
  void start(Rank& rank) {
    rank.prefix = rank_prefix(rank.task->rank, options_.rank_prefix);
    rank.child = spawn_process(rank.task->argv, rank.task->envp,
                               {.stdin_from = rank.task->remote ? StdinFrom::pipe : StdinFrom::null});
    rank.alive = true;
    rank.started = !rank.task->remote;
    rank.spawned = Clock::now();
    if (rank.child.in_fd >= 0) {
      // 65 bytes into an empty pipe: never blocks. An agent already gone gives EPIPE (SIGPIPE is
      // ignored), and its exit is reported by the loop.
      [[maybe_unused]] const ssize_t ignored =
          write(rank.child.in_fd, rank.task->stdin_line.data(), rank.task->stdin_line.size());
    }
  }

  void loop() {
    for (;;) {
      const auto now = Clock::now();
      const bool any_alive = any_of_alive();
      if (!any_alive) {
        if (!any_fd_open()) return;
        // A rank's own children can keep its pipes open after it has ended: read what they
        // write for one more second, then stop waiting for them.
        if (!drain_deadline_) drain_deadline_ = now + std::chrono::seconds(1);
        if (now >= *drain_deadline_) return;
      }
      if (stopping_ && !killed_ && now >= kill_deadline_) kill_all(SIGKILL);
      // Processes in uninterruptible sleep may outlive even SIGKILL for a while: never wait for
      // them beyond this, so a launch ends within 10 s of its first failure.
      if (stopping_ && now >= kill_deadline_ + std::chrono::seconds(5)) return;
      check_connect_timeouts(now);
      poll_once();
      drain_signals();
      reap();
    }
  }

  bool any_of_alive() const {
    for (const Rank& rank : ranks_) {
      if (rank.alive) return true;
    }
    return false;
  }
  bool any_fd_open() const {
    for (const Rank& rank : ranks_) {
      if (rank.child.out_fd >= 0 || rank.child.err_fd >= 0) return true;
    }
    return false;
  }

  void poll_once() {
    std::vector<pollfd> fds;
    std::vector<std::pair<Rank*, bool>> owners;  // (rank, is stdout)
    fds.push_back({signal_fd_, POLLIN, 0});
    owners.emplace_back(nullptr, false);
    for (Rank& rank : ranks_) {
      if (rank.child.out_fd >= 0) {
        fds.push_back({rank.child.out_fd, POLLIN, 0});
        owners.emplace_back(&rank, true);
      }
      if (rank.child.err_fd >= 0) {
        fds.push_back({rank.child.err_fd, POLLIN, 0});
        owners.emplace_back(&rank, false);
      }
    }
    // 100 ms bounds how late a deadline (grace, connect timeout) is noticed.
    if (poll(fds.data(), fds.size(), 100) <= 0) return;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_pipe(*owners[i].first, owners[i].second);
    }
  }

  // Reads what is there now; at EOF flushes a last partial line and closes the pipe.
  void read_pipe(Rank& rank, bool is_stdout) {
    int& fd = is_stdout ? rank.child.out_fd : rank.child.err_fd;
    LineSplitter& lines = is_stdout ? rank.out_lines : rank.err_lines;
    const auto on_line = [&](std::string_view line) { this->on_line(rank, is_stdout, line); };
    const bool still_open = read_available(fd, [&](std::string_view data) { lines.feed(data, on_line); });
    if (still_open) return;
    lines.finish(on_line);
    close(fd);
    fd = -1;
  }

  void on_line(Rank& rank, bool is_stdout, std::string_view line) {
    if (is_stdout && !rank.started && line == kStartedMarker) {
      rank.started = true;
      return;
    }
    if (!is_stdout) rank.last_stderr_line = line;
    write_prefixed_line(is_stdout ? STDOUT_FILENO : STDERR_FILENO, rank.prefix, line);
  }

  // Every signal, a terminal's too: the ranks are in process groups of their own, so a terminal's
  // Ctrl-C reached strata-run alone and only strata-run can end the ranks.
  void drain_signals() {
    for (const CaughtSignal sig : take_signals()) {
      if (sig.number == SIGCHLD) continue;  // reap() runs after every poll anyway
      outcome_.stopped_by_signal = true;  // also after a rank failed: a scheduler's scancel
      stop(128 + sig.number, "strata-run: got " + signal_name(sig.number) + ", stopping every rank");
    }
  }

  void reap() {
    for (Rank& rank : ranks_) {
      if (!rank.alive) continue;
      int status = 0;
      const pid_t pid = waitpid(rank.child.pid, &status, WNOHANG);
      if (pid != rank.child.pid) continue;
      rank.alive = false;
      if (rank.child.in_fd >= 0) {
        close(rank.child.in_fd);
        rank.child.in_fd = -1;
      }
      // Read what it wrote before it ended, so the marker is seen before the exit is judged.
      if (rank.child.out_fd >= 0) read_pipe(rank, true);
      if (rank.child.err_fd >= 0) read_pipe(rank, false);
      on_exit(rank, status);
    }
  }

  void on_exit(const Rank& rank, int status) {
    const RankTask& task = *rank.task;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
    // An ssh that cannot connect exits 255 before the remote command has printed the marker.
    if (task.remote && !rank.started && WIFEXITED(status) && WEXITSTATUS(status) == 255) {
      unreachable(rank, "the launch agent exited with code 255");
      return;
    }
    std::string what;
    int code = 0;
    if (WIFSIGNALED(status)) {
      what = "killed by signal " + signal_name(WTERMSIG(status));
      code = 128 + WTERMSIG(status);
    } else {
      code = WEXITSTATUS(status);
      what = "exited with code " + std::to_string(code);
    }
    if (!stopping_) outcome_.failed_rank = task.rank;
    stop(code, "strata-run: rank " + std::to_string(task.rank) + " (host " + task.host + ", pid " +
                   std::to_string(rank.child.pid) + ") " + what);
  }

  void check_connect_timeouts(Clock::time_point now) {
    for (const Rank& rank : ranks_) {
      if (rank.alive && !rank.started &&
          now - rank.spawned >= std::chrono::seconds(options_.connect_timeout_s)) {
        unreachable(rank, "no answer from the launch agent");
      }
    }
  }

  void unreachable(const Rank& rank, const std::string& fallback) {
    const RankTask& task = *rank.task;
    const std::string why = rank.last_stderr_line.empty() ? fallback : rank.last_stderr_line;
    if (!stopping_) outcome_.lost_host = task.host;
    stop(255, "strata-run: host " + task.host + " (" + task.host_ranks +
                  ") could not be reached within " + std::to_string(options_.connect_timeout_s) +
                  " s: " + why);
  }

  // The first failure decides the exit code; every rank still running gets SIGTERM (a remote one
  // also loses its stdin, which makes the remote command kill its program), SIGKILL after grace.
  void stop(int code, const std::string& message) {
    if (stopping_) return;
    stopping_ = true;
    outcome_.exit_code = code;
    outcome_.cause = message;
    outcome_.failed_at = Clock::now();
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    for (Rank& rank : ranks_) {
      if (rank.child.in_fd >= 0) {
        close(rank.child.in_fd);
        rank.child.in_fd = -1;
      }
    }
    kill_all(SIGTERM);
    kill_deadline_ = Clock::now() + std::chrono::milliseconds(options_.grace_ms);
  }

  // Every rank's group, also of ranks already reaped: a rank that failed may leave children
  // behind. Linux does not reuse a number while a process group of that id has members; a group
  // already empty gives ESRCH.
  void kill_all(int sig) {
    if (sig == SIGKILL) killed_ = true;
    for (const Rank& rank : ranks_) {
      if (rank.child.pid > 0) kill(-rank.child.pid, sig);
    }
  }

  SupervisorOptions options_;
  int signal_fd_ = -1;
  std::vector<Rank> ranks_;
  bool stopping_ = false;
  bool killed_ = false;
  JobOutcome outcome_;
  Clock::time_point kill_deadline_;
  std::optional<Clock::time_point> drain_deadline_;
};

}  // namespace

JobOutcome supervise(const std::vector<RankTask>& tasks, const SupervisorOptions& options) {
  // A closed stdout or an agent gone before reading its stdin must not kill strata-run.
  signal(SIGPIPE, SIG_IGN);
  Supervisor supervisor(tasks, options);
  return supervisor.run();
}

}  // namespace strata::run
