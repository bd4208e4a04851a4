// The 1.0-1.2 adapter on its own (runtime/src/legacy_abi): legacy plugins built against the frozen
// header (plugin-api/legacy) as 1.0 and as 1.2 are dlopen'ed and driven through legacy::create and
// the adapter tables with hand-made current-layout host tables; a legacy sharding table written
// here in the 1.0/1.1 layout covers what the built plugins do not (shard arrays coming back,
// groups, the host tables lent to legacy plugins). No libstrata, no MPI.
#include "error.hpp"
#include "legacy_api.hpp"
#include "legacy_plugin.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace legacy = strata::rt::legacy;
namespace v1_2 = strata::rt::legacy::v1_2;
using ::testing::HasSubstr;

namespace {

strata_error new_error() {
  strata_error e{};
  e.struct_size = sizeof e;
  return e;
}

// ---- a current-layout host: log, allocation, a fake comm and precision that record calls -----

struct Recorder {
  std::vector<std::string> log;
  std::vector<std::string> calls;
  std::vector<strata_shard> stats_shards;  // what the current precision's grad_stats received
};

void host_log(void* ctx, int32_t, const char* message) { static_cast<Recorder*>(ctx)->log.emplace_back(message); }
void* host_alloc(void*, size_t bytes, size_t, int32_t) { return std::malloc(bytes); }
void host_free(void*, void* p) { std::free(p); }
int32_t host_log_enabled(void*, int32_t) { return 1; }

Recorder* rec(void* self) { return static_cast<Recorder*>(self); }

strata_status now_comm_query(void* self, strata_comm_caps* caps, strata_error*) {
  rec(self)->calls.push_back("comm.query");
  caps->rank = 3;
  caps->size = 7;
  return STRATA_OK;
}
strata_status now_allreduce(void* self, const strata_coll_args* a, strata_request*, strata_error*) {
  rec(self)->calls.push_back("comm.allreduce op " + std::to_string(a->op) + " count " +
                             std::to_string(a->send->count));
  std::memcpy(a->recv->data, a->send->data, a->send->count * sizeof(float));
  return STRATA_OK;
}
strata_status now_allgather(void* self, const strata_coll_args*, strata_request*, strata_error*) {
  rec(self)->calls.push_back("comm.allgather");
  return STRATA_OK;
}
strata_status now_broadcast(void* self, const strata_coll_args* a, strata_request*, strata_error*) {
  rec(self)->calls.push_back("comm.broadcast root " + std::to_string(a->root) +
                             (a->recv != nullptr ? " recv" : " no-recv"));
  return STRATA_OK;
}
strata_status now_barrier(void* self, const strata_coll_args*, strata_request*, strata_error*) {
  rec(self)->calls.push_back("comm.barrier");
  return STRATA_OK;
}
strata_status fail_create(const strata_plugin_create_args*, void**, strata_error*) { return STRATA_ERR_INTERNAL; }
void no_destroy(void*) {}

// allgatherv, reduce_scatter, wait and test NULL: the 1.2 table lent to legacy plugins must say so.
// ABI 1.10's alltoallv and split NULL too (the 1.2 table has no place for them).
const strata_comm_ops kNowComm = {
    {sizeof(strata_comm_ops), STRATA_ABI_MAJOR, STRATA_ABI_MINOR, STRATA_PLUGIN_COMM, 0u},
    fail_create, no_destroy, now_comm_query, now_allreduce, now_allgather, nullptr, nullptr,
    now_broadcast, now_barrier, nullptr, nullptr, nullptr, nullptr};

strata_status now_prec_query(void*, strata_precision_caps*, strata_error*) { return STRATA_OK; }
strata_status now_loss_scale(void*, double* scale, strata_error*) {
  *scale = 8.0;
  return STRATA_OK;
}
strata_status now_grad_stats(void* self, const strata_shard* shards, size_t count, strata_grad_stats* stats,
                             strata_error*) {
  rec(self)->calls.push_back("precision.grad_stats");
  rec(self)->stats_shards.assign(shards, shards + count);
  stats->sum_sq = 42.0;
  return STRATA_OK;
}
strata_status now_update(void*, int32_t, strata_error*) { return STRATA_OK; }
strata_status now_cast(void* self, const strata_buffer* src, const strata_buffer*, strata_error*) {
  rec(self)->calls.push_back("precision.cast count " + std::to_string(src->count));
  return STRATA_OK;
}
const strata_precision_ops kNowPrecision = {
    {sizeof(strata_precision_ops), STRATA_ABI_MAJOR, STRATA_ABI_MINOR, STRATA_PLUGIN_PRECISION, 0u},
    fail_create, no_destroy, now_prec_query, now_loss_scale, now_grad_stats, now_update, now_cast,
    nullptr, nullptr};  // ABI 1.6 save_state/load_state: none

struct Host {
  Recorder recorder;
  strata_host_api api{};
  explicit Host(bool lend_peers = true) {
    api.struct_size = sizeof api;
    api.abi_major = STRATA_ABI_MAJOR;
    api.runtime_minor = STRATA_ABI_MINOR;
    api.host_ctx = &recorder;
    api.log = host_log;
    api.alloc_bytes = host_alloc;
    api.free_bytes = host_free;
    if (lend_peers) {
      api.comm = &kNowComm;
      api.comm_self = &recorder;
      api.precision = &kNowPrecision;
      api.precision_self = &recorder;
    }
    api.log_enabled = host_log_enabled;
  }
  strata_plugin_create_args args(const char* config = "{}") const {
    return strata_plugin_create_args{sizeof(strata_plugin_create_args), config, &api};
  }
};

// ---- the built legacy plugins --------------------------------------------------------------

const strata_plugin_descriptor& open_plugin(const std::string& name) {
  const std::string path = std::string(COMPAT_PLUGIN_DIR) + "/lib" + name + ".so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process
  if (handle == nullptr) throw std::runtime_error("dlopen " + path + ": " + dlerror());
  auto entry = reinterpret_cast<strata_plugin_entry_fn>(dlsym(handle, STRATA_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) throw std::runtime_error(path + ": no entry symbol");
  return *entry();
}

// Two shards in today's layout over one parameter, with a model pointer set (the adapter must not
// pass it to a 1.0 plugin, whose stride has no room for it).
struct Shards {
  std::vector<float> master{1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  std::vector<float> grad{0.5f, -1.0f, 2.0f, 0.25f, -0.5f};
  std::vector<uint16_t> model = std::vector<uint16_t>(5);
  std::vector<strata_shard> list;
  Shards() {
    list.push_back(strata_shard{sizeof(strata_shard), 0, 0, 2, master.data(), grad.data(), model.data(), STRATA_BF16});
    list.push_back(strata_shard{sizeof(strata_shard), 1, 2, 3, master.data() + 2, grad.data() + 2,
                                model.data() + 2, STRATA_BF16});
  }
};

void run_sgd(const std::string& plugin, const std::string& built_with) {
  SCOPED_TRACE(plugin);
  const strata_plugin_descriptor& d = open_plugin(plugin);
  ASSERT_TRUE(legacy::is_legacy(d));
  ASSERT_NO_THROW(legacy::check_table(d, STRATA_PLUGIN_OFFLOAD, "test"));
  const strata_offload_ops ops = legacy::adapter_ops_for<strata_offload_ops>(d);
  EXPECT_EQ(ops.header.kind, STRATA_PLUGIN_OFFLOAD);
  EXPECT_EQ(ops.header.struct_size, sizeof(strata_offload_ops));

  Host host;
  const strata_plugin_create_args args = host.args(R"({"optimizer": {"params": {"lr": 0.5}}})");
  void* self = nullptr;
  strata_error err = new_error();
  ASSERT_EQ(legacy::create(d, &args, &self, &err), STRATA_OK) << err.message;
  ASSERT_NE(self, nullptr);
  ASSERT_EQ(host.recorder.log.size(), 1u);
  EXPECT_EQ(host.recorder.log[0], "compat_sgd: built with ABI " + built_with + ", host ABI 1.2, lr 0.5");

  strata_offload_caps caps{};
  caps.struct_size = sizeof caps;
  caps.writes_model_copy = 7;
  ASSERT_EQ(ops.query(self, &caps, &err), STRATA_OK) << err.message;
  EXPECT_STREQ(caps.optimizer, "sgd");
  EXPECT_EQ(caps.writes_model_copy, 0);

  Shards s;
  const std::vector<float> before = s.master;
  ASSERT_EQ(ops.init_state(self, s.list.data(), s.list.size(), &err), STRATA_OK) << err.message;
  const strata_step_args step = [] {
    strata_step_args a{};
    a.struct_size = sizeof a;
    a.step = 1;
    a.grad_scale = 0.5;
    a.lr_factor = 2.0;
    a.lr = a.momentum = a.beta2 = std::nan("");  // ABI 1.6: as configured
    return a;
  }();
  ASSERT_EQ(ops.step(self, s.list.data(), s.list.size(), &step, &err), STRATA_OK) << err.message;
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_FLOAT_EQ(s.master[i], before[i] - 0.5f * s.grad[i]) << "element " << i;
  }
  ops.destroy(self);
}

TEST(LegacyAdapter, Offload10StepsCurrentShardsInItsStride) { run_sgd("strata_compat_sgd_v1_0", "1.0"); }
TEST(LegacyAdapter, Offload12StepsCurrentShards) { run_sgd("strata_compat_sgd_v1_2", "1.2"); }

TEST(LegacyAdapter, TodaysBuildIsNotLegacy) {
  EXPECT_FALSE(legacy::is_legacy(open_plugin("strata_compat_sgd")));
  EXPECT_THROW(legacy::check_table(open_plugin("strata_compat_sgd"), STRATA_PLUGIN_OFFLOAD, "test"),
               strata::rt::Error);
}

TEST(LegacyAdapter, Precision10ReachesTheCurrentCommThroughA12Table) {
  const strata_plugin_descriptor& d = open_plugin("strata_compat_fp32_v1_0");
  ASSERT_NO_THROW(legacy::check_table(d, STRATA_PLUGIN_PRECISION, "test"));
  const strata_precision_ops ops = legacy::adapter_ops_for<strata_precision_ops>(d);
  Host host;
  const strata_plugin_create_args args = host.args();
  void* self = nullptr;
  strata_error err = new_error();
  ASSERT_EQ(legacy::create(d, &args, &self, &err), STRATA_OK) << err.message;
  // The plugin called host->comm->query in the 1.0 layout; the current comm answered.
  EXPECT_EQ(host.recorder.calls, std::vector<std::string>{"comm.query"});
  ASSERT_EQ(host.recorder.log.size(), 1u);
  EXPECT_EQ(host.recorder.log[0], "compat_fp32: built with ABI 1.0, host ABI 1.2, rank 3 of 7");

  double scale = 0;
  ASSERT_EQ(ops.loss_scale(self, &scale, &err), STRATA_OK);
  EXPECT_EQ(scale, 1.0);

  Shards s;
  strata_grad_stats stats{};
  stats.struct_size = sizeof stats;
  ASSERT_EQ(ops.grad_stats(self, s.list.data(), s.list.size(), &stats, &err), STRATA_OK) << err.message;
  double want = 0;
  for (float g : s.grad) want += double(g) * g;
  EXPECT_EQ(stats.nonfinite, 0);
  EXPECT_DOUBLE_EQ(stats.sum_sq, want);
  s.grad[4] = std::numeric_limits<float>::infinity();
  ASSERT_EQ(ops.grad_stats(self, s.list.data(), s.list.size(), &stats, &err), STRATA_OK);
  EXPECT_EQ(stats.nonfinite, 1);

  float src[3] = {1.0f, -2.5f, 3.0f};
  uint16_t dst[3] = {};
  const strata_buffer a{sizeof(strata_buffer), src, 3, STRATA_F32, {STRATA_DEVICE_HOST, 0}};
  const strata_buffer b{sizeof(strata_buffer), dst, 3, STRATA_BF16, {STRATA_DEVICE_HOST, 0}};
  ASSERT_EQ(ops.cast(self, &a, &b, &err), STRATA_OK) << err.message;
  EXPECT_EQ(dst[0], 0x3f80);
  EXPECT_EQ(dst[1], 0xc020);
  ops.destroy(self);
}

TEST(LegacyAdapter, Comm10CollectivesFromArgsStructs) {
  const strata_plugin_descriptor& d = open_plugin("strata_compat_solo_comm_v1_0");
  ASSERT_NO_THROW(legacy::check_table(d, STRATA_PLUGIN_COMM, "test"));
  const strata_comm_ops ops = legacy::adapter_ops_for<strata_comm_ops>(d);
  EXPECT_NE(ops.allgatherv, nullptr);
  EXPECT_NE(ops.reduce_scatter, nullptr);
  EXPECT_EQ(ops.wait, nullptr);  // the plugin has none: absent, as for a current plugin
  EXPECT_EQ(ops.test, nullptr);
  // ABI 1.10's optional members: a 1.0 plugin has neither (NULL: not offered).
  EXPECT_EQ(ops.alltoallv, nullptr);
  EXPECT_EQ(ops.split, nullptr);
  EXPECT_NE(legacy::adapter_ops<strata_comm_ops>().wait, nullptr);

  Host host(false);  // a comm plugin is lent no peers
  const strata_plugin_create_args args = host.args();
  void* self = nullptr;
  strata_error err = new_error();
  ASSERT_EQ(legacy::create(d, &args, &self, &err), STRATA_OK) << err.message;
  EXPECT_EQ(host.recorder.log.at(0), "compat_solo_comm: built with ABI 1.0, host ABI 1.2, one rank");

  strata_comm_caps caps{};
  caps.struct_size = sizeof caps;
  ASSERT_EQ(ops.query(self, &caps, &err), STRATA_OK);
  EXPECT_EQ(caps.size, 1);

  float send[3] = {1, 2, 3}, recv[5] = {};
  const strata_buffer sb{sizeof(strata_buffer), send, 3, STRATA_F32, {STRATA_DEVICE_HOST, 0}};
  const strata_buffer rb{sizeof(strata_buffer), recv, 5, STRATA_F32, {STRATA_DEVICE_HOST, 0}};
  const uint64_t counts[1] = {3}, displs[1] = {2};
  strata_coll_args a{};
  a.struct_size = sizeof a;
  a.send = &sb;
  a.recv = &rb;
  a.recv_counts = counts;
  a.displs = displs;
  ASSERT_EQ(ops.allgatherv(self, &a, nullptr, &err), STRATA_OK) << err.message;
  EXPECT_EQ(std::vector<float>(recv, recv + 5), (std::vector<float>{0, 0, 1, 2, 3}));

  const strata_buffer rb3{sizeof(strata_buffer), recv, 3, STRATA_F32, {STRATA_DEVICE_HOST, 0}};
  a.recv = &rb3;
  a.op = STRATA_AVG;
  ASSERT_EQ(ops.allreduce(self, &a, nullptr, &err), STRATA_OK) << err.message;
  EXPECT_EQ(std::vector<float>(recv, recv + 3), (std::vector<float>{1, 2, 3}));

  a.root = 1;  // a world of one: the plugin refuses root 1, so the root did arrive
  EXPECT_EQ(ops.broadcast(self, &a, nullptr, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(err.message, HasSubstr("root must be 0"));
  a.root = 0;
  EXPECT_EQ(ops.broadcast(self, &a, nullptr, &err), STRATA_OK) << err.message;
  EXPECT_EQ(ops.barrier(self, &a, nullptr, &err), STRATA_OK) << err.message;

  // Through the all-present table, a function the plugin lacks fails with its name.
  EXPECT_EQ(legacy::adapter_ops<strata_comm_ops>().wait(self, nullptr, &err), STRATA_ERR_UNSUPPORTED);
  EXPECT_THAT(err.message, HasSubstr("has no wait"));
  ops.destroy(self);
}

TEST(LegacyAdapter, Comm12AndPrecision12Load) {
  for (const auto& [name, kind] : {std::pair<std::string, int32_t>{"strata_compat_solo_comm_v1_2", STRATA_PLUGIN_COMM},
                                   {"strata_compat_fp32_v1_2", STRATA_PLUGIN_PRECISION}}) {
    SCOPED_TRACE(name);
    const strata_plugin_descriptor& d = open_plugin(name);
    EXPECT_EQ(d.min_runtime_minor, 2u);
    ASSERT_NO_THROW(legacy::check_table(d, kind, "test"));
    Host host(kind != STRATA_PLUGIN_COMM);
    const strata_plugin_create_args args = host.args();
    void* self = nullptr;
    strata_error err = new_error();
    ASSERT_EQ(legacy::create(d, &args, &self, &err), STRATA_OK) << err.message;
    EXPECT_THAT(host.recorder.log.at(0), HasSubstr("built with ABI 1.2, host ABI 1.2"));
    legacy::adapter_ops<strata_offload_ops>().destroy(self);  // destroy is the same for every kind
  }
}

// ---- a legacy sharding plugin written here, in the 1.0/1.1 layout --------------------------

// Written against the frozen header (its names are v1_2::*), as such a plugin was; its shards are
// 1.0's, which are 1.2's cut after `grad`.
struct FakeSharding {
  const v1_2::strata_host_api* host = nullptr;
  std::vector<std::string> calls;
  std::vector<float> master = std::vector<float>(6, 1.0f), grad = std::vector<float>(6, 0.5f);
  std::vector<legacy::Shard1_0> shards;
};

legacy::Shard1_0 fake_shard(uint32_t index, uint64_t offset, uint64_t count, float* master, float* grad) {
  const v1_2::strata_shard fields{legacy::kShardSize1_0, index, offset, count, master, grad, nullptr, 0};
  legacy::Shard1_0 shard;
  std::memcpy(shard.bytes, &fields, sizeof shard.bytes);
  return shard;
}

FakeSharding* fake(void* self) { return static_cast<FakeSharding*>(self); }
FakeSharding* last_fake = nullptr;
std::string last_config;

v1_2::strata_status fake_create(const char* config, const v1_2::strata_host_api* host, void** self,
                                v1_2::strata_error* err) {
  last_config = config;
  if (std::string(config) == R"({"refuse": true})") {
    std::snprintf(err->message, sizeof err->message, "fake sharding: refused");
    return v1_2::STRATA_ERR_INVALID_ARGUMENT;
  }
  last_fake = new FakeSharding;
  last_fake->host = host;
  *self = last_fake;
  return v1_2::STRATA_OK;
}
void fake_destroy(void* self) {
  delete fake(self);
  last_fake = nullptr;
}
v1_2::strata_status fake_query(void*, v1_2::strata_sharding_caps* caps, v1_2::strata_error*) {
  caps->stage = 2;
  return v1_2::STRATA_OK;
}
v1_2::strata_status fake_register(void* self, uint32_t index, const v1_2::strata_param_desc*, v1_2::strata_error*) {
  fake(self)->calls.push_back("register " + std::to_string(index));
  return v1_2::STRATA_OK;
}
v1_2::strata_status fake_ok(void*, v1_2::strata_error*) { return v1_2::STRATA_OK; }
v1_2::strata_status fake_grad_ready(void* self, uint32_t index, int32_t boundary, v1_2::strata_error*) {
  fake(self)->calls.push_back("grad_ready " + std::to_string(index) + " " + std::to_string(boundary));
  return v1_2::STRATA_OK;
}
v1_2::strata_status fake_owned(void* self, const v1_2::strata_shard** shards, size_t* count, v1_2::strata_error*) {
  FakeSharding& f = *fake(self);
  f.shards = {fake_shard(0, 0, 4, f.master.data(), f.grad.data()),
              fake_shard(1, 10, 2, f.master.data() + 4, f.grad.data() + 4)};
  *shards = reinterpret_cast<const v1_2::strata_shard*>(f.shards.data());
  *count = f.shards.size();
  return v1_2::STRATA_OK;
}
// 1.2 semantics: a sharding plugin without model copies rounds masters itself in publish, through
// host->precision; this one also allreduces and asks for grad_stats over its own (1.0) shards.
v1_2::strata_status fake_publish(void* self, v1_2::strata_error* err) {
  using v1_2::strata_buffer;
  FakeSharding& f = *fake(self);
  const v1_2::strata_comm_ops* comm = f.host->comm;
  const v1_2::strata_precision_ops* precision = f.host->precision;
  f.calls.push_back(std::string("lent comm allgatherv ") + (comm->allgatherv == nullptr ? "NULL" : "set"));
  std::vector<uint16_t> half(f.master.size());
  const v1_2::strata_device host{v1_2::STRATA_DEVICE_HOST, 0};
  const strata_buffer src{sizeof(strata_buffer), f.master.data(), f.master.size(), v1_2::STRATA_F32, host};
  const strata_buffer dst{sizeof(strata_buffer), half.data(), half.size(), v1_2::STRATA_F16, host};
  v1_2::strata_status s = precision->cast(f.host->precision_self, &src, &dst, err);
  if (s != v1_2::STRATA_OK) return s;
  std::vector<float> out(f.master.size());
  const strata_buffer recv{sizeof(strata_buffer), out.data(), out.size(), v1_2::STRATA_F32, host};
  s = comm->allreduce(f.host->comm_self, &src, &recv, v1_2::STRATA_MAX, nullptr, err);
  if (s != v1_2::STRATA_OK) return s;
  s = comm->broadcast(f.host->comm_self, &recv, 2, nullptr, err);
  if (s != v1_2::STRATA_OK) return s;
  v1_2::strata_grad_stats stats{};
  stats.struct_size = sizeof stats;
  s = precision->grad_stats(f.host->precision_self, reinterpret_cast<const v1_2::strata_shard*>(f.shards.data()),
                            f.shards.size(), &stats, err);
  if (s != v1_2::STRATA_OK) return s;
  f.calls.push_back("grad_stats sum " + std::to_string(int(stats.sum_sq)));
  // Creating or destroying the lent instance is refused / ignored.
  void* other = nullptr;
  if (comm->create("{}", f.host, &other, err) == v1_2::STRATA_OK) return v1_2::STRATA_ERR_INTERNAL;
  comm->destroy(f.host->comm_self);
  return v1_2::STRATA_OK;
}
v1_2::strata_status fake_define_group(void* self, uint32_t group, const char* name, const uint32_t*, size_t count,
                                      v1_2::strata_error*) {
  fake(self)->calls.push_back("define_group " + std::to_string(group) + " " + name + " " + std::to_string(count));
  return v1_2::STRATA_OK;
}
v1_2::strata_status fake_gather(void* self, uint32_t group, uint32_t flags, v1_2::strata_error*) {
  fake(self)->calls.push_back("gather " + std::to_string(group) + " " + std::to_string(flags));
  return v1_2::STRATA_OK;
}
v1_2::strata_status fake_release(void* self, uint32_t group, v1_2::strata_error*) {
  fake(self)->calls.push_back("release " + std::to_string(group));
  return v1_2::STRATA_OK;
}
v1_2::strata_status fake_view(void*, uint32_t, v1_2::strata_param_view* view, v1_2::strata_error*) {
  view->count = 99;
  return v1_2::STRATA_OK;
}
v1_2::strata_status fake_end(void* self, int32_t boundary, v1_2::strata_error*) {
  fake(self)->calls.push_back("end_micro_step " + std::to_string(boundary));
  return v1_2::STRATA_OK;
}

v1_2::strata_sharding_ops fake_table(size_t size) {
  v1_2::strata_sharding_ops t{};
  t.struct_size = size;
  t.create = fake_create;
  t.destroy = fake_destroy;
  t.query = fake_query;
  t.register_param = fake_register;
  t.finalize = fake_ok;
  t.grad_ready = fake_grad_ready;
  t.finish_reduce = fake_ok;
  t.owned_shards = fake_owned;
  t.publish = fake_publish;
  t.zero_grad = fake_ok;
  if (size >= legacy::kShardingSize1_1) {
    t.define_group = fake_define_group;
    t.gather = fake_gather;
    t.release = fake_release;
    t.param_view = fake_view;
    t.end_micro_step = fake_end;
  }
  return t;
}

strata_plugin_descriptor descriptor_of(const void* table, uint32_t minor, int32_t kind) {
  return strata_plugin_descriptor{sizeof(strata_plugin_descriptor), 1, minor, kind, "fake", "0", "", table};
}

TEST(LegacyAdapter, Sharding10ShardsComeBackInTodaysLayout) {
  const v1_2::strata_sharding_ops table = fake_table(legacy::kShardingSize1_0);
  const strata_plugin_descriptor d = descriptor_of(&table, 0, STRATA_PLUGIN_SHARDING);
  ASSERT_NO_THROW(legacy::check_table(d, STRATA_PLUGIN_SHARDING, "test"));
  const strata_sharding_ops ops = legacy::adapter_ops_for<strata_sharding_ops>(d);
  EXPECT_EQ(ops.define_group, nullptr);
  EXPECT_EQ(ops.gather, nullptr);
  EXPECT_EQ(ops.end_micro_step, nullptr);

  Host host;
  strata_plugin_create_args args = host.args(nullptr);  // NULL config reads as {}
  void* self = nullptr;
  strata_error err = new_error();
  ASSERT_EQ(legacy::create(d, &args, &self, &err), STRATA_OK) << err.message;
  EXPECT_EQ(last_config, "{}");
  FakeSharding& f = *last_fake;
  // The host table it holds: today's cut to 1.2.
  EXPECT_EQ(f.host->abi_minor, 2u);  // today's runtime_minor
  EXPECT_EQ(f.host->struct_size, STRATA_HOST_API_SIZE_1_2);
  EXPECT_EQ(f.host->host_ctx, &host.recorder);
  EXPECT_NE(static_cast<const void*>(f.host->comm), &kNowComm);

  const strata_grad_ready_args ready{sizeof(strata_grad_ready_args), 5, 1};
  ASSERT_EQ(ops.grad_ready(self, &ready, &err), STRATA_OK);
  EXPECT_EQ(f.calls.back(), "grad_ready 5 1");

  const strata_shard* shards = nullptr;
  size_t count = 0;
  ASSERT_EQ(ops.owned_shards(self, &shards, &count, &err), STRATA_OK);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(shards[1].struct_size, sizeof(strata_shard));
  EXPECT_EQ(shards[1].param_index, 1u);
  EXPECT_EQ(shards[1].offset, 10u);
  EXPECT_EQ(shards[1].count, 2u);
  EXPECT_EQ(shards[1].master, f.master.data() + 4);
  EXPECT_EQ(shards[1].grad, f.grad.data() + 4);
  EXPECT_EQ(shards[1].model, nullptr);
  // The array stays valid across further owned_shards calls (the header's promise): the same
  // shards come back in the same array, and the first answer still reads as before.
  const strata_shard* again = nullptr;
  ASSERT_EQ(ops.owned_shards(self, &again, &count, &err), STRATA_OK);
  EXPECT_EQ(again, shards);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(shards[1].offset, 10u);
  EXPECT_EQ(shards[1].master, f.master.data() + 4);

  ASSERT_EQ(ops.publish(self, &err), STRATA_OK) << err.message;
  EXPECT_EQ(host.recorder.calls, (std::vector<std::string>{"precision.cast count 6", "comm.allreduce op 3 count 6",
                                                            "comm.broadcast root 2 recv", "precision.grad_stats"}));
  // The current precision got the plugin's 1.0 shards in today's layout.
  ASSERT_EQ(host.recorder.stats_shards.size(), 2u);
  EXPECT_EQ(host.recorder.stats_shards[1].count, 2u);
  EXPECT_EQ(host.recorder.stats_shards[1].grad, f.grad.data() + 4);
  EXPECT_EQ(host.recorder.stats_shards[1].model, nullptr);
  EXPECT_EQ(f.calls.back(), "grad_stats sum 42");
  EXPECT_THAT(f.calls, ::testing::Contains("lent comm allgatherv NULL"));

  // Group functions it lacks fail by name through the all-present table.
  const strata_group_args g{sizeof(strata_group_args), 0, 0};
  EXPECT_EQ(legacy::adapter_ops<strata_sharding_ops>().gather(self, &g, &err), STRATA_ERR_UNSUPPORTED);
  EXPECT_THAT(err.message, HasSubstr("has no gather"));
  ops.destroy(self);
  EXPECT_EQ(last_fake, nullptr);
}

TEST(LegacyAdapter, Sharding11GroupsForwardArgs) {
  const v1_2::strata_sharding_ops table = fake_table(legacy::kShardingSize1_1);
  const strata_plugin_descriptor d = descriptor_of(&table, 1, STRATA_PLUGIN_SHARDING);
  ASSERT_NO_THROW(legacy::check_table(d, STRATA_PLUGIN_SHARDING, "test"));
  const strata_sharding_ops ops = legacy::adapter_ops_for<strata_sharding_ops>(d);
  ASSERT_NE(ops.gather, nullptr);
  Host host;
  const strata_plugin_create_args args = host.args();
  void* self = nullptr;
  strata_error err = new_error();
  ASSERT_EQ(legacy::create(d, &args, &self, &err), STRATA_OK);
  const uint32_t params[2] = {0, 1};
  ASSERT_EQ(ops.define_group(self, 4, "layer", params, 2, &err), STRATA_OK);
  const strata_group_args g{sizeof(strata_group_args), 4, STRATA_GATHER_FOR_BACKWARD};
  ASSERT_EQ(ops.gather(self, &g, &err), STRATA_OK);
  ASSERT_EQ(ops.release(self, &g, &err), STRATA_OK);
  const strata_micro_step_args m{sizeof(strata_micro_step_args), 1};
  ASSERT_EQ(ops.end_micro_step(self, &m, &err), STRATA_OK);
  strata_param_view view{};
  view.struct_size = sizeof view;
  ASSERT_EQ(ops.param_view(self, 0, &view, &err), STRATA_OK);
  EXPECT_EQ(view.count, 99u);
  EXPECT_EQ(last_fake->calls, (std::vector<std::string>{"define_group 4 layer 2", "gather 4 1", "release 4",
                                                        "end_micro_step 1"}));
  // A NULL args struct is refused, not dereferenced.
  EXPECT_EQ(ops.gather(self, nullptr, &err), STRATA_ERR_INVALID_ARGUMENT);
  ops.destroy(self);
}

TEST(LegacyAdapter, FailedCreatePassesTheMessageAndLeavesNoInstance) {
  const v1_2::strata_sharding_ops table = fake_table(legacy::kShardingSize1_0);
  const strata_plugin_descriptor d = descriptor_of(&table, 0, STRATA_PLUGIN_SHARDING);
  Host host;
  const strata_plugin_create_args args = host.args(R"({"refuse": true})");
  void* self = reinterpret_cast<void*>(1);
  strata_error err = new_error();
  EXPECT_EQ(legacy::create(d, &args, &self, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(self, nullptr);
  EXPECT_STREQ(err.message, "fake sharding: refused");
  EXPECT_EQ(legacy::create(d, nullptr, &self, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(err.message, HasSubstr("args is NULL"));
}

TEST(LegacyAdapter, AdapterCreateMemberRefuses) {
  void* self = reinterpret_cast<void*>(1);
  strata_error err = new_error();
  EXPECT_EQ(legacy::adapter_ops<strata_precision_ops>().create(nullptr, &self, &err), STRATA_ERR_INTERNAL);
  EXPECT_EQ(self, nullptr);
  EXPECT_THAT(err.message, HasSubstr("strata::rt::legacy::create"));
  legacy::adapter_ops<strata_comm_ops>().destroy(nullptr);  // NULL is a no-op
}

std::string check_message(const strata_plugin_descriptor& d, int32_t kind) {
  try {
    legacy::check_table(d, kind, "manifest.json: /sharding: libfake.so");
  } catch (const strata::rt::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_ABI);
    return e.what();
  }
  return "";
}

TEST(LegacyAdapter, CheckTableNamesWhatIsWrong) {
  v1_2::strata_sharding_ops table = fake_table(legacy::kShardingSize1_0 - sizeof(void*));
  strata_plugin_descriptor d = descriptor_of(&table, 0, STRATA_PLUGIN_SHARDING);
  EXPECT_THAT(check_message(d, STRATA_PLUGIN_SHARDING),
              HasSubstr("manifest.json: /sharding: libfake.so: sharding ops table of ABI 1.0"));
  EXPECT_THAT(check_message(d, STRATA_PLUGIN_SHARDING), HasSubstr("is smaller than ABI 1.0's"));

  table = fake_table(legacy::kShardingSize1_0);
  table.finish_reduce = nullptr;
  table.publish = nullptr;
  EXPECT_THAT(check_message(d, STRATA_PLUGIN_SHARDING), HasSubstr("has no finish_reduce and publish (all required)"));

  table = fake_table(legacy::kShardingSize1_1);
  table.param_view = nullptr;
  d.min_runtime_minor = 1;
  EXPECT_THAT(check_message(d, STRATA_PLUGIN_SHARDING),
              HasSubstr("has define_group, gather, release and end_micro_step but no param_view"));
  // A table ending inside the group set: the functions outside it count as absent.
  table = fake_table(legacy::kShardingSize1_1);
  table.struct_size = offsetof(v1_2::strata_sharding_ops, param_view);
  EXPECT_THAT(check_message(d, STRATA_PLUGIN_SHARDING), HasSubstr("but no param_view and end_micro_step"));

  table = fake_table(legacy::kShardingSize1_1);
  EXPECT_THAT(check_message(d, STRATA_PLUGIN_OFFLOAD), HasSubstr("expected offload"));
  d.min_runtime_minor = 3;
  EXPECT_THAT(check_message(d, STRATA_PLUGIN_SHARDING), HasSubstr("is not a 1.0-1.2 plugin"));

  v1_2::strata_comm_ops comm{};
  comm.struct_size = sizeof comm;
  comm.create = fake_create;
  comm.destroy = fake_destroy;
  const strata_plugin_descriptor c = descriptor_of(&comm, 2, STRATA_PLUGIN_COMM);
  EXPECT_THAT(check_message(c, STRATA_PLUGIN_COMM),
              HasSubstr("comm ops table of ABI 1.2 (the layout before strata_ops_header) has no query, "
                        "allreduce, allgather, broadcast and barrier (all required)"));
}

}  // namespace
