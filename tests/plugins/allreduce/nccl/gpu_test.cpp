// The NCCL comm plugin on a GPU, with two real rank processes (this program re-executed with
// --role; strata-run's variables and the TCP bootstrap, so no launcher is needed): every
// collective in every dtype against a host reference, and a killed peer ending the survivor with
// a message within the timeout. Where no device is visible each test skips, saying so. On one
// device the two ranks share it ("share_device": true; see the plugin's README).
#include <gpu_env.hpp>

#include <free_port.hpp>
#include <plugin_harness.hpp>
#include <strata/half.hpp>

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using strata::test::FakeHost;
using strata::test::PluginLibrary;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 2;
constexpr double kKilledPeerTimeoutSeconds = 15;

// ---- a rank's side ----

struct Rank {
  PluginLibrary library{STRATA_ALLREDUCE_NCCL_PLUGIN};
  FakeHost host;
  const strata_comm_ops& ops = library.ops<strata_comm_ops>();
  void* self = nullptr;
  int rank = std::atoi(std::getenv("RANK"));
  int failures = 0;

  explicit Rank(const std::string& config) {
    strata_error err = strata::sdk::make_error();
    if (library.create<strata_comm_ops>(config.c_str(), host.api(), &self, &err) != STRATA_OK) {
      std::fprintf(stderr, "rank %d: create failed: %s\n", rank, err.message);
      std::exit(2);
    }
  }
  ~Rank() { ops.destroy(self); }

  void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures;
    std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
  }
};

// Small integers: every sum and average of two ranks' values is exact in every dtype.
double input(int rank, size_t i) {
  return static_cast<double>((i * 3 + static_cast<size_t>(rank) * 5) % 50);
}

size_t element_size(int32_t dtype) { return strata::sdk::dtype_size(dtype); }

void encode(int32_t dtype, double v, void* out) {
  switch (dtype) {
    case STRATA_F32: {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      break;
    }
    case STRATA_F64:
      std::memcpy(out, &v, 8);
      break;
    case STRATA_F16: {
      const uint16_t h = strata::float_to_f16(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case STRATA_BF16: {
      const uint16_t h = strata::float_to_bf16(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      break;
    }
    case STRATA_I32: {
      const auto x = static_cast<int32_t>(v);
      std::memcpy(out, &x, 4);
      break;
    }
    case STRATA_I64: {
      const auto x = static_cast<int64_t>(v);
      std::memcpy(out, &x, 8);
      break;
    }
    case STRATA_U8: {
      const auto x = static_cast<uint8_t>(v);
      std::memcpy(out, &x, 1);
      break;
    }
  }
}

double decode(int32_t dtype, const void* in) {
  switch (dtype) {
    case STRATA_F32: {
      float f;
      std::memcpy(&f, in, 4);
      return f;
    }
    case STRATA_F64: {
      double d;
      std::memcpy(&d, in, 8);
      return d;
    }
    case STRATA_F16: {
      uint16_t h;
      std::memcpy(&h, in, 2);
      return strata::f16_to_float(h);
    }
    case STRATA_BF16: {
      uint16_t h;
      std::memcpy(&h, in, 2);
      return strata::bf16_to_float(h);
    }
    case STRATA_I32: {
      int32_t x;
      std::memcpy(&x, in, 4);
      return x;
    }
    case STRATA_I64: {
      int64_t x;
      std::memcpy(&x, in, 8);
      return static_cast<double>(x);
    }
    case STRATA_U8: {
      uint8_t x;
      std::memcpy(&x, in, 1);
      return x;
    }
  }
  return NAN;
}

bool integral(int32_t dtype) {
  return dtype == STRATA_I32 || dtype == STRATA_I64 || dtype == STRATA_U8;
}

// A device array of `count` elements of `dtype`.
struct DeviceArray {
  int32_t dtype;
  size_t count;
  void* data = nullptr;
  DeviceArray(int32_t d, size_t n) : dtype(d), count(n) {
    cudaMalloc(&data, std::max<size_t>(n, 1) * element_size(d));
  }
  ~DeviceArray() { cudaFree(data); }
  void fill(const std::function<double(size_t)>& value) {
    std::vector<char> host(count * element_size(dtype));
    for (size_t i = 0; i < count; ++i)
      encode(dtype, value(i), host.data() + i * element_size(dtype));
    cudaMemcpy(data, host.data(), host.size(), cudaMemcpyHostToDevice);
  }
  std::vector<double> read() const {
    std::vector<char> host(count * element_size(dtype));
    cudaMemcpy(host.data(), data, host.size(), cudaMemcpyDeviceToHost);
    std::vector<double> out(count);
    for (size_t i = 0; i < count; ++i)
      out[i] = decode(dtype, host.data() + i * element_size(dtype));
    return out;
  }
  strata_buffer buffer(size_t offset = 0, size_t n = SIZE_MAX) const {
    strata_buffer b{};
    b.struct_size = sizeof b;
    b.data = static_cast<char*>(data) + offset * element_size(dtype);
    b.count = n == SIZE_MAX ? count - offset : n;
    b.dtype = dtype;
    b.device = strata_device{STRATA_DEVICE_CUDA, [] {
                               int d = 0;
                               cudaGetDevice(&d);
                               return d;
                             }()};
    return b;
  }
};

strata_coll_args args(const strata_buffer* send, const strata_buffer* recv) {
  strata_coll_args a{};
  a.struct_size = sizeof a;
  a.send = send;
  a.recv = recv;
  return a;
}

void compare(Rank& r, const std::string& what, const std::vector<double>& got,
             const std::function<double(size_t)>& expected) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected(i)) {
      r.expect(false, what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                          ", expected " + std::to_string(expected(i)));
      return;
    }
  }
}

void call(Rank& r, const std::string& what,
          strata_status (*fn)(void*, const strata_coll_args*, strata_request*, strata_error*),
          const strata_coll_args& a, bool nonblocking) {
  strata_error err = strata::sdk::make_error();
  strata_request req = nullptr;
  strata_status s = fn(r.self, &a, nonblocking ? &req : nullptr, &err);
  if (s == STRATA_OK && nonblocking) {
    int32_t done = 0;
    s = r.ops.test(r.self, req, &done, &err);
    if (s == STRATA_OK) s = r.ops.wait(r.self, req, &err);
  }
  r.expect(s == STRATA_OK, what + ": " + err.message);
}

int run_collectives(const std::string& config) {
  Rank r(config);
  const size_t n = 1000;  // per rank
  const double size = kRanks;
  for (int32_t dtype = 0; dtype < STRATA_DTYPE_COUNT; ++dtype) {
    const std::string t = strata::sdk::dtype_name(dtype);
    for (int32_t op : {STRATA_SUM, STRATA_AVG, STRATA_MIN, STRATA_MAX}) {
      for (bool nonblocking : {false, true}) {
        DeviceArray send(dtype, n), recv(dtype, n);
        send.fill([&](size_t i) { return input(r.rank, i); });
        const strata_buffer sb = send.buffer(), rb = recv.buffer();
        strata_coll_args a = args(&sb, &rb);
        a.op = op;
        call(r, "allreduce " + t, r.ops.allreduce, a, nonblocking);
        compare(r, "allreduce " + t + " op " + std::to_string(op), recv.read(), [&](size_t i) {
          const double a0 = input(0, i), a1 = input(1, i);
          switch (op) {
            case STRATA_SUM:
              return a0 + a1;
            case STRATA_AVG:
              return integral(dtype) ? std::trunc((a0 + a1) / size) : (a0 + a1) / size;
            case STRATA_MIN:
              return std::min(a0, a1);
            default:
              return std::max(a0, a1);
          }
        });
      }
    }
    {
      DeviceArray send(dtype, n), recv(dtype, n * kRanks);
      send.fill([&](size_t i) { return input(r.rank, i); });
      const strata_buffer sb = send.buffer(), rb = recv.buffer();
      call(r, "allgather " + t, r.ops.allgather, args(&sb, &rb), false);
      compare(r, "allgather " + t, recv.read(),
              [&](size_t i) { return input(static_cast<int>(i / n), i % n); });
    }
    {
      const uint64_t counts[kRanks] = {7, 300}, displs[kRanks] = {300, 0};
      DeviceArray send(dtype, counts[r.rank]), recv(dtype, 307);
      send.fill([&](size_t i) { return input(r.rank, i); });
      const strata_buffer sb = send.buffer(), rb = recv.buffer();
      strata_coll_args a = args(&sb, &rb);
      a.recv_counts = counts;
      a.displs = displs;
      call(r, "allgatherv " + t, r.ops.allgatherv, a, true);
      compare(r, "allgatherv " + t, recv.read(),
              [&](size_t i) { return i < 300 ? input(1, i) : input(0, i - 300); });
    }
    {
      DeviceArray send(dtype, n * kRanks), recv(dtype, n);
      send.fill([&](size_t i) { return input(r.rank, i); });
      const strata_buffer sb = send.buffer(), rb = recv.buffer();
      strata_coll_args a = args(&sb, &rb);
      a.op = STRATA_SUM;
      call(r, "reduce_scatter " + t, r.ops.reduce_scatter, a, false);
      const size_t base = static_cast<size_t>(r.rank) * n;
      compare(r, "reduce_scatter " + t, recv.read(),
              [&](size_t i) { return input(0, base + i) + input(1, base + i); });
    }
    {
      DeviceArray buffer(dtype, n);
      buffer.fill([&](size_t i) { return input(r.rank, i); });
      const strata_buffer b = buffer.buffer();
      strata_coll_args a = args(nullptr, &b);
      a.root = 1;
      call(r, "broadcast " + t, r.ops.broadcast, a, false);
      compare(r, "broadcast " + t, buffer.read(), [&](size_t i) { return input(1, i); });
    }
  }
  // A host buffer is refused naming it, before any NCCL call (so every rank refuses alike).
  {
    std::vector<float> host(4);
    strata_buffer hb = strata::sdk::host_buffer(host.data(), 4, STRATA_F32);
    strata_coll_args a = args(&hb, &hb);
    strata_error err = strata::sdk::make_error();
    const strata_status s = r.ops.allreduce(r.self, &a, nullptr, &err);
    r.expect(s == STRATA_ERR_UNSUPPORTED &&
                 std::strstr(err.message, "send is in host memory") != nullptr,
             std::string("host buffer refused: ") + err.message);
  }
  strata_coll_args none = args(nullptr, nullptr);
  call(r, "barrier", r.ops.barrier, none, false);
  call(r, "barrier (non-blocking)", r.ops.barrier, none, true);
  std::printf("rank %d: %d failure(s)\n", r.rank, r.failures);
  return r.failures == 0 ? 0 : 1;
}

// Rank 1 dies after the communicator is up; rank 0's next allreduce must fail, naming the
// collective and the rank, within the timeout instead of hanging.
int run_killed_peer(const std::string& config) {
  Rank r(config);
  strata_coll_args none = args(nullptr, nullptr);
  call(r, "barrier", r.ops.barrier, none, false);
  if (r.rank == 1) raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  DeviceArray data(STRATA_F32, 1 << 20);
  data.fill([](size_t) { return 1.0; });
  const strata_buffer b = data.buffer();
  strata_coll_args a = args(&b, &b);
  a.op = STRATA_SUM;
  strata_error err = strata::sdk::make_error();
  const auto begin = Clock::now();
  const strata_status s = r.ops.allreduce(r.self, &a, nullptr, &err);
  const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  std::printf("rank 0: allreduce returned %d after %.1f s: %s\n", static_cast<int>(s), seconds,
              err.message);
  r.expect(s == STRATA_ERR_COMM, "the allreduce failed with STRATA_ERR_COMM");
  r.expect(std::strstr(err.message, "allreduce-nccl: allreduce: rank 0 (local rank 0)") != nullptr,
           "the message names the collective and the rank");
  r.expect(seconds <= kKilledPeerTimeoutSeconds + 5, "it failed within the timeout");
  std::fflush(stdout);
  std::_Exit(r.failures == 0 ? 0 : 1);  // no destroy: the communicator is aborted, the peer gone
}

// ---- the test process's side ----

std::string self_path() {
  char path[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "";
}

using strata::test::free_port;

// Starts kRanks copies of this program as ranks of one job; returns their exit codes (-signal for
// a signal; -1000 for one still running after `limit`, which is then killed).
std::vector<int> run_job(const std::string& role, const std::string& config,
                         std::chrono::seconds limit) {
  const uint16_t port = free_port();
  std::vector<pid_t> pids;
  const std::string exe = self_path();
  for (int rank = 0; rank < kRanks; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(kRanks).c_str(), 1);
      setenv("LOCAL_SIZE", std::to_string(kRanks).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      setenv("STRATA_JOB_SECRET", std::string(64, '7').c_str(), 1);
      execl(exe.c_str(), exe.c_str(), "--role", role.c_str(), config.c_str(),
            static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(pids.size(), -1000);
  const auto deadline = Clock::now() + limit;
  for (size_t left = pids.size(); left > 0 && Clock::now() < deadline;) {
    for (size_t i = 0; i < pids.size(); ++i) {
      int status = 0;
      if (codes[i] != -1000 || waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      --left;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    if (codes[i] == -1000) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], nullptr, 0);
    }
  }
  return codes;
}

std::string job_config(double timeout_seconds) {
  int devices = 0;
  cudaGetDeviceCount(&devices);
  const bool share = devices < kRanks;
  return std::string(R"({"bootstrap": "tcp", "timeout_seconds": )") +
         std::to_string(timeout_seconds) + R"(, "share_device": )" + (share ? "true" : "false") +
         "}";
}

TEST(NcclGpu, EveryCollectiveAndDtypeMatchesTheHostReference) {
  STRATA_REQUIRE_GPU();
  const std::vector<int> codes = run_job("collectives", job_config(60), std::chrono::seconds(240));
  EXPECT_EQ(codes, std::vector<int>(kRanks, 0)) << "see each rank's FAILED lines above";
}

TEST(NcclGpu, AKilledPeerEndsTheSurvivorWithAMessage) {
  STRATA_REQUIRE_GPU();
  const auto begin = Clock::now();
  const std::vector<int> codes =
      run_job("killed-peer", job_config(kKilledPeerTimeoutSeconds), std::chrono::seconds(120));
  EXPECT_EQ(codes[0], 0) << "rank 0 (the survivor) did not end with the expected message in time";
  EXPECT_EQ(codes[1], -SIGKILL);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - begin).count(), 100.0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--role") == 0) {
    const std::string role = argv[2];
    if (role == "collectives") return run_collectives(argv[3]);
    if (role == "killed-peer") return run_killed_peer(argv[3]);
    std::fprintf(stderr, "unknown role %s\n", role.c_str());
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
