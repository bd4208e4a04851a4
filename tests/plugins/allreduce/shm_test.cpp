// The shared-memory path (plugins/common/shm) through a comm plugin that has it (allreduce-mpi
// under mpirun, allreduce-gloo under strata-run), in real jobs of 1 to 4 ranks. mpi_instance() is
// the plugin's own transport only ({"shm": false}: MPI, or Gloo's TCP pairs).
//
// Proves that every collective through shared memory (shm_instance(): one-page rounds, so that
// small counts already take many rounds and both halves of the double buffers; the default
// instance for the largest count) gives
//  (a) bitwise the result of a fixed rank-order fold computed here on random non-integer data
//      (sums folded rank 0..n-1, halves widened to f32 and rounded once, AVG dividing the folded
//      value, integers wrapping), and
//  (b) bitwise the transport-only instance's result on small-integer data (exact in every dtype,
//      so the transport's own order does not matter; one form per count, see
//      compare_with_transport),
// blocking and non-blocking, in place and not; that collectives of mixed kinds in flight at once
// complete correctly in any order; that ranks which disagree all get STRATA_ERR_MISMATCH and the
// instance stays usable; what create() logs; and that rank 0 removes stale segment names (a dead
// creator's) but not live ones. The large-message tests (ShmLarge.*) run only with
// STRATA_COMM_SLOW=1 (their own ctest entry, labelled "slow").
#include "comm_backend.hpp"
#include "f16_reference.hpp"
#include "comm_env.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <thread>
#include <type_traits>

namespace strata::test::comm {
namespace {

inline constexpr uint64_t kShmCounts[] = {0, 1, 7, 3001, 65537};

// The shared-memory instance for `count` elements: shm_instance()'s one-page rounds up to a few
// thousand elements (several rounds already); for 65537, the default instance (64 KiB rounds, so
// still several), which keeps the number of rounds, and the test's time on a loaded machine,
// modest.
void* shm_for(uint64_t count) { return count > 4096 ? instance() : shm_instance(); }

// ---- Random inputs every rank can compute for every rank ----------------------------------------

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Elements [first, first + count) of `rank`'s random input for one test case (`salt` tells cases
// apart): a hash of (salt, rank, index), so any slice can be made alone. Floats are non-integers
// in [-8, 8) (halves: rounded to the dtype); integers are spread widely (u8 over its whole range,
// so that sums wrap).
Bytes random_input(int32_t dtype, int rank, uint64_t count, uint64_t salt, uint64_t first = 0) {
  Bytes bytes(count * sdk::dtype_size(dtype));
  const uint64_t seed = splitmix64(salt * 31 + static_cast<uint64_t>(rank));
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = splitmix64(seed ^ (first + i) * 0x2545f4914f6cdd1dull);
    const float real = static_cast<float>(h >> 40) * 0x1p-20f - 8.0f;  // a multiple of 2^-20
    switch (dtype) {
      case STRATA_F32: case STRATA_F16: case STRATA_BF16: put_float(dtype, bytes, i, real); break;
      case STRATA_F64: {
        const double d = real + static_cast<double>(h & 0xffffff) * 0x1p-50;  // uses f64's bits
        std::memcpy(bytes.data() + i * 8, &d, 8);
        break;
      }
      case STRATA_U8: bytes[i] = static_cast<unsigned char>(h); break;
      default: put_integer(dtype, bytes, i, static_cast<int64_t>(h % 2'000'001) - 1'000'000); break;
    }
  }
  return bytes;
}

std::vector<Bytes> random_inputs(int32_t dtype, uint64_t count, uint64_t salt) {
  std::vector<Bytes> inputs;
  for (int r = 0; r < world(); ++r) inputs.push_back(random_input(dtype, r, count, salt));
  return inputs;
}

// ---- The fixed-order reference ------------------------------------------------------------------

float widen_f16(uint16_t bits) { return f16_to_float(bits); }
float widen_bf16(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

template <class S, class A>
void fold(int32_t dtype, int32_t op, const std::vector<Bytes>& inputs, uint64_t first,
          uint64_t count, Bytes& out) {
  auto load = [&](const Bytes& b, uint64_t i) -> A {
    S s;
    std::memcpy(&s, b.data() + i * sizeof(S), sizeof(S));
    if (dtype == STRATA_F16) return static_cast<A>(widen_f16(static_cast<uint16_t>(s)));
    if (dtype == STRATA_BF16) return static_cast<A>(widen_bf16(static_cast<uint16_t>(s)));
    return static_cast<A>(s);
  };
  const int n = static_cast<int>(inputs.size());
  for (uint64_t i = 0; i < count; ++i) {
    A acc = load(inputs[0], first + i);
    for (int r = 1; r < n; ++r) {
      const A v = load(inputs[r], first + i);
      if (op == STRATA_MIN) {
        acc = v < acc ? v : acc;
      } else if (op == STRATA_MAX) {
        acc = v > acc ? v : acc;
      } else if constexpr (std::is_floating_point_v<A>) {
        acc = acc + v;
      } else {  // integers wrap
        using U = std::make_unsigned_t<A>;
        acc = static_cast<A>(static_cast<U>(static_cast<U>(acc) + static_cast<U>(v)));
      }
    }
    if (op == STRATA_AVG && n > 1) acc = static_cast<A>(acc / static_cast<A>(n));
    if (dtype == STRATA_F16 || dtype == STRATA_BF16) {
      put_float(dtype, out, i, static_cast<float>(acc));  // rounded once, to nearest even
    } else {
      const S s = static_cast<S>(acc);
      std::memcpy(out.data() + i * sizeof(S), &s, sizeof(S));
    }
  }
}

// Elements [first, first + count) of the reduction of every rank's input, rank 0 first.
Bytes reference_reduction(int32_t dtype, int32_t op, const std::vector<Bytes>& inputs,
                          uint64_t first, uint64_t count) {
  Bytes out(count * sdk::dtype_size(dtype));
  switch (dtype) {
    case STRATA_F32: fold<float, float>(dtype, op, inputs, first, count, out); break;
    case STRATA_F64: fold<double, double>(dtype, op, inputs, first, count, out); break;
    case STRATA_F16: case STRATA_BF16: fold<uint16_t, float>(dtype, op, inputs, first, count, out); break;
    case STRATA_I32: fold<int32_t, int32_t>(dtype, op, inputs, first, count, out); break;
    case STRATA_I64: fold<int64_t, int64_t>(dtype, op, inputs, first, count, out); break;
    case STRATA_U8: fold<uint8_t, uint8_t>(dtype, op, inputs, first, count, out); break;
  }
  return out;
}

std::string shm_label(int32_t dtype, uint64_t count, Mode mode, bool in_place) {
  return std::string(sdk::dtype_name(dtype)) + " count " + std::to_string(count) + " " +
         mode_name(mode) + (in_place ? " in place" : "");
}

uint64_t salt_of(int kind, int32_t dtype, int32_t op, uint64_t count, bool in_place) {
  return ((static_cast<uint64_t>(kind) * 16 + static_cast<uint64_t>(dtype)) * 8 +
          static_cast<uint64_t>(op)) * 1'000'003 + count * 2 + (in_place ? 1 : 0);
}

// ---- One collective on one instance -------------------------------------------------------------

// allreduce of `input` (this rank's) on `self`: the result.
Bytes allreduce_on(void* self, Mode mode, const Bytes& input, int32_t dtype, int32_t op,
                   bool in_place) {
  Bytes send = input, recv(input.size(), 0xa5);
  strata_buffer vs = view(send, dtype), vr = view(recv, dtype);
  run(mode, self, [&](strata_request* req, strata_error* err) {
    return abi::allreduce(self, &vs, in_place ? &vs : &vr, op, req, err);
  });
  return in_place ? send : recv;
}

// reduce_scatter of `input` (world * count elements) on `self`: this rank's block.
Bytes reduce_scatter_on(void* self, Mode mode, const Bytes& input, int32_t dtype, int32_t op,
                        uint64_t count, bool in_place) {
  const size_t block = count * sdk::dtype_size(dtype);
  Bytes send = input, recv(block, 0xa5);
  strata_buffer vs = view(send, dtype), vr = view(recv, dtype);
  strata_buffer in_place_recv = sdk::host_buffer(send.empty() ? nullptr : send.data(), count, dtype);
  run(mode, self, [&](strata_request* req, strata_error* err) {
    return abi::reduce_scatter(self, &vs, in_place ? &in_place_recv : &vr, op, req, err);
  });
  return in_place ? Bytes(send.begin(), send.begin() + static_cast<std::ptrdiff_t>(block)) : recv;
}

// allgatherv of `input` into a receive buffer of `total` elements filled with 0x5a outside the
// blocks; in place: the input is first put at displs[rank] and sent from there.
Bytes allgatherv_on(void* self, Mode mode, const Bytes& input, int32_t dtype,
                    const std::vector<uint64_t>& counts, const std::vector<uint64_t>& displs,
                    uint64_t total, bool in_place) {
  const size_t es = sdk::dtype_size(dtype);
  Bytes send = input, recv(total * es, 0x5a);
  const uint64_t at = displs[static_cast<size_t>(rank())];
  if (in_place) std::copy(input.begin(), input.end(), recv.begin() + static_cast<std::ptrdiff_t>(at * es));
  strata_buffer vs = view(send, dtype), vr = view(recv, dtype);
  strata_buffer from_recv =
      sdk::host_buffer(recv.empty() ? nullptr : recv.data() + at * es, input.size() / es, dtype);
  run(mode, self, [&](strata_request* req, strata_error* err) {
    return abi::allgatherv(self, in_place ? &from_recv : &vs, &vr, counts.data(), displs.data(),
                           req, err);
  });
  return recv;
}

// (b) runs for one of the four (mode, in place) forms per count, a different one for each count
// in turn, so that every form is compared with the transport without quadrupling its collectives.
bool compare_with_transport(uint64_t count, Mode mode, bool in_place) {
  size_t index = 0;
  while (index < std::size(kShmCounts) && kShmCounts[index] != count) ++index;
  const size_t form = (mode == Mode::Nonblocking ? 2 : 0) + (in_place ? 1 : 0);
  return form == index % 4;
}

// ---- (a) and (b) for every reduction ------------------------------------------------------------

TEST(Shm, AllreduceMatchesTheRankOrderReferenceAndTheTransportPath) {
  for (int32_t dtype : kAllDtypes) {
    for (int32_t op : kAllOps) {
      for (uint64_t count : kShmCounts) {
        for (Mode mode : kModes) {
          for (bool in_place : {false, true}) {
            SCOPED_TRACE("allreduce " + op_label(op) + " " + shm_label(dtype, count, mode, in_place));
            const auto inputs = random_inputs(dtype, count, salt_of(1, dtype, op, count, in_place));
            const Bytes got = allreduce_on(shm_for(count), mode, inputs[rank()], dtype, op, in_place);
            EXPECT_EQ(first_difference(got, reference_reduction(dtype, op, inputs, 0, count), dtype), "");

            if (!compare_with_transport(count, mode, in_place)) continue;
            const Bytes small = rank_input(dtype, rank(), count);
            const Bytes over_shm = allreduce_on(shm_for(count), mode, small, dtype, op, in_place);
            const Bytes over_transport =
                allreduce_on(mpi_instance(), mode, small, dtype, op, in_place);
            EXPECT_EQ(first_difference(over_shm, over_transport, dtype), "");
          }
        }
      }
    }
  }
}

TEST(Shm, ReduceScatterMatchesTheRankOrderReferenceAndTheTransportPath) {
  const auto n = static_cast<uint64_t>(world());
  for (int32_t dtype : kAllDtypes) {
    for (int32_t op : kAllOps) {
      for (uint64_t count : kShmCounts) {
        for (Mode mode : kModes) {
          for (bool in_place : {false, true}) {
            SCOPED_TRACE("reduce_scatter " + op_label(op) + " " + shm_label(dtype, count, mode, in_place));
            const uint64_t salt = salt_of(2, dtype, op, count, in_place);
            // Every rank's slice of this rank's block, and this rank's whole input.
            std::vector<Bytes> blocks;
            for (int r = 0; r < world(); ++r) {
              blocks.push_back(random_input(dtype, r, count, salt, count * rank()));
            }
            const Bytes got = reduce_scatter_on(shm_for(count), mode,
                                                random_input(dtype, rank(), count * n, salt), dtype,
                                                op, count, in_place);
            EXPECT_EQ(first_difference(got, reference_reduction(dtype, op, blocks, 0, count), dtype),
                      "");

            if (!compare_with_transport(count, mode, in_place)) continue;
            const Bytes small = rank_input(dtype, rank(), count * n);
            const Bytes over_shm =
                reduce_scatter_on(shm_for(count), mode, small, dtype, op, count, in_place);
            const Bytes over_transport =
                reduce_scatter_on(mpi_instance(), mode, small, dtype, op, count, in_place);
            EXPECT_EQ(first_difference(over_shm, over_transport, dtype), "");
          }
        }
      }
    }
  }
}

// Floats' MIN and MAX keep the first NaN in rank order, bits unchanged (each rank puts a NaN
// with its own payload at element 1; rank 0's must come out).
TEST(Shm, MinAndMaxKeepTheFirstNanInRankOrder) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  for (int32_t op : {STRATA_MIN, STRATA_MAX}) {
    Bytes data(3 * 4);
    const float values[3] = {1.5f, std::bit_cast<float>(0x7fc00001u + static_cast<uint32_t>(rank())),
                             -2.0f * static_cast<float>(rank())};
    std::memcpy(data.data(), values, sizeof values);
    const Bytes got = allreduce_on(shm_instance(), Mode::Blocking, data, STRATA_F32, op, false);
    uint32_t nan_bits = 0;
    std::memcpy(&nan_bits, got.data() + 4, 4);
    EXPECT_EQ(nan_bits, 0x7fc00001u) << op_label(op);
  }
}

// ---- Data movement -------------------------------------------------------------------------------

TEST(Shm, AllgatherMatchesEveryRanksInputAndTheTransportPath) {
  for (int32_t dtype : kAllDtypes) {
    for (uint64_t count : kShmCounts) {
      for (Mode mode : kModes) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE("allgather " + shm_label(dtype, count, mode, in_place));
          const auto inputs = random_inputs(dtype, count, salt_of(3, dtype, 0, count, in_place));
          Bytes expected;
          for (const Bytes& in : inputs) expected.insert(expected.end(), in.begin(), in.end());
          for (void* self : {shm_for(count), mpi_instance()}) {
            Bytes send = inputs[rank()], recv(expected.size(), 0xa5);
            if (in_place) {
              std::copy(send.begin(), send.end(),
                        recv.begin() + static_cast<std::ptrdiff_t>(send.size() * rank()));
            }
            strata_buffer vs = view(send, dtype), vr = view(recv, dtype);
            strata_buffer from_recv = sdk::host_buffer(
                recv.empty() ? nullptr : recv.data() + send.size() * rank(), count, dtype);
            run(mode, self, [&](strata_request* req, strata_error* err) {
              return abi::allgather(self, in_place ? &from_recv : &vs, &vr, req, err);
            });
            EXPECT_EQ(first_difference(recv, expected, dtype), "")
                << (self == mpi_instance() ? "transport-only instance" : "shm instance");
          }
        }
      }
    }
  }
}

// Uneven counts, zeros included, blocks in reverse rank order with a one-element gap before each:
// the gaps keep their bytes.
TEST(Shm, AllgathervWithUnevenCountsMatchesEveryRanksInputAndTheTransportPath) {
  for (int32_t dtype : kAllDtypes) {
    const size_t es = sdk::dtype_size(dtype);
    for (uint64_t count : kShmCounts) {
      const uint64_t pattern[4] = {count, 0, count / 2 + 3, 2 * count + 1};
      std::vector<uint64_t> counts, displs(static_cast<size_t>(world()));
      for (int r = 0; r < world(); ++r) counts.push_back(pattern[r % 4]);
      uint64_t total = 0;
      for (int r = world() - 1; r >= 0; --r) {
        displs[r] = total + 1;
        total += counts[r] + 1;
      }
      for (Mode mode : kModes) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE("allgatherv " + shm_label(dtype, count, mode, in_place));
          std::vector<Bytes> inputs;
          for (int r = 0; r < world(); ++r) {
            inputs.push_back(random_input(dtype, r, counts[r], salt_of(4, dtype, 0, count, in_place)));
          }
          Bytes expected(total * es, 0x5a);
          for (int r = 0; r < world(); ++r) {
            std::copy(inputs[r].begin(), inputs[r].end(),
                      expected.begin() + static_cast<std::ptrdiff_t>(displs[r] * es));
          }
          for (void* self : {shm_for(count), mpi_instance()}) {
            const Bytes got =
                allgatherv_on(self, mode, inputs[rank()], dtype, counts, displs, total, in_place);
            EXPECT_EQ(first_difference(got, expected, dtype), "")
                << (self == mpi_instance() ? "transport-only instance" : "shm instance");
          }
        }
      }
    }
  }
}

TEST(Shm, BroadcastFromEveryRootMatchesTheRootsDataAndTheTransportPath) {
  for (int32_t dtype : kAllDtypes) {
    for (uint64_t count : kShmCounts) {
      for (int root = 0; root < world(); ++root) {
        for (Mode mode : kModes) {
          SCOPED_TRACE("broadcast from " + std::to_string(root) + " " + shm_label(dtype, count, mode, false));
          const uint64_t salt = salt_of(5, dtype, root, count, false);
          const Bytes expected = random_input(dtype, root, count, salt);
          for (void* self : {shm_for(count), mpi_instance()}) {
            Bytes data = random_input(dtype, rank(), count, salt);
            strata_buffer buffer = view(data, dtype);
            run(mode, self, [&](strata_request* req, strata_error* err) {
              return abi::broadcast(self, &buffer, root, req, err);
            });
            EXPECT_EQ(first_difference(data, expected, dtype), "")
                << (self == mpi_instance() ? "transport-only instance" : "shm instance");
          }
        }
      }
    }
  }
}

// A barrier holds every rank until the last arrives: rank 0 enters it 150 ms after the others,
// and no rank may leave before that moment. The times are std::chrono::steady_clock, which on
// Linux is CLOCK_MONOTONIC, one clock for every process of this host, so each rank's exit is
// compared with rank 0's entry itself. (Comparing it with the rank's own start instead counted
// how late that rank had left the previous barrier: under load a rank that noticed it 12 ms after
// rank 0 measured 138 ms and failed, although the barrier had held it.)
TEST(Shm, BarrierWaitsForTheLastRank) {
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    run(mode, shm_instance(), [&](strata_request* req, strata_error* err) {
      return abi::barrier(shm_instance(), req, err);
    });
    if (rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(150));
    const int64_t entered = now_ns();
    run(mode, shm_instance(), [&](strata_request* req, strata_error* err) {
      return abi::barrier(shm_instance(), req, err);
    });
    const int64_t left = now_ns();
    Bytes last_entry(sizeof entered);
    std::memcpy(last_entry.data(), &entered, sizeof entered);
    strata_buffer buffer = view(last_entry, STRATA_I64);
    run(Mode::Blocking, shm_instance(), [&](strata_request* req, strata_error* err) {
      return abi::broadcast(shm_instance(), &buffer, 0, req, err);
    });
    int64_t rank0_entered = 0;
    std::memcpy(&rank0_entered, last_entry.data(), sizeof rank0_entered);
    EXPECT_GE(left, rank0_entered) << "left the barrier " << (rank0_entered - left) / 1000
                                   << " us before rank 0 entered it";
  }
}

// ---- Many in flight ------------------------------------------------------------------------------

// 30 collectives of every kind and dtype in flight at once on the progress thread, waited in
// reverse order: each completes with its own correct result.
TEST(Shm, ManyCollectivesOfMixedKindsInFlightCompleteInReverseOrder) {
  constexpr int kRequests = 30;
  constexpr uint64_t kCountsInFlight[] = {1, 7, 3001, 1000, 0, 5000};
  struct Job {
    int32_t dtype;
    Bytes send, recv, expected;
    std::vector<uint64_t> counts, displs;
    strata_buffer vs, vr;
    strata_request req = nullptr;
  };
  std::vector<Job> jobs(kRequests);
  strata_error err = sdk::make_error();
  void* self = shm_instance();
  for (int i = 0; i < kRequests; ++i) {
    Job& job = jobs[i];
    job.dtype = kAllDtypes[i % 7];
    const size_t es = sdk::dtype_size(job.dtype);
    const uint64_t count = kCountsInFlight[i % 6];
    const int32_t op = kAllOps[(i / 5) % 4];
    const uint64_t salt = 900'000 + static_cast<uint64_t>(i);
    strata_status status = STRATA_OK;
    switch (i % 5) {
      case 0: {
        const auto inputs = random_inputs(job.dtype, count, salt);
        job.send = inputs[rank()];
        job.recv.resize(job.send.size());
        job.expected = reference_reduction(job.dtype, op, inputs, 0, count);
        job.vs = view(job.send, job.dtype);
        job.vr = view(job.recv, job.dtype);
        status = abi::allreduce(self, &job.vs, &job.vr, op, &job.req, &err);
        break;
      }
      case 1: {
        std::vector<Bytes> blocks;
        for (int r = 0; r < world(); ++r) {
          blocks.push_back(random_input(job.dtype, r, count, salt, count * rank()));
        }
        job.send = random_input(job.dtype, rank(), count * world(), salt);
        job.recv.resize(count * es);
        job.expected = reference_reduction(job.dtype, op, blocks, 0, count);
        job.vs = view(job.send, job.dtype);
        job.vr = view(job.recv, job.dtype);
        status = abi::reduce_scatter(self, &job.vs, &job.vr, op, &job.req, &err);
        break;
      }
      case 2: {
        uint64_t total = 0;
        for (int r = 0; r < world(); ++r) {
          job.counts.push_back(r % 2 ? 0 : count + static_cast<uint64_t>(r));
          job.displs.push_back(total);
          total += job.counts.back();
        }
        for (int r = 0; r < world(); ++r) {
          const Bytes in = random_input(job.dtype, r, job.counts[r], salt);
          job.expected.insert(job.expected.end(), in.begin(), in.end());
          if (r == rank()) job.send = in;
        }
        job.recv.resize(total * es);
        job.vs = view(job.send, job.dtype);
        job.vr = view(job.recv, job.dtype);
        strata_coll_args args = sdk::Comm::args(&job.vs, &job.vr);
        args.recv_counts = job.counts.data();
        args.displs = job.displs.data();
        status = ops().allgatherv(self, &args, &job.req, &err);
        break;
      }
      case 3: {
        const int root = i % world();
        job.recv = random_input(job.dtype, rank(), count, salt);
        job.expected = random_input(job.dtype, root, count, salt);
        job.vr = view(job.recv, job.dtype);
        status = abi::broadcast(self, &job.vr, root, &job.req, &err);
        break;
      }
      case 4: status = abi::barrier(self, &job.req, &err); break;
    }
    ASSERT_EQ(status, STRATA_OK) << "request " << i << ": " << err.message;
  }
  for (int i = kRequests - 1; i >= 0; --i) {
    EXPECT_EQ(ops().wait(self, jobs[i].req, &err), STRATA_OK) << "request " << i << ": " << err.message;
  }
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(first_difference(jobs[i].recv, jobs[i].expected, jobs[i].dtype), "")
        << "request " << i << " (kind " << i % 5 << ", " << sdk::dtype_name(jobs[i].dtype) << ")";
  }
}

// ---- Ranks that disagree -------------------------------------------------------------------------

void expect_mismatch(strata_status status, const strata_error& err) {
  EXPECT_EQ(status, STRATA_ERR_MISMATCH) << err.message;
  EXPECT_NE(std::string(err.message).find("the ranks disagree"), std::string::npos) << err.message;
}

// Rank r calls allreduce with 10 + r elements (then broadcast from root r): every rank fails with
// STRATA_ERR_MISMATCH, and the next, agreeing, allreduce works.
TEST(Shm, RanksThatDisagreeAllFailAndTheInstanceStaysUsable) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  void* self = shm_instance();
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    strata_error err = sdk::make_error();
    Bytes data = rank_input(STRATA_F32, rank(), 10 + static_cast<uint64_t>(rank()));
    strata_buffer buffer = view(data, STRATA_F32);
    Bytes bytes = rank_input(STRATA_U8, rank(), 100);
    strata_buffer bytes_buffer = view(bytes, STRATA_U8);
    if (mode == Mode::Blocking) {
      expect_mismatch(abi::allreduce(self, &buffer, &buffer, STRATA_SUM, nullptr, &err), err);
      expect_mismatch(abi::broadcast(self, &bytes_buffer, rank(), nullptr, &err), err);
    } else {
      strata_request req = nullptr;
      ASSERT_EQ(abi::allreduce(self, &buffer, &buffer, STRATA_SUM, &req, &err), STRATA_OK);
      expect_mismatch(ops().wait(self, req, &err), err);
      ASSERT_EQ(abi::broadcast(self, &bytes_buffer, rank(), &req, &err), STRATA_OK);
      expect_mismatch(ops().wait(self, req, &err), err);
    }
    Bytes agreed = rank_input(STRATA_F32, rank(), 3001);
    strata_buffer agreed_buffer = view(agreed, STRATA_F32);
    run(mode, self, [&](strata_request* req, strata_error* e) {
      return abi::allreduce(self, &agreed_buffer, &agreed_buffer, STRATA_SUM, req, e);
    });
    EXPECT_EQ(first_difference(agreed, expected_reduction(STRATA_F32, STRATA_SUM, world(), 3001),
                               STRATA_F32),
              "");
  }
}

// ---- create() --------------------------------------------------------------------------------------

// The line create() logs about the shared-memory path, for a fresh instance of `config`.
std::string shm_summary_of_create(const char* config) {
  const size_t mark = log_mark();
  strata_error err = sdk::make_error();
  void* self = nullptr;
  EXPECT_EQ(abi::create(config, &self, &err), STRATA_OK) << err.message;
  ops().destroy(self);
  for (const std::string& line : log_since(mark)) {
    if (line.find(backend().create_line) != std::string::npos) return line;
  }
  return "(no create line logged)";
}

TEST(Shm, CreateLogsWhetherTheSharedMemoryPathIsOn) {
  const std::string by_default = shm_summary_of_create("{}");
  if (world() >= 2) {
    EXPECT_NE(by_default.find("shm on ("), std::string::npos) << by_default;
    EXPECT_TRUE(uses_shm(instance()));
    EXPECT_TRUE(uses_shm(shm_instance()));
  } else {
    EXPECT_NE(by_default.find("shm off (one rank)"), std::string::npos) << by_default;
  }
  const std::string off = shm_summary_of_create(R"({"shm": false})");
  EXPECT_NE(off.find("shm off (comm.config)"), std::string::npos) << off;
  EXPECT_FALSE(uses_shm(mpi_instance()));
}

// Rank 0's create() removes a segment name whose creator (the pid in the name) no longer runs,
// and keeps one whose creator does (this process).
TEST(Shm, CreateRemovesStaleSegmentNamesOnly) {
  if (world() < 2) GTEST_SKIP() << "shared memory is off at one rank";
  const std::string prefix = "strata-shm-" + std::to_string(getuid()) + "-";
  pid_t dead = 4194000;
  while (kill(dead, 0) == 0 || errno == EPERM) ++dead;  // a pid that runs nothing
  const std::string stale = "/" + prefix + std::to_string(dead) + "-0";
  const std::string live = "/" + prefix + std::to_string(getpid()) + "-999999";
  if (rank() == 0) {
    for (const std::string& name : {stale, live}) {
      const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
      ASSERT_GE(fd, 0) << name << ": " << std::strerror(errno);
      close(fd);
    }
  }
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(abi::create("{}", &self, &err), STRATA_OK) << err.message;
  ops().destroy(self);
  if (rank() == 0) {
    struct stat st {};
    EXPECT_NE(stat(("/dev/shm" + stale).c_str(), &st), 0) << stale << " is still there";
    EXPECT_EQ(stat(("/dev/shm" + live).c_str(), &st), 0) << live << " was removed";
    shm_unlink(live.c_str());
    shm_unlink(stale.c_str());
  }
}

// ---- Large messages (STRATA_COMM_SLOW=1) ---------------------------------------------------------

bool slow_tests_enabled() {
  const char* slow = std::getenv("STRATA_COMM_SLOW");
  return slow != nullptr && std::string(slow) == "1";
}

// An allreduce SUM of `count` integer-valued elements in place through the default instance (shm)
// and the transport-only instance: bitwise the same.
template <class Fill>
void large_allreduce_matches_transport(int32_t dtype, uint64_t count, Fill fill) {
  Bytes over_shm(count * sdk::dtype_size(dtype));
  fill(over_shm);
  Bytes over_transport = over_shm;
  strata_buffer a = view(over_shm, dtype), b = view(over_transport, dtype);
  run(Mode::Blocking, instance(), [&](strata_request* req, strata_error* err) {
    return abi::allreduce(instance(), &a, &a, STRATA_SUM, req, err);
  });
  run(Mode::Blocking, mpi_instance(), [&](strata_request* req, strata_error* err) {
    return abi::allreduce(mpi_instance(), &b, &b, STRATA_SUM, req, err);
  });
  EXPECT_TRUE(over_shm == over_transport) << first_difference(over_shm, over_transport, dtype);
}

TEST(ShmLarge, AllreduceF32Sum256MiBPlus4Bytes) {
  if (!slow_tests_enabled()) GTEST_SKIP() << "set STRATA_COMM_SLOW=1 (ctest -L slow)";
  const uint64_t count = (uint64_t{256} << 20) / 4 + 1;
  large_allreduce_matches_transport(STRATA_F32, count, [](Bytes& bytes) {
    auto* values = reinterpret_cast<float*>(bytes.data());
    for (uint64_t i = 0; i < bytes.size() / 4; ++i) {
      values[i] = static_cast<float>((static_cast<uint64_t>(rank()) * 7 + i * 3) % 2001) - 1000.0f;
    }
  });
}

TEST(ShmLarge, AllreduceBf16Sum64MiBPlus2Bytes) {
  if (!slow_tests_enabled()) GTEST_SKIP() << "set STRATA_COMM_SLOW=1 (ctest -L slow)";
  const uint64_t count = (uint64_t{64} << 20) / 2 + 1;
  large_allreduce_matches_transport(STRATA_BF16, count, [](Bytes& bytes) {
    auto* values = reinterpret_cast<uint16_t*>(bytes.data());
    for (uint64_t i = 0; i < bytes.size() / 2; ++i) {  // -50..50: exact in bf16, sums too
      const float v = static_cast<float>((static_cast<uint64_t>(rank()) * 7 + i * 3) % 101) - 50.0f;
      values[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
    }
  });
}

}  // namespace
}  // namespace strata::test::comm
