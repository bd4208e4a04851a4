// strata-plugin-check LIBRARY [--config JSON] [-np N] [--junit FILE]: see options.cpp's help and
// README.md, "Writing a plugin". The parent checks the descriptor, starts one worker job per
// world size (comm, sharding: through strata-run) or one worker process (precision, offload), and
// merges, prints and reports what the workers recorded.
#include "descriptor_checks.hpp"
#include "file_recorder.hpp"
#include "job_results.hpp"
#include "junit.hpp"
#include "options.hpp"
#include "plugin_host.hpp"
#include "worker_jobs.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace fs = std::filesystem;
using namespace strata::plugin_check;

namespace {

bool multi_rank(const std::string& stratum) { return stratum == "comm" || stratum == "sharding"; }

void print(const CheckResult& r) {
  static constexpr const char* labels[] = {"PASS", "FAIL", "SKIP", "CANNOT-RUN"};
  const bool with_detail = !r.detail.empty();
  const bool in_parens = r.outcome == Outcome::Pass;
  std::printf("%s %s%s%s%s\n", labels[static_cast<int>(r.outcome)], r.name.c_str(),
              with_detail ? (in_parens ? " (" : ": ") : "", r.detail.c_str(),
              with_detail && in_parens ? ")" : "");
  std::fflush(stdout);
}

int worker_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "RANK", "PMI_RANK"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

int worker_main(const Options& o) {
  FileRecorder recorder(*o.worker_dir + "/rank-" + std::to_string(worker_rank()) + ".txt",
                        std::chrono::seconds(o.check_timeout_s));
  PluginLibrary library(o.library);
  Target target{o.library, o.config_json, o.config_given, &library.descriptor()};
  if (o.worker_stratum == "comm") check_comm(target, recorder);
  else if (o.worker_stratum == "sharding") check_sharding(target, recorder);
  else if (o.worker_stratum == "precision") check_precision(target, recorder);
  else if (o.worker_stratum == "offload") check_offload(target, recorder);
  else throw std::invalid_argument("--stratum: unknown stratum '" + o.worker_stratum + "'");
  recorder.done();
  return 0;
}

// One job: its results, printed as they are merged. Returns false when the plugin cannot run here
// (a larger world size would say the same).
bool run_stratum_job(const Options& o, const std::string& library, const std::string& stratum,
                     int world, const std::string& work_dir, std::vector<CheckResult>& results) {
  const std::string tag = multi_rank(stratum) ? "np" + std::to_string(world) : "single";
  const std::string dir = work_dir + "/" + stratum + "-" + tag;
  fs::remove_all(dir);  // a --work-dir used before must not lend this job old result lines
  fs::create_directories(dir);
  std::vector<std::string> argv;
  if (multi_rank(stratum)) {
    argv = {find_launcher(), "--backend", o.backend, "-np", std::to_string(world), "--"};
  }
  argv.insert(argv.end(), {self_executable(), "--worker", dir, "--stratum", stratum,
                           "--check-timeout", std::to_string(o.check_timeout_s)});
  if (o.config_given) argv.insert(argv.end(), {"--config", o.config_json});
  argv.push_back(library);
  JobSpec spec{argv, dir, std::chrono::seconds(o.check_timeout_s + 60)};
  const JobEnd end = run_job(spec);
  const std::string prefix = stratum + "." + (multi_rank(stratum) ? tag + "." : "");
  bool runnable = true;
  for (CheckResult& r : merge_job(dir, world, prefix, end)) {
    print(r);
    runnable = runnable && r.outcome != Outcome::CannotRun;
    results.push_back(std::move(r));
  }
  return runnable;
}

int check_main(const Options& o) {
  std::error_code ec;
  if (!fs::is_regular_file(o.library, ec)) {
    throw std::invalid_argument(o.library + ": no such file (expected a plugin library, .so)");
  }
  const std::string library = fs::absolute(o.library).lexically_normal().string();
  if (!o.junit_path.empty()) {
    std::FILE* probe = std::fopen((o.junit_path + ".partial").c_str(), "w");
    if (probe == nullptr) {
      throw std::invalid_argument("--junit " + o.junit_path + ": cannot write there");
    }
    std::fclose(probe);
    std::remove((o.junit_path + ".partial").c_str());
  }
  PluginLibrary plugin(library);
  const strata_plugin_descriptor& d = plugin.descriptor();
  const DescriptorReport report = check_descriptor(d);
  std::printf("strata-plugin-check: %s: %s %s (%s)\n", library.c_str(),
              d.name != nullptr ? d.name : "(no name)", d.version != nullptr ? d.version : "",
              report.stratum.empty() ? "unknown kind" : report.stratum.c_str());
  std::vector<CheckResult> results;
  for (const auto& [name, verdict] : report.checks) {
    results.push_back({name, verdict.outcome, verdict.detail});
    print(results.back());
  }
  std::string work_dir = o.work_dir;
  if (report.usable) {
    if (work_dir.empty()) {
      std::string pattern = (fs::temp_directory_path() / "strata-plugin-check-XXXXXX").string();
      if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary folder");
      work_dir = pattern;
    }
    const int worlds = multi_rank(report.stratum) ? o.max_ranks : 1;
    for (int world = 1; world <= worlds; ++world) {
      if (!run_stratum_job(o, library, report.stratum, world, work_dir, results)) break;
    }
  }
  size_t counts[4] = {0, 0, 0, 0};
  for (const CheckResult& r : results) ++counts[static_cast<int>(r.outcome)];
  if (!o.junit_path.empty()) write_junit(o.junit_path, library, results);
  std::printf("strata-plugin-check: %zu checks: %zu passed, %zu failed, %zu skipped", results.size(),
              counts[0], counts[1], counts[2]);
  std::printf(counts[3] > 0 ? ", %zu cannot run here\n" : "\n", counts[3]);
  // Not a failure and not a pass: the plugin says this machine lacks what it needs. A failure
  // elsewhere still wins (exit 1).
  const bool cannot_run = counts[3] > 0 && counts[1] == 0;
  for (const CheckResult& r : results) {
    if (cannot_run && r.outcome == Outcome::CannotRun) {
      std::printf("strata-plugin-check: cannot run here: %s\n", r.detail.c_str());
      break;
    }
  }
  if (!work_dir.empty() && o.work_dir.empty()) {
    if (counts[1] > 0 || o.keep_work_dir) {
      std::printf("strata-plugin-check: the workers' results and output are in %s\n", work_dir.c_str());
    } else {
      fs::remove_all(work_dir, ec);
    }
  }
  return counts[1] > 0 ? 1 : cannot_run ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse_options(argc, argv);
    return options.worker_dir ? worker_main(options) : check_main(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
