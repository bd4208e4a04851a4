#include "comm_env.hpp"

#include "comm_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

namespace strata::test::comm {
namespace {

struct State {
  std::unique_ptr<PluginLibrary> library;
  std::unique_ptr<FakeHost> host;
  void* instance = nullptr;
  void* chunked = nullptr;
  void* shm = nullptr;
  void* mpi = nullptr;
  std::vector<void*> on_shm;  // instances whose create() logged the job-wide "shm on ("
  std::mutex log_mutex;
  std::vector<std::string> log;
  int rank = 0;
  int world = 1;
};
State g;

// Records every line; prints warnings and errors as FakeHost does.
void record_log(void*, int32_t level, const char* message) {
  if (level >= STRATA_LOG_WARN) std::fprintf(stderr, "[plugin] %s\n", message);
  std::lock_guard<std::mutex> lock(g.log_mutex);
  g.log.emplace_back(message);
}

void* create_instance(const char* config) {
  strata_error err = sdk::make_error();
  void* self = nullptr;
  const size_t mark = log_mark();
  const strata_status status = abi::create(config, &self, &err);
  if (status != STRATA_OK) throw std::runtime_error(std::string("create: ") + err.message);
  // The job-wide summary follows ", " (allreduce-mpi) or "; " (allreduce-gloo); a hierarchical
  // instance's per-host group says "within hosts shm on (" further on, which does not count.
  for (const std::string& line : log_since(mark)) {
    if (line.find(", shm on (") != std::string::npos ||
        line.find("; shm on (") != std::string::npos) {
      g.on_shm.push_back(self);
    }
  }
  return self;
}

class CommEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g.library = std::make_unique<PluginLibrary>(backend().plugin_path);
    g.host = std::make_unique<FakeHost>();
    g.host->api()->log = &record_log;
    g.instance = create_instance(backend().default_config);
    g.chunked = create_instance(backend().chunked_config);
    g.shm = create_instance(backend().shm_config);
    g.mpi = create_instance(backend().mpi_config);
    strata_comm_caps caps{};
    caps.struct_size = sizeof caps;
    strata_error err = sdk::make_error();
    if (ops().query(g.instance, &caps, &err) != STRATA_OK) throw std::runtime_error(err.message);
    g.rank = caps.rank;
    g.world = caps.size;
  }
  // The default instance goes last: with MPI, destroying it finalises MPI.
  void TearDown() override {
    ops().destroy(g.mpi);
    ops().destroy(g.shm);
    ops().destroy(g.chunked);
    ops().destroy(g.instance);
  }
};

// On ranks other than 0, print only failed assertions (prefixed with the rank), not the whole
// progress report four times over.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(std::string rank) : rank_(std::move(rank)) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed()) {
      std::fprintf(stderr, "[rank %s] %s:%d: Failure\n%s\n", rank_.c_str(),
                   result.file_name() ? result.file_name() : "?", result.line_number(),
                   result.message());
    }
  }

 private:
  std::string rank_;
};

}  // namespace

const strata_plugin_descriptor& descriptor() { return g.library->descriptor(); }
const strata_comm_ops& ops() { return g.library->ops<strata_comm_ops>(); }
FakeHost& host() { return *g.host; }
void* instance() { return g.instance; }
void* chunked_instance() { return g.chunked; }
void* shm_instance() { return g.shm; }
void* mpi_instance() { return g.mpi; }
bool has_shm_path() { return backend().has_shm; }
bool uses_shm(void* instance) {
  return std::find(g.on_shm.begin(), g.on_shm.end(), instance) != g.on_shm.end();
}

size_t log_mark() {
  std::lock_guard<std::mutex> lock(g.log_mutex);
  return g.log.size();
}

std::vector<std::string> log_since(size_t mark) {
  std::lock_guard<std::mutex> lock(g.log_mutex);
  return {g.log.begin() + static_cast<std::ptrdiff_t>(std::min(mark, g.log.size())), g.log.end()};
}
int rank() { return g.rank; }
int world() { return g.world; }

const char* mode_name(Mode mode) { return mode == Mode::Blocking ? "blocking" : "non-blocking"; }

strata_status abi::create(const char* config_json, void** self, strata_error* err) {
  return g.library->create<strata_comm_ops>(config_json, g.host->api(), self, err);
}

std::string op_label(int32_t op) {
  static const char* const names[] = {"SUM", "AVG", "MIN", "MAX"};
  return op >= 0 && op < 4 ? names[op] : "op" + std::to_string(op);
}

void run(Mode mode, void* self, const Start& start) {
  strata_error err = sdk::make_error();
  if (mode == Mode::Blocking) {
    ASSERT_EQ(start(nullptr, &err), STRATA_OK) << err.message;
    return;
  }
  strata_request req = nullptr;
  ASSERT_EQ(start(&req, &err), STRATA_OK) << err.message;
  ASSERT_NE(req, nullptr);
  // Poll as a host overlapping work would; give up (and fail) only after a generous minute.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int32_t done = 0;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(ops().test(self, req, &done, &err), STRATA_OK) << err.message;
    // Between polls the host would do its own work; sleeping instead of spinning leaves the CPU
    // to the ranks' progress threads when ranks outnumber cores.
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  EXPECT_EQ(done, 1) << "test() did not report completion within 60 s";
  ASSERT_EQ(ops().wait(self, req, &err), STRATA_OK) << err.message;
}

void expect_same_on_all_ranks(const Bytes& bytes) {
  Bytes mine = bytes;
  Bytes all(bytes.size() * world());
  strata_buffer send = view(mine, STRATA_U8);
  strata_buffer recv = view(all, STRATA_U8);
  run(Mode::Blocking, instance(), [&](strata_request* req, strata_error* err) {
    return abi::allgather(instance(), &send, &recv, req, err);
  });
  for (int r = 0; r < world(); ++r) {
    const Bytes theirs(all.begin() + r * bytes.size(), all.begin() + (r + 1) * bytes.size());
    EXPECT_EQ(theirs, bytes) << "rank " << r << "'s result differs from rank " << rank() << "'s";
  }
}

}  // namespace strata::test::comm

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* rank = std::getenv(strata::test::comm::backend().rank_variable);
  if (rank != nullptr && std::string(rank) != "0") {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new strata::test::comm::FailurePrinter(rank));
  }
  ::testing::AddGlobalTestEnvironment(new strata::test::comm::CommEnvironment);
  return RUN_ALL_TESTS();
}
