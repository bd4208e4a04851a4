// What strata-run asks of this machine's network: whether a host name means this machine, a free
// port for MASTER_PORT, and the form of --network-interface.
#pragma once

#include <string>

namespace strata::run {

// localhost, 127.*, ::1, this machine's host name (full or short), or an address of one of its
// interfaces. Such hosts are spawned directly, never through the launch agent.
bool is_local_host(const std::string& host);

// Binds a TCP socket to port 0 on INADDR_ANY (where the rendezvous will listen), reads the port
// the kernel chose and closes the socket. It never listens: strata-run
// opens no listening socket; rank 0 binds the port a moment later.
int find_free_port();

// An interface name (eth0, enp1s0f0, ib0.8001) or an IPv4 CIDR (10.0.0.0/24).
bool valid_network_interface(const std::string& value);

}  // namespace strata::run
