// SHA-256 (FIPS 180-4), used to key the compile cache and to check cache entries.
// Our own implementation so the core has no crypto dependency.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tilus {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  Sha256& update(const void* data, size_t size);
  Sha256& update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  // Hashes the length before the bytes, so a sequence of fields has one encoding:
  // ("ab", "c") and ("a", "bc") give different digests.
  Sha256& update_field(std::string_view bytes);
  Digest digest();          // finishes the hash; the object must not be updated after
  std::string hex_digest();  // digest() as 64 lowercase hex characters

 private:
  void compress(const uint8_t block[64]);

  std::array<uint32_t, 8> state_;
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

Sha256::Digest sha256(std::string_view bytes);
std::string sha256_hex(std::string_view bytes);
std::string to_hex(const uint8_t* bytes, size_t size);

}  // namespace tilus
