#include "trace_event.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <iterator>
#include <string_view>

namespace strata::rt {
namespace {

// Names and categories are literals, but a plugin's literal may still hold a quote: every string
// goes out escaped, and text that is not UTF-8 is replaced rather than thrown on. Plain ASCII (every
// name in the tree) skips the JSON library: the writer formats some 35 events per rank and step.
std::string json_string(std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    out += text;
    out += '"';
    return out;
  }
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_args(std::string& out, const TraceEvent& e) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, R"(,"args":{{"step":{})", e.step);
  if (e.index >= 0) fmt::format_to(it, R"(,"index":{})", e.index);
  if (e.bytes != 0) fmt::format_to(it, R"(,"bytes":{})", e.bytes);
  if (e.seq != 0) fmt::format_to(it, R"(,"seq":{})", e.seq);
  if (e.unfinished) out += R"(,"unfinished":true)";
  if (!e.message.empty()) fmt::format_to(it, R"(,"message":{})", json_string(e.message));
  out += "}}";
}

}  // namespace

void append_trace_event(std::string& out, const TraceEvent& e, int pid, int64_t origin_ns,
                        uint64_t id) {
  auto it = std::back_inserter(out);
  const double ts = static_cast<double>(e.begin_ns - origin_ns) * 1e-3;
  const std::string category = json_string(e.category);
  const std::string name = json_string(e.name);
  if (e.in_flight) {
    // An async pair on its own track per name: the thread's spans stay properly nested.
    const double end = static_cast<double>(e.end_ns - origin_ns) * 1e-3;
    fmt::format_to(it, R"({{"ph":"b","cat":{},"name":{},"id":{},"pid":{},"tid":{},"ts":{:.3f})",
                   category, name, id, pid, e.tid, ts);
    append_args(out, e);
    fmt::format_to(it, ",\n" R"({{"ph":"e","cat":{},"name":{},"id":{},"pid":{},"tid":{},"ts":{:.3f}}})",
                   category, name, id, pid, e.tid, end);
    return;
  }
  fmt::format_to(it, R"({{"ph":"{}","cat":{},"name":{},"pid":{},"tid":{},"ts":{:.3f})",
                 e.instant ? "i" : "X", category, name, pid, e.tid, ts);
  if (e.instant) {
    fmt::format_to(it, R"(,"s":"t")");
  } else {
    fmt::format_to(it, R"(,"dur":{:.3f})", static_cast<double>(e.end_ns - e.begin_ns) * 1e-3);
  }
  append_args(out, e);
}

void append_process_name(std::string& out, int pid) {
  fmt::format_to(std::back_inserter(out),
                 R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"rank {}"}}}},)"
                 "\n"
                 R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
                 pid, pid, pid, pid);
}

void append_thread_name(std::string& out, int pid, uint32_t tid, const std::string& name) {
  fmt::format_to(std::back_inserter(out),
                 R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid,
                 tid, json_string(name));
}

}  // namespace strata::rt
