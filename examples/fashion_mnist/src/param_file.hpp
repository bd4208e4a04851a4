// Raw parameter dumps: every parameter's floats in registration order, native byte order, no
// header. Tests compare two dumps element by element.
#pragma once

#include <filesystem>
#include <vector>

#include "mlp.hpp"

namespace strata::fmnist {

void write_params(const std::filesystem::path& path, const Mlp& model);
std::vector<float> read_params(const std::filesystem::path& path);

}  // namespace strata::fmnist
