#include "zero_test_support.hpp"

#include <cstring>
#include <map>
#include <stdexcept>

namespace strata::zero_test {
namespace {

struct CommState {
  std::unique_ptr<test::PluginLibrary> library;
  std::unique_ptr<test::FakeHost> host;
  void* self = nullptr;
  strata_comm_caps caps{};
};

CommState& comm_state() {
  static CommState state;
  return state;
}

// The log callback receives FakeHost's host_ctx; this finds the RecordingHost around it.
std::map<void*, RecordingHost*>& recorders() {
  static std::map<void*, RecordingHost*> map;
  return map;
}

}  // namespace

void CommEnvironment::SetUp() {
  CommState& s = comm_state();
  s.library = std::make_unique<test::PluginLibrary>(STRATA_TEST_COMM_PLUGIN);
  s.host = std::make_unique<test::FakeHost>();
  strata_error err = sdk::make_error();
  if (s.library->create<strata_comm_ops>("{}", s.host->api(), &s.self, &err) != STRATA_OK) {
    throw std::runtime_error(std::string("comm create: ") + err.message);
  }
  s.caps = sdk::Comm(&ops(), s.self).query();
}

void CommEnvironment::TearDown() {
  CommState& s = comm_state();
  ops().destroy(s.self);
  s.self = nullptr;
}

const strata_comm_ops& CommEnvironment::ops() {
  return comm_state().library->ops<strata_comm_ops>();
}
void* CommEnvironment::self() { return comm_state().self; }
int CommEnvironment::rank() { return comm_state().caps.rank; }
int CommEnvironment::size() { return comm_state().caps.size; }

RecordingHost::RecordingHost() {
  host_.set_comm(&CommEnvironment::ops(), CommEnvironment::self());
  // FakeHost's alloc/free need host_ctx as it is, so logging finds us through a side table.
  host_.api()->log = &RecordingHost::record;
  // The tests read the plugin's info lines too (FakeHost enables warnings and errors only).
  host_.api()->log_enabled = [](void*, int32_t) -> int32_t { return 1; };
  recorders()[host_.api()->host_ctx] = this;
}

RecordingHost::~RecordingHost() { recorders().erase(host_.api()->host_ctx); }

std::vector<LogLine> RecordingHost::lines(int32_t level) const {
  std::vector<LogLine> out;
  for (const LogLine& line : lines_) {
    if (line.level == level) out.push_back(line);
  }
  return out;
}

void RecordingHost::record(void* ctx, int32_t level, const char* message) {
  auto it = recorders().find(ctx);
  if (it != recorders().end()) it->second->lines_.push_back({level, message});
}

const test::PluginLibrary& zero_library() {
  static test::PluginLibrary library(STRATA_TEST_ZERO_PLUGIN);
  return library;
}

const strata_sharding_ops& zero_ops() { return zero_library().ops<strata_sharding_ops>(); }

Zero::Zero(RecordingHost& host, const std::string& config_json) {
  create_status_ = keep(zero_library().create<strata_sharding_ops>(config_json.c_str(),
                                                                     host.api(), &self_, &err_));
}

Zero::~Zero() { zero_ops().destroy(self_); }

strata_status Zero::keep(strata_status status) {
  message_ = status == STRATA_OK ? "" : err_.message;
  return status;
}

strata_status Zero::register_param(uint32_t index, const char* name, void* data, void* grad,
                                   uint64_t count, int32_t dtype) {
  strata_param_desc desc{};
  desc.struct_size = sizeof(desc);
  desc.name = name;
  desc.dtype = dtype;
  desc.device = strata_device{STRATA_DEVICE_HOST, 0};
  desc.count = count;
  desc.data = data;
  desc.grad = grad;
  return keep(zero_ops().register_param(self_, index, &desc, &err_));
}

strata_status Zero::finalize() { return keep(zero_ops().finalize(self_, &err_)); }
strata_status Zero::grad_ready(uint32_t index, bool boundary) {
  strata_grad_ready_args args{};
  args.struct_size = sizeof(args);
  args.param_index = index;
  args.boundary = boundary ? 1 : 0;
  return keep(zero_ops().grad_ready(self_, &args, &err_));
}
strata_status Zero::finish_reduce() { return keep(zero_ops().finish_reduce(self_, &err_)); }
strata_status Zero::zero_grad() { return keep(zero_ops().zero_grad(self_, &err_)); }
strata_status Zero::publish() { return keep(zero_ops().publish(self_, &err_)); }
strata_status Zero::query(strata_sharding_caps* caps) {
  return keep(zero_ops().query(self_, caps, &err_));
}
strata_status Zero::owned_shards(const strata_shard** shards, size_t* count) {
  return keep(zero_ops().owned_shards(self_, shards, count, &err_));
}

strata_status Zero::define_group(uint32_t group, const char* name,
                                 const std::vector<uint32_t>& params) {
  return keep(zero_ops().define_group(self_, group, name, params.data(), params.size(), &err_));
}
strata_status Zero::gather(uint32_t group, bool for_backward) {
  strata_group_args args{};
  args.struct_size = sizeof(args);
  args.group = group;
  args.flags = for_backward ? STRATA_GATHER_FOR_BACKWARD : 0u;
  return keep(zero_ops().gather(self_, &args, &err_));
}
strata_status Zero::release(uint32_t group) {
  strata_group_args args{};
  args.struct_size = sizeof(args);
  args.group = group;
  return keep(zero_ops().release(self_, &args, &err_));
}
strata_status Zero::end_micro_step(bool boundary) {
  strata_micro_step_args args{};
  args.struct_size = sizeof(args);
  args.boundary = boundary ? 1 : 0;
  return keep(zero_ops().end_micro_step(self_, &args, &err_));
}
strata_status Zero::param_view(uint32_t index, strata_param_view* view) {
  view->struct_size = sizeof(*view);
  return keep(zero_ops().param_view(self_, index, view, &err_));
}
float* Zero::data_of(uint32_t index) {
  strata_param_view view{};
  return param_view(index, &view) == STRATA_OK ? static_cast<float*>(view.data) : nullptr;
}
float* Zero::grad_of(uint32_t index) {
  strata_param_view view{};
  return param_view(index, &view) == STRATA_OK ? static_cast<float*>(view.grad) : nullptr;
}

std::vector<double> sum_over_ranks(std::vector<double> values) {
  const strata_buffer buf = sdk::host_buffer(values.data(), values.size(), STRATA_F64);
  sdk::Comm(&CommEnvironment::ops(), CommEnvironment::self()).allreduce(buf, buf, STRATA_SUM);
  return values;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool identical_on_all_ranks(const std::vector<float>& data) {
  std::vector<float> lo(data), hi(data);
  const sdk::Comm comm(&CommEnvironment::ops(), CommEnvironment::self());
  const strata_buffer lo_buf = sdk::host_buffer(lo.data(), lo.size(), STRATA_F32);
  const strata_buffer hi_buf = sdk::host_buffer(hi.data(), hi.size(), STRATA_F32);
  comm.allreduce(lo_buf, lo_buf, STRATA_MIN);
  comm.allreduce(hi_buf, hi_buf, STRATA_MAX);
  const size_t bytes = data.size() * sizeof(float);
  return std::memcmp(lo.data(), data.data(), bytes) == 0 &&
         std::memcmp(hi.data(), data.data(), bytes) == 0;
}

}  // namespace strata::zero_test
