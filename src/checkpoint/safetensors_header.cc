// Safetensors header: JSON out for the writer; JSON in, checked field by
// field and then against the data buffer, for the reader.
#include "checkpoint/safetensors_header.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

namespace zerotrain::checkpoint {
namespace {

using nlohmann::json;

std::optional<DType> parse_dtype_name(std::string_view name) {
  if (name == "F32") return DType::kFloat32;
  if (name == "F16") return DType::kFloat16;
  if (name == "BF16") return DType::kBFloat16;
  return std::nullopt;
}

// A non-negative JSON integer that fits int64.
std::optional<int64_t> as_int64(const json& v) {
  if (!v.is_number_unsigned()) return std::nullopt;
  const uint64_t u = v.get<uint64_t>();
  if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return static_cast<int64_t>(u);
}

Status parse_metadata(const json& v, std::map<std::string, std::string>* metadata) {
  if (!v.is_object()) return corruption("__metadata__ is not a JSON object");
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_string()) {
      return corruption("__metadata__ value of '" + it.key() + "' is not a string");
    }
    (*metadata)[it.key()] = it.value().get<std::string>();
  }
  return ok_status();
}

StatusOr<SafetensorsTensor> parse_entry(const std::string& name, const json& v) {
  auto bad = [&](const std::string& why) { return corruption("tensor '" + name + "': " + why); };
  if (!v.is_object()) return bad("entry is not a JSON object");
  SafetensorsTensor t;
  t.name = name;

  auto dtype = v.find("dtype");
  if (dtype == v.end() || !dtype->is_string()) return bad("no \"dtype\" string");
  const std::string dtype_text = dtype->get<std::string>();
  std::optional<DType> parsed = parse_dtype_name(dtype_text);
  if (!parsed) {
    return invalid_argument("tensor '" + name + "' has dtype " + dtype_text +
                            "; zerotrain reads F32, F16 and BF16");
  }
  t.dtype = *parsed;

  auto shape = v.find("shape");
  if (shape == v.end() || !shape->is_array()) return bad("no \"shape\" array");
  for (const json& d : *shape) {
    std::optional<int64_t> dim = as_int64(d);
    if (!dim) return bad("shape " + shape->dump() + " has an entry that is not a size");
    t.shape.push_back(*dim);
  }

  auto offsets = v.find("data_offsets");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2) {
    return bad("no \"data_offsets\" [begin, end] pair");
  }
  std::optional<int64_t> begin = as_int64((*offsets)[0]), end = as_int64((*offsets)[1]);
  if (!begin || !end || *begin > *end) return bad("bad data_offsets " + offsets->dump());
  t.begin = *begin;
  t.end = *end;

  std::optional<int64_t> bytes = byte_size(t.shape, t.dtype);
  if (!bytes) return bad("shape " + shape_string(t.shape) + " is too large");
  if (t.end - t.begin != *bytes) {
    return bad("data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
               ") hold " + std::to_string(t.end - t.begin) + " bytes but " + dtype_text + " " +
               shape_string(t.shape) + " needs " + std::to_string(*bytes));
  }
  return t;
}

// Sorted by offset, the tensors must cover [0, data_size) with no gap and
// no overlap, as Hugging Face's reader requires.
Status check_tiling(std::vector<SafetensorsTensor>* tensors, int64_t data_size) {
  std::stable_sort(tensors->begin(), tensors->end(),
                   [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                   });
  auto range = [](const SafetensorsTensor& t) {
    return "'" + t.name + "' [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ")";
  };
  int64_t covered = 0;
  const SafetensorsTensor* previous = nullptr;
  for (const SafetensorsTensor& t : *tensors) {
    if (t.end > data_size) {
      return corruption("tensor " + range(t) + " runs beyond the data buffer of " +
                        std::to_string(data_size) + " bytes (truncated file?)");
    }
    if (t.begin < covered) {
      return corruption("tensor " + range(t) + " overlaps tensor " + range(*previous));
    }
    if (t.begin > covered) {
      return corruption("bytes [" + std::to_string(covered) + ", " + std::to_string(t.begin) +
                        ") before tensor " + range(t) + " belong to no tensor");
    }
    covered = t.end;
    previous = &t;
  }
  if (covered != data_size) {
    return corruption("the tensors end at byte " + std::to_string(covered) +
                      " of the data buffer but the file has " + std::to_string(data_size) +
                      " data bytes");
  }
  return ok_status();
}

}  // namespace

std::optional<int64_t> byte_size(const std::vector<int64_t>& shape, DType dtype) {
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes)) return std::nullopt;
  }
  return bytes;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

StatusOr<std::string> format_header(const std::vector<SafetensorsTensor>& tensors,
                                    const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps the tensors in data order, for people reading it.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (const SafetensorsTensor& t : tensors) {
    header[t.name] = {{"dtype", std::string(safetensors_dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", nlohmann::ordered_json::array({t.begin, t.end})}};
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::exception& e) {  // invalid UTF-8
    return invalid_argument(std::string("header is not valid UTF-8: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

Status parse_header(std::string_view text, int64_t data_size,
                    std::vector<SafetensorsTensor>* tensors,
                    std::map<std::string, std::string>* metadata) {
  const json header = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return corruption("header is not valid JSON");
  if (!header.is_object()) return corruption("header is not a JSON object");
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      ZT_RETURN_IF_ERROR(parse_metadata(it.value(), metadata));
      continue;
    }
    ZT_ASSIGN_OR_RETURN(SafetensorsTensor t, parse_entry(it.key(), it.value()));
    tensors->push_back(std::move(t));
  }
  return check_tiling(tensors, data_size);
}

}  // namespace zerotrain::checkpoint
