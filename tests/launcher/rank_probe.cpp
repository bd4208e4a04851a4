// A rank for the launcher's process tests: prints the launcher's variables and its pid, then does
// what its arguments say for its rank (RANK, or OMPI_COMM_WORLD_RANK under mpirun):
//   exit@R=C   rank R exits with code C after 0.3 s
//   kill@R     rank R kills itself with SIGKILL after 0.3 s
//   sleep=S    every other rank sleeps S seconds, then exits 0
//   hold=PATH  every other rank waits (at most 30 s) until PATH exists, then exits 0
//   bulk=N     print N long stdout lines (the rank in each) to check that lines never interleave
//   ignore-term  ignore SIGTERM (strata-run must follow up with SIGKILL)
//   partial=N  write N stdout lines, then one stderr line, slowly in fragments "<R.LINE.K>" (K 0-2),
//              so that the ranks' partial lines overlap in time (see write_partial_lines)
//   flood=S    write about 4 MB/s of stdout lines for S seconds (faster than the tests read them)
//   read-stdin rank 0 reads one line from stdin and prints "stdin: <line>"
// It also writes one stderr line and ends with a stdout line without '\n'.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "<unset>";
}

void sleep_s(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// Each fragment is flushed on its own, 0.1 s apart, and rank R starts 0.03 s * R late: mpirun then
// forwards every fragment as a chunk of its own while other ranks' fragments arrive in between.
void write_partial_lines(int rank, int lines) {
  sleep_s(0.03 * rank);
  for (int line = 0; line <= lines; ++line) {
    std::FILE* stream = line < lines ? stdout : stderr;
    for (int k = 0; k < 3; ++k) {
      std::fprintf(stream, "<%d.%d.%d>", rank, line, k);
      std::fflush(stream);
      sleep_s(0.1);
    }
    std::fputc('\n', stream);
    std::fflush(stream);
  }
}

// 40 lines of 1000 bytes every 10 ms: more than a slow reader takes, little enough that mpirun's
// buffer of what its stdout has not taken yet stays small.
void flood(int rank, double seconds) {
  const std::string body(1000, 'f');
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 40; ++i) std::printf("flood %d %s\n", rank, body.c_str());
    std::fflush(stdout);
    sleep_s(0.01);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* rank_text = std::getenv("RANK");
  if (rank_text == nullptr) rank_text = std::getenv("OMPI_COMM_WORLD_RANK");
  const int rank = rank_text != nullptr ? std::atoi(rank_text) : -1;
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_SIZE", "CROSS_RANK",
                           "CROSS_SIZE", "MASTER_ADDR", "MASTER_PORT", "STRATA_JOB_SECRET",
                           "STRATA_MANIFEST", "STRATA_NETWORK_INTERFACE", "STRATA_COMM_LIBRARY", "STRATA_LIBRARY",
                           "OMPI_COMM_WORLD_RANK", "PROBE_EXTRA"}) {
    std::printf("%s=%s\n", name, env(name).c_str());
  }
  std::printf("pid=%d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  std::fprintf(stderr, "stderr line from rank %d\n", rank);

  double sleep_seconds = 0;
  std::string hold;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    int r = 0;
    int code = 0;
    if (std::sscanf(arg.c_str(), "exit@%d=%d", &r, &code) == 2 && r == rank) {
      sleep_s(0.3);
      return code;
    }
    if (std::sscanf(arg.c_str(), "kill@%d", &r) == 1 && r == rank) {
      sleep_s(0.3);
      raise(SIGKILL);
    }
    if (arg == "ignore-term") signal(SIGTERM, SIG_IGN);
    if (arg.rfind("sleep=", 0) == 0) sleep_seconds = std::atof(arg.c_str() + 6);
    if (arg.rfind("hold=", 0) == 0) hold = arg.substr(5);
    if (arg.rfind("partial=", 0) == 0) write_partial_lines(rank, std::atoi(arg.c_str() + 8));
    if (arg.rfind("flood=", 0) == 0) flood(rank, std::atof(arg.c_str() + 6));
    if (arg == "read-stdin" && rank == 0) {
      char line[256] = "";
      if (std::fgets(line, sizeof line, stdin) == nullptr) std::strcpy(line, "<eof>");
      line[std::strcspn(line, "\r\n")] = '\0';
      std::printf("stdin: %s\n", line);
      std::fflush(stdout);
    }
    if (arg.rfind("bulk=", 0) == 0) {
      const int lines = std::atoi(arg.c_str() + 5);
      const std::string body(3000, static_cast<char>('a' + rank % 26));
      for (int line = 0; line < lines; ++line) std::printf("bulk %d %d %s\n", rank, line, body.c_str());
    }
  }
  sleep_s(sleep_seconds);
  struct stat st{};
  for (int i = 0; !hold.empty() && i < 300 && stat(hold.c_str(), &st) != 0; ++i) sleep_s(0.1);
  std::printf("last line of rank %d", rank);
  return 0;
}
