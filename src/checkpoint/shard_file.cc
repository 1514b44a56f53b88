// Shard files: atomic write with per-chunk CRCs; validated, chunk-checked reads.
#include "checkpoint/shard_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/atomic_file.h"
#include "core/crc32.h"
#include "core/file_read.h"
#include "device/device.h"

namespace zerotrain::checkpoint {
namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'Z', 'T', 'C', 'K', 'S', 'H', 'R', 'D'};
constexpr uint32_t kShardVersion = 1;
constexpr int64_t kPrefixBytes = 16;
constexpr int64_t kDataAlign = 64;

void put_u32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get_u32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

int64_t align_up(int64_t n) { return (n + kDataAlign - 1) / kDataAlign * kDataAlign; }

// fn(host values, n) over v in chunks of kChunkElements: host memory as
// it is, a device's copied to the host a chunk at a time.
template <typename Fn>
Status for_each_chunk(const ConstTensor& v, Fn&& fn) {
  std::vector<float> host;
  for (size_t at = 0; at < v.numel; at += static_cast<size_t>(kChunkElements)) {
    const size_t n = std::min(static_cast<size_t>(kChunkElements), v.numel - at);
    const ConstTensor chunk = v.slice(at, n);
    if (chunk.on_host()) {
      ZT_RETURN_IF_ERROR(fn(chunk.ptr<float>(), n));
      continue;
    }
    host.resize(n);
    ZT_RETURN_IF_ERROR(device::copy_to_host(chunk, host.data()));
    ZT_RETURN_IF_ERROR(fn(host.data(), n));
  }
  return ok_status();
}

StatusOr<std::vector<uint32_t>> chunk_crcs(const ConstTensor& v) {
  std::vector<uint32_t> out;
  ZT_RETURN_IF_ERROR(for_each_chunk(v, [&](const float* p, size_t n) {
    out.push_back(crc32(p, n * sizeof(float)));
    return ok_status();
  }));
  return out;
}

// The header bytes [0, data start) of an open shard of `file_size` bytes,
// after the magic, version and bounds checks; not yet checksummed or parsed.
struct RawHeader {
  std::vector<unsigned char> bytes;
  int64_t text_bytes = 0;  // the JSON: bytes [kPrefixBytes, kPrefixBytes + text_bytes)
};

StatusOr<RawHeader> read_raw_header(int fd, int64_t file_size, const std::string& path) {
  const std::string where = "checkpoint shard " + path + ": ";
  unsigned char prefix[kPrefixBytes];
  if (file_size < kPrefixBytes) return corruption(where + "truncated header");
  ZT_RETURN_IF_ERROR(pread_exact(fd, prefix, kPrefixBytes, 0, "checkpoint shard " + path));
  if (std::memcmp(prefix, kMagic, sizeof(kMagic)) != 0)
    return corruption(where + "wrong magic (not a zerotrain checkpoint shard)");
  if (get_u32(prefix + 8) != kShardVersion)
    return corruption(where + "shard version " + std::to_string(get_u32(prefix + 8)));
  RawHeader h;
  h.text_bytes = get_u32(prefix + 12);
  const int64_t data_start = align_up(kPrefixBytes + h.text_bytes);
  if (data_start > file_size) return corruption(where + "header runs past the end of the file");
  h.bytes.resize(static_cast<size_t>(data_start));
  ZT_RETURN_IF_ERROR(pread_exact(fd, h.bytes.data(), data_start, 0, "checkpoint shard " + path));
  return h;
}

json parse_json(const RawHeader& h) {
  const auto text = h.bytes.begin() + kPrefixBytes;
  return json::parse(text, text + h.text_bytes, nullptr, false);
}

std::vector<Range> ranges_of(const json& header) {
  std::vector<Range> ranges;
  for (const json& x : header.at("ranges"))
    ranges.push_back({x.at(0).get<int64_t>(), x.at(1).get<int64_t>()});
  return ranges;
}

}  // namespace

StatusOr<WrittenShard> write_shard(const std::string& path, int rank,
                                   const std::vector<Range>& ranges,
                                   const std::vector<NamedValues>& tensors) {
  int64_t owned = 0;
  for (const Range& r : ranges) owned += r.count;
  json header{{"rank", rank}, {"chunk_elements", kChunkElements}};
  header["ranges"] = json::array();
  for (const Range& r : ranges) header["ranges"].push_back({r.offset, r.count});
  header["tensors"] = json::array();
  int64_t data_bytes = 0;
  for (const NamedValues& t : tensors) {
    if (static_cast<int64_t>(t.values.numel) != owned || t.values.dtype != DType::kFloat32) {
      return internal_error("shard tensor " + t.name + " holds " + std::to_string(t.values.numel) +
                            " " + std::string(dtype_name(t.values.dtype)) + " values, its ranges " +
                            std::to_string(owned) + " fp32");
    }
    ZT_ASSIGN_OR_RETURN(std::vector<uint32_t> crcs, chunk_crcs(t.values));
    header["tensors"].push_back({{"name", t.name},
                                 {"numel", owned},
                                 {"offset", data_bytes},
                                 {"chunk_crc32", std::move(crcs)}});
    data_bytes += owned * static_cast<int64_t>(sizeof(float));
  }
  const std::string text = header.dump();
  const int64_t data_start = align_up(kPrefixBytes + static_cast<int64_t>(text.size()));
  std::vector<unsigned char> head(static_cast<size_t>(data_start), 0);
  std::memcpy(head.data(), kMagic, sizeof(kMagic));
  put_u32(head.data() + 8, kShardVersion);
  put_u32(head.data() + 12, static_cast<uint32_t>(text.size()));
  std::memcpy(head.data() + kPrefixBytes, text.data(), text.size());

  ZT_ASSIGN_OR_RETURN(AtomicFile f, AtomicFile::create(path));
  ZT_RETURN_IF_ERROR(f.write(head.data(), head.size()));
  for (const NamedValues& t : tensors)
    ZT_RETURN_IF_ERROR(for_each_chunk(
        t.values, [&](const float* p, size_t n) { return f.write(p, n * sizeof(float)); }));
  const int64_t bytes = f.size();
  ZT_RETURN_IF_ERROR(f.commit());
  return WrittenShard{bytes, crc32(head.data(), head.size())};
}

StatusOr<ShardEntry> describe_shard(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open " + path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_status("stat " + path, err);
  }
  StatusOr<RawHeader> head = read_raw_header(fd, st.st_size, path);
  ::close(fd);
  ZT_RETURN_IF_ERROR(head.status());
  const json h = parse_json(*head);
  if (h.is_discarded() || !h.contains("ranges") || !h.contains("rank"))
    return corruption("checkpoint shard " + path + ": bad header");
  return ShardEntry{.rank = h["rank"].get<int>(),
                    .file = std::filesystem::path(path).filename().string(),
                    .bytes = st.st_size,
                    .header_crc32 = crc32(head->bytes.data(), head->bytes.size()),
                    .ranges = ranges_of(h)};
}

StatusOr<ShardReader> ShardReader::open(const std::string& path, const ShardEntry& expected,
                                        const std::vector<std::string>& names) {
  const std::string where = "checkpoint shard " + path + ": ";
  ShardReader r;
  r.path_ = path;
  r.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (r.fd_ < 0) {
    if (errno == ENOENT) return not_found(where + "missing (the manifest lists it)");
    return errno_status("open " + path, errno);
  }
  struct stat st {};
  if (::fstat(r.fd_, &st) != 0) return errno_status("stat " + path, errno);
  if (st.st_size != expected.bytes) {
    return corruption(where + "is " + std::to_string(st.st_size) + " bytes, the manifest says " +
                      std::to_string(expected.bytes) +
                      (st.st_size < expected.bytes ? " (truncated)" : ""));
  }
  ZT_ASSIGN_OR_RETURN(RawHeader head, read_raw_header(r.fd_, st.st_size, path));
  const int64_t data_start = static_cast<int64_t>(head.bytes.size());
  if (crc32(head.bytes.data(), head.bytes.size()) != expected.header_crc32)
    return corruption(where + "header checksum mismatch");
  const json h = parse_json(head);
  if (h.is_discarded()) return corruption(where + "header is not valid JSON");
  try {
    const std::vector<Range> ranges = ranges_of(h);
    if (ranges != expected.ranges || h.at("rank").get<int>() != expected.rank)
      return corruption(where + "ranges or rank differ from the manifest's");
    r.chunk_elements_ = h.at("chunk_elements").get<int64_t>();
    if (r.chunk_elements_ <= 0) return corruption(where + "chunk_elements must be positive");
    const json& ts = h.at("tensors");
    if (ts.size() != names.size()) return corruption(where + "holds another set of tensors");
    int64_t owned = 0;
    for (const Range& x : ranges) owned += x.count;
    int64_t end = data_start;
    for (size_t i = 0; i < names.size(); ++i) {
      Tensor t{.name = names[i],
               .numel = ts[i].at("numel").get<int64_t>(),
               .offset = data_start + ts[i].at("offset").get<int64_t>(),
               .chunk_crc = ts[i].at("chunk_crc32").get<std::vector<uint32_t>>()};
      if (ts[i].at("name").get<std::string>() != names[i] || t.numel != owned ||
          static_cast<int64_t>(t.chunk_crc.size()) !=
              (t.numel + r.chunk_elements_ - 1) / r.chunk_elements_) {
        return corruption(where + "tensor " + std::to_string(i) + " is not " + names[i] +
                          " of " + std::to_string(owned) + " values");
      }
      end = std::max<int64_t>(end, t.offset + t.numel * static_cast<int64_t>(sizeof(float)));
      r.tensors_.push_back(std::move(t));
    }
    if (end != st.st_size) return corruption(where + "data does not end at the end of the file");
  } catch (const json::exception& e) {
    return corruption(where + "bad header (" + e.what() + ")");
  }
  return r;
}

ShardReader::ShardReader(ShardReader&& other) noexcept { *this = std::move(other); }

ShardReader& ShardReader::operator=(ShardReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    chunk_elements_ = other.chunk_elements_;
    tensors_ = std::move(other.tensors_);
  }
  return *this;
}

ShardReader::~ShardReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status ShardReader::read(int tensor, int64_t first, int64_t count, float* out) const {
  const Tensor& t = tensors_.at(static_cast<size_t>(tensor));
  if (first < 0 || count < 0 || first + count > t.numel)
    return internal_error("shard read outside tensor " + std::to_string(tensor));
  std::vector<float> chunk;
  const int64_t C = chunk_elements_;
  for (int64_t c = first / C; count > 0 && c * C < first + count; ++c) {
    const int64_t c0 = c * C, n = std::min(C, t.numel - c0);
    chunk.resize(static_cast<size_t>(n));
    ZT_RETURN_IF_ERROR(pread_exact(fd_, chunk.data(), n * static_cast<int64_t>(sizeof(float)),
                                   t.offset + c0 * static_cast<int64_t>(sizeof(float)),
                                   "checkpoint shard " + path_));
    if (crc32(chunk.data(), chunk.size() * sizeof(float)) != t.chunk_crc[static_cast<size_t>(c)]) {
      return corruption("checkpoint shard " + path_ + ": checksum mismatch in " + t.name +
                        " at values [" + std::to_string(c0) + ", " +
                        std::to_string(c0 + n) + ")");
    }
    const int64_t lo = std::max(first, c0), hi = std::min(first + count, c0 + n);
    std::memcpy(out + (lo - first), chunk.data() + (lo - c0),
                static_cast<size_t>(hi - lo) * sizeof(float));
  }
  return ok_status();
}

}  // namespace zerotrain::checkpoint
