// Safetensors writer (header first, then converted chunks through an
// AtomicFile) and reader (header validated against the file size, data read
// with pread in blocks, never mapped or loaded whole).
#include "checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <set>
#include <utility>

#include "checkpoint/safetensors_header.h"
#include "core/file_read.h"
#include "device/device.h"
#include "device/ops.h"

namespace zerotrain::checkpoint {

// The header stores lengths as little-endian u64 and the data as
// little-endian elements; we write and read host bytes directly.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

namespace {

// Elements converted per block: bounds the scratch memory of a write or read.
constexpr int64_t kBlockElements = 16384;

}  // namespace

int64_t SafetensorsTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "F32";
    case DType::kFloat16:
      return "F16";
    case DType::kBFloat16:
      return "BF16";
  }
  return "?";
}

// ---------------------------------------------------------------- writer

StatusOr<SafetensorsWriter> SafetensorsWriter::create(
    const std::string& path, std::vector<SafetensorsTensor> tensors,
    const std::map<std::string, std::string>& metadata) {
  auto bad = [&](const std::string& why) {
    return invalid_argument("safetensors file " + path + ": " + why);
  };
  std::set<std::string_view> names;
  int64_t offset = 0;
  for (SafetensorsTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") return bad("invalid tensor name '" + t.name + "'");
    if (!names.insert(t.name).second) return bad("tensor '" + t.name + "' appears twice");
    std::optional<int64_t> bytes = byte_size(t.shape, t.dtype);
    if (!bytes) return bad("tensor '" + t.name + "' has an invalid shape " + shape_string(t.shape));
    t.begin = offset;
    t.end = offset + *bytes;
    offset = t.end;
  }
  StatusOr<std::string> header = format_header(tensors, metadata);
  if (!header.ok()) return header.status().with_context("safetensors file " + path);
  const uint64_t header_length = header->size();

  ZT_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path));
  ZT_RETURN_IF_ERROR(file.write(&header_length, sizeof(header_length)));
  ZT_RETURN_IF_ERROR(file.write(header->data(), header->size()));
  SafetensorsWriter writer(std::move(file), std::move(tensors));
  writer.skip_empty_tensors();
  return writer;
}

void SafetensorsWriter::skip_empty_tensors() {
  while (current_ < tensors_.size() && current_filled_ == tensors_[current_].numel()) {
    ++current_;
    current_filled_ = 0;
  }
}

Status SafetensorsWriter::fail(Status status) {
  file_.reset();  // removes the temporary file
  return status;
}

Status SafetensorsWriter::write(std::span<const float> values) {
  if (!file_) return internal_error("write to a finished or failed SafetensorsWriter");
  while (!values.empty()) {
    if (current_ == tensors_.size()) {
      return fail(invalid_argument("safetensors file " + file_->path() + ": " +
                                   std::to_string(values.size()) +
                                   " values written past the last tensor"));
    }
    const SafetensorsTensor& t = tensors_[current_];
    const int64_t take =
        std::min<int64_t>(t.numel() - current_filled_, static_cast<int64_t>(values.size()));
    Status st = write_converted(t, values.first(static_cast<size_t>(take)));
    if (!st.ok()) return fail(std::move(st));
    values = values.subspan(static_cast<size_t>(take));
    current_filled_ += take;
    skip_empty_tensors();
  }
  return ok_status();
}

Status SafetensorsWriter::write_converted(const SafetensorsTensor& t,
                                          std::span<const float> values) {
  if (t.dtype == DType::kFloat32) return file_->write(values.data(), values.size_bytes());
  std::vector<uint16_t> bits(static_cast<size_t>(std::min<int64_t>(kBlockElements, values.size())));
  for (size_t i = 0; i < values.size(); i += bits.size()) {
    const int64_t n = std::min<int64_t>(bits.size(), values.size() - i);
    std::span<const float> src = values.subspan(i, static_cast<size_t>(n));
    ZT_RETURN_IF_ERROR(device::host_ops().convert(src, Tensor(bits.data(), t.dtype, src.size())));
    ZT_RETURN_IF_ERROR(file_->write(bits.data(), static_cast<size_t>(n) * sizeof(uint16_t)));
  }
  return ok_status();
}

Status SafetensorsWriter::finish() {
  if (!file_) return internal_error("finish of a finished or failed SafetensorsWriter");
  if (current_ < tensors_.size()) {
    const SafetensorsTensor& t = tensors_[current_];
    return fail(invalid_argument(
        "safetensors file " + file_->path() + ": tensor '" + t.name + "' got " +
        std::to_string(current_filled_) + " of its " + std::to_string(t.numel()) +
        " elements before finish() (" + std::to_string(tensors_.size() - current_ - 1) +
        " more tensors after it)"));
  }
  Status st = file_->commit();
  file_.reset();
  return st;
}

// ---------------------------------------------------------------- reader

StatusOr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd_ < 0) {
    if (errno == ENOENT) return not_found("safetensors file " + path + " does not exist");
    return errno_status("open " + path, errno);
  }
  struct stat st {};
  if (::fstat(f.fd_, &st) != 0) return errno_status("stat " + path, errno);
  const int64_t file_size = st.st_size;
  auto bad = [&](const std::string& why) {
    return corruption("safetensors file " + path + ": " + why);
  };
  if (file_size < 8) {
    return bad("truncated: " + std::to_string(file_size) +
               " bytes, shorter than the 8-byte header length");
  }
  uint64_t header_length = 0;
  ZT_RETURN_IF_ERROR(f.pread_all(&header_length, 8, 0));
  if (header_length > static_cast<uint64_t>(file_size - 8)) {
    return bad("header length " + std::to_string(header_length) + " runs beyond the end of the " +
               std::to_string(file_size) + "-byte file (truncated, or not a safetensors file)");
  }
  if (header_length > kMaxHeaderBytes) {
    return bad("header length " + std::to_string(header_length) + " exceeds the " +
               std::to_string(kMaxHeaderBytes) + "-byte limit");
  }
  std::string text(header_length, '\0');
  ZT_RETURN_IF_ERROR(f.pread_all(text.data(), static_cast<int64_t>(header_length), 8));
  f.data_start_ = 8 + static_cast<int64_t>(header_length);
  f.data_size_ = file_size - f.data_start_;
  Status parsed = parse_header(text, f.data_size_, &f.tensors_, &f.metadata_);
  if (!parsed.ok()) return parsed.with_context("safetensors file " + path);
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept { *this = std::move(other); }

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    data_start_ = other.data_start_;
    data_size_ = other.data_size_;
    tensors_ = std::move(other.tensors_);
    metadata_ = std::move(other.metadata_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (fd_ >= 0) ::close(fd_);
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  for (const SafetensorsTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Status SafetensorsFile::pread_all(void* dst, int64_t size, int64_t file_offset) const {
  return pread_exact(fd_, dst, size, file_offset, "safetensors file " + path_);
}

Status SafetensorsFile::read_f32(const SafetensorsTensor& t, int64_t first, int64_t count,
                                 float* out) const {
  const int64_t numel = t.numel();
  const int64_t elem = static_cast<int64_t>(dtype_size(t.dtype));
  if (first < 0 || count < 0 || first > numel || count > numel - first) {
    return invalid_argument("safetensors file " + path_ + ": elements [" + std::to_string(first) +
                            ", +" + std::to_string(count) + ") are outside tensor '" + t.name +
                            "' of " + std::to_string(numel));
  }
  if (t.begin < 0 || t.end > data_size_ || t.end - t.begin != numel * elem) {
    return invalid_argument("safetensors file " + path_ + ": tensor '" + t.name +
                            "' is not one of this file's tensors");
  }
  const int64_t offset = data_start_ + t.begin + first * elem;
  if (t.dtype == DType::kFloat32) return pread_all(out, count * elem, offset);
  std::vector<uint16_t> bits(static_cast<size_t>(std::min(kBlockElements, count)));
  for (int64_t i = 0; i < count; i += kBlockElements) {
    const int64_t n = std::min(kBlockElements, count - i);
    ZT_RETURN_IF_ERROR(pread_all(bits.data(), n * elem, offset + i * elem));
    std::span<float> dst(out + i, static_cast<size_t>(n));
    ZT_RETURN_IF_ERROR(
        device::host_ops().convert(ConstTensor(bits.data(), t.dtype, dst.size()), dst));
  }
  return ok_status();
}

}  // namespace zerotrain::checkpoint
