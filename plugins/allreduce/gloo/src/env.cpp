#include "env.hpp"

#include <strata/plugin.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string_view>

namespace strata::allreduce_gloo {
namespace {

[[noreturn]] void bad(const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "gloo: " + message);
}

const char* get(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// A non-negative decimal below `limit`, or fails naming the variable.
long number(const char* name, const char* text, long limit, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < 0 || value >= limit) {
    bad(std::string(name) + "='" + text + "': expected " + what);
  }
  return value;
}

// The first of `names` that is set; fails naming all of them when none is.
std::pair<const char*, const char*> first_set(std::initializer_list<const char*> names,
                                             const char* what) {
  std::string list;
  for (const char* n : names) {
    if (const char* v = get(n)) return {n, v};
    list += (list.empty() ? "" : " or ") + std::string(n);
  }
  bad(list + " is not set; expected " + what + " (strata-run, mpirun and srun set it)");
}

// from_srun: the rank came from SLURM_PROCID, a task srun started with no launcher around it.
Secret parse_secret(bool from_srun) {
  const char* text = get("STRATA_JOB_SECRET");
  const std::string expected =
      "expected 64 hex digits (32 bytes), made per job by strata-run, which sets it";
  if (text == nullptr && from_srun) {
    // Ranks started by srun directly: nobody made a secret, and the ranks cannot agree on one
    // without a channel that already proves who they are.
    bad("STRATA_JOB_SECRET is not set; ranks started by srun need one for the job: export "
        "STRATA_JOB_SECRET=$(openssl rand -hex 32) before srun (srun passes it on), or start the ranks "
        "with strata-run");
  }
  if (text == nullptr) bad("STRATA_JOB_SECRET is not set; " + expected);
  const std::string s(text);
  Secret secret{};
  if (s.size() != 64) bad("STRATA_JOB_SECRET has " + std::to_string(s.size()) + " characters; " + expected);
  for (size_t i = 0; i < 32; ++i) {
    unsigned value = 0;
    for (size_t j = 0; j < 2; ++j) {
      const char c = s[2 * i + j];
      const int digit = c >= '0' && c <= '9' ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
      if (digit < 0) bad("STRATA_JOB_SECRET is not hexadecimal; " + expected);
      value = value * 16 + static_cast<unsigned>(digit);
    }
    secret[i] = static_cast<unsigned char>(value);
  }
  return secret;
}

// `variable`: where the name came from, for the message.
std::string resolve_ipv4(const std::string& host, const std::string& variable) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    bad(variable + "='" + host + "': expected an IPv4 address or a resolvable name (" +
        gai_strerror(rc) + ")");
  }
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  freeaddrinfo(found);
  return text;
}

// The local address the kernel would use to reach `ip`: a connected UDP socket sends nothing.
std::string route_to(const std::string& ip, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &peer.sin_addr);
  sockaddr_in local{};
  socklen_t length = sizeof local;
  const bool ok = fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  if (fd >= 0) close(fd);
  if (!ok) bad("no route from this host to MASTER_ADDR " + ip + "; set STRATA_NETWORK_INTERFACE");
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  return text;
}

// STRATA_NETWORK_INTERFACE: an interface name or an IPv4 CIDR; this host's IPv4 address on it.
std::string interface_address(const std::string& spec) {
  uint32_t net = 0, mask = 0;
  const size_t slash = spec.find('/');
  const bool cidr = slash != std::string::npos;
  if (cidr) {
    in_addr a{};
    const std::string bits_text = spec.substr(slash + 1);
    char* end = nullptr;
    const long bits = std::strtol(bits_text.c_str(), &end, 10);
    if (inet_pton(AF_INET, spec.substr(0, slash).c_str(), &a) != 1 || bits_text.empty() ||
        *end != '\0' || bits < 0 || bits > 32) {
      bad("STRATA_NETWORK_INTERFACE='" + spec +
          "': expected an interface name (eth0) or an IPv4 CIDR (10.218.0.0/24)");
    }
    mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
    net = ntohl(a.s_addr) & mask;
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) bad("STRATA_NETWORK_INTERFACE: cannot list this host's interfaces");
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, freeifaddrs);
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const in_addr address = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
    const bool match = cidr ? (ntohl(address.s_addr) & mask) == net : spec == i->ifa_name;
    if (!match) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &address, text, sizeof text);
    return text;
  }
  bad("STRATA_NETWORK_INTERFACE='" + spec + "': this host has no IPv4 address " +
      (cidr ? "in that subnet" : "on that interface"));
}

// The first node of a Slurm hostlist, where srun starts task 0: "gpu[07-09,12]x,cpu1" -> "gpu07x".
std::string first_slurm_node(const std::string& list, const char* variable) {
  const size_t open = list.find('[');
  const size_t comma = list.find(',');
  if (open == std::string::npos || (comma != std::string::npos && comma < open)) return list.substr(0, comma);
  const size_t close = list.find(']', open);
  if (close == std::string::npos || close == open + 1) {
    bad(std::string(variable) + "='" + list + "': expected a Slurm hostlist such as node[01-04,07]");
  }
  const std::string inside = list.substr(open + 1, close - open - 1);
  const std::string rest = list.substr(close + 1);
  const std::string tail = rest.empty() || rest[0] == ',' ? "" : first_slurm_node(rest, variable);
  return list.substr(0, open) + inside.substr(0, inside.find_first_of(",-")) + tail;
}

// Ranks started by srun directly have no MASTER_ADDR or MASTER_PORT unless the script exported
// them: rank 0 runs on the step's first node (srun's block and cyclic distributions put task 0
// there; with --distribution=arbitrary export MASTER_ADDR), and the port follows from the job and
// step ids, so that two steps on one node (or two jobs sharing it) seldom pick the same one.
const char* slurm_master_addr(std::string& storage) {
  const char* nodes = get("SLURM_STEP_NODELIST");
  if (get("SLURM_PROCID") == nullptr || nodes == nullptr) return nullptr;
  storage = first_slurm_node(nodes, "SLURM_STEP_NODELIST");
  return storage.c_str();
}

const char* slurm_master_port(std::string& storage) {
  const char* job = get("SLURM_JOB_ID");
  const char* step = get("SLURM_STEP_ID");
  if (get("SLURM_PROCID") == nullptr || job == nullptr || step == nullptr) return nullptr;
  const long job_id = number("SLURM_JOB_ID", job, 1L << 40, "a Slurm job id");
  const long step_id = number("SLURM_STEP_ID", step, 1L << 32, "a Slurm step id");
  storage = std::to_string(20000 + (job_id * 61 + step_id) % 12000);  // below the ephemeral ports
  return storage.c_str();
}

std::string host_identity() {
  if (const char* cross = get("CROSS_RANK")) return std::string("cross-rank:") + cross;
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return std::string(name) + "/" + boot;
}

}  // namespace

Env read_env() {
  Env env;
  // strata-run's, then mpirun's, then srun's (ranks it starts directly: SLURM_PROCID is per step).
  const auto [size_name, size_text] = first_set({"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS"},
                                                "the number of ranks");
  env.size = static_cast<int>(number(size_name, size_text, 1 << 20, "a positive number of ranks"));
  if (env.size == 0) bad(std::string(size_name) + "=0: expected a positive number of ranks");
  const auto [rank_name, rank_text] = first_set({"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}, "this rank");
  env.rank = static_cast<int>(number(rank_name, rank_text, env.size,
                                     ("a rank in [0, " + std::to_string(env.size) + ")").c_str()));
  // Slurm's step variables stand in for MASTER_* only for a task srun started itself: a rank that
  // mpirun started inside an allocation (its orted in a step) must not derive another master.
  const bool from_srun = std::string_view(rank_name) == "SLURM_PROCID";
  std::string slurm_addr, slurm_port;
  const char* addr = get("MASTER_ADDR");
  const std::string addr_name = addr != nullptr ? "MASTER_ADDR" : "SLURM_STEP_NODELIST's first node";
  if (addr == nullptr && from_srun) addr = slurm_master_addr(slurm_addr);
  if (addr == nullptr) bad("MASTER_ADDR is not set; expected the IPv4 address or name of rank 0's host");
  env.master_addr = addr;
  env.master_ip = resolve_ipv4(addr, addr_name);
  if (env.master_ip == "0.0.0.0") bad(addr_name + "=0.0.0.0: expected rank 0's own address");
  const char* port = get("MASTER_PORT");
  if (port == nullptr && from_srun) port = slurm_master_port(slurm_port);
  if (port == nullptr) bad("MASTER_PORT is not set; expected the TCP port of rank 0's store (1-65535)");
  env.master_port = static_cast<uint16_t>(number("MASTER_PORT", port, 65536, "a TCP port (1-65535)"));
  if (env.master_port == 0) bad("MASTER_PORT=0: expected a TCP port (1-65535)");
  env.secret = parse_secret(from_srun);
  const char* iface = get("STRATA_NETWORK_INTERFACE");
  env.bind_ip = iface != nullptr ? interface_address(iface) : route_to(env.master_ip, env.master_port);
  env.host_id = host_identity();
  return env;
}

}  // namespace strata::allreduce_gloo
