// The trace compressor (sim/report/gzip_stream): any bytes, written in pieces whose size the first
// byte chooses, must decode (with the independent reference decoder of tests/support) to themselves.
#include <cstdint>
#include <sstream>
#include <string>

#include "sim/report/gzip_stream.hpp"
#include "tests/support/gunzip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + std::size_t{data[0]} * 97;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::ostringstream sink;
  cs::report::GzipStreambuf buf(sink);
  std::ostream out(&buf);
  for (std::size_t at = 0; at < text.size(); at += piece) {
    out.write(text.data() + at, static_cast<std::streamsize>(std::min(piece, text.size() - at)));
  }
  if (!buf.finish() || cs::test::gunzip(sink.str()) != text) __builtin_trap();
  return 0;
}
