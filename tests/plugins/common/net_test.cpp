// strata_common_net (plugins/common/net): the TCP socket (strata_common/tcp_socket.hpp) and the
// job-secret proofs (strata_common/job_secret.hpp) on their own, over loopback and socketpair(): the gloo store and
// the NCCL unique-id exchange reach them only through their protocols.
#include <gtest/gtest.h>
#include <strata_common/job_secret.hpp>
#include <strata_common/tcp_socket.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

namespace strata::common::net {
namespace {

using namespace std::chrono_literals;

std::pair<Socket, Socket> connected_pair() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error("socketpair");
  }
  return {Socket(fds[0]), Socket(fds[1])};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SocketError& e) {
    return e.what();
  }
  return "(no SocketError)";
}

uint16_t port_of(const Socket& listener) {
  sockaddr_in a{};
  socklen_t length = sizeof a;
  getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&a), &length);
  return ntohs(a.sin_port);
}

std::string hex(const Mac& mac) {
  std::string out;
  char digits[3];
  for (unsigned char byte : mac) {
    std::snprintf(digits, sizeof digits, "%02x", byte);
    out += digits;
  }
  return out;
}

TEST(SdkTcp, U32IsLittleEndianAndReadBackAtAnOffset) {
  EXPECT_EQ(u32(0x04030201u), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(read_u32("xx" + u32(0xdeadbeefu), 2), 0xdeadbeefu);
  EXPECT_THROW(read_u32(std::string(3, '\0')), std::out_of_range);
}

TEST(SdkTcp, FramesRoundTripAndOversizedOnesAreRefused) {
  // Named sockets, not a structured binding: the lambdas below capture them (C++20 for a binding;
  // clang accepts it from 16 only).
  auto [first, second] = connected_pair();
  Socket a = std::move(first), b = std::move(second);
  const auto deadline = Clock::now() + 5s;
  a.write_frame("hello", deadline);
  a.write_frame(std::string(), deadline);
  EXPECT_EQ(b.read_frame(deadline), "hello");
  EXPECT_EQ(b.read_frame(deadline), "");
  a.write_frame(std::string(100, 'x'), deadline);
  EXPECT_EQ(error_of([&] { b.read_frame(deadline, 99); }), "frame of 100 bytes is too large");
}

TEST(SdkTcp, AReadEndsAtItsDeadlineOrWhenThePeerCloses) {
  auto [first, second] = connected_pair();
  Socket a = std::move(first), b = std::move(second);
  const auto begin = Clock::now();
  EXPECT_EQ(error_of([&] { b.read_exact(1, Clock::now() + 100ms); }), "timed out receiving");
  EXPECT_LT(Clock::now() - begin, 5s);
  a = Socket();
  EXPECT_EQ(error_of([&] { b.read_exact(1, Clock::now() + 5s); }), "connection closed");
}

TEST(SdkTcp, ListenConnectAndAcceptOverLoopback) {
  const Socket listener = listen_on("127.0.0.1", 0);
  const uint16_t port = port_of(listener);
  EXPECT_EQ(listener.accept_until(Clock::now() + 50ms).fd(), -1);  // nobody came
  const Socket client = connect_to("127.0.0.1", port, Clock::now() + 5s);
  const Socket server = listener.accept_until(Clock::now() + 5s);
  ASSERT_GE(server.fd(), 0);
  client.write_all("ping", Clock::now() + 5s);
  EXPECT_EQ(server.read_exact(4, Clock::now() + 5s), "ping");
  EXPECT_EQ(peer_name(server.fd()).rfind("127.0.0.1:", 0), 0u) << peer_name(server.fd());
}

TEST(SdkTcp, APortInUseIsReportedWithItsErrno) {
  const Socket first = listen_on("127.0.0.1", 0);
  try {
    listen_on("127.0.0.1", port_of(first));
    FAIL() << "a second listener on the same port";
  } catch (const SocketError& e) {
    EXPECT_EQ(e.error_number, EADDRINUSE) << e.what();
  }
}

TEST(SdkTcp, ConnectingToAClosedPortGivesUpAtTheDeadline) {
  uint16_t port = 0;
  {
    const Socket probe = listen_on("127.0.0.1", 0);
    port = port_of(probe);
  }
  const auto begin = Clock::now();
  const std::string error = error_of([&] { connect_to("127.0.0.1", port, Clock::now() + 300ms); });
  EXPECT_EQ(error, "Connection refused");
  EXPECT_LT(Clock::now() - begin, 5s);
}

TEST(SdkTcp, ResolvesDottedAddressesAndRefusesNonsense) {
  EXPECT_EQ(resolve_ipv4("127.0.0.1"), "127.0.0.1");
  EXPECT_NE(error_of([] { resolve_ipv4("no-such-host.invalid"); }), "(no SocketError)");
}

// Checked against Python: hmac.new(b"key", b"client\0The quick brown fox", hashlib.sha256).
TEST(SdkJobSecret, MacIsHmacSha256OfLabelNulMessage) {
  const std::string key = "key";
  EXPECT_EQ(hex(job_mac("test", key, "client", "The quick brown fox")),
            "d757a3d3ae0eecd12e71d0e43b50dc27eb8d371d689be8e441e7b0f29625df2b");
  const std::array<unsigned char, 3> same_key{'k', 'e', 'y'};
  EXPECT_TRUE(same_mac(job_mac("test", same_key, "client", "The quick brown fox"),
                       job_mac("test", key, "client", "The quick brown fox")));
}

TEST(SdkJobSecret, LabelsSeparatePurposes) {
  const std::string key(32, 's');
  EXPECT_FALSE(same_mac(job_mac("test", key, "client", "m"), job_mac("test", key, "server", "m")));
  EXPECT_FALSE(same_mac(job_mac("test", key, "ab", ""), job_mac("test", key, "a", "b")));
}

TEST(SdkJobSecret, ReceivedMacsOfTheWrongLengthNeverMatch) {
  const Mac mac = job_mac("test", std::string("k"), "client", "m");
  EXPECT_TRUE(same_mac(bytes(mac), mac));
  EXPECT_FALSE(same_mac(bytes(mac).substr(1), mac));
  EXPECT_FALSE(same_mac(bytes(mac) + "x", mac));
}

TEST(SdkJobSecret, NoncesDiffer) {
  EXPECT_NE(bytes(random_nonce("test")), bytes(random_nonce("test")));
  EXPECT_EQ(bytes(random_nonce("test")).size(), 16u);
}

}  // namespace
}  // namespace strata::common::net
