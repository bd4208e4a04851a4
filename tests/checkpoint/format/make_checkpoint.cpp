// Writes a synthetic checkpoint for the tool tests: DIR/TAG/{metadata.json,rankNNNNN.shard} and
// DIR/latest naming TAG. Usage:
//   strata_ckpt_make_synthetic DIR [--tag T] [--ranks R] [--params N --elements M] [--slots a,b,c]
// Without --params the unit tests' small layout (5 parameters of mixed sizes) is written.
#include "synthetic.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>

int main(int argc, char** argv) {
  using namespace strata::ckpt;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--tag T] [--ranks R] [--params N --elements M] [--slots a,b]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::string tag = "global_step12";
  test::SyntheticSpec spec;
  uint64_t params = 0, elements = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--tag") tag = value;
    else if (key == "--ranks") spec.ranks = std::atoi(value.c_str());
    else if (key == "--params") params = std::strtoull(value.c_str(), nullptr, 10);
    else if (key == "--elements") elements = std::strtoull(value.c_str(), nullptr, 10);
    else if (key == "--slots") {
      spec.slots.clear();
      std::stringstream list(value);
      for (std::string slot; std::getline(list, slot, ',');) spec.slots.push_back(slot);
    } else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  if (params > 0) spec.param_counts.assign(params, elements);
  try {
    ::mkdir(dir.c_str(), 0755);
    ::mkdir((dir + "/" + tag).c_str(), 0755);
    test::write_synthetic(dir + "/" + tag, spec);
    write_file_atomically(dir + "/" + kLatestFile, tag + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
