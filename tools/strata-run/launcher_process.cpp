#include "launcher_process.hpp"

#include "environment.hpp"
#include "local_launch.hpp"
#include "mpi_output.hpp"
#include "srun_output.hpp"
#include "output.hpp"
#include "signals.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

extern char** environ;

namespace strata::run {
namespace {

using Clock = std::chrono::steady_clock;

// One of the launcher's two output pipes and the parser of its marked stream.
struct LauncherPipe {
  int fd;
  int own_fd;  // where the launcher's own (unmarked) lines from this pipe go
  std::unique_ptr<RankLineParser> parser;
};

std::unique_ptr<RankLineParser> parser_for(Launcher launcher, bool pipe_is_stdout) {
  if (launcher == Launcher::srun) return std::make_unique<SrunOutputParser>(pipe_is_stdout);
  return std::make_unique<MpiOutputParser>(pipe_is_stdout);
}

// strata-run's environment without the variables that would change what squeue lists or what
// scancel signals (SQUEUE_USERS, SQUEUE_PARTITION, SCANCEL_*): the stop command must find its step.
std::vector<std::string> stopper_environment() {
  std::vector<std::string> env;
  for (char** var = environ; *var != nullptr; ++var) {
    const std::string_view text(*var);
    if (text.rfind("SQUEUE_", 0) != 0 && text.rfind("SCANCEL_", 0) != 0) env.emplace_back(text);
  }
  return env;
}

class LauncherRun {
 public:
  LauncherRun(ChildProcess child, Launcher launcher, bool rank_prefix, std::vector<std::string> stop_argv)
      : child_(child), launcher_(launcher), rank_prefix_(rank_prefix), stop_argv_(std::move(stop_argv)) {}

  JobOutcome run(int signal_fd) {
    std::optional<Clock::time_point> drain_deadline;
    for (;;) {
      if (!alive_) {
        if (out_.fd < 0 && err_.fd < 0) break;
        // Whatever mpirun started and left behind (an agent) may hold its pipes open: read for
        // one more second, then stop waiting.
        if (!drain_deadline) drain_deadline = Clock::now() + std::chrono::seconds(1);
        if (Clock::now() >= *drain_deadline) break;
      }
      poll_once(signal_fd);
      if (launcher_ == Launcher::srun) {
        stop_step_on_signal();
      } else {
        forward_signals();
      }
      reap();
    }
    close_pipe(out_);
    close_pipe(err_);
    wait_for_stopper();
    outcome_.exit_code = WIFSIGNALED(status_) ? 128 + WTERMSIG(status_) : WEXITSTATUS(status_);
    // srun exits with the highest code or signal of any task, and --kill-on-bad-exit signals the
    // others: the first failed rank's own code is the job's, as on the other paths.
    if (first_failure_code_) outcome_.exit_code = *first_failure_code_;
    if (stop_code_) outcome_.exit_code = *stop_code_;
    if (outcome_.exit_code != 0 && !outcome_.failed_at) outcome_.failed_at = Clock::now();
    if (outcome_.exit_code != 0 && outcome_.cause.empty()) {
      outcome_.cause = name() + " " + (WIFSIGNALED(status_) ? "was killed by " + signal_name(WTERMSIG(status_))
                                                          : "exited with code " + std::to_string(outcome_.exit_code));
    }
    return outcome_;
  }

 private:
  void poll_once(int signal_fd) {
    pollfd fds[3] = {{signal_fd, POLLIN, 0}, {out_.fd, POLLIN, 0}, {err_.fd, POLLIN, 0}};
    if (poll(fds, 3, 100) <= 0) return;
    if (fds[1].revents != 0) read_pipe(out_);
    if (fds[2].revents != 0) read_pipe(err_);
  }

  std::string name() const { return launcher_ == Launcher::srun ? "srun" : "mpirun"; }

  void read_pipe(LauncherPipe& pipe) {
    const auto on_line = [&](const RankLine& line) { print(pipe, line); };
    const bool still_open =
        read_available(pipe.fd, [&](std::string_view data) { pipe.parser->feed(data, on_line); });
    if (!still_open) close_pipe(pipe);
  }

  // At EOF (or when strata-run stops waiting): the partial lines still pending are lines too.
  void close_pipe(LauncherPipe& pipe) {
    if (pipe.fd < 0) return;
    pipe.parser->finish([&](const RankLine& line) { print(pipe, line); });
    close(pipe.fd);
    pipe.fd = -1;
  }

  void print(const LauncherPipe& pipe, const RankLine& line) {
    if (!line.rank) {  // the launcher's own line, on the stream it came on
      write_prefixed_line(pipe.own_fd, "", line.text);
      // srun's "Terminated" lines after a stop signal are the stop's doing, not failures.
      if (!outcome_.failed_rank && !stop_code_) {
        if (launcher_ == Launcher::srun) {
          if (const auto failure = failed_task_in_srun_line(line.text)) {
            outcome_.failed_rank = failure->rank;
            first_failure_code_ = failure->exit_code;
            stop_step();  // the first failure ends the run, as on the gloo backend's own path
          }
        } else {
          outcome_.failed_rank = failed_rank_in_mpirun_line(line.text);
        }
        if (outcome_.failed_rank) {
          outcome_.failed_at = Clock::now();
          // srun's lines start "srun: " already.
          const std::string_view text = line.text.substr(line.text.find_first_not_of(' '));
          outcome_.cause = "rank " + std::to_string(*outcome_.failed_rank) + " failed (" +
                           (text.rfind(name() + ": ", 0) == 0 ? "" : name() + ": ") + std::string(text) + ")";
        }
      }
      return;
    }
    write_prefixed_line(line.is_stdout ? STDOUT_FILENO : STDERR_FILENO, rank_prefix(*line.rank, rank_prefix_),
                        line.text);
  }

  // Only what a process sent strata-run (a scheduler's SIGTERM): a terminal's signal went to its
  // whole foreground group, mpirun included, and a second SIGINT would make mpirun force-abort.
  void forward_signals() {
    for (const CaughtSignal sig : take_signals()) {
      if (sig.number != SIGCHLD) outcome_.stopped_by_signal = true;
      if (sig.number == SIGCHLD || !sig.from_process || !alive_) continue;  // reap() runs anyway
      std::fprintf(stderr, "strata-run: got %s, passing it on to %s\n", signal_name(sig.number).c_str(),
                   name().c_str());
      std::fflush(stderr);
      kill(child_.pid, sig.number);
    }
  }

  // srun: any stop signal, a terminal's too (srun has its own process group and ignores a lone
  // SIGINT anyway), asks the step's ranks to stop with SIGTERM through Slurm (srun would pass
  // SIGKILL on), as the gloo backend sends its ranks SIGTERM; srun itself gets SIGTERM after the
  // same 3 s of grace.
  void stop_step_on_signal() {
    for (const CaughtSignal sig : take_signals()) {
      if (sig.number == SIGCHLD) continue;
      // Recorded even once srun has ended (its pipes may still drain): no restart follows.
      outcome_.stopped_by_signal = true;
      ++stop_signals_;
      // A rank that failed first keeps its exit code, as on the gloo backend.
      if (!stop_code_ && !stopping_) stop_code_ = 128 + sig.number;
      if (!alive_) continue;
      if (stop_signals_ == 1) {
        std::fprintf(stderr, "strata-run: got %s, stopping every rank (SIGTERM to the srun step)\n",
                     signal_name(sig.number).c_str());
        stop_step();
      } else {
        // Asked again: srun ends its step at once (SIGKILL to the ranks), and srun itself goes
        // at the third.
        std::fprintf(stderr, "strata-run: got %s again, %s\n", signal_name(sig.number).c_str(),
                     stop_signals_ == 2 ? "ending the srun step now" : "killing srun");
        kill(child_.pid, stop_signals_ == 2 ? SIGTERM : SIGKILL);
        kill_srun_at_.reset();
      }
      std::fflush(stderr);
    }
    if (kill_srun_at_ && alive_ && Clock::now() >= *kill_srun_at_) {
      kill(child_.pid, SIGTERM);
      kill_srun_at_.reset();
    }
  }

  // Once: SIGTERM to the step's ranks now, srun's own SIGTERM (its ranks' SIGKILL) after 3 s.
  // srun runs with --kill-on-bad-exit=0, so a rank that ends on that SIGTERM does not make srun
  // SIGKILL the others before they have finished their own handlers.
  void stop_step() {
    if (stopping_ || !alive_) return;
    stopping_ = true;
    stopper_ = spawn_process(stop_argv_, stopper_environment(), {.stdin_from = StdinFrom::null});
    close(stopper_->out_fd);
    close(stopper_->err_fd);
    kill_srun_at_ = Clock::now() + std::chrono::seconds(3);
  }

  // srun has ended; the stop command still waits for the step's ranks to end (at most 5 s, then
  // 1 s of margin here): strata-run's exit could otherwise end the allocation under them.
  void wait_for_stopper() {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(6);
    while (stopper_ && Clock::now() < deadline) {
      if (waitpid(stopper_->pid, nullptr, WNOHANG) == stopper_->pid) {
        stopper_.reset();
        return;
      }
      poll(nullptr, 0, 20);
    }
    if (stopper_) {
      kill(-stopper_->pid, SIGKILL);
      waitpid(stopper_->pid, nullptr, 0);
      stopper_.reset();
    }
  }

  void reap() {
    if (alive_ && waitpid(child_.pid, &status_, WNOHANG) == child_.pid) alive_ = false;
    if (stopper_ && waitpid(stopper_->pid, nullptr, WNOHANG) == stopper_->pid) stopper_.reset();
  }

  ChildProcess child_;
  Launcher launcher_;
  bool rank_prefix_;
  std::vector<std::string> stop_argv_;
  std::optional<int> first_failure_code_;  // srun: the first failed task's, from srun's line
  std::optional<int> stop_code_;           // srun: 128 + the stop signal strata-run got
  int stop_signals_ = 0;                   // srun: how many stop signals so far
  bool stopping_ = false;                  // srun: the step was told to stop
  std::optional<ChildProcess> stopper_;    // srun: the stop command while it runs
  std::optional<Clock::time_point> kill_srun_at_;
  bool alive_ = true;
  int status_ = 0;
  JobOutcome outcome_;
  LauncherPipe out_{child_.out_fd, STDOUT_FILENO, parser_for(launcher_, true)};
  LauncherPipe err_{child_.err_fd, STDERR_FILENO, parser_for(launcher_, false)};
};

}  // namespace

JobOutcome run_launcher(Launcher launcher, const std::vector<std::string>& argv, const EnvVars& env,
                        bool rank_prefix, const std::vector<std::string>& stop_argv) {
  // A closed stdout (strata-run | head) must not kill strata-run while the launcher runs on.
  signal(SIGPIPE, SIG_IGN);
  const int signal_fd = install_signal_pipe();
  // SIGTERM, not SIGKILL, if strata-run dies: mpirun then still ends its ranks and daemons, srun
  // its step. mpirun stays in strata-run's process group: from a terminal, that keeps it in the
  // foreground group, where Open MPI reads the keyboard for rank 0 and job control (Ctrl-Z) stops
  // it too. srun gets a group of its own and no stdin (--input=none): strata-run stops its step.
  const bool srun = launcher == Launcher::srun;
  const ChildProcess child =
      spawn_process(argv, merge_environment(environ, env),
                    {.stdin_from = srun ? StdinFrom::null : StdinFrom::inherit, .death_signal = SIGTERM,
                     .own_process_group = srun});
  LauncherRun run(child, launcher, rank_prefix, stop_argv);
  return run.run(signal_fd);
}

}  // namespace strata::run
