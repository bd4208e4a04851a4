// strata-ckpt: inspect, verify and consolidate Strata checkpoints. Every failure is one line on
// stderr naming the file and exit status 1.
#include "error.hpp"
#include "tool.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  namespace tool = strata::ckpt::tool;
  CLI::App app{"Inspect, verify and consolidate Strata checkpoints"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("strata-ckpt ") + STRATA_VERSION_TEXT);
  std::string path;
  std::string out;
  bool as_json = false;
  bool with_optimizer = false;
  const char* path_help = "a checkpoint tag folder, or a checkpoint folder whose 'latest' file names the tag";

  CLI::App* inspect = app.add_subcommand("inspect", "Summarize a checkpoint's metadata and files");
  inspect->add_option("PATH", path, path_help)->required();
  inspect->add_flag("--json", as_json, "print the summary as JSON");
  CLI::App* verify = app.add_subcommand("verify", "Read every block of every rank file and check its checksum");
  verify->add_option("PATH", path, path_help)->required();
  CLI::App* consolidate =
      app.add_subcommand("consolidate", "Write the parameters (fp32) into one safetensors file");
  consolidate->add_option("PATH", path, path_help)->required();
  consolidate->add_option("OUT", out, "the .safetensors file to write")->required();
  consolidate->add_flag("--optimizer", with_optimizer, "also write each optimizer slot as <name>.<slot>");

  CLI11_PARSE(app, argc, argv);
  try {
    if (inspect->parsed()) return tool::inspect(path, as_json);
    if (verify->parsed()) return tool::verify(path);
    return tool::consolidate(path, out, with_optimizer);
  } catch (const strata::rt::Error& e) {
    std::fprintf(stderr, "strata-ckpt: %s\n", e.what());
  } catch (const std::exception& e) {  // std::bad_alloc and the like: still one line, no crash
    std::fprintf(stderr, "strata-ckpt: %s\n", e.what());
  }
  return 1;
}
