#include "junit.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace strata::plugin_check {
namespace {

std::string xml_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // XML 1.0 allows no control characters other than tab, newline and return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') c = ' ';
        out += c;
    }
  }
  return out;
}

// "comm.np2.allreduce.f32.sum" -> classname "comm.np2", name "allreduce.f32.sum": the stratum and
// world size group the cases; a single-process stratum's classname is the stratum alone.
std::pair<std::string, std::string> split_name(const std::string& full) {
  size_t cut = full.find('.');
  if (cut == std::string::npos) return {"strata-plugin-check", full};
  const size_t second = full.find('.', cut + 1);
  if (second != std::string::npos && full.compare(cut + 1, 2, "np") == 0) cut = second;
  return {full.substr(0, cut), full.substr(cut + 1)};
}

}  // namespace

void write_junit(const std::string& path, const std::string& library,
                 const std::vector<CheckResult>& results) {
  size_t failures = 0, skipped = 0;
  for (const CheckResult& r : results) {
    failures += r.outcome == Outcome::Fail;
    skipped += r.outcome == Outcome::Skip || r.outcome == Outcome::CannotRun;
  }
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    if (!out) throw std::runtime_error("--junit " + path + ": cannot write " + partial);
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<testsuites>\n  <testsuite name=\"strata-plugin-check " << xml_escaped(library)
        << "\" tests=\"" << results.size() << "\" failures=\"" << failures << "\" skipped=\""
        << skipped << "\" errors=\"0\">\n";
    for (const CheckResult& r : results) {
      const auto [classname, name] = split_name(r.name);
      out << "    <testcase classname=\"" << xml_escaped(classname) << "\" name=\""
          << xml_escaped(name) << "\"";
      if (r.outcome == Outcome::Pass) {
        out << "/>\n";
        continue;
      }
      const char* tag = r.outcome == Outcome::Fail ? "failure" : "skipped";
      const std::string message =
          r.outcome == Outcome::CannotRun ? "cannot run here: " + r.detail : r.detail;
      out << ">\n      <" << tag << " message=\"" << xml_escaped(message) << "\"/>\n"
          << "    </testcase>\n";
    }
    out << "  </testsuite>\n</testsuites>\n";
    if (!out.flush()) throw std::runtime_error("--junit " + path + ": cannot write " + partial);
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw std::runtime_error("--junit " + path + ": cannot rename " + partial + " into place");
  }
}

}  // namespace strata::plugin_check
