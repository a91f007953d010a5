#include "sim/report/gzip_stream.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

namespace cs::report {

namespace {

constexpr std::size_t kWindow = 32768;      // deflate's largest distance
constexpr std::size_t kChunk = 128 * 1024;  // input coded per block
constexpr unsigned kMinMatch = 4;           // the hash covers four bytes
constexpr unsigned kMaxMatch = 258;         // deflate's longest length
constexpr unsigned kNiceMatch = 128;        // long enough: stop searching the chain
constexpr int kMaxChain = 32;               // candidates tried per position
constexpr int kHashBits = 15;
constexpr std::uint32_t kGzipFooterBytes = 8;

constexpr std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kCrcTable = make_crc_table();

// Huffman codes are sent most significant bit first into an LSB-first bit stream: reverse them.
constexpr std::uint32_t reverse_bits(std::uint32_t code, int length) {
  std::uint32_t r = 0;
  for (int i = 0; i < length; ++i) r |= ((code >> i) & 1u) << (length - 1 - i);
  return r;
}

struct Code {
  std::uint16_t bits = 0;
  std::uint8_t length = 0;
};

// RFC 1951 3.2.6: the fixed literal/length code.
constexpr std::array<Code, 288> make_fixed_codes() {
  std::array<Code, 288> t{};
  for (unsigned s = 0; s < 288; ++s) {
    std::uint32_t code = 0;
    int len = 0;
    if (s < 144) {
      code = 0x30 + s, len = 8;
    } else if (s < 256) {
      code = 0x190 + (s - 144), len = 9;
    } else if (s < 280) {
      code = s - 256, len = 7;
    } else {
      code = 0xc0 + (s - 280), len = 8;
    }
    t[s] = Code{static_cast<std::uint16_t>(reverse_bits(code, len)), static_cast<std::uint8_t>(len)};
  }
  return t;
}
constexpr auto kFixedCodes = make_fixed_codes();

constexpr std::uint32_t hash4(const unsigned char* p) {
  const std::uint32_t v = static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                          static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
  return (v * 2654435761u) >> (32 - kHashBits);
}

}  // namespace

std::uint32_t crc32(std::uint32_t crc, const unsigned char* data, std::size_t n) {
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) crc = kCrcTable[(crc ^ data[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

GzipStreambuf::GzipStreambuf(std::ostream& sink)
    : sink_(sink), window_(kWindow + kChunk), head_(std::size_t{1} << kHashBits, -1), prev_(kWindow, -1) {
  out_.reserve(kChunk + kChunk / 4);
  // Header: magic, deflate, no flags, no time stamp, no extra flags, OS unknown (255): the same
  // bytes wherever it is written.
  const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255};
  out_.insert(out_.end(), header, header + sizeof header);
  char* begin = reinterpret_cast<char*>(window_.data());
  setp(begin, begin + kChunk);
}

GzipStreambuf::~GzipStreambuf() {
  if (finished_) return;
  try {
    finish();
  } catch (...) {  // a destructor must not throw; the caller that cares calls finish()
  }
}

void GzipStreambuf::put_bits(std::uint32_t value, int count) {
  bits_ |= static_cast<std::uint64_t>(value) << bit_count_;
  bit_count_ += count;
  while (bit_count_ >= 8) {
    out_.push_back(static_cast<unsigned char>(bits_ & 0xffu));
    bits_ >>= 8;
    bit_count_ -= 8;
  }
}

void GzipStreambuf::put_symbol(unsigned symbol) {
  const Code c = kFixedCodes[symbol];
  put_bits(c.bits, c.length);
}

void GzipStreambuf::emit_match(unsigned length, unsigned distance) {
  // Length 3..258: symbols 257..285 with 0..5 extra bits (RFC 1951 3.2.5).
  if (length <= 10) {
    put_symbol(254 + length);
  } else if (length == kMaxMatch) {
    put_symbol(285);
  } else {
    const unsigned x = length - 3;  // 8..254
    const int log = std::bit_width(x) - 1;
    const int extra = log - 2;
    put_symbol(257 + 4 * static_cast<unsigned>(log - 1) + ((x >> extra) & 3u));
    put_bits(x & ((1u << extra) - 1), extra);
  }
  // Distance 1..32768: codes 0..29 (five bits, fixed) with 0..13 extra bits.
  if (distance <= 4) {
    put_bits(reverse_bits(distance - 1, 5), 5);
  } else {
    const unsigned x = distance - 1;  // 4..32767
    const int log = std::bit_width(x) - 1;
    const int extra = log - 1;
    const unsigned code = 2 * static_cast<unsigned>(log) + ((x >> extra) & 1u);
    put_bits(reverse_bits(code, 5), 5);
    put_bits(x & ((1u << extra) - 1), extra);
  }
}

void GzipStreambuf::drain_bytes() {
  if (out_.empty()) return;
  sink_.write(reinterpret_cast<const char*>(out_.data()), static_cast<std::streamsize>(out_.size()));
  out_.clear();
}

void GzipStreambuf::compress_pending() {
  unsigned char* const data = window_.data();
  const std::size_t end = static_cast<std::size_t>(pptr() - reinterpret_cast<char*>(data));
  if (end > history_) {
    crc_ = crc32(crc_, data + history_, end - history_);
    total_in_ += end - history_;
    put_bits(0b010, 3);  // not the last block; fixed Huffman codes
    std::size_t i = history_;
    const auto insert = [&](std::size_t at) {
      const std::uint32_t h = hash4(data + at);
      const auto pos = static_cast<std::int64_t>(base_ + at);
      prev_[static_cast<std::size_t>(pos) % kWindow] = head_[h];
      head_[h] = pos;
    };
    while (i < end) {
      unsigned best_len = 0;
      std::size_t best_dist = 0;
      if (end - i >= kMinMatch) {
        const auto pos = static_cast<std::int64_t>(base_ + i);
        const auto limit = static_cast<unsigned>(std::min<std::size_t>(kMaxMatch, end - i));
        std::int64_t cand = head_[hash4(data + i)];
        for (int chain = 0; chain < kMaxChain && cand >= 0; ++chain) {
          // Past the window, or no longer in the buffer: older candidates are older still.
          if (pos - cand > static_cast<std::int64_t>(kWindow) || cand < static_cast<std::int64_t>(base_)) break;
          const unsigned char* a = data + (static_cast<std::uint64_t>(cand) - base_);
          const unsigned char* b = data + i;
          if (a[best_len] == b[best_len]) {  // cheap rejection of candidates that cannot be longer
            unsigned len = 0;
            while (len < limit && a[len] == b[len]) ++len;
            if (len > best_len) {
              best_len = len;
              best_dist = static_cast<std::size_t>(pos - cand);
              if (len >= kNiceMatch || len == limit) break;
            }
          }
          const std::int64_t next = prev_[static_cast<std::size_t>(cand) % kWindow];
          if (next >= cand) break;  // the slot was reused by a newer position: the chain ends here
          cand = next;
        }
      }
      if (best_len >= kMinMatch) {
        emit_match(best_len, static_cast<unsigned>(best_dist));
        for (std::size_t k = 0; k < best_len; ++k) {
          if (end - (i + k) >= kMinMatch) insert(i + k);
        }
        i += best_len;
      } else {
        put_symbol(data[i]);
        if (end - i >= kMinMatch) insert(i);
        ++i;
      }
    }
    put_symbol(256);  // end of block
  }
  // Keep the last 32 KiB as history for the next block's matches.
  const std::size_t keep = std::min(end, kWindow);
  std::memmove(data, data + (end - keep), keep);
  base_ += end - keep;
  history_ = keep;
  char* begin = reinterpret_cast<char*>(data);
  setp(begin + history_, begin + history_ + kChunk);
}

GzipStreambuf::int_type GzipStreambuf::overflow(int_type c) {
  if (finished_) return traits_type::eof();
  compress_pending();
  drain_bytes();
  if (!sink_) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

int GzipStreambuf::sync() {
  if (finished_) return sink_ ? 0 : -1;
  compress_pending();
  drain_bytes();
  sink_.flush();
  return sink_ ? 0 : -1;
}

bool GzipStreambuf::finish() {
  if (finished_) return static_cast<bool>(sink_);
  compress_pending();
  put_bits(0b011, 3);  // the last block: fixed codes, holding only its end
  put_symbol(256);
  if (bit_count_ > 0) put_bits(0, 8 - bit_count_);  // pad to a whole byte
  unsigned char footer[kGzipFooterBytes];
  const auto size = static_cast<std::uint32_t>(total_in_ & 0xffffffffu);  // ISIZE is the length mod 2^32
  for (int b = 0; b < 4; ++b) {
    footer[b] = static_cast<unsigned char>(crc_ >> (8 * b));
    footer[4 + b] = static_cast<unsigned char>(size >> (8 * b));
  }
  out_.insert(out_.end(), footer, footer + kGzipFooterBytes);
  finished_ = true;
  drain_bytes();
  sink_.flush();
  setp(nullptr, nullptr);
  return static_cast<bool>(sink_);
}

}  // namespace cs::report
