// strata_join (API 1.12) with real processes: a linear model y = W x + b trained with SGD, each
// rank with its own number of micro-batches (--micro 10,7,3: rank r runs the r-th count). A rank
// out of data calls join(); the others go on. Every micro-batch, each rank
//   - gathers each layer for forward and backward (groups: stage 3 partitions them), writes its
//     gradient, calls grad_ready and releases (so stages 2-3 reduce at release, 0-1 at the step);
//   - averages its loss over the ranks with a host allreduce (f32 AVG) and checks the result is
//     the mean over the ranks still running, computed here from the same data (every rank knows
//     every rank's micro-batches and holds the same parameters);
//   - after the step, checks a host allreduce MAX of the rank number is the highest rank still
//     running (the call opens the next micro-batch, so a rank joins with it made).
// join() must return the micro-batches this rank took part in: max count - own count, and the one
// its own MAX opened.
//
// --accumulation G (the manifest's gradient_accumulation_steps): each micro-batch's gradient is
// written divided by G, as a host that scales its loss by 1/G; ranks then join in the middle of an
// accumulation window. --set-lr: before each window's last micro-batch the running ranks set the
// learning rate 0.2 / (1 + window) (a joined rank's host no longer does).
//
// --single runs the reference on one rank with no accumulation: window w's gradient is the mean
// over the micro-batches the running ranks have in window w, computed by the host. Every rank
// writes its final parameters to --out.rank<R>, one value per line, for join_test.py to compare.
#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kIn = 7, kOut = 3, kBatch = 4;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float uniform(uint64_t key) {  // in [-1, 1)
  return static_cast<float>(double(splitmix64(key) >> 11) * 0x1.0p-52 - 1.0);
}

// Micro-batch k of rank r: kBatch samples (x, y), y from a fixed "true" linear map plus noise.
struct MicroBatch {
  float x[kBatch][kIn];
  float y[kBatch][kOut];
};

MicroBatch micro_batch(int rank, int k) {
  MicroBatch mb{};
  const uint64_t base = splitmix64((uint64_t(rank) << 32) | uint64_t(k));
  for (int s = 0; s < kBatch; ++s) {
    for (int i = 0; i < kIn; ++i) mb.x[s][i] = uniform(base + uint64_t(s * 64 + i));
    for (int o = 0; o < kOut; ++o) {
      float t = 0.3f * float(o) - 0.1f;
      for (int i = 0; i < kIn; ++i) t += uniform(1000 + uint64_t(o * kIn + i)) * mb.x[s][i];
      mb.y[s][o] = t + 0.05f * uniform(base + 5000 + uint64_t(s * 8 + o));
    }
  }
  return mb;
}

// Loss 0.5 * mean over samples of |W x + b - y|^2; adds its gradient (scaled by `weight`) into
// gw, gb when they are not null.
double loss_and_grad(const float* w, const float* b, const MicroBatch& mb, float* gw, float* gb,
                     float weight) {
  double loss = 0.0;
  for (int s = 0; s < kBatch; ++s) {
    for (int o = 0; o < kOut; ++o) {
      float e = b[o] - mb.y[s][o];
      for (int i = 0; i < kIn; ++i) e += w[o * kIn + i] * mb.x[s][i];
      loss += 0.5 * double(e) * double(e) / kBatch;
      if (gw == nullptr) continue;
      gb[o] += weight * e / kBatch;
      for (int i = 0; i < kIn; ++i) gw[o * kIn + i] += weight * e * mb.x[s][i] / kBatch;
    }
  }
  return loss;
}

std::vector<int> parse_counts(const std::string& text) {
  std::vector<int> counts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) counts.push_back(std::stoi(part));
  return counts;
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

struct Options {
  std::vector<int> counts;
  int accumulation = 1;
  bool single = false, set_lr = false;
  std::string out;
};

// Window w's micro-batches of the running ranks, by (rank, k).
std::vector<std::pair<int, int>> window_batches(const std::vector<int>& counts, int w, int g) {
  std::vector<std::pair<int, int>> batches;
  for (int k = w * g; k < (w + 1) * g; ++k)
    for (int r = 0; r < int(counts.size()); ++r)
      if (counts[size_t(r)] > k) batches.emplace_back(r, k);
  return batches;
}

int run(const std::string& manifest, const std::string& overrides, const Options& o) {
  const std::vector<int>& counts = o.counts;
  const bool single = o.single;
  const int g = o.accumulation;
  strata::Runtime rt(manifest, overrides);
  const int rank = rt.world().rank, world = rt.world().size;
  if (!single && world != int(counts.size())) {
    fail("--micro names " + std::to_string(counts.size()) + " ranks, the world has " +
         std::to_string(world));
  }
  std::vector<float> w0(kOut * kIn), b0(kOut);
  for (int i = 0; i < kOut * kIn; ++i) w0[i] = 0.1f * uniform(9000 + uint64_t(i));
  for (int o = 0; o < kOut; ++o) b0[o] = 0.0f;
  const uint32_t iw = rt.register_param("w", STRATA_F32, w0.data(), nullptr, w0.size());
  const uint32_t ib = rt.register_param("b", STRATA_F32, b0.data(), nullptr, b0.size());
  const uint32_t gw = rt.define_group("w", {iw});
  const uint32_t gb = rt.define_group("b", {ib});
  rt.finalize();

  int steps = 0;
  for (int c : counts) steps = std::max(steps, c);
  if (steps % g != 0) fail("the longest rank's micro-batches must fill whole windows");
  const int mine = single ? steps / g : counts[size_t(rank)];
  std::vector<float> w(w0.size()), b(b0.size());
  for (int k = 0; k < mine; ++k) {
    std::vector<int> running;  // the ranks whose k-th micro-batch exists (multi-rank runs)
    for (int r = 0; r < int(counts.size()); ++r)
      if (counts[size_t(r)] > k) running.push_back(r);
    const int window = single ? k : k / g;
    // Forward: the parameters, as every rank holds them.
    {
      strata::GatheredGroup a(rt, gw), c(rt, gb);
      const strata::ParamView vw = rt.view(iw), vb = rt.view(ib);
      std::copy_n(static_cast<const float*>(vw.data), w.size(), w.begin());
      std::copy_n(static_cast<const float*>(vb.data), b.size(), b.begin());
    }
    // Backward, last layer first: this rank's micro-batch, or the mean over the running ranks'.
    std::vector<float> dw(w.size(), 0.0f), db(b.size(), 0.0f);
    double expected_mean = 0.0;
    if (single) {
      const auto batches = window_batches(counts, k, o.accumulation);
      for (const auto& [r, kk] : batches)
        loss_and_grad(w.data(), b.data(), micro_batch(r, kk), dw.data(), db.data(),
                      1.0f / float(batches.size()));
    } else {
      for (int r : running) {
        const MicroBatch mb = micro_batch(r, k);
        expected_mean += loss_and_grad(w.data(), b.data(), mb, r == rank ? dw.data() : nullptr,
                                       db.data(), 1.0f / float(g)) / double(running.size());
      }
    }
    struct Layer {
      uint32_t group, index;
      const std::vector<float>* grad;
    };
    for (const Layer& layer : {Layer{gb, ib, &db}, Layer{gw, iw, &dw}}) {
      strata::GatheredGroup g(rt, layer.group, STRATA_GATHER_FOR_BACKWARD);
      float* into = static_cast<float*>(rt.view(layer.index).grad);
      for (size_t i = 0; i < layer.grad->size(); ++i) into[i] += (*layer.grad)[i];
      rt.grad_ready(layer.index);
    }
    if (!single) {
      const float my_loss = float(loss_and_grad(w.data(), b.data(), micro_batch(rank, k), nullptr,
                                                nullptr, 0.0f));
      const float mean = rt.allreduce(my_loss, STRATA_AVG);
      if (std::fabs(mean - expected_mean) > 1e-5 * (1.0 + std::fabs(expected_mean))) {
        fail("micro-batch " + std::to_string(k) + ": the averaged loss is " +
             std::to_string(mean) + ", the mean over the " + std::to_string(running.size()) +
             " running ranks is " + std::to_string(expected_mean));
      }
    }
    const bool window_ends = single || (k + 1) % g == 0;
    if (o.set_lr && window_ends) rt.set_lr(0.2 / (1.0 + window));
    rt.step();
    // After the step, so it opens the next micro-batch (a rank whose data ends here joins with
    // it made): MAX over the ranks that have not joined.
    const int32_t highest = single ? 0 : rt.allreduce(int32_t(rank), STRATA_MAX);
    if (!single && highest != running.back()) {
      fail("after micro-batch " + std::to_string(k) + ": MAX of the ranks is " +
           std::to_string(highest) + ", the highest running rank is " +
           std::to_string(running.back()));
    }
  }
  if (!single) {
    const uint64_t mirrored = rt.join();
    // The others' remaining micro-batches, and the one this rank's own MAX after its last step
    // opened (the last rank's is empty: nobody steps a micro-batch of its own in it).
    if (mirrored != uint64_t(steps - mine + 1)) {
      fail("join mirrored " + std::to_string(mirrored) + " micro-batches, expected " +
           std::to_string(steps - mine + 1));
    }
    // After join every rank may use host collectives again.
    if (rt.allreduce(int32_t(1)) != world) fail("an allreduce after join did not count every rank");
  }
  strata::GatheredGroup a(rt, gw), c(rt, gb);
  const std::string path = o.out + ".rank" + std::to_string(rank);
  std::ofstream file(path);
  char line[64];
  for (uint32_t index : {iw, ib}) {
    const strata::ParamView v = rt.view(index);
    for (uint64_t i = 0; i < v.count; ++i) {
      std::snprintf(line, sizeof line, "%.9g\n", double(static_cast<const float*>(v.data)[i]));
      file << line;
    }
  }
  if (!file) fail("cannot write " + path);
  std::printf("join_host: rank %d wrote %s after %d micro-batches\n", rank, path.c_str(), steps);
  return 0;
}

}  // namespace

// join_host MANIFEST OVERRIDES --micro N0,N1,... --out FILE [--accumulation G] [--set-lr] [--single]
int main(int argc, char** argv) {
  std::string manifest, overrides = "{}", micro;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--micro" && i + 1 < argc) micro = argv[++i];
    else if (a == "--out" && i + 1 < argc) o.out = argv[++i];
    else if (a == "--accumulation" && i + 1 < argc) o.accumulation = std::atoi(argv[++i]);
    else if (a == "--single") o.single = true;
    else if (a == "--set-lr") o.set_lr = true;
    else if (manifest.empty()) manifest = a;
    else overrides = a;
  }
  if (manifest.empty() || micro.empty() || o.out.empty() || o.accumulation < 1) {
    std::fprintf(stderr, "usage: join_host MANIFEST [OVERRIDES] --micro N0,N1,... --out FILE "
                         "[--accumulation G] [--set-lr] [--single]\n");
    return 2;
  }
  try {
    o.counts = parse_counts(micro);
    return run(manifest, overrides, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "join_host: error: %s\n", e.what());
    return 1;
  }
}
