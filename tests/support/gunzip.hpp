#pragma once
#include <string>

namespace cs::test {

/// Decodes a gzip file holding one deflate stream of stored and fixed-Huffman blocks (what
/// report::GzipStreambuf writes), checking the header, the CRC-32 and the length. A reference
/// written from RFC 1951/1952 alone, apart from the encoder, so a round trip tests both ways;
/// throws std::runtime_error saying what is wrong. Dynamic-Huffman blocks are refused: the encoder
/// never writes them (tools/test also checks its files with the system's gzip).
[[nodiscard]] std::string gunzip(const std::string& file);

}  // namespace cs::test
