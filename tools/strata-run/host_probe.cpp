#include "host_probe.hpp"

#include "environment.hpp"
#include "local_launch.hpp"
#include "output.hpp"
#include "remote.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

extern char** environ;

namespace strata::run {

std::optional<std::string> host_unreachable(const std::string& agent, const std::string& host, int timeout_s) {
  const ChildProcess child = spawn_process(agent_argv(agent, host, "true"), merge_environment(environ, {}),
                                           {.stdin_from = StdinFrom::null});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string err;
  int out_fd = child.out_fd, err_fd = child.err_fd;  // -1 once at EOF (poll skips them)
  const auto close_fd = [](int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
  };
  int status = 0;
  bool exited = false;
  while (!exited) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    poll(fds, 2, 20);
    if (out_fd >= 0 && !read_available(out_fd, [](std::string_view) {})) close_fd(out_fd);
    if (err_fd >= 0 && !read_available(err_fd, [&](std::string_view data) {
          if (err.size() < 4096) err.append(data);
        })) {
      close_fd(err_fd);
    }
    exited = waitpid(child.pid, &status, WNOHANG) == child.pid;
    if (!exited && std::chrono::steady_clock::now() >= deadline) {
      kill(-child.pid, SIGKILL);
      waitpid(child.pid, &status, 0);
      close_fd(out_fd);
      close_fd(err_fd);
      return "no answer from the launch agent within " + std::to_string(timeout_s) + " s";
    }
  }
  if (err_fd >= 0) read_available(err_fd, [&](std::string_view data) { err.append(data); });
  close_fd(out_fd);
  close_fd(err_fd);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::nullopt;
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  const size_t last = err.rfind('\n');
  if (!err.empty()) return err.substr(last == std::string::npos ? 0 : last + 1);
  return WIFEXITED(status) ? "the launch agent exited with code " + std::to_string(WEXITSTATUS(status))
                           : "the launch agent was killed by signal " + std::to_string(WTERMSIG(status));
}

}  // namespace strata::run
