#include "local_launch.hpp"

#include "error.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata::run {
namespace {

// Close-on-exec pipes: no child inherits another child's pipe ends, so closing a rank's stdin
// really gives it EOF and a rank's output pipe closes when that rank ends.
void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw UsageError(std::string("pipe: ") + std::strerror(errno));
}

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChildProcess spawn_process(const std::vector<std::string>& argv, const std::vector<std::string>& envp,
                           const SpawnOptions& options) {
  const bool with_stdin = options.stdin_from == StdinFrom::pipe;
  int out[2];
  int err[2];
  int in[2] = {-1, -1};
  make_pipe(out);
  make_pipe(err);
  if (with_stdin) make_pipe(in);
  // Everything the child needs is built before fork: the child only calls async-signal-safe
  // functions.
  std::vector<char*> child_argv = pointers(argv);
  std::vector<char*> child_envp = pointers(envp);
  const std::string exec_failed = "strata-run: cannot run '" + argv.front() + "': ";

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw UsageError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    if (options.own_process_group) setpgid(0, 0);
    // If strata-run itself dies without stopping the ranks (SIGKILL, a crash), its ranks and
    // agents die with it instead of running on unsupervised. The getppid check closes the window
    // where strata-run died before prctl.
    prctl(PR_SET_PDEATHSIG, options.death_signal);
    if (getppid() != parent) _exit(1);
    // strata-run ignores SIGPIPE and catches INT/TERM/HUP/CHLD; an ignored signal would stay
    // ignored across exec, so give the program the defaults back.
    for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int null_fd = -1;
    if (with_stdin) {
      dup2(in[0], STDIN_FILENO);
    } else if (options.stdin_from == StdinFrom::null) {
      // Close-on-exec: the rank gets it as fd 0 only (dup2 clears the flag on the copy).
      null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      dup2(null_fd, STDIN_FILENO);
    }
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execvpe(child_argv[0], child_argv.data(), child_envp.data());
    const char* reason = strerror(errno);
    [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    ignored = write(STDERR_FILENO, reason, strlen(reason));
    ignored = write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  // Both sides set the group, so a signal sent right after fork already reaches it.
  if (options.own_process_group) setpgid(pid, pid);
  close(out[1]);
  close(err[1]);
  ChildProcess child;
  child.pid = pid;
  child.out_fd = out[0];
  child.err_fd = err[0];
  fcntl(child.out_fd, F_SETFL, O_NONBLOCK);
  fcntl(child.err_fd, F_SETFL, O_NONBLOCK);
  if (with_stdin) {
    close(in[0]);
    child.in_fd = in[1];
  }
  return child;
}

}  // namespace strata::run
