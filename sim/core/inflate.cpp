#include "sim/core/inflate.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "sim/core/errors.hpp"

namespace cs {

namespace {

// The reflected CRC-32 polynomial of RFC 1952 section 8.
constexpr std::uint32_t kCrcPolynomial = 0xedb88320U;

// Slicing by 8: table k holds the CRC of a byte followed by k zero bytes, so eight input bytes fold into the
// CRC with eight independent lookups instead of eight dependent ones (output is checked at ~10 MB per run).
constexpr std::array<std::array<std::uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t n = 0; n < 256; ++n) {
    std::uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? kCrcPolynomial ^ (c >> 1) : c >> 1;
    t[0][n] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t n = 0; n < 256; ++n) t[k][n] = (t[k - 1][n] >> 8) ^ t[0][t[k - 1][n] & 0xffU];
  }
  return t;
}

constexpr auto kCrcTables = make_crc_tables();

std::uint32_t load_le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

std::uint64_t load_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) {
    std::uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r |= ((v >> (8 * i)) & 0xffU) << (8 * (7 - i));
    v = r;
  }
  return v;
}

// CRC-32 of `n` bytes at `p`, continuing from `crc` (0 for a fresh start).
std::uint32_t crc32(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  const auto& t = kCrcTables;
  std::uint32_t c = ~crc;
  while (n >= 8) {
    const std::uint32_t lo = c ^ load_le32(p);
    const std::uint32_t hi = load_le32(p + 4);
    c = t[7][lo & 0xffU] ^ t[6][(lo >> 8) & 0xffU] ^ t[5][(lo >> 16) & 0xffU] ^ t[4][lo >> 24] ^ t[3][hi & 0xffU] ^
        t[2][(hi >> 8) & 0xffU] ^ t[1][(hi >> 16) & 0xffU] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = t[0][(c ^ *p++) & 0xffU] ^ (c >> 8);
  return ~c;
}

// Huffman decoding tables.
// One table entry is a uint32:
//   bits 0-7   how many bits to drop for the code itself (within a subtable: the bits after the primary index)
//   bits 8-11  extra bits after the code (length or distance), or the index width of a subtable
//   bit  12    kSymbol: bits 16-31 are a literal byte or a code-length symbol
//   bit  13    kBase: bits 16-31 are a length or distance base, to which the extra bits are added
//   bit  14    kEnd: end of block
//   bit  15    kSubtable: bits 16-31 are the offset of a subtable indexed by the next bits
// An entry with none of bits 12-15 set is a bit pattern that no code uses (an incomplete code, or the symbols
// RFC 1951 reserves: lengths 286-287 and distances 30-31), so a zero-filled table rejects them by default.

constexpr std::uint32_t kSymbol = 1U << 12;
constexpr std::uint32_t kBase = 1U << 13;
constexpr std::uint32_t kEnd = 1U << 14;
constexpr std::uint32_t kSubtable = 1U << 15;

constexpr unsigned kMaxCodeBits = 15;  // RFC 1951 section 3.2.7.
constexpr unsigned kLitBits = 10;      // Primary index width: most literal/length codes of real data fit.
constexpr unsigned kDistBits = 8;
constexpr unsigned kCodeLengthBits = 7;  // Code-length codes are at most 7 bits: no subtables.

constexpr std::size_t kMaxMatch = 258;
// Match copies write 8 bytes at a time and may run up to 7 bytes past the match.
constexpr std::size_t kCopySlack = 8;

constexpr std::uint32_t entry_bits(std::uint32_t e) { return e & 0xffU; }
constexpr std::uint32_t entry_extra(std::uint32_t e) { return (e >> 8) & 0xfU; }
constexpr std::uint32_t entry_value(std::uint32_t e) { return e >> 16; }
constexpr std::uint64_t low_mask(std::uint32_t n) { return (std::uint64_t{1} << n) - 1; }

// RFC 1951 section 3.2.5: the base length and extra bits of length symbols 257-285.
constexpr std::array<std::uint16_t, 29> kLengthBase = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                                       31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr std::array<std::uint8_t, 29> kLengthExtra = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                                       2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
// RFC 1951 section 3.2.5: the base distance and extra bits of distance symbols 0-29.
constexpr std::array<std::uint16_t, 30> kDistBase = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,
                                                     33,   49,   65,   97,   129,  193,  257,  385,   513,   769,
                                                     1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr std::array<std::uint8_t, 30> kDistExtra = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                                     6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
// RFC 1951 section 3.2.7: the order in which code-length code lengths are sent.
constexpr std::array<std::uint8_t, 19> kCodeLengthOrder = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                                           11, 4,  12, 3, 13, 2, 14, 1, 15};

// What each symbol of an alphabet decodes to, less its code length.
std::uint32_t literal_length_payload(std::size_t symbol) {
  if (symbol < 256) return kSymbol | static_cast<std::uint32_t>(symbol) << 16;
  if (symbol == 256) return kEnd;
  const std::size_t i = symbol - 257;
  if (i >= kLengthBase.size()) return 0;
  return kBase | static_cast<std::uint32_t>(kLengthExtra[i]) << 8 | static_cast<std::uint32_t>(kLengthBase[i]) << 16;
}

std::uint32_t distance_payload(std::size_t symbol) {
  if (symbol >= kDistBase.size()) return 0;
  return kBase | static_cast<std::uint32_t>(kDistExtra[symbol]) << 8 |
         static_cast<std::uint32_t>(kDistBase[symbol]) << 16;
}

std::uint32_t code_length_payload(std::size_t symbol) { return kSymbol | static_cast<std::uint32_t>(symbol) << 16; }

// Fills `table` for the canonical Huffman code with these code lengths (RFC 1951 section 3.2.2): a primary table
// of 2^primary_bits entries indexed by the next input bits, and a subtable for each primary index that begins
// longer codes. Codes are sent most significant bit first but the bit buffer yields the least significant bit
// first, so each code is indexed bit-reversed. Returns false when the lengths over-subscribe the code space;
// an incomplete code is accepted, its unused patterns left as zero (invalid) entries.
bool build_table(std::span<const std::uint8_t> lengths, std::uint32_t (*payload)(std::size_t), unsigned primary_bits,
                 std::vector<std::uint32_t>& table) {
  std::array<std::uint32_t, kMaxCodeBits + 1> count{};
  for (const std::uint8_t len : lengths) ++count[len];
  count[0] = 0;
  std::int64_t left = 1;
  for (unsigned len = 1; len <= kMaxCodeBits; ++len) {
    left = 2 * left - static_cast<std::int64_t>(count[len]);
    if (left < 0) return false;
  }
  std::array<std::uint32_t, kMaxCodeBits + 1> next{};
  std::uint32_t code = 0;
  for (unsigned len = 1; len <= kMaxCodeBits; ++len) {
    code = (code + count[len - 1]) << 1;
    next[len] = code;
  }

  // Reversed code of every symbol, and the widest subtable each primary index needs.
  std::array<std::uint16_t, 320> reversed{};
  const std::size_t primary_size = std::size_t{1} << primary_bits;
  std::array<std::uint8_t, std::size_t{1} << kLitBits> sub_bits{};
  for (std::size_t s = 0; s < lengths.size(); ++s) {
    const unsigned len = lengths[s];
    if (len == 0) continue;
    const std::uint32_t c = next[len]++;
    std::uint32_t r = 0;
    for (unsigned i = 0; i < len; ++i) r |= ((c >> i) & 1U) << (len - 1 - i);
    reversed[s] = static_cast<std::uint16_t>(r);
    if (len > primary_bits) {
      auto& w = sub_bits[r & (primary_size - 1)];
      w = std::max(w, static_cast<std::uint8_t>(len - primary_bits));
    }
  }

  table.assign(primary_size, 0);
  for (std::size_t p = 0; p < primary_size; ++p) {
    if (sub_bits[p] == 0) continue;
    // At most 2^10 subtables of at most 2^5 entries (or 2^8 of 2^7): offsets stay below 2^16.
    table[p] = kSubtable | static_cast<std::uint32_t>(sub_bits[p]) << 8 | primary_bits |
               static_cast<std::uint32_t>(table.size()) << 16;
    table.resize(table.size() + (std::size_t{1} << sub_bits[p]), 0);
  }

  for (std::size_t s = 0; s < lengths.size(); ++s) {
    const unsigned len = lengths[s];
    if (len == 0) continue;
    const std::uint32_t r = reversed[s];
    const std::uint32_t pay = payload(s);
    if (len <= primary_bits) {
      for (std::size_t i = r; i < primary_size; i += std::size_t{1} << len) table[i] = pay | len;
    } else {
      const std::uint32_t head = table[r & (primary_size - 1)];
      const std::size_t offset = entry_value(head);
      const std::size_t width = std::size_t{1} << entry_extra(head);
      const unsigned rest = len - primary_bits;
      for (std::size_t i = r >> primary_bits; i < width; i += std::size_t{1} << rest) table[offset + i] = pay | rest;
    }
  }
  return true;
}

[[noreturn]] void fail(const std::string& file, std::string message) { throw InputError(file, "", std::move(message)); }

[[noreturn]] void fail_truncated(const std::string& file) { fail(file, "gzip data is truncated"); }

// DEFLATE's bit stream, least significant bit first (RFC 1951 section 3.1.1), through a 64-bit buffer.
// Invariants: `count` < 64 bits of `bits` are input not yet consumed, taken from the bytes before `pos`; the bits
// above `count` are either zero or copies of the input bytes from `pos` on, so peeking past `count` is harmless and
// only drop() has to check that the bits really exist.
struct BitReader {
  const unsigned char* data;
  std::size_t size;
  std::size_t pos;
  std::uint64_t bits;
  unsigned count;
  const std::string* file;

  // Tops the buffer up to at least 56 bits, or to the end of the input. Away from the end, one unaligned load
  // adds as many whole bytes as fit.
  void refill() {
    if (size - pos >= 8) {
      bits |= load_le64(data + pos) << count;
      pos += (63 - count) >> 3;
      count |= 56;
    } else {
      while (count < 56 && pos < size) {
        bits |= static_cast<std::uint64_t>(data[pos++]) << count;
        count += 8;
      }
    }
  }

  void drop(std::uint32_t n) {
    if (n > count) fail_truncated(*file);
    bits >>= n;
    count -= n;
  }

  // Reads `n` <= 32 bits (after a refill that provides them).
  std::uint32_t take(std::uint32_t n) {
    const auto v = static_cast<std::uint32_t>(bits & low_mask(n));
    drop(n);
    return v;
  }

  // Skips to the next byte boundary and returns the position of the first unconsumed byte, emptying the buffer
  // so that the caller may read bytes directly from there.
  std::size_t align_to_byte() {
    drop(count & 7U);
    pos -= count >> 3;
    bits = 0;
    count = 0;
    return pos;
  }
};

class Inflater {
 public:
  Inflater(std::string_view in, const std::string& file, std::size_t max_output)
      : data_(reinterpret_cast<const unsigned char*>(in.data())), size_(in.size()), file_(file), max_out_(max_output) {
    // ISIZE of the last member is a size hint only: it is untrusted, so never reserve more than 64 times the input.
    std::size_t hint = 0;
    if (size_ >= 18) hint = load_le32(data_ + size_ - 4);
    hint = std::min({hint, size_ * 64, max_out_});
    out_.resize(hint + kMaxMatch + kCopySlack);
  }

  std::string run() {
    std::size_t pos = 0;
    do pos = member(pos);
    while (pos < size_);
    check_limit();
    out_.resize(op_);
    return std::move(out_);
  }

 private:
  // Decodes the member starting at byte `pos`, checks its trailer and returns the position after it.
  std::size_t member(std::size_t pos) {
    const bool first = pos == 0;
    if (size_ - pos < 2 || data_[pos] != 0x1f || data_[pos + 1] != 0x8b) {
      if (first) fail(file_, "not a gzip file (expected the magic bytes 1f 8b)");
      fail(file_, "trailing data after gzip member at byte " + std::to_string(pos) +
                      " is not another member (expected the magic bytes 1f 8b)");
    }
    pos = header(pos);
    const std::size_t start = op_;
    BitReader br{data_, size_, pos, 0, 0, &file_};
    bool last = false;
    while (!last) {
      br.refill();
      last = br.take(1) == 1;
      switch (br.take(2)) {
        case 0: stored(br); break;
        case 1: fixed(br, start); break;
        case 2: dynamic(br, start); break;
        default: fail(file_, "deflate block has the reserved type 3 (expected 0 stored, 1 fixed or 2 dynamic)");
      }
    }
    pos = br.align_to_byte();
    if (size_ - pos < 8) fail_truncated(file_);
    const std::uint32_t crc = crc32(0, reinterpret_cast<const unsigned char*>(out_.data()) + start, op_ - start);
    if (load_le32(data_ + pos) != crc) fail(file_, "gzip CRC-32 mismatch: the file is corrupt");
    const std::uint32_t isize = load_le32(data_ + pos + 4);
    if (isize != static_cast<std::uint32_t>(op_ - start)) {
      fail(file_, "gzip ISIZE mismatch: the trailer says " + std::to_string(isize) + " bytes (mod 2^32) but " +
                      std::to_string(op_ - start) + " were decoded");
    }
    return pos + 8;
  }

  // Reads the member header at `pos` (RFC 1952 section 2.3) and returns where the compressed blocks begin.
  std::size_t header(std::size_t pos) {
    const std::size_t begin = pos;
    auto need = [&](std::size_t n) {
      if (size_ - pos < n) fail_truncated(file_);
    };
    need(10);
    const unsigned method = data_[pos + 2];
    const unsigned flags = data_[pos + 3];
    if (method != 8) {
      fail(file_, "unsupported gzip compression method " + std::to_string(method) + " (expected 8, deflate)");
    }
    if ((flags & 0xe0U) != 0) fail(file_, "gzip header has reserved flag bits set (expected them to be 0)");
    pos += 10;
    if ((flags & 0x04U) != 0) {  // FEXTRA
      need(2);
      const std::size_t xlen = static_cast<std::size_t>(data_[pos]) | static_cast<std::size_t>(data_[pos + 1]) << 8;
      pos += 2;
      need(xlen);
      pos += xlen;
    }
    for (const unsigned flag : {0x08U, 0x10U}) {  // FNAME, FCOMMENT: zero-terminated
      if ((flags & flag) == 0) continue;
      const void* zero = std::memchr(data_ + pos, 0, size_ - pos);
      if (zero == nullptr) fail_truncated(file_);
      pos = static_cast<std::size_t>(static_cast<const unsigned char*>(zero) - data_) + 1;
    }
    if ((flags & 0x02U) != 0) {  // FHCRC: the low 16 bits of the CRC-32 of the header so far
      need(2);
      const std::uint32_t want = static_cast<std::uint32_t>(data_[pos]) | static_cast<std::uint32_t>(data_[pos + 1])
                                                                              << 8;
      if ((crc32(0, data_ + begin, pos - begin) & 0xffffU) != want) {
        fail(file_, "gzip header CRC-16 mismatch: the file is corrupt");
      }
      pos += 2;
    }
    return pos;
  }

  // A decompression bomb stops once its output passes the caller's bound (never allocating past it).
  void check_limit() const {
    if (op_ > max_out_) {
      fail(file_, "gzip data decompresses to more than " + std::to_string(max_out_) +
                      " bytes, the input size limit (clustersim --max-file-size BYTES raises it)");
    }
  }
  [[nodiscard]] std::size_t capped(std::size_t want) const {
    return std::min(want, max_out_ + std::size_t{kMaxMatch} + std::size_t{kCopySlack} + 1);
  }

  // Makes room for at least kMaxMatch + kCopySlack more bytes after op_.
  void grow() {
    check_limit();
    out_.resize(std::max(capped(out_.size() * 2), op_ + kMaxMatch + kCopySlack));
  }

  // RFC 1951 section 3.2.4.
  void stored(BitReader& br) {
    std::size_t pos = br.align_to_byte();
    if (size_ - pos < 4) fail_truncated(file_);
    const std::uint32_t len = static_cast<std::uint32_t>(data_[pos]) | static_cast<std::uint32_t>(data_[pos + 1]) << 8;
    const std::uint32_t nlen = static_cast<std::uint32_t>(data_[pos + 2]) | static_cast<std::uint32_t>(data_[pos + 3])
                                                                                << 8;
    if ((len ^ 0xffffU) != nlen) {
      fail(file_, "stored block length check failed (expected NLEN to be the one's complement of LEN)");
    }
    pos += 4;
    if (size_ - pos < len) fail_truncated(file_);
    if (out_.size() - op_ < len + kMaxMatch + kCopySlack) {
      check_limit();
      if (op_ + len > max_out_) {
        op_ += len;
        check_limit();
      }
      out_.resize(std::max(capped(out_.size() * 2), op_ + len + kMaxMatch + kCopySlack));
    }
    std::memcpy(out_.data() + op_, data_ + pos, len);
    op_ += len;
    br.pos = pos + len;
  }

  // RFC 1951 section 3.2.6.
  void fixed(BitReader& br, std::size_t start) {
    if (fixed_lit_.empty()) {
      std::array<std::uint8_t, 288> lit{};
      std::fill(lit.begin(), lit.begin() + 144, std::uint8_t{8});
      std::fill(lit.begin() + 144, lit.begin() + 256, std::uint8_t{9});
      std::fill(lit.begin() + 256, lit.begin() + 280, std::uint8_t{7});
      std::fill(lit.begin() + 280, lit.end(), std::uint8_t{8});
      std::array<std::uint8_t, 32> dist{};
      dist.fill(5);
      build_table(lit, literal_length_payload, kLitBits, fixed_lit_);
      build_table(dist, distance_payload, kDistBits, fixed_dist_);
    }
    codes(br, start, fixed_lit_.data(), fixed_dist_.data());
  }

  // RFC 1951 section 3.2.7.
  void dynamic(BitReader& br, std::size_t start) {
    br.refill();
    const std::uint32_t hlit = br.take(5) + 257;
    const std::uint32_t hdist = br.take(5) + 1;
    const std::uint32_t hclen = br.take(4) + 4;
    if (hlit > 286) {
      fail(file_, "bad Huffman code lengths: a dynamic block declares " + std::to_string(hlit) +
                      " literal/length codes (expected at most 286)");
    }
    std::array<std::uint8_t, 19> cl_lengths{};
    br.refill();  // 19 * 3 = 57 bits may exceed one refill's 56.
    for (std::uint32_t i = 0; i < hclen; ++i) {
      if (i == 16) br.refill();
      cl_lengths[kCodeLengthOrder[i]] = static_cast<std::uint8_t>(br.take(3));
    }
    if (!build_table(cl_lengths, code_length_payload, kCodeLengthBits, cl_table_)) {
      fail(file_, "bad Huffman code lengths: the code-length code is over-subscribed");
    }

    std::array<std::uint8_t, 286 + 32> lengths{};
    const std::uint32_t total = hlit + hdist;
    std::uint32_t n = 0;
    while (n < total) {
      br.refill();
      const std::uint32_t e = cl_table_[br.bits & low_mask(kCodeLengthBits)];
      if ((e & kSymbol) == 0) fail(file_, "bad Huffman code lengths: a code-length code is not in the code");
      br.drop(entry_bits(e));
      const std::uint32_t sym = entry_value(e);
      if (sym < 16) {
        lengths[n++] = static_cast<std::uint8_t>(sym);
        continue;
      }
      std::uint8_t value = 0;
      std::uint32_t repeat = 0;
      if (sym == 16) {
        if (n == 0) fail(file_, "bad Huffman code lengths: a repeat code comes before any length");
        value = lengths[n - 1];
        repeat = 3 + br.take(2);
      } else if (sym == 17) {
        repeat = 3 + br.take(3);
      } else {
        repeat = 11 + br.take(7);
      }
      if (repeat > total - n) fail(file_, "bad Huffman code lengths: a repeat runs past the last code");
      std::fill_n(lengths.begin() + n, repeat, value);
      n += repeat;
    }
    if (lengths[256] == 0) fail(file_, "bad Huffman code lengths: the block has no end-of-block code");
    if (!build_table(std::span(lengths).first(hlit), literal_length_payload, kLitBits, lit_table_)) {
      fail(file_, "bad Huffman code lengths: the literal/length code is over-subscribed");
    }
    if (!build_table(std::span(lengths).subspan(hlit, hdist), distance_payload, kDistBits, dist_table_)) {
      fail(file_, "bad Huffman code lengths: the distance code is over-subscribed");
    }
    codes(br, start, lit_table_.data(), dist_table_.data());
  }

  // Decodes literal/length and distance codes up to the end of the block (RFC 1951 section 3.2.5). The state
  // lives in locals so that the compiler can keep it in registers: stores through the char output could alias
  // members.
  void codes(BitReader& reader, std::size_t start, const std::uint32_t* lit, const std::uint32_t* dist) {
    BitReader br = reader;
    char* out = out_.data();
    std::size_t op = op_;
    std::size_t room = out_.size() - kMaxMatch - kCopySlack;
    for (;;) {
      // One refill gives at least 56 bits, enough for the longest length code with its extra bits (15 + 5) and
      // distance code with its extra bits (15 + 13); near the end of input drop() reports what is missing.
      br.refill();
      if (op > room) {
        op_ = op;
        grow();
        out = out_.data();
        room = out_.size() - kMaxMatch - kCopySlack;
      }
      std::uint32_t e = lit[br.bits & low_mask(kLitBits)];
      if ((e & kSubtable) != 0) {
        br.drop(kLitBits);
        e = lit[entry_value(e) + (br.bits & low_mask(entry_extra(e)))];
      }
      if ((e & kSymbol) != 0) {
        br.drop(entry_bits(e));
        out[op++] = static_cast<char>(entry_value(e));
        // A literal uses at most 15 of the 56 refilled bits, so a second one that fits the primary table needs no
        // refill: this shortens the dependency chain through the bit buffer on literal-heavy data.
        e = lit[br.bits & low_mask(kLitBits)];
        if ((e & kSymbol) != 0) {
          br.drop(entry_bits(e));
          out[op++] = static_cast<char>(entry_value(e));
        }
        continue;
      }
      if ((e & kBase) == 0) {
        if ((e & kEnd) == 0) fail(file_, "deflate data uses a literal/length code that is not in the code");
        br.drop(entry_bits(e));
        break;
      }
      const std::size_t length =
          entry_value(e) + static_cast<std::size_t>((br.bits >> entry_bits(e)) & low_mask(entry_extra(e)));
      br.drop(entry_bits(e) + entry_extra(e));

      std::uint32_t d = dist[br.bits & low_mask(kDistBits)];
      if ((d & kSubtable) != 0) {
        br.drop(kDistBits);
        d = dist[entry_value(d) + (br.bits & low_mask(entry_extra(d)))];
      }
      if ((d & kBase) == 0) fail(file_, "deflate data uses a distance code that is not in the code");
      const std::size_t distance =
          entry_value(d) + static_cast<std::size_t>((br.bits >> entry_bits(d)) & low_mask(entry_extra(d)));
      br.drop(entry_bits(d) + entry_extra(d));
      if (distance > op - start) {
        fail(file_, "deflate distance " + std::to_string(distance) + " is too far back (only " +
                        std::to_string(op - start) + (op - start == 1 ? " byte" : " bytes") + " decoded so far)");
      }

      char* dst = out + op;
      const char* src = dst - distance;
      if (distance >= 8) {
        // Each 8-byte chunk reads only bytes already written, since the source trails by at least 8.
        for (std::size_t i = 0; i < length; i += 8) std::memcpy(dst + i, src + i, 8);
      } else if (distance == 1) {
        std::memset(dst, *src, length);
      } else {
        for (std::size_t i = 0; i < length; ++i) dst[i] = src[i];
      }
      op += length;
    }
    op_ = op;
    reader = br;
  }

  const unsigned char* data_;
  std::size_t size_;
  const std::string& file_;
  std::size_t max_out_;
  std::string out_;
  std::size_t op_ = 0;
  std::vector<std::uint32_t> lit_table_;
  std::vector<std::uint32_t> dist_table_;
  std::vector<std::uint32_t> cl_table_;
  std::vector<std::uint32_t> fixed_lit_;
  std::vector<std::uint32_t> fixed_dist_;
};

}  // namespace

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(std::string_view bytes, const std::string& file, std::size_t max_output) {
  return Inflater(bytes, file, max_output).run();
}

}  // namespace cs
