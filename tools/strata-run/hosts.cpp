#include "hosts.hpp"

#include "error.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

namespace strata::run {
namespace {

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

// A whole-string decimal integer >= 0; false for "", "x", "2x", "-1" or an overflow.
bool parse_count(const std::string& text, int& value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= 0;
}

// A host name as a hostfile or -H may give it: no spaces, no '=' (that is a key), no ':' except in
// an IPv6 address, which we do not take (mpirun's -H cannot either).
bool plausible_host(const std::string& name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (c == '=' || c == ':' || c == ',' || c == ' ' || c == '\t') return false;
  }
  return true;
}

// Zero slots and duplicates are errors for both sources; each message names where.
void check_and_add(std::vector<Host>& hosts, Host host) {
  if (host.slots == 0) {
    throw UsageError(host.origin + ": host '" + host.name + "' has 0 slots (give at least 1)");
  }
  for (const Host& seen : hosts) {
    if (seen.name == host.name) {
      throw UsageError(host.origin + ": host '" + host.name + "' is listed twice (first at " +
                       seen.origin + ")");
    }
  }
  hosts.push_back(std::move(host));
}

}  // namespace

std::vector<Host> parse_host_list(const std::string& list) {
  std::vector<Host> hosts;
  std::stringstream in(list);
  std::string entry;
  int index = 0;
  while (std::getline(in, entry, ',')) {
    ++index;
    entry = trim(entry);  // "-H 'a:2, b:2'"
    const std::string origin = "-H entry " + std::to_string(index);
    const std::string bad = origin + ": expected 'HOST' or 'HOST:SLOTS', got '" + entry + "'";
    Host host;
    host.origin = origin;
    const auto colon = entry.find(':');
    host.name = entry.substr(0, colon);
    if (!plausible_host(host.name)) throw UsageError(bad);
    if (colon != std::string::npos && !parse_count(entry.substr(colon + 1), host.slots)) {
      throw UsageError(bad);
    }
    check_and_add(hosts, std::move(host));
  }
  if (hosts.empty() || (!list.empty() && list.back() == ',')) {
    throw UsageError("-H '" + list + "': expected 'HOST[:SLOTS],...'");
  }
  return hosts;
}

std::vector<Host> parse_hostfile_text(const std::string& text, const std::string& file) {
  std::vector<Host> hosts;
  std::stringstream in(text);
  std::string raw;
  int line_number = 0;
  while (std::getline(in, raw)) {
    ++line_number;
    const std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const std::string origin = file + ":" + std::to_string(line_number);
    const std::string bad = origin + ": expected 'HOST slots=N', got '" + line + "'";
    std::stringstream words(line);
    Host host;
    host.origin = origin;
    words >> host.name;
    if (!plausible_host(host.name)) throw UsageError(bad);
    bool have_slots = false;
    std::string word;
    while (words >> word) {
      // Open MPI's max_slots caps oversubscription; strata-run never places more ranks than slots,
      // so it is checked for form and otherwise ignored.
      int ignored = 0;
      if (word.rfind("slots=", 0) == 0 && !have_slots && parse_count(word.substr(6), host.slots)) {
        have_slots = true;
      } else if (word.rfind("max_slots=", 0) == 0 && parse_count(word.substr(10), ignored)) {
      } else {
        throw UsageError(bad);
      }
    }
    check_and_add(hosts, std::move(host));
  }
  if (hosts.empty()) throw UsageError(file + ": no hosts in the hostfile");
  return hosts;
}

std::vector<Host> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("--hostfile " + path + ": cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_hostfile_text(text.str(), path);
}

int total_slots(const std::vector<Host>& hosts) {
  int total = 0;
  for (const Host& host : hosts) total += host.slots;
  return total;
}

std::string describe_slots(const std::vector<Host>& hosts) {
  std::string out;
  for (const Host& host : hosts) {
    if (!out.empty()) out += ", ";
    out += host.name + ":" + std::to_string(host.slots);
  }
  return out;
}

}  // namespace strata::run
