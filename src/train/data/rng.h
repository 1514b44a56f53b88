// SplitMix64: the one pseudo-random generator of the data side (corpus
// grammar choices, per-epoch shuffles). Its output is fixed by its
// definition, unlike std:: distributions, so the same seed gives the same
// corpus and the same batches on every platform and library.
//
//   SplitMix64 rng(seed);
//   uint64_t r = rng.next();
//   uint64_t die = rng.below(6);  // uniform in [0, 6)
//
// Thread-safety: a value type; one instance per thread.
#pragma once

#include <cstdint>

namespace zerotrain::train {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n) for n >= 1, without modulo bias (Lemire's
  // multiply-shift with rejection).
  uint64_t below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  uint64_t state_;
};

// Mixes two words into one seed (e.g. run seed and epoch), so nearby inputs
// give unrelated streams.
inline uint64_t mix_seed(uint64_t a, uint64_t b) {
  SplitMix64 rng(a ^ (b * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
  rng.next();
  return rng.next();
}

}  // namespace zerotrain::train
