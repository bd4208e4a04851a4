#include "options.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <stdexcept>

namespace strata::plugin_check {
namespace {

// --config must be one JSON object: the plugin's params, as a manifest's stratum "config" is.
void check_config(const std::string& text) {
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument("--config: not JSON (" + std::string(e.what()) + ")");
  }
  if (!parsed.is_object()) {
    throw std::invalid_argument("--config: expected a JSON object, got " +
                                std::string(parsed.type_name()));
  }
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  CLI::App app{
      "strata-plugin-check: runs the conformance checks of a Strata plugin's stratum against the "
      "library (comm and sharding at world sizes 1..N, started through strata-run) and prints "
      "one line per check. A comm plugin whose caps claim CUDA device memory is checked with "
      "device buffers too (device.*) where this machine has a CUDA device, else a SKIP line says "
      "why. Exits 0 when every check passed or was skipped, 1 when one failed, 2 "
      "when the checks could not run (a bad command line, or a plugin that cannot run on this "
      "machine: its create answered STRATA_ERR_UNSUPPORTED).",
      "strata-plugin-check"};
  app.set_version_flag("--version", std::string("strata-plugin-check ") + STRATA_VERSION_TEXT);
  app.add_option("library", o.library, "the plugin library (.so) to check")->required();
  app.add_option("--config", o.config_json,
                 "the plugin's config as a JSON object, as the manifest's stratum \"config\"");
  app.add_option("--np", o.max_ranks, "the largest world size for comm and sharding (1-16); -np works too")
      ->check(CLI::Range(1, 16));
  app.add_option("--junit", o.junit_path, "also write a JUnit XML report to this file");
  app.add_option("--backend", o.backend, "strata-run backend for the multi-rank jobs")
      ->check(CLI::IsMember({"mpi", "gloo"}));
  app.add_option("--check-timeout", o.check_timeout_s,
                 "seconds after which a running check counts as hung and fails")
      ->check(CLI::Range(1, 3600));
  app.add_option("--work-dir", o.work_dir, "folder for the jobs' results (default: a new temporary one)");
  app.add_flag("--keep-work-dir", o.keep_work_dir, "keep the jobs' results and logs");
  app.add_option("--worker", o.worker_dir, "internal: run as one rank of a job")->group("");
  app.add_option("--stratum", o.worker_stratum, "internal: the worker's stratum")->group("");
  // mpirun's and strata-run's spelling "-np" (one dash, two letters) becomes "--np".
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.push_back(std::strcmp(argv[i], "-np") == 0 ? "--np" : argv[i]);
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    std::exit(app.exit(e));
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(e.what());
  }
  o.config_given = app.count("--config") > 0;
  check_config(o.config_json);
  return o;
}

}  // namespace strata::plugin_check
