// grad_stats.*: the overflow check's pass over fp32 gradient shards. Any +inf, -inf or NaN, in
// any shard at any position (first element, block and thread boundaries of a large shard, last
// element), sets nonfinite; finite gradients leave it 0 and give the sum of squares in fp64.
//
// The sum of squares is compared with an fp64 reference accumulated in long double, relative
// tolerance 1e-12: every square of a float is exact in fp64, so only the order of the additions
// may differ, and for n positive terms that costs at most about sqrt(n) * 2^-53 in practice
// (~1e-13 at a million elements), far below 1e-12; a float accumulation or a lost shard is far
// above it.
#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "precision/precision_checks.hpp"

namespace strata::plugin_check {
namespace {

constexpr double kSumTolerance = 1e-12;

// Gradient shards and the master buffers beside them (a plugin may insist on both).
class Shards {
 public:
  explicit Shards(const std::vector<size_t>& counts) {
    for (size_t n : counts) {
      grads_.emplace_back(n);
      masters_.emplace_back(n, 0.0f);
    }
  }
  std::vector<float>& grad(size_t s) { return grads_[s]; }
  size_t size() const { return grads_.size(); }
  std::vector<strata_shard> list() {
    std::vector<strata_shard> list;
    for (size_t s = 0; s < grads_.size(); ++s) {
      strata_shard shard{};
      shard.struct_size = sizeof(shard);
      shard.param_index = static_cast<uint32_t>(s);
      shard.offset = 3 * s;  // ranges of parameters, not necessarily their start
      shard.count = grads_[s].size();
      shard.master = masters_[s].data();
      shard.grad = grads_[s].data();
      list.push_back(shard);
    }
    return list;
  }
  double reference_sum_sq() const {
    long double sum = 0;
    for (const auto& g : grads_) {
      for (float x : g) sum += static_cast<long double>(x) * static_cast<long double>(x);
    }
    return static_cast<double>(sum);
  }

 private:
  std::vector<std::vector<float>> grads_, masters_;
};

strata_grad_stats stats_of(const Instance<strata_precision_ops>& amp, Shards& shards) {
  const std::vector<strata_shard> list = shards.list();
  strata_grad_stats stats{};
  stats.struct_size = sizeof(stats);
  stats.nonfinite = -1;
  stats.sum_sq = std::nan("");
  strata_error err = sdk::make_error();
  expect_ok(amp.ops().grad_stats(amp.self(), list.data(), list.size(), &stats, &err), err,
            "grad_stats()");
  return stats;
}

constexpr size_t kLarge = (size_t{1} << 20) + 3;

// Random finite values across many magnitudes, both signs.
Shards random_shards() {
  Shards shards({7, 1000, 0, kLarge, 1});
  std::mt19937 rng(123);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 30);
  for (size_t s = 0; s < shards.size(); ++s) {
    for (float& x : shards.grad(s)) x = std::ldexp(normal(rng), exponent(rng));
  }
  return shards;
}

Verdict finite(const Instance<strata_precision_ops>& amp, Shards& shards) {
  const strata_grad_stats stats = stats_of(amp, shards);
  const double want = shards.reference_sum_sq();
  if (stats.nonfinite != 0) {
    return Verdict::fail("finite gradients: expected nonfinite 0, got " +
                         std::to_string(stats.nonfinite));
  }
  const double error = std::abs(stats.sum_sq - want);
  if (!(error <= kSumTolerance * std::abs(want))) {
    return Verdict::fail("sum_sq: expected " + number_text(want) + ", got " +
                         number_text(stats.sum_sq) + " (relative error " +
                         std::to_string(error / std::abs(want)) + ", tolerance 1e-12)");
  }
  return Verdict::pass();
}

// `bad` planted at each position in turn (and removed again): nonfinite must be 1 every time.
Verdict detects(const Instance<strata_precision_ops>& amp, float bad, const char* what) {
  Shards shards({7, 1000, kLarge, 1});
  for (size_t s = 0; s < shards.size(); ++s) {
    for (size_t i = 0; i < shards.grad(s).size(); ++i) {
      shards.grad(s)[i] = static_cast<float>(i % 13) - 6.0f;
    }
  }
  struct Where {
    size_t shard, element;
    const char* name;
  };
  const Where places[] = {{0, 0, "first element of the first shard"},
                          {1, 0, "first element of the second shard"},
                          {1, 999, "last element of the second shard"},
                          {2, kLarge / 2, "middle of a 1 Mi-element shard"},
                          {2, size_t{1} << 16, "element 65536 of a 1 Mi-element shard"},
                          {2, kLarge - 1, "last element of a 1 Mi-element shard"},
                          {3, 0, "the last shard (1 element)"}};
  for (const Where& w : places) {
    float& slot = shards.grad(w.shard)[w.element];
    const float kept = slot;
    slot = bad;
    const strata_grad_stats stats = stats_of(amp, shards);
    slot = kept;
    if (stats.nonfinite != 1) {
      return Verdict::fail(std::string(what) + " at " + w.name + " (shard " +
                           std::to_string(w.shard) + ", element " + std::to_string(w.element) +
                           "): expected nonfinite 1, got " + std::to_string(stats.nonfinite));
    }
  }
  return Verdict::pass();
}

}  // namespace

void check_grad_stats(const Target& target, Recorder& recorder) {
  std::string why;
  const auto amp = any_instance(target, why);
  const char* const names[] = {"grad_stats.finite",
                               "grad_stats.finite.extremes",
                               "grad_stats.empty",
                               "grad_stats.nonfinite.pos_inf",
                               "grad_stats.nonfinite.neg_inf",
                               "grad_stats.nonfinite.nan",
                               "grad_stats.nonfinite.negative_nan"};
  if (amp == nullptr) {
    for (const char* name : names) recorder.record(name, Verdict::skip(why));
    return;
  }
  recorder.run(names[0], [&] {
    Shards shards = random_shards();
    return finite(*amp, shards);
  });
  recorder.run(names[1], [&] {  // squares beyond float's range, and below it: fp64 holds both
    Shards shards({4});
    shards.grad(0) = {FLT_MAX, -FLT_MAX, FLT_TRUE_MIN, -1.5f};
    return finite(*amp, shards);
  });
  recorder.run(names[2], [&] {
    Shards shards({0});
    const strata_grad_stats stats = stats_of(*amp, shards);
    if (stats.nonfinite != 0 || stats.sum_sq != 0.0) {
      return Verdict::fail("one empty shard: expected nonfinite 0 and sum_sq 0, got " +
                           std::to_string(stats.nonfinite) + " and " + number_text(stats.sum_sq));
    }
    return Verdict::pass();
  });
  recorder.run(names[3], [&] { return detects(*amp, INFINITY, "+inf"); });
  recorder.run(names[4], [&] { return detects(*amp, -INFINITY, "-inf"); });
  recorder.run(names[5], [&] { return detects(*amp, std::nanf(""), "NaN"); });
  recorder.run(names[6],
               [&] { return detects(*amp, -std::nanf("0x1234"), "-NaN with a payload"); });
}

}  // namespace strata::plugin_check
