// The safetensors header: u64 little-endian length, then a JSON object naming each tensor's
// dtype, shape and [begin, end) in the data section, plus "__metadata__" (string values only).
#include "checkpoint/io_detail.hpp"
#include "tool.hpp"

namespace strata::ckpt::tool {

using nlohmann::json;

std::string safetensors_header(std::vector<Tensor>& tensors,
                               const std::vector<std::pair<std::string, std::string>>& metadata,
                               const std::string& out) {
  json header = json::object();
  json meta = json::object();
  for (const auto& [key, value] : metadata) meta[key] = value;
  header["__metadata__"] = std::move(meta);
  uint64_t offset = 0;
  for (Tensor& t : tensors) {
    if (header.contains(t.name)) {
      throw rt::Error(STRATA_ERR_INVALID_ARGUMENT,
                      out + ": two tensors would be named '" + t.name + "' (a parameter's name ends in a slot's)");
    }
    t.begin = offset;
    offset += t.count * 4;
    header[t.name] = {{"dtype", "F32"}, {"shape", json::array({t.count})},
                      {"data_offsets", json::array({t.begin, offset})}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  std::string bytes(8, '\0');
  detail::put_u64(reinterpret_cast<uint8_t*>(bytes.data()), text.size());
  return bytes + text;
}

}  // namespace strata::ckpt::tool
