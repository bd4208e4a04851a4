// strata-run: start a Strata job on one or more hosts, like horovodrun, torchrun or the DeepSpeed
// launcher. Every problem with the command line or the hosts is one "error: " line on stderr and
// exit status 1; once the ranks run, the exit status is the first failing rank's.
#include "error.hpp"
#include "launch.hpp"
#include "options.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  namespace run = strata::run;
  try {
    run::Options options;
    int exit_code = 0;
    if (!run::parse_options(argc, argv, options, exit_code)) return exit_code;
    return run::launch(options);
  } catch (const run::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const std::exception& e) {  // std::bad_alloc and the like: still one line, no crash
    std::fprintf(stderr, "error: strata-run: %s\n", e.what());
  }
  return 1;
}
