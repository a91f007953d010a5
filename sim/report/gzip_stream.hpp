#pragma once
#include <cstdint>
#include <ostream>
#include <streambuf>
#include <vector>

namespace cs::report {

/// An output stream buffer that writes what passes through it to `sink` as a gzip file (RFC 1952)
/// holding one deflate stream (RFC 1951), so that `--trace t.json.gz` streams a compressed trace
/// that ui.perfetto.dev and chrome://tracing open directly.
///
/// Why our own encoder: zlib is not among the project's dependencies, and a trace compresses well
/// with the simplest deflate there is. It finds repeats with LZ77 over the 32 KiB window (a hash
/// of four bytes, a bounded chain, greedy choice) and codes them with the fixed Huffman tables of
/// RFC 1951 section 3.2.6, so no code tables are built or sent. Input is taken in 128 KiB chunks,
/// one deflate block each: memory stays fixed (under 1 MiB) whatever the trace's size. The bytes
/// are the same on every run (no time stamp, no file name in the header).
class GzipStreambuf : public std::streambuf {
 public:
  explicit GzipStreambuf(std::ostream& sink);
  GzipStreambuf(const GzipStreambuf&) = delete;
  GzipStreambuf& operator=(const GzipStreambuf&) = delete;
  ~GzipStreambuf() override;  ///< finishes the file if `finish` was not called (never throws)

  /// Compresses what is pending, writes the last block and the trailer (CRC-32 and length), and
  /// flushes the sink. Further writes fail. Returns false if the sink reported an error.
  bool finish();

 protected:
  int_type overflow(int_type c) override;
  int sync() override;

 private:
  void compress_pending();  ///< codes the put area as one deflate block and slides the window
  void put_bits(std::uint32_t value, int count);
  void put_symbol(unsigned symbol);  ///< a literal/length symbol in the fixed code
  void emit_match(unsigned length, unsigned distance);
  void drain_bytes();  ///< whole bytes of the bit buffer go to `out_`, `out_` to the sink

  std::ostream& sink_;
  std::vector<unsigned char> window_;  ///< history (up to 32 KiB) then the chunk being filled
  std::size_t history_ = 0;            ///< bytes of history at the front of window_
  std::uint64_t base_ = 0;             ///< stream position of window_[0]
  std::vector<std::int64_t> head_;     ///< newest stream position per hash, -1 for none
  std::vector<std::int64_t> prev_;     ///< previous position with the same hash, by position mod 32 KiB
  std::vector<unsigned char> out_;     ///< compressed bytes not yet written
  std::uint64_t bits_ = 0;
  int bit_count_ = 0;
  std::uint32_t crc_ = 0;
  std::uint64_t total_in_ = 0;
  bool finished_ = false;
};

/// CRC-32 (ISO-HDLC, as gzip uses) of `n` bytes, continuing from `crc` (start with 0).
[[nodiscard]] std::uint32_t crc32(std::uint32_t crc, const unsigned char* data, std::size_t n);

}  // namespace cs::report
