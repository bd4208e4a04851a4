// Bad arguments give an error naming the argument, never a crash or a hang. Every case is bad on
// every rank, so no rank enters a collective the others skip.
#include "comm_env.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace strata::test::comm {
namespace {

struct Fixture {
  Bytes a = Bytes(64 * 4), b = Bytes(64 * 4 * 4);  // 64 f32; room for 4 ranks of them
  strata_buffer send = view(a, STRATA_F32);
  strata_buffer recv = view(a, STRATA_F32);
  strata_error err = sdk::make_error();
  strata_request req = reinterpret_cast<strata_request>(0x1);

  Fixture() { recv.data = b.data(); }
  // Runs `call` with both req forms and checks the status and message fragment each time.
  template <class Call>
  void expect(strata_status status, const std::string& mentions, Call&& call) {
    for (bool nonblocking : {false, true}) {
      SCOPED_TRACE(nonblocking ? "non-blocking" : "blocking");
      req = reinterpret_cast<strata_request>(0x1);
      EXPECT_EQ(call(nonblocking ? &req : nullptr), status);
      EXPECT_NE(std::string(err.message).find(mentions), std::string::npos) << err.message;
      if (nonblocking) {
        EXPECT_EQ(req, nullptr) << "a failed call must not hand out a request";
      }
    }
  }
};

TEST(BadArguments, Allreduce) {
  Fixture f;
  void* s = instance();
  auto allreduce = [&](int32_t op) {
    return
        [&, op](strata_request* r) { return abi::allreduce(s, &f.send, &f.recv, op, r, &f.err); };
  };
  f.recv.count = 63;
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "allreduce: recv.count (63) must equal send.count (64)",
           allreduce(STRATA_SUM));
  f.recv.count = 64;
  f.recv.dtype = STRATA_F16;
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "recv.dtype (f16) must equal send.dtype (f32)",
           allreduce(STRATA_SUM));
  f.recv.dtype = STRATA_F32;
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "op (9)", allreduce(9));
  f.send.device = strata_device{STRATA_DEVICE_CUDA, 1};
  f.expect(STRATA_ERR_UNSUPPORTED, "send is on cuda:1", allreduce(STRATA_SUM));
  f.send.device = strata_device{STRATA_DEVICE_HOST, 0};
  f.send.dtype = 42;
  f.recv.dtype = 42;
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "send.dtype (42) is not a strata_dtype",
           allreduce(STRATA_SUM));
  f.send.dtype = f.recv.dtype = STRATA_F32;
  f.send.data = nullptr;
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "send.data is NULL but send.count is 64",
           allreduce(STRATA_SUM));
  f.send.data = f.a.data();
  f.recv.data = f.a.data() + 4;  // overlapping but not the same buffer
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "send and recv overlap", allreduce(STRATA_SUM));
  f.recv.data = f.b.data();
  f.recv.struct_size = 8;
  f.expect(STRATA_ERR_ABI, "recv.struct_size (8)", allreduce(STRATA_SUM));
  f.recv.struct_size = sizeof(strata_buffer);
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "recv is NULL", [&](strata_request* r) {
    return abi::allreduce(s, &f.send, nullptr, STRATA_SUM, r, &f.err);
  });
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "self is NULL", [&](strata_request* r) {
    return abi::allreduce(nullptr, &f.send, &f.recv, STRATA_SUM, r, &f.err);
  });
  // A NULL error record is allowed: only the status comes back.
  EXPECT_EQ(abi::allreduce(s, &f.send, &f.send, 9, nullptr, nullptr), STRATA_ERR_INVALID_ARGUMENT);
}

TEST(BadArguments, OtherCollectives) {
  Fixture f;
  void* s = instance();
  f.recv.count = 64 * world() + 1;
  f.expect(STRATA_ERR_INVALID_ARGUMENT,
           "allgather: recv.count (" + std::to_string(64 * world() + 1) +
               ") must equal send.count * size",
           [&](strata_request* r) { return abi::allgather(s, &f.send, &f.recv, r, &f.err); });
  f.recv.count = 65;
  f.expect(STRATA_ERR_INVALID_ARGUMENT,
           "reduce_scatter: send.count (64) must equal recv.count * size", [&](strata_request* r) {
             return abi::reduce_scatter(s, &f.send, &f.recv, STRATA_SUM, r, &f.err);
           });
  f.expect(STRATA_ERR_INVALID_ARGUMENT,
           "root (" + std::to_string(world()) + ") must be a rank in [0, ",
           [&](strata_request* r) { return abi::broadcast(s, &f.send, world(), r, &f.err); });
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "root (-1)",
           [&](strata_request* r) { return abi::broadcast(s, &f.send, -1, r, &f.err); });
  f.send.device = strata_device{STRATA_DEVICE_CUDA, 0};
  f.expect(STRATA_ERR_UNSUPPORTED, "buf is on cuda:0",
           [&](strata_request* r) { return abi::broadcast(s, &f.send, 0, r, &f.err); });
}

TEST(BadArguments, Allgatherv) {
  Fixture f;
  void* s = instance();
  std::vector<uint64_t> counts(world(), 64), displs(world());
  for (int r = 0; r < world(); ++r) displs[r] = 64 * r;
  f.recv.count = 64 * world();
  auto call = [&](const uint64_t* c, const uint64_t* d) {
    return [&, c, d](strata_request* r) {
      return abi::allgatherv(s, &f.send, &f.recv, c, d, r, &f.err);
    };
  };
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "recv_counts is NULL", call(nullptr, displs.data()));
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "displs is NULL", call(counts.data(), nullptr));
  displs.back() += 1;
  const std::string last = "[" + std::to_string(world() - 1) + "]";
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "displs" + last + " + recv_counts" + last,
           call(counts.data(), displs.data()));
  displs.back() -= 1;
  counts[rank()] = 63;
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "send.count (64) must equal recv_counts[rank] (63)",
           call(counts.data(), displs.data()));
}

// Every collective of the table, called with `args` as given (ABI 1.3).
using Collective = strata_status (*)(void*, const strata_coll_args*, strata_request*,
                                     strata_error*);
struct NamedCollective {
  const char* name;
  Collective fn;
};
std::vector<NamedCollective> collectives() {
  return {{"allreduce", ops().allreduce},       {"allgather", ops().allgather},
          {"allgatherv", ops().allgatherv},     {"reduce_scatter", ops().reduce_scatter},
          {"broadcast", ops().broadcast},       {"barrier", ops().barrier}};
}

TEST(BadArguments, NullArgsStructIsRefusedByEveryCollective) {
  Fixture f;
  for (const NamedCollective& c : collectives()) {
    SCOPED_TRACE(c.name);
    f.expect(STRATA_ERR_INVALID_ARGUMENT, std::string(c.name) + ": args is NULL",
             [&](strata_request* r) { return c.fn(instance(), nullptr, r, &f.err); });
  }
}

// An args struct smaller than ABI 1.3's strata_coll_args (the first to exist) is refused before any
// field past struct_size is read: the fields there are garbage that would otherwise look valid.
TEST(BadArguments, TooSmallArgsStructIsAnAbiErrorInEveryCollective) {
  Fixture f;
  f.recv.data = f.a.data();  // a valid in-place allreduce / broadcast, were the size ignored
  for (size_t size : {size_t{0}, sizeof(size_t), offsetof(strata_coll_args, displs)}) {
    strata_coll_args args = sdk::Comm::args(&f.send, &f.recv);
    args.struct_size = size;
    for (const NamedCollective& c : collectives()) {
      SCOPED_TRACE(std::string(c.name) + " struct_size " + std::to_string(size));
      f.expect(STRATA_ERR_ABI,
               std::string(c.name) + ": args->struct_size " + std::to_string(size) + " is smaller",
               [&](strata_request* r) { return c.fn(instance(), &args, r, &f.err); });
    }
  }
}

// A NULL send (or recv) inside a well-formed args struct is named like any other bad buffer.
TEST(BadArguments, NullBuffersInsideTheArgsStruct) {
  Fixture f;
  void* s = instance();
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "allreduce: send is NULL", [&](strata_request* r) {
    return abi::allreduce(s, nullptr, &f.recv, STRATA_SUM, r, &f.err);
  });
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "allgather: send is NULL",
           [&](strata_request* r) { return abi::allgather(s, nullptr, &f.recv, r, &f.err); });
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "reduce_scatter: recv is NULL", [&](strata_request* r) {
    return abi::reduce_scatter(s, &f.send, nullptr, STRATA_SUM, r, &f.err);
  });
  // broadcast's buffer travels in args.recv; the plugin names it "buf" (in place).
  f.expect(STRATA_ERR_INVALID_ARGUMENT, "broadcast: buf is NULL",
           [&](strata_request* r) { return abi::broadcast(s, nullptr, 0, r, &f.err); });
}

TEST(BadArguments, WaitAndTest) {
  strata_error err = sdk::make_error();
  int32_t done = 0;
  EXPECT_EQ(ops().wait(instance(), nullptr, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("req is NULL"), std::string::npos) << err.message;
  EXPECT_EQ(ops().test(instance(), nullptr, &done, &err), STRATA_ERR_INVALID_ARGUMENT);
  strata_request req = nullptr;
  ASSERT_EQ(abi::barrier(instance(), &req, &err), STRATA_OK) << err.message;
  EXPECT_EQ(ops().test(instance(), req, nullptr, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("done is NULL"), std::string::npos) << err.message;
  EXPECT_EQ(ops().wait(instance(), req, &err), STRATA_OK) << err.message;
}

// Ranks given different comm configs (a key that decides what goes on the wire: here the pieces
// of a large allreduce) all fail create() alike, naming rank 0's and the first other rank's
// config, instead of exchanging messages of different sizes later; the plugin goes on working.
TEST(BadArguments, RanksGivenDifferentConfigsAllFailCreate) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  const char* config = rank() == world() - 1 ? R"({"chunk_bytes": 4096})" : "{}";
  strata_error err = sdk::make_error();
  void* self = nullptr;
  EXPECT_EQ(abi::create(config, &self, &err), STRATA_ERR_INVALID_ARGUMENT) << err.message;
  EXPECT_EQ(self, nullptr);
  const std::string message = err.message;
  const std::string last = std::to_string(world() - 1);
  EXPECT_NE(message.find("ranks were given different configs: rank 0 has {"), std::string::npos)
      << message;
  EXPECT_NE(message.find("chunk_bytes 1048576"), std::string::npos) << message;
  EXPECT_NE(message.find("}, rank " + last + " has {"), std::string::npos) << message;
  EXPECT_NE(message.find("chunk_bytes 4096"), std::string::npos) << message;
  EXPECT_NE(message.find("give every rank the same comm.config"), std::string::npos) << message;
  // The same config on every rank still works afterwards.
  ASSERT_EQ(abi::create(R"({"chunk_bytes": 4096})", &self, &err), STRATA_OK) << err.message;
  Bytes data = rank_input(STRATA_I32, rank(), 5);
  strata_buffer buffer = view(data, STRATA_I32);
  run(Mode::Blocking, self, [&](strata_request* req, strata_error* e) {
    return abi::allreduce(self, &buffer, &buffer, STRATA_SUM, req, e);
  });
  EXPECT_EQ(first_difference(data, expected_reduction(STRATA_I32, STRATA_SUM, world(), 5),
                             STRATA_I32),
            "");
  ops().destroy(self);
}

}  // namespace
}  // namespace strata::test::comm
