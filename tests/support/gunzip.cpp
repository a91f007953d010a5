#include "tests/support/gunzip.hpp"

#include <cstdint>
#include <stdexcept>

#include "sim/report/gzip_stream.hpp"

namespace cs::test {

namespace {

class BitReader {
 public:
  BitReader(const std::string& s, std::size_t from, std::size_t to) : s_(s), pos_(from), end_(to) {}
  unsigned bit() {
    if (pos_ >= end_) throw std::runtime_error("deflate stream ends early");
    const unsigned b = (static_cast<unsigned char>(s_[pos_]) >> bit_) & 1u;
    if (++bit_ == 8) bit_ = 0, ++pos_;
    return b;
  }
  unsigned bits(int n) {  // LSB first, as extra bits and headers are sent
    unsigned v = 0;
    for (int i = 0; i < n; ++i) v |= bit() << i;
    return v;
  }
  unsigned huffman(int n) {  // MSB first, as Huffman codes are sent
    unsigned v = 0;
    for (int i = 0; i < n; ++i) v = (v << 1) | bit();
    return v;
  }
  void align() {
    if (bit_ != 0) bit_ = 0, ++pos_;
  }
  std::size_t byte_pos() const { return pos_; }
  void skip_bytes(std::size_t n) { pos_ += n; }

 private:
  const std::string& s_;
  std::size_t pos_, end_;
  int bit_ = 0;
};

// RFC 1951 3.2.6, read code by code: 7 bits first (256..279), then 8 (0..143, 280..287), then 9.
unsigned fixed_symbol(BitReader& r) {
  unsigned c = r.huffman(7);
  if (c <= 0x17) return 256 + c;
  c = (c << 1) | r.bit();
  if (c >= 0x30 && c <= 0xbf) return c - 0x30;
  if (c >= 0xc0 && c <= 0xc7) return 280 + (c - 0xc0);
  c = (c << 1) | r.bit();
  if (c >= 0x190 && c <= 0x1ff) return 144 + (c - 0x190);
  throw std::runtime_error("not a fixed literal/length code");
}

constexpr unsigned kLengthBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr int kLengthExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                  2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr unsigned kDistBase[30] = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
                                    33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
                                    1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr int kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

std::uint32_t le32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (int b = 0; b < 4; ++b)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + static_cast<std::size_t>(b)])) << (8 * b);
  return v;
}

}  // namespace

std::string gunzip(const std::string& file) {
  if (file.size() < 18) throw std::runtime_error("shorter than a gzip header and trailer");
  if (static_cast<unsigned char>(file[0]) != 0x1f || static_cast<unsigned char>(file[1]) != 0x8b || file[2] != 8)
    throw std::runtime_error("not a gzip/deflate header");
  if (file[3] != 0) throw std::runtime_error("header flags set (name, comment, extra): not what the encoder writes");
  BitReader r(file, 10, file.size() - 8);
  std::string out;
  for (bool last = false; !last;) {
    last = r.bits(1) == 1;
    const unsigned type = r.bits(2);
    if (type == 0) {
      r.align();
      const std::size_t at = r.byte_pos();
      if (at + 4 > file.size() - 8) throw std::runtime_error("stored block header past the end");
      const unsigned len = static_cast<unsigned char>(file[at]) | static_cast<unsigned char>(file[at + 1]) << 8;
      const unsigned nlen = static_cast<unsigned char>(file[at + 2]) | static_cast<unsigned char>(file[at + 3]) << 8;
      if ((len ^ 0xffffu) != nlen) throw std::runtime_error("stored block length check fails");
      if (at + 4 + len > file.size() - 8) throw std::runtime_error("stored block past the end");
      out.append(file, at + 4, len);
      r.skip_bytes(4 + len);
    } else if (type == 1) {
      for (;;) {
        const unsigned sym = fixed_symbol(r);
        if (sym < 256) {
          out += static_cast<char>(sym);
          continue;
        }
        if (sym == 256) break;
        if (sym > 285) throw std::runtime_error("length symbol 286/287 is invalid");
        const unsigned length = kLengthBase[sym - 257] + r.bits(kLengthExtra[sym - 257]);
        const unsigned dcode = r.huffman(5);
        if (dcode > 29) throw std::runtime_error("distance code 30/31 is invalid");
        const unsigned dist = kDistBase[dcode] + r.bits(kDistExtra[dcode]);
        if (dist > out.size()) throw std::runtime_error("distance reaches before the start");
        for (unsigned k = 0; k < length; ++k) out += out[out.size() - dist];
      }
    } else {
      throw std::runtime_error(type == 2 ? "dynamic Huffman block (the encoder writes none)" : "reserved block type");
    }
  }
  r.align();
  if (r.byte_pos() != file.size() - 8) throw std::runtime_error("bytes between the last block and the trailer");
  const auto* bytes = reinterpret_cast<const unsigned char*>(out.data());
  if (le32(file, file.size() - 8) != report::crc32(0, bytes, out.size())) throw std::runtime_error("CRC-32 mismatch");
  if (le32(file, file.size() - 4) != static_cast<std::uint32_t>(out.size() & 0xffffffffu))
    throw std::runtime_error("length mismatch");
  return out;
}

}  // namespace cs::test
