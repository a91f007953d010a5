#pragma once
#include <string>
#include <string_view>

namespace cs {

/// True when `bytes` starts with the gzip magic bytes 1f 8b (RFC 1952, section 2.3.1). Says nothing about
/// whether the rest is well formed; gunzip checks that.
[[nodiscard]] bool is_gzip(std::string_view bytes);

/// Decodes a whole gzip file (RFC 1952): one or more concatenated members, each a DEFLATE stream (RFC 1951)
/// of stored, fixed-Huffman or dynamic-Huffman blocks, and returns the members' output joined in order.
/// Every header field (FTEXT, FHCRC, FEXTRA, FNAME, FCOMMENT) is read and the header CRC-16, CRC-32 and
/// ISIZE are checked. `file` only names the input in messages. Throws InputError(file, "", message) on
/// anything malformed: bad magic, unsupported method, reserved block type, bad Huffman code lengths,
/// distance too far back, truncated input, CRC-32 or ISIZE mismatch, or output beyond `max_output` bytes
/// (a decompression bomb: the output can reach about 1032 times the input, a 258-byte match per 2 bits).
/// Never reads outside `bytes` and never allocates much past `max_output`.
[[nodiscard]] std::string gunzip(std::string_view bytes, const std::string& file,
                                 std::size_t max_output = std::size_t{1} << 32);

}  // namespace cs
