// Host lists: -H host1:2,host2 and hostfiles in DeepSpeed's ("host slots=N") and Open MPI's
// ("host slots=N max_slots=M", bare "host") formats. Parsing is pure so the unit tests can pin
// every message; read_hostfile only adds the file read.
#pragma once

#include <string>
#include <vector>

namespace strata::run {

struct Host {
  std::string name;
  int slots = 1;
  std::string origin;  // where it was given, for messages: "hosts.txt:3" or "-H entry 2"
};

// "a:2,b" -> {a, 2}, {b, 1}. Throws UsageError naming the entry.
std::vector<Host> parse_host_list(const std::string& list);
// The text of a hostfile; `file` is the name messages use ("hosts.txt:3: ...").
std::vector<Host> parse_hostfile_text(const std::string& text, const std::string& file);
std::vector<Host> read_hostfile(const std::string& path);

int total_slots(const std::vector<Host>& hosts);
// "host1:2, host2:2", for the -np message.
std::string describe_slots(const std::vector<Host>& hosts);

}  // namespace strata::run
