// Multi-rank check that a start-up failure on one rank becomes an error on every rank, not a hang:
// rank 1 gets an invalid optimizer learning rate through an override, rank 0 a valid one.
#include <strata/strata.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main() {
  const char* json =
      R"({"train_batch_size": 2, "optimizer": {"type": "SGD", "params": {"lr": 0.1}}})";
  strata_runtime* rt = nullptr;
  strata_error err{sizeof(strata_error), 0, {}};
  // OMPI_COMM_WORLD_RANK is set by mpirun before the runtime exists.
  const char* env_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const bool bad = env_rank != nullptr && std::string(env_rank) == "1";
  strata_create_options options{};
  options.struct_size = sizeof(options);
  options.manifest_json = json;
  options.overrides_json = bad ? R"({"optimizer": {"params": {"lr": -1}}})" : nullptr;
  const strata_status status = strata_create(&options, &rt, &err);
  const std::string message = err.message;
  strata_destroy(rt);
  // Both ranks must fail; the healthy rank must name rank 1 and carry its reason.
  const bool ok = status != STRATA_OK &&
                  (bad ? message.find("lr") != std::string::npos
                       : message.find("rank 1") != std::string::npos &&
                             message.find("lr") != std::string::npos);
  std::printf("rank %s status %d: %s -> %s\n", env_rank ? env_rank : "?", status, message.c_str(),
              ok ? "as expected" : "UNEXPECTED");
  return ok ? 0 : 1;
}
