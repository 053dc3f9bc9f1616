// Deterministic random numbers, identical on every platform and library version.
//
// The C++ <random> distributions are implementation-defined, so dtnn draws from its own xoshiro256**
// generator seeded through splitmix64, with its own uniform/normal transforms. The same seed gives the
// same stream everywhere, which is what makes runs bit-reproducible and ranks agree on shuffles.
#pragma once

#include <cmath>
#include <cstdint>

namespace dtnn {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    uint64_t z = seed;
    for (auto& s : s_) s = splitmix64(z);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform in [0, 1) with 24 random bits (cheap, for dropout masks).
  float uniform_f() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n) (Lemire's multiply-shift; bias is below 2^-32 for n < 2^32).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<__uint128_t>(next_u64()) * n) >> 64); }

  // Standard normal (Box-Muller; the second value is discarded to keep the stream simple to reason about).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  // Derives an independent stream for a purpose (e.g. "rank 3's dropout").
  Rng fork(uint64_t stream) const {
    uint64_t z = s_[0] ^ (stream * 0x9E3779B97F4A7C15ull) ^ 0xD1B54A32D192ED03ull;
    return Rng(splitmix64(z));
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

}  // namespace dtnn
