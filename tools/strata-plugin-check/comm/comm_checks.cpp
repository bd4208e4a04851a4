// check_comm: the comm stratum's checks, in the order every rank runs them.
#include "comm_checks.hpp"
#include "plugin_device.hpp"

#include <strata/plugin.hpp>

#include <memory>

namespace strata::plugin_check {
namespace {

using namespace comm;

constexpr int32_t kDtypes[] = {STRATA_F32, STRATA_F16, STRATA_BF16, STRATA_F64,
                               STRATA_I32, STRATA_I64, STRATA_U8};
constexpr int32_t kOps[] = {STRATA_SUM, STRATA_AVG, STRATA_MIN, STRATA_MAX};

struct Collective {
  int32_t id;
  const char* name;
  bool reduces;
  // An optional member a later ABI added: that minor ("1.10") and its caps bit; NULL: since 1.0.
  const char* optional_since;
  const char* bit;
};
constexpr Collective kDataCollectives[] = {
    {STRATA_COLL_ALLREDUCE, "allreduce", true, nullptr, nullptr},
    {STRATA_COLL_REDUCE_SCATTER, "reduce_scatter", true, nullptr, nullptr},
    {STRATA_COLL_ALLGATHER, "allgather", false, nullptr, nullptr},
    {STRATA_COLL_ALLGATHERV, "allgatherv", false, nullptr, nullptr},
    {STRATA_COLL_BROADCAST, "broadcast", false, nullptr, nullptr},
    {STRATA_COLL_ALLTOALLV, "alltoallv", false, "1.10", "STRATA_COLL_ALLTOALLV"}};

Verdict check_data_collective(const Session& s, int32_t collective, int32_t dtype, int32_t op) {
  switch (collective) {
    case STRATA_COLL_ALLREDUCE: return check_allreduce(s, dtype, op);
    case STRATA_COLL_REDUCE_SCATTER: return check_reduce_scatter(s, dtype, op);
    case STRATA_COLL_ALLGATHER: return check_allgather(s, dtype);
    case STRATA_COLL_ALLGATHERV: return check_allgatherv(s, dtype);
    case STRATA_COLL_ALLTOALLV: return check_alltoallv(s, dtype);
    default: return check_broadcast(s, dtype);
  }
}

std::string unclaimed(const std::string& what) { return "the caps do not claim " + what; }

// The skip line of an optional member of a later ABI that the plugin does not offer.
std::string not_offered(const std::string& what, const std::string& since, const std::string& bit) {
  return "not offered (optional since ABI " + since + "): the caps do not claim " + what + " (" +
         bit + ")";
}

// Every claimed data collective in every claimed dtype (and op), with the buffers in s.memory;
// check names start with `prefix` ("device." for device memory).
void check_data_collectives(const Session& s, Recorder& recorder, const std::string& prefix) {
  for (const Collective& c : kDataCollectives) {
    if (!s.claims(c.id)) {
      recorder.record(prefix + c.name,
                      Verdict::skip(c.optional_since == nullptr
                                        ? unclaimed(c.name)
                                        : not_offered(c.name, c.optional_since,
                                                      std::string("collective_mask lacks ") +
                                                          c.bit)));
      continue;
    }
    for (int32_t dtype : kDtypes) {
      if (!s.claims_dtype(dtype)) continue;
      const std::string name = prefix + c.name + "." + dtype_label(dtype);
      if (!c.reduces) {
        recorder.run(name, [&] { return check_data_collective(s, c.id, dtype, 0); });
        continue;
      }
      for (int32_t op : kOps) {
        recorder.run(name + "." + op_label(op),
                     [&] { return check_data_collective(s, c.id, dtype, op); });
      }
    }
  }
}

const char* const kDeviceNotChecked = ": device buffers not checked";

}  // namespace

void check_comm(const Target& target, Recorder& recorder) {
  const strata_comm_ops& ops = target.ops<strata_comm_ops>();
  // Declared before the instance, so that its stream, the instance's host stream, outlives it.
  std::unique_ptr<PluginDevice> device;
  std::unique_ptr<CommInstance> instance;
  Session s{CommFunctions(ops), nullptr, {}, {}};
  // create() and query() run inside the first check, under its watchdog: creating an instance
  // is collective for most plugins (a rank that never arrives hangs the others).
  recorder.run("caps", [&] {
    instance = std::make_unique<CommInstance>(target, target.config_json);
    if (instance->unsupported()) return Verdict::cannot_run(instance->message());
    if (!instance->ok()) return Verdict::fail(instance->refusal());
    s.self = instance->self();
    s.caps.struct_size = sizeof(s.caps);
    strata_error err = sdk::make_error();
    const strata_status queried = ops.query(s.self, &s.caps, &err);
    if (queried != STRATA_OK) {
      s.caps.size = 0;
      return Verdict::fail("query returned " + CallResult{queried, err.message}.text());
    }
    device = std::make_unique<PluginDevice>(s);
    if (device->usable()) {
      instance->host().set_cuda_device(device->memory().device, device->memory().stream);
      // A plugin that moves device memory only gets every buffer there, the protocol checks' too.
      if (!s.claims_memory(STRATA_DEVICE_HOST)) s.memory = device->memory();
    }
    return check_caps(s);
  });
  // Without an instance, a rank and a size no reference can be computed (the caps line says why).
  if (s.self == nullptr || s.size() < 1 || s.rank() < 0 || s.rank() >= s.size() || !device) return;
  // Caps that claim device memory only, on a machine without a device: no memory to hand over.
  if (!s.memory_claimed()) {
    recorder.record("device", Verdict::skip(device->why_not() + ": the caps claim device memory "
                                            "only, so no collective is checked"));
    return;
  }

  for (int32_t dtype : kDtypes) {
    if (!s.claims_dtype(dtype)) {
      recorder.record("dtype." + dtype_label(dtype),
                      Verdict::skip(unclaimed("dtype " + dtype_label(dtype)) +
                                    ": no collective is checked in it"));
    }
  }
  if (s.claims_memory(STRATA_DEVICE_HOST)) {
    check_data_collectives(s, recorder, "");
  } else {
    recorder.record("host", Verdict::skip("the caps claim no host memory (device_mask " +
                                          std::to_string(s.caps.device_mask) +
                                          "): the data collectives are checked in device memory"));
  }
  // The same checks with the buffers in the plugin's device memory, where it claims some and this
  // machine has a device; else one line saying why not (never a pass). The ranks of a one-host
  // job see the same machine and take the same branch; hosts that differ (a device on one only)
  // show as checks run on some ranks only, which the merge fails (job_results).
  if (device->usable()) {
    Session on_device = s;
    on_device.memory = device->memory();
    check_data_collectives(on_device, recorder, "device.");
  } else {
    recorder.record("device", Verdict::skip(device->why_not() + kDeviceNotChecked));
  }
  if (s.claims(STRATA_COLL_BARRIER)) {
    recorder.run("barrier", [&] { return check_barrier(s); });
  } else {
    recorder.record("barrier", Verdict::skip(unclaimed("barrier")));
  }
  if (s.claims_split()) {
    recorder.run("split", [&] { return check_split(s); });
  } else {
    recorder.record("split", Verdict::skip(not_offered(
                                 "split", "1.10", "features lacks STRATA_COMM_FEATURE_SPLIT")));
  }
  recorder.run("nonblocking.ordering", [&] { return check_nonblocking_ordering(s); });
  recorder.run("errors.bad_arguments", [&] { return check_bad_arguments(s); });

  // Last: ranks that disagree may leave the transport unusable.
  if (s.size() < 2) {
    recorder.record("errors.mismatched_counts", Verdict::skip("needs two ranks or more"));
  } else {
    recorder.run("errors.mismatched_counts", [&] { return check_mismatched_counts(s, instance); });
  }
}

}  // namespace strata::plugin_check
