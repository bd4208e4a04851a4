// The unique-id exchange over TCP (plugins/allreduce/nccl/src/tcp_bootstrap.cpp, compiled in), with
// threads as the ranks: no NCCL call and no device is involved, so it runs on any machine. Every
// rank ends with rank 0's id; a rank that never comes is named by rank 0; a peer without the job's
// secret gets nothing, and a server without it is refused.
#include "tcp_bootstrap.hpp"
#include "launch_env.hpp"

#include <free_port.hpp>
#include <strata_common/tcp_socket.hpp>
#include <strata/plugin.hpp>

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace strata::allreduce_nccl;
using namespace strata::common::net;
using namespace std::chrono_literals;

using strata::test::free_port;

TcpRendezvous rendezvous(uint16_t port, char secret_byte) {
  TcpRendezvous r;
  r.ip = "127.0.0.1";
  r.port = port;
  r.where = "127.0.0.1:" + std::to_string(port);
  r.secret = std::string(32, secret_byte);
  return r;
}

ncclUniqueId patterned_id() {
  ncclUniqueId id{};
  for (size_t i = 0; i < sizeof id.internal; ++i) id.internal[i] = static_cast<char>(i * 7 + 1);
  return id;
}

// Runs `size` ranks as threads; returns each rank's error message ("" for success) and id.
struct Outcome {
  std::vector<std::string> errors;
  std::vector<ncclUniqueId> ids;
};

Outcome run_ranks(int size, const std::vector<int>& ranks,
                  const std::vector<TcpRendezvous>& per_rank, std::chrono::milliseconds timeout) {
  Outcome out{std::vector<std::string>(static_cast<size_t>(size)),
              std::vector<ncclUniqueId>(static_cast<size_t>(size))};
  std::vector<std::thread> threads;
  for (int rank : ranks) {
    threads.emplace_back([&, rank] {
      const auto r = static_cast<size_t>(rank);
      out.ids[r] = rank == 0 ? patterned_id() : ncclUniqueId{};
      try {
        exchange_id_over_tcp(out.ids[r], rank, size, timeout, per_rank[r]);
      } catch (const strata::sdk::Error& e) {
        out.errors[r] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return out;
}

TEST(TcpBootstrap, EveryRankGetsRankZerosId) {
  const TcpRendezvous r = rendezvous(free_port(), 's');
  const Outcome out = run_ranks(4, {3, 1, 2, 0}, std::vector<TcpRendezvous>(4, r), 20s);
  const ncclUniqueId expected = patterned_id();
  for (size_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(out.errors[rank], "") << "rank " << rank;
    EXPECT_EQ(std::memcmp(out.ids[rank].internal, expected.internal, sizeof expected.internal), 0)
        << "rank " << rank;
  }
}

TEST(TcpBootstrap, RankZeroNamesTheRanksThatNeverCame) {
  const TcpRendezvous r = rendezvous(free_port(), 's');
  const Outcome out = run_ranks(4, {0, 2}, std::vector<TcpRendezvous>(4, r), 1500ms);
  EXPECT_EQ(out.errors[2], "");
  EXPECT_NE(out.errors[0].find(
                "allreduce-nccl: bootstrap tcp: rank 0 served the NCCL unique id at " + r.where),
            std::string::npos)
      << out.errors[0];
  EXPECT_NE(out.errors[0].find("but rank(s) 1, 3 never fetched it"), std::string::npos)
      << out.errors[0];
}

TEST(TcpBootstrap, APeerWithoutTheSecretGetsNothing) {
  const uint16_t port = free_port();
  const Outcome out = run_ranks(2, {0, 1}, {rendezvous(port, 's'), rendezvous(port, 'x')}, 1500ms);
  EXPECT_NE(out.errors[1].find("allreduce-nccl: bootstrap tcp: rank 1 could not fetch the NCCL "
                               "unique id from rank 0 at"),
            std::string::npos)
      << out.errors[1];
  EXPECT_NE(out.errors[0].find("rank(s) 1 never fetched it"), std::string::npos) << out.errors[0];
  const ncclUniqueId expected = patterned_id();
  EXPECT_NE(std::memcmp(out.ids[1].internal, expected.internal, sizeof expected.internal), 0);
}

// A server that does not know the secret but answers anyway (it accepts any proof and sends an
// id with a made-up MAC): the rank refuses the id at once instead of joining that communicator.
TEST(TcpBootstrap, ARankRefusesAServerWithoutTheSecret) {
  const TcpRendezvous r = rendezvous(free_port(), 's');
  const Socket listener = listen_on(r.ip, r.port);
  std::thread impostor([&] {
    const auto deadline = Clock::now() + 10s;
    const Socket peer = listener.accept_until(deadline);
    if (peer.fd() < 0) return;
    try {
      peer.write_all(std::string(16, 'n'), deadline);
      peer.read_exact(16 + 4 + 32, deadline);
      peer.write_all(std::string(32, 'm') + std::string(128, 'i'), deadline);
    } catch (const SocketError&) {
    }
  });
  ncclUniqueId id{};
  std::string error;
  try {
    exchange_id_over_tcp(id, 1, 2, 10s, r);
  } catch (const strata::sdk::Error& e) {
    error = e.what();
  }
  impostor.join();
  EXPECT_EQ(error, "allreduce-nccl: bootstrap tcp: the server at " + r.where +
                       " does not know this job's STRATA_JOB_SECRET; refusing its NCCL unique id");
  EXPECT_EQ(id.internal[0], 0);
}

TEST(TcpBootstrap, MissingVariablesAreNamed) {
  unsetenv("MASTER_ADDR");
  try {
    read_tcp_rendezvous();
    FAIL() << "expected an error";
  } catch (const strata::sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR is not set"), std::string::npos) << e.what();
  }
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  setenv("STRATA_JOB_SECRET", "abc", 1);
  try {
    read_tcp_rendezvous();
    FAIL() << "expected an error";
  } catch (const strata::sdk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("STRATA_JOB_SECRET is malformed; expected 64 hex digits"),
              std::string::npos)
        << e.what();
  }
  setenv("STRATA_JOB_SECRET", std::string(64, 'a').c_str(), 1);
  const TcpRendezvous r = read_tcp_rendezvous();
  EXPECT_EQ(r.ip, "127.0.0.1");
  EXPECT_EQ(r.port, 29500);
  EXPECT_EQ(r.secret, std::string(32, '\xaa'));
}

// The launcher's variables (launch_env.cpp, compiled in as well).
TEST(LaunchEnv, StrataRunsVariablesAndTheirErrors) {
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_SIZE"})
    unsetenv(name);
  const LaunchEnv alone = read_launch_env();
  EXPECT_EQ(alone.size, 1);
  EXPECT_FALSE(alone.from_mpirun || alone.from_strata_run);
  setenv("WORLD_SIZE", "4", 1);
  setenv("RANK", "3", 1);
  setenv("LOCAL_SIZE", "2", 1);
  setenv("LOCAL_RANK", "1", 1);
  const LaunchEnv env = read_launch_env();
  EXPECT_TRUE(env.from_strata_run);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_size, 2);
  setenv("LOCAL_RANK", "2", 1);
  try {
    read_launch_env();
    FAIL() << "expected an error";
  } catch (const strata::sdk::Error& e) {
    EXPECT_STREQ(e.what(), "allreduce-nccl: LOCAL_RANK='2': expected a local rank in [0, 2)");
  }
  unsetenv("LOCAL_RANK");
  try {
    read_launch_env();
    FAIL() << "expected an error";
  } catch (const strata::sdk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("LOCAL_RANK is not set"), std::string::npos) << e.what();
  }
  for (const char* name : {"WORLD_SIZE", "RANK", "LOCAL_SIZE"}) unsetenv(name);
}

}  // namespace
