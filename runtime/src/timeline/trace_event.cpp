#include "timeline/trace_event.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <string_view>

namespace strata::rt {
namespace {

// The writer thread formats some 35 events per rank and step on a machine whose cores the
// training uses, so events are assembled by appending, with integer conversions only (no format
// strings, no floating point, no temporary strings): about 4x cheaper than fmt with "{:.3f}".

void append_int(std::string& out, int64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

// Nanoseconds as microseconds with three decimals, the trace format's unit.
void append_micros(std::string& out, int64_t ns) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  append_int(out, ns / 1000);
  const auto fraction = static_cast<int>(ns % 1000);
  const char decimals[4] = {'.', static_cast<char>('0' + fraction / 100),
                            static_cast<char>('0' + fraction / 10 % 10),
                            static_cast<char>('0' + fraction % 10)};
  out.append(decimals, 4);
}

// Names and categories are literals, but a plugin's literal may still hold a quote: every string
// goes out escaped, and text that is not UTF-8 is replaced rather than thrown on. Plain ASCII (every
// name in the tree) skips the JSON library.
void append_string(std::string& out, std::string_view text) {
  const bool plain = std::all_of(text.begin(), text.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += nlohmann::json(std::string(text))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

// {"ph":PH,"cat":…,"name":…[,"id":ID],"pid":…,"tid":…,"ts":… (no closing brace)
void append_head(std::string& out, const char* ph, const TraceEvent& e, int pid, uint64_t id,
                 int64_t ts_ns) {
  out += R"({"ph":")";
  out += ph;
  out += R"(","cat":)";
  append_string(out, e.category);
  out += R"(,"name":)";
  append_string(out, e.name);
  if (id != 0) {
    out += R"(,"id":)";
    append_int(out, static_cast<int64_t>(id));
  }
  out += R"(,"pid":)";
  append_int(out, pid);
  out += R"(,"tid":)";
  append_int(out, e.tid);
  out += R"(,"ts":)";
  append_micros(out, ts_ns);
}

void append_args(std::string& out, const TraceEvent& e) {
  out += R"(,"args":{"step":)";
  append_int(out, static_cast<int64_t>(e.step));
  if (e.index >= 0) {
    out += R"(,"index":)";
    append_int(out, e.index);
  }
  if (e.bytes != 0) {
    out += R"(,"bytes":)";
    append_int(out, static_cast<int64_t>(e.bytes));
  }
  if (e.seq != 0) {
    out += R"(,"seq":)";
    append_int(out, static_cast<int64_t>(e.seq));
  }
  if (e.unfinished) out += R"(,"unfinished":true)";
  if (!e.message.empty()) {
    out += R"(,"message":)";
    append_string(out, e.message);
  }
  out += "}}";
}

}  // namespace

void append_trace_event(std::string& out, const TraceEvent& e, int pid, int64_t origin_ns,
                        uint64_t id) {
  if (e.in_flight) {
    // An async pair on its own track per name: the thread's spans stay properly nested.
    append_head(out, "b", e, pid, id, e.begin_ns - origin_ns);
    append_args(out, e);
    out += ",\n";
    append_head(out, "e", e, pid, id, e.end_ns - origin_ns);
    out += '}';
    return;
  }
  append_head(out, e.instant ? "i" : "X", e, pid, 0, e.begin_ns - origin_ns);
  if (e.instant) {
    out += R"(,"s":"t")";
  } else {
    out += R"(,"dur":)";
    append_micros(out, e.end_ns - e.begin_ns);
  }
  append_args(out, e);
}

void append_process_name(std::string& out, int pid) {
  out += R"({"ph":"M","name":"process_name","pid":)";
  append_int(out, pid);
  out += R"(,"tid":0,"args":{"name":"rank )";
  append_int(out, pid);
  out += "\"}},\n";
  out += R"({"ph":"M","name":"process_sort_index","pid":)";
  append_int(out, pid);
  out += R"(,"tid":0,"args":{"sort_index":)";
  append_int(out, pid);
  out += "}}";
}

void append_thread_name(std::string& out, int pid, uint32_t tid, const std::string& name) {
  out += R"({"ph":"M","name":"thread_name","pid":)";
  append_int(out, pid);
  out += R"(,"tid":)";
  append_int(out, tid);
  out += R"(,"args":{"name":)";
  append_string(out, name);
  out += "}}";
}

}  // namespace strata::rt
