// allreduce-gloo's start-up and its failures, with fork()ed processes as the ranks (each sets its
// own environment, loads the plugin and calls create(); the parent collects status, message and
// the warnings it logged). No launcher is needed; everything runs over 127.0.0.1.
//   - environment catalogue: each missing or malformed variable fails create() naming it;
//   - a port already in use fails rank 0 naming the port;
//   - a rank that never arrives is named within the timeout;
//   - rogue clients of the store (one silent, one with the wrong secret) are refused and logged
//     with their address while the job completes;
//   - a rank with another job's secret cannot join, and a rank refuses a store without the secret;
//   - a peer that exits or stalls fails the survivor's collective within the timeout (over TCP,
//     through shared memory, and every survivor of a two-level collective across two hosts);
//   - the FileStore alternative works.
#include <free_port.hpp>
#include <plugin_harness.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace strata::test {
namespace {

const std::string kSecret(64, '7');
const std::string kOtherSecret(64, '8');

struct Outcome {
  int status = -1;
  std::string message;
  std::vector<std::string> warnings;
};

std::vector<std::string>* g_warnings = nullptr;  // the child's log sink

using strata::test::free_port;

using Env = std::map<std::string, std::string>;

Env job_env(int rank, int size, uint16_t port) {
  return {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", std::to_string(size)},
          {"MASTER_ADDR", "127.0.0.1"},   {"MASTER_PORT", std::to_string(port)},
          {"STRATA_JOB_SECRET", kSecret}};
}

// Forks a rank: sets exactly `env` (the launcher's variables cleared first), creates an instance
// with `config`, runs one allreduce when create worked, and reports through a pipe.
struct Child {
  pid_t pid;
  int fd;
};

// What a forked rank does after create() worked: one allreduce of 1.0 (checked against the world
// size), or leave without a word (Gloo's connections close), or stay silent for 4 s first.
enum class After { Allreduce, Exit, StallThenExit };

// `hold`: after a failed allreduce, how long the rank keeps its instance (connections open)
// before destroying it, as a rank whose process lingers would.
Child spawn(const Env& env, const std::string& config, After after = After::Allreduce,
            std::chrono::milliseconds hold = std::chrono::milliseconds(0)) {
  int pipe_fds[2];
  EXPECT_EQ(pipe(pipe_fds), 0);
  const pid_t pid = fork();
  if (pid != 0) {
    close(pipe_fds[1]);
    return {pid, pipe_fds[0]};
  }
  close(pipe_fds[0]);
  for (const char* name : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "MASTER_ADDR", "MASTER_PORT", "STRATA_JOB_SECRET",
                           "STRATA_NETWORK_INTERFACE", "CROSS_RANK", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS",
                           "SLURM_STEP_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID"}) {
    unsetenv(name);
  }
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  std::vector<std::string> warnings;
  g_warnings = &warnings;
  PluginLibrary library(STRATA_ALLREDUCE_GLOO_PLUGIN);
  FakeHost host;
  host.api()->log = [](void*, int32_t level, const char* message) {
    if (level >= STRATA_LOG_WARN) g_warnings->emplace_back(message);
  };
  strata_error err = sdk::make_error();
  void* self = nullptr;
  strata_status status = library.create<strata_comm_ops>(config.c_str(), host.api(), &self, &err);
  if (status == STRATA_OK && after != After::Allreduce) {
    // Exit: leave once rank 0 has surely finished create() (whose last exchange could otherwise
    // still be in flight) and is waiting in its allreduce.
    std::this_thread::sleep_for(after == After::StallThenExit ? std::chrono::milliseconds(4000)
                                                              : std::chrono::milliseconds(300));
    _exit(0);
  }
  if (status == STRATA_OK) {
    float value = 1.0f;
    strata_buffer buffer = sdk::host_buffer(&value, 1, STRATA_F32);
    strata_coll_args args = sdk::Comm::args(&buffer, &buffer);
    const auto start = std::chrono::steady_clock::now();
    status = library.ops<strata_comm_ops>().allreduce(self, &args, nullptr, &err);
    if (status == STRATA_OK && value != std::stof(env.count("WORLD_SIZE") ? env.at("WORLD_SIZE") : env.at("SLURM_STEP_NUM_TASKS"))) status = STRATA_ERR_INTERNAL;
    if (status != STRATA_OK) {
      // A second call after a failure fails at once, naming the first.
      strata_error second = sdk::make_error();
      const strata_status again =
          library.ops<strata_comm_ops>().allreduce(self, &args, nullptr, &second);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      warnings.push_back("second call: " + std::to_string(again) + " " + second.message);
      warnings.push_back("seconds: " + std::to_string(seconds));
      // So does a split, whose agreement exchange goes over the same pairs.
      strata_error third = sdk::make_error();
      const strata_comm_split_args split{STRATA_COMM_SPLIT_ARGS_SIZE_1_10, 0, 0};
      void* child = nullptr;
      const strata_status split_status =
          library.ops<strata_comm_ops>().split(self, &split, &child, &third);
      warnings.push_back("split: " + std::to_string(split_status) + " " + third.message);
      if (child != nullptr) library.ops<strata_comm_ops>().destroy(child);
      std::this_thread::sleep_for(hold);
    }
    library.ops<strata_comm_ops>().destroy(self);
  }
  std::string report = std::to_string(status) + "\n" + err.message + "\n";
  for (const std::string& w : warnings) report += w + "\n";
  if (write(pipe_fds[1], report.data(), report.size()) < 0) _exit(2);
  _exit(0);
}

Outcome collect(const Child& child) {
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = read(child.fd, chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<size_t>(n));
  close(child.fd);
  int wstatus = 0;
  waitpid(child.pid, &wstatus, 0);
  Outcome out;
  size_t line_end = text.find('\n');
  if (line_end == std::string::npos) return out;
  out.status = std::stoi(text.substr(0, line_end));
  size_t start = line_end + 1;
  line_end = text.find('\n', start);
  out.message = text.substr(start, line_end - start);
  for (start = line_end + 1; (line_end = text.find('\n', start)) != std::string::npos; start = line_end + 1) {
    out.warnings.push_back(text.substr(start, line_end - start));
  }
  return out;
}

Outcome run_one(const Env& env, const std::string& config = "{}") { return collect(spawn(env, config)); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GlooSetup, EnvironmentCatalogue) {
  const uint16_t port = free_port();
  struct Case {
    const char* variable;
    const char* value;  // nullptr: unset
    const char* mentions;
  };
  const Case cases[] = {
      {"RANK", nullptr, "RANK or OMPI_COMM_WORLD_RANK or SLURM_PROCID is not set"},
      {"RANK", "one", "RANK='one': expected a rank in [0, 1)"},
      {"RANK", "3", "RANK='3': expected a rank in [0, 1)"},
      {"WORLD_SIZE", nullptr, "WORLD_SIZE or OMPI_COMM_WORLD_SIZE or SLURM_STEP_NUM_TASKS is not set"},
      {"WORLD_SIZE", "0", "WORLD_SIZE=0: expected a positive number of ranks"},
      {"MASTER_ADDR", nullptr, "MASTER_ADDR is not set"},
      {"MASTER_ADDR", "no.such.host.invalid", "MASTER_ADDR='no.such.host.invalid'"},
      {"MASTER_PORT", nullptr, "MASTER_PORT is not set; expected the TCP port"},
      {"MASTER_PORT", "70000", "MASTER_PORT='70000': expected a TCP port (1-65535)"},
      {"STRATA_JOB_SECRET", nullptr, "STRATA_JOB_SECRET is not set; expected 64 hex digits"},
      {"STRATA_JOB_SECRET", "abc", "STRATA_JOB_SECRET has 3 characters; expected 64 hex digits"},
      {"STRATA_JOB_SECRET", "zz77777777777777777777777777777777777777777777777777777777777777",
       "STRATA_JOB_SECRET is not hexadecimal"},
      {"STRATA_NETWORK_INTERFACE", "nosuch0", "STRATA_NETWORK_INTERFACE='nosuch0'"},
      {"STRATA_NETWORK_INTERFACE", "198.51.100.0/24", "no IPv4 address in that subnet"},
      {"STRATA_NETWORK_INTERFACE", "10.0.0.0/40", "expected an interface name (eth0) or an IPv4 CIDR"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.variable) + "=" + (c.value ? c.value : "(unset)"));
    Env env = job_env(0, 1, port);
    if (c.value == nullptr) {
      env.erase(c.variable);
    } else {
      env[c.variable] = c.value;
    }
    const Outcome out = run_one(env);
    EXPECT_EQ(out.status, STRATA_ERR_INVALID_ARGUMENT) << out.message;
    EXPECT_TRUE(contains(out.message, c.mentions)) << out.message;
  }
  // The secret message says who sets it.
  Env env = job_env(0, 1, port);
  env.erase("STRATA_JOB_SECRET");
  EXPECT_TRUE(contains(run_one(env).message, "strata-run")) << run_one(env).message;
}

// Ranks that srun started directly: rank and size from SLURM_PROCID and SLURM_STEP_NUM_TASKS, rank
// 0's host from the step's node list, the port from the job and step ids.
TEST(GlooSetup, SrunStartedRanksReadSlurmsVariables) {
  const Env slurm = {{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_STEP_NODELIST", "localhost"},
                     {"SLURM_JOB_ID", std::to_string(1000 + free_port() % 1000)}, {"SLURM_STEP_ID", "0"},
                     {"STRATA_JOB_SECRET", kSecret}};
  Env env = slurm;
  Outcome out = collect(spawn(env, "{}"));
  EXPECT_EQ(out.status, STRATA_OK) << out.message;
  struct Case {
    const char* variable;
    const char* value;  // nullptr: unset
    const char* mentions;
  };
  const Case cases[] = {
      // The first node of a bracketed list, its zero padding and suffix kept.
      {"SLURM_STEP_NODELIST", "no[07-09,12]x.invalid,other", "SLURM_STEP_NODELIST's first node='no07x.invalid'"},
      {"SLURM_STEP_NODELIST", "no[", "SLURM_STEP_NODELIST='no[': expected a Slurm hostlist"},
      {"SLURM_PROCID", "2", "SLURM_PROCID='2': expected a rank in [0, 1)"},
      {"SLURM_JOB_ID", "x", "SLURM_JOB_ID='x': expected a Slurm job id"},
      {"STRATA_JOB_SECRET", nullptr, "ranks started by srun need one for the job: export STRATA_JOB_SECRET"},
  };
  // A rank another launcher started inside a step (mpirun's orted under srun) has RANK: Slurm's
  // step variables do not stand in for the MASTER_* it lacks.
  env = slurm;
  env["RANK"] = "0";
  env["WORLD_SIZE"] = "1";
  out = run_one(env);
  EXPECT_TRUE(contains(out.message, "MASTER_ADDR is not set")) << out.message;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.variable) + "=" + (c.value ? c.value : "(unset)"));
    env = slurm;
    if (c.value == nullptr) {
      env.erase(c.variable);
    } else {
      env[c.variable] = c.value;
    }
    out = run_one(env);
    EXPECT_EQ(out.status, STRATA_ERR_INVALID_ARGUMENT) << out.message;
    EXPECT_TRUE(contains(out.message, c.mentions)) << out.message;
  }
}

TEST(GlooSetup, ConfigErrorsNameTheKey) {
  const Env env = job_env(0, 1, free_port());
  Outcome out = run_one(env, R"({"timout_ms": 5})");
  EXPECT_EQ(out.status, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(out.message,
                       "timout_ms: unknown key; expected one of timeout_ms, algorithm, "
                       "agreement, hierarchical, chunk_bytes, store, store_path, shm, shm_min_bytes, "
                       "shm_chunk_bytes; did you mean 'timeout_ms'?"))
      << out.message;
  out = run_one(env, R"({"hierarchical": "yes"})");
  EXPECT_TRUE(contains(out.message, R"(hierarchical: expected true, false or "auto", got "yes")"))
      << out.message;
  out = run_one(env, R"({"chunk_bytes": 0})");
  EXPECT_EQ(out.status, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(out.message, "chunk_bytes: expected a positive integer")) << out.message;
  out = run_one(env, R"({"algorithm": "tree"})");
  EXPECT_TRUE(contains(out.message, R"(algorithm: expected "auto", "ring", "bcube" or "direct", got "tree")")) << out.message;
  out = run_one(env, R"({"agreement": "tree"})");
  EXPECT_TRUE(contains(out.message, R"(agreement: expected "auto", "direct" or "ring", got "tree")"))
      << out.message;
  out = run_one(env, R"({"store": "file"})");
  EXPECT_TRUE(contains(out.message, "store: \"file\" needs store_path")) << out.message;
}

TEST(GlooSetup, OneRankWorks) {
  const Outcome out = run_one(job_env(0, 1, free_port()));
  EXPECT_EQ(out.status, STRATA_OK) << out.message;
  // STRATA_NETWORK_INTERFACE as an interface name and as a CIDR.
  for (const char* spec : {"lo", "127.0.0.0/8"}) {
    Env env = job_env(0, 1, free_port());
    env["STRATA_NETWORK_INTERFACE"] = spec;
    const Outcome o = run_one(env);
    EXPECT_EQ(o.status, STRATA_OK) << spec << ": " << o.message;
  }
}

// A rank never talks to a store that cannot prove the job secret: here a stranger listening on
// MASTER_PORT that sends a nonce and answers the client's proof with 32 bytes of its own.
TEST(GlooSetup, ImpostorStoreIsRefusedByTheRank) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t length = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
  // Rank 1 of 2: it does not serve the store, it connects to the one on MASTER_PORT.
  Child c1 = spawn(job_env(1, 2, ntohs(a.sin_port)), R"({"timeout_ms": 3000})");
  const int client = accept(fd, nullptr, nullptr);
  ASSERT_GE(client, 0);
  const std::string nonce(16, 'n');
  send(client, nonce.data(), nonce.size(), MSG_NOSIGNAL);
  char hello[52];
  EXPECT_EQ(recv(client, hello, sizeof hello, MSG_WAITALL), 52);
  const std::string forged(32, 'f');
  send(client, forged.data(), forged.size(), MSG_NOSIGNAL);
  const Outcome o1 = collect(c1);
  close(client);
  close(fd);
  EXPECT_EQ(o1.status, STRATA_ERR_COMM) << o1.message;
  EXPECT_TRUE(contains(o1.message, "did not prove the job secret; it is not this job's store"))
      << o1.message;
}

TEST(GlooSetup, PortInUseIsNamed) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t length = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
  const uint16_t port = ntohs(a.sin_port);
  const Outcome out = run_one(job_env(0, 1, port));
  close(fd);
  EXPECT_EQ(out.status, STRATA_ERR_COMM) << out.message;
  EXPECT_TRUE(contains(out.message, "MASTER_PORT " + std::to_string(port) +
                                        " on 127.0.0.1 is in use (another job? pick another with "
                                        "strata-run --master-port)"))
      << out.message;
}

TEST(GlooSetup, RankThatNeverArrivesIsNamed) {
  const uint16_t port = free_port();
  const auto start = std::chrono::steady_clock::now();
  // Ranks 0 and 2 of 4 come; 1 and 3 never do.
  // 4 s: time enough for rank 2 to start even on a loaded machine under sanitizers.
  Child c0 = spawn(job_env(0, 4, port), R"({"timeout_ms": 4000})");
  Child c2 = spawn(job_env(2, 4, port), R"({"timeout_ms": 4000})");
  const Outcome o0 = collect(c0), o2 = collect(c2);
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string named = "ranks 1, 3 did not arrive within 4 s (MASTER_ADDR 127.0.0.1:" +
                            std::to_string(port) + ")";
  EXPECT_EQ(o0.status, STRATA_ERR_COMM) << o0.message;
  EXPECT_TRUE(contains(o0.message, named)) << o0.message;
  // Rank 2 times out at about the same moment as rank 0, whose store goes with it: either message.
  EXPECT_EQ(o2.status, STRATA_ERR_COMM) << o2.message;
  EXPECT_TRUE(contains(o2.message, named) || contains(o2.message, "lost the store")) << o2.message;
  EXPECT_LT(seconds, 15.0);
}

// A MASTER_ADDR nobody answers at (dropped SYNs, or no route): the rank gives up after timeout_ms
// with a sentence naming the address, not after the kernel's two-minute connect timeout.
TEST(GlooSetup, UnreachableStoreFailsWithinTheTimeout) {
  Env env = job_env(1, 2, 29999);
  env["MASTER_ADDR"] = "10.255.255.1";
  const auto start = std::chrono::steady_clock::now();
  const Outcome o = run_one(env, R"({"timeout_ms": 2000})");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(o.status, STRATA_ERR_COMM) << o.message;
  // Some sandboxes accept every outgoing connection (a transparent proxy): then nothing proves the
  // secret and the handshake's 5 s limit ends it instead.
  EXPECT_TRUE(contains(o.message, "cannot reach rank 0's store at MASTER_ADDR 10.255.255.1:29999 "
                                  "within 2 s") ||
              contains(o.message, "the store at MASTER_ADDR 10.255.255.1:29999 did not complete "
                                  "the secret exchange"))
      << o.message;
  EXPECT_LT(seconds, 8.0);
}

// Connects to the store as a stranger: silent (sends nothing) or answering the challenge with a
// MAC made from the wrong secret (here: random bytes of the right length).
void rogue_client(uint16_t port, bool silent, std::string* address) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 200 && connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  sockaddr_in local{};
  socklen_t length = sizeof local;
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
  *address = "127.0.0.1:" + std::to_string(ntohs(local.sin_port));
  char nonce[16];
  if (!silent) {
    if (recv(fd, nonce, sizeof nonce, MSG_WAITALL) != 16) ADD_FAILURE() << "no nonce from the store";
    const std::string answer(16 + 4 + 32, 'x');
    send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
    char reply;
    EXPECT_LE(recv(fd, &reply, 1, 0), 0) << "the store answered a client without the secret";
  } else {
    // Say nothing; the store gives up after its handshake timeout and hangs up.
    char reply[64];
    recv(fd, reply, sizeof reply, MSG_WAITALL);
  }
  close(fd);
}

TEST(GlooSetup, RogueClientsAreRefusedAndLoggedWhileTheJobCompletes) {
  const uint16_t port = free_port();
  // Rank 0 waits for rank 1, which starts after the strangers have knocked.
  Child c0 = spawn(job_env(0, 2, port), R"({"timeout_ms": 20000})");
  std::string wrong, silent;
  std::thread silent_client(rogue_client, port, true, &silent);
  rogue_client(port, false, &wrong);
  silent_client.join();  // the store hangs up on it after 5 s
  Child c1 = spawn(job_env(1, 2, port), R"({"timeout_ms": 20000})");
  const Outcome o1 = collect(c1), o0 = collect(c0);
  EXPECT_EQ(o0.status, STRATA_OK) << o0.message;
  EXPECT_EQ(o1.status, STRATA_OK) << o1.message;
  bool logged_wrong = false, logged_silent = false;
  for (const std::string& w : o0.warnings) {
    logged_wrong |= contains(w, "gloo store: refused a connection from " + wrong +
                                    ": it did not prove the job secret");
    logged_silent |= contains(w, "gloo store: refused a connection from " + silent);
  }
  EXPECT_TRUE(logged_wrong) << "no warning names " << wrong;
  EXPECT_TRUE(logged_silent) << "no warning names " << silent;
}

TEST(GlooSetup, RankWithAnotherJobsSecretCannotJoin) {
  const uint16_t port = free_port();
  Child c0 = spawn(job_env(0, 2, port), R"({"timeout_ms": 3000})");
  Env intruder = job_env(1, 2, port);
  intruder["STRATA_JOB_SECRET"] = kOtherSecret;
  const Outcome o1 = collect(spawn(intruder, R"({"timeout_ms": 3000})"));
  const Outcome o0 = collect(c0);
  EXPECT_EQ(o1.status, STRATA_ERR_COMM) << o1.message;
  EXPECT_TRUE(contains(o1.message, "did not complete the secret exchange")) << o1.message;
  EXPECT_EQ(o0.status, STRATA_ERR_COMM) << o0.message;
  EXPECT_TRUE(contains(o0.message, "rank 1 did not arrive within 3 s")) << o0.message;
}

// Rank 0's outcome when rank 1 exits, or stays connected but silent for 4 s, after create();
// rank 0's allreduce and a second call are timed (warnings[1], "seconds: ..."), then a split is
// tried (warnings[2], "split: <status> <message>").
Outcome survivor_of_peer_that(After after, const std::string& config) {
  const uint16_t port = free_port();
  Child c0 = spawn(job_env(0, 2, port), config);
  Child c1 = spawn(job_env(1, 2, port), config, after);
  const Outcome o0 = collect(c0);
  collect(c1);
  std::printf("rank 0: %s\n", o0.message.c_str());
  return o0;
}

// A peer that exits, or stays connected but silent, fails the survivor's collective with
// STRATA_ERR_COMM (at once, or after timeout_ms), never a hang; later calls fail at once. Over
// Gloo's TCP pairs here; through shared memory in the next test.
TEST(GlooSetup, PeerThatExitsOrStallsFailsTheCollective) {
  for (After after : {After::Exit, After::StallThenExit}) {
    SCOPED_TRACE(after == After::Exit ? "exit" : "stall");
    const Outcome o0 = survivor_of_peer_that(after, R"({"timeout_ms": 1500, "shm": false})");
    EXPECT_EQ(o0.status, STRATA_ERR_COMM) << o0.message;
    EXPECT_TRUE(contains(o0.message, "gloo allreduce: a peer failed or timed out")) << o0.message;
    // Gloo names the closed connection's address; the plugin says which rank is there.
    if (after == After::Exit) {
      EXPECT_TRUE(contains(o0.message, "is rank 1)")) << o0.message;
    }
    ASSERT_EQ(o0.warnings.size(), 3u);
    EXPECT_TRUE(contains(o0.warnings[0], "second call: 4 allreduce: an earlier collective failed"))
        << o0.warnings[0];
    EXPECT_LT(std::stod(o0.warnings[1].substr(9)), 3.5) << o0.warnings[1];
    // A split after the failure fails at once naming it, instead of waiting out its exchange.
    EXPECT_TRUE(contains(o0.warnings[2], "split: 4 split: an earlier collective failed, and "
                                         "this communicator cannot be used after that (gloo "
                                         "allreduce: a peer failed or timed out"))
        << o0.warnings[2];
  }
}

// The same through the shared-memory group (both ranks on this host, the default): timeout_ms
// bounds its waits too, the survivor names the rank that exited or stalled, and the group fails
// later calls at once.
TEST(GlooSetup, PeerThatExitsOrStallsFailsTheSharedMemoryCollective) {
  for (After after : {After::Exit, After::StallThenExit}) {
    SCOPED_TRACE(after == After::Exit ? "exit" : "stall");
    const Outcome o0 = survivor_of_peer_that(after, R"({"timeout_ms": 1500})");
    EXPECT_EQ(o0.status, STRATA_ERR_COMM) << o0.message;
    EXPECT_TRUE(contains(o0.message, "allreduce over shared memory: rank 1 (pid ")) << o0.message;
    EXPECT_TRUE(contains(o0.message, after == After::Exit
                                         ? "exited before it reached this collective's step"
                                         : "did not reach this collective's step"))
        << o0.message;
    if (after == After::StallThenExit) {
      EXPECT_TRUE(contains(o0.message, "within the timeout (1500 ms)")) << o0.message;
    }
    ASSERT_EQ(o0.warnings.size(), 3u);
    EXPECT_TRUE(contains(o0.warnings[0], "second call: 4 allreduce: an earlier collective over "
                                         "shared memory failed"))
        << o0.warnings[0];
    EXPECT_LT(std::stod(o0.warnings[1].substr(9)), 3.5) << o0.warnings[1];
    // The split's exchange goes over Gloo's pairs, which did not fail: it fails on its own (the
    // peer is gone or silent), within the timeout.
    EXPECT_TRUE(contains(o0.warnings[2], "split: 4 gloo split")) << o0.warnings[2];
  }
}

// The same across two hosts in two levels ("hierarchical": true; CROSS_RANK makes ranks 0-1 one
// host and 2-3 another on this machine): the agreement goes through each host's shared memory and
// then across hosts (agreement.hpp). A dead rank is seen over TCP by its namesake on the other
// host and through shared memory by its host-mate, which still meets its own namesake with a block
// saying that its host failed: every survivor fails well within the timeout, although each keeps
// its connections open for 8 s after failing (which would otherwise be what ends the wait of the
// host-mate's namesake). A silent rank fails everyone within the timeout.
// Later calls fail at once.
TEST(GlooSetup, PeerThatExitsOrStallsFailsEveryRankOfTheTwoLevelCollective) {
  struct Case {
    After after;
    int victim;
    const char* config;
    double within;  // seconds from the allreduce's start to the second call's failure
    std::chrono::milliseconds hold;  // how long each survivor keeps its connections after
  };
  // A rank that exits on the second host (the shared-memory group sees an exit after a 3 s
  // grace), one that stalls on the first.
  const Case cases[] = {
      {After::Exit, 2, R"({"timeout_ms": 30000, "hierarchical": true})", 6.5,
       std::chrono::milliseconds(8000)},
      {After::StallThenExit, 1, R"({"timeout_ms": 1500, "hierarchical": true})", 4.5,
       std::chrono::milliseconds(0)}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.after == After::Exit ? "exit" : "stall") + ", rank " +
                 std::to_string(c.victim));
    const uint16_t port = free_port();
    std::vector<Child> children;
    for (int rank = 0; rank < 4; ++rank) {
      Env env = job_env(rank, 4, port);
      env["CROSS_RANK"] = std::to_string(rank / 2);
      children.push_back(spawn(env, c.config, rank == c.victim ? c.after : After::Allreduce,
                                 c.hold));
    }
    for (int rank = 0; rank < 4; ++rank) {
      const Outcome o = collect(children[static_cast<size_t>(rank)]);
      if (rank == c.victim) continue;
      std::printf("rank %d: %s\n", rank, o.message.c_str());
      SCOPED_TRACE("survivor " + std::to_string(rank) + ": " + o.message);
      EXPECT_EQ(o.status, STRATA_ERR_COMM);
      EXPECT_TRUE(contains(o.message, "gloo allreduce: ")) << o.message;
      // Its host-mate names it by local rank, and says which ranks those are.
      if (rank / 2 == c.victim / 2) {
        EXPECT_TRUE(contains(o.message, "agreement within this host: ")) << o.message;
        EXPECT_TRUE(contains(o.message, "over shared memory: rank " +
                                            std::to_string(c.victim % 2) + " (pid "))
            << o.message;
        const int first = c.victim / 2 * 2;
        EXPECT_TRUE(contains(o.message, "(local ranks 0, 1 of host " + std::to_string(c.victim / 2) +
                                            " are ranks " + std::to_string(first) + ", " +
                                            std::to_string(first + 1) + ")"))
            << o.message;
      }
      ASSERT_GE(o.warnings.size(), 3u);
      const size_t n = o.warnings.size();
      EXPECT_TRUE(contains(o.warnings[n - 3], "second call: 4 allreduce: an earlier collective "
                                              "failed"))
          << o.warnings[n - 3];
      EXPECT_LT(std::stod(o.warnings[n - 2].substr(9)), c.within) << o.warnings[n - 2];
      // Whether the failure was seen over TCP or through shared memory, the latch names the
      // communicator, not one transport.
      EXPECT_TRUE(contains(o.warnings[n - 1], "split: 4 split: an earlier collective failed, and "
                                              "this communicator cannot be used after that ("))
          << o.warnings[n - 1];
    }
  }
}

TEST(GlooSetup, FileStoreWorks) {
  char dir[] = "/tmp/strata-gloo-store-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string config = std::string(R"({"store": "file", "store_path": ")") + dir + "\"}";
  const uint16_t port = free_port();
  Child c0 = spawn(job_env(0, 2, port), config);
  Child c1 = spawn(job_env(1, 2, port), config);
  const Outcome o0 = collect(c0), o1 = collect(c1);
  EXPECT_EQ(o0.status, STRATA_OK) << o0.message;
  EXPECT_EQ(o1.status, STRATA_OK) << o1.message;
  std::system(("rm -rf " + std::string(dir)).c_str());
}

}  // namespace
}  // namespace strata::test
