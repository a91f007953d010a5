#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>

#include "sim/report/gzip_stream.hpp"
#include "sim/report/trace_writer.hpp"
#include "tests/support/gunzip.hpp"

using cs::report::GzipStreambuf;

namespace {

/// `data` through the encoder, written in pieces of `piece` bytes (0 = in one write).
std::string gzip(const std::string& data, std::size_t piece = 0) {
  std::ostringstream sink;
  GzipStreambuf buf(sink);
  std::ostream out(&buf);
  if (piece == 0) piece = data.size() + 1;
  for (std::size_t at = 0; at < data.size(); at += piece)
    out.write(data.data() + at, static_cast<std::streamsize>(std::min(piece, data.size() - at)));
  out.flush();
  REQUIRE(buf.finish());
  return sink.str();
}

std::string random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen() & 0xffu);
  return s;
}

}  // namespace

TEST_CASE("gzip: CRC-32 is gzip's (the check value of the catalogue of CRC algorithms)") {
  const std::string nine = "123456789";
  CHECK(cs::report::crc32(0, reinterpret_cast<const unsigned char*>(nine.data()), nine.size()) == 0xcbf43926u);
  // Continued over two calls it is the same as over one.
  const auto* p = reinterpret_cast<const unsigned char*>(nine.data());
  CHECK(cs::report::crc32(cs::report::crc32(0, p, 4), p + 4, 5) == 0xcbf43926u);
}

TEST_CASE("gzip: an empty stream is the header, one empty fixed block and a zero trailer, byte for byte") {
  const std::string z = gzip("");
  // 10-byte header; final fixed block with only its end code: bits 1,10 then seven 0s -> 03 00.
  const std::string expected("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00", 20);
  CHECK(z == expected);
  CHECK(cs::test::gunzip(z).empty());
}

TEST_CASE("gzip: round trips through an independent decoder, at every edge of the window and the blocks") {
  const std::string rnd = random_bytes(70'000, 7);
  struct Case {
    const char* what;
    std::string data;
  };
  std::string trace_like;
  for (int i = 0; i < 20'000; ++i) {
    trace_like += "{\"name\":\"layer.fwd\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":" + std::to_string(3416 + 411 * i) +
                  ".005,\"dur\":410.6,\"pid\":" + std::to_string(i % 8) +
                  ",\"tid\":0,\"args\":{\"layer\":" + std::to_string(i / 8 % 32) + "}},\n";
  }
  const Case cases[] = {
      {"one byte", "a"},
      {"three bytes (shorter than a match)", "abc"},
      {"incompressible bytes across a block boundary", random_bytes(300'000, 1)},
      {"one byte repeated: overlapping matches at distance 1", std::string(1'000'000, 'x')},
      {"a repeat at exactly the largest distance (32768)", rnd.substr(0, 32'768) + rnd.substr(0, 32'768)},
      {"a repeat one byte past the largest distance", rnd.substr(0, 32'769) + rnd.substr(0, 32'769)},
      {"a chunk boundary in the middle of a repeat",
       std::string(131'000, 'q') + rnd.substr(0, 5'000) + std::string(9'000, 'q')},
      {"trace-like JSON", trace_like},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    for (std::size_t piece : {std::size_t{0}, std::size_t{1}, std::size_t{4'093}, std::size_t{65'536}}) {
      if (piece == 1 && c.data.size() > 200'000) continue;  // byte by byte only where it is quick
      INFO("written in pieces of " << piece);
      const std::string z = gzip(c.data, piece);
      CHECK(cs::test::gunzip(z) == c.data);
      CHECK(z == gzip(c.data));  // how it was written in pieces does not change the bytes
    }
  }
  // Compression where it should happen, and bounded growth where it cannot: a fixed code spends
  // at most 9 bits on a literal, so incompressible input grows by at most 1/8 (plus headers).
  CHECK(gzip(trace_like).size() * 8 < trace_like.size());
  CHECK(gzip(std::string(1'000'000, 'x')).size() < 10'000);
  const std::string noise = random_bytes(300'000, 1);
  CHECK(gzip(noise).size() < noise.size() + noise.size() / 8 + 64);
}

TEST_CASE("gzip: a damaged file is refused by the decoder, so the round trips above can fail") {
  std::string z = gzip("the quick brown fox jumps over the lazy dog, the quick brown fox");
  std::string crc = z;
  crc[crc.size() - 6] = static_cast<char>(crc[crc.size() - 6] ^ 1);
  CHECK_THROWS(cs::test::gunzip(crc));
  std::string body = z;
  body[12] = static_cast<char>(body[12] ^ 0x10);
  CHECK_THROWS(cs::test::gunzip(body));
  CHECK_THROWS(cs::test::gunzip(z.substr(0, z.size() - 1)));
}

TEST_CASE("gzip: a trace written through it decodes to the plain trace's bytes") {
  const auto write = [](std::ostream& out) {
    cs::report::TraceWriter w(out);
    w.process_name(0, "GPU 0");
    for (int i = 0; i < 5'000; ++i) {
      w.span("layer.fwd", "forward", cs::SimTime{i * 1'000'000LL}, cs::SimTime{i * 1'000'000LL + 700'000}, i % 8, 0);
    }
    w.finish("t.json");
  };
  std::ostringstream plain;
  write(plain);
  std::ostringstream sink;
  GzipStreambuf buf(sink);
  std::ostream gz(&buf);
  write(gz);
  REQUIRE(buf.finish());
  CHECK(cs::test::gunzip(sink.str()) == plain.str());
  CHECK(sink.str().size() * 5 < plain.str().size());
}

TEST_CASE("gzip: writing after finish fails rather than producing a corrupt file") {
  std::ostringstream sink;
  GzipStreambuf buf(sink);
  std::ostream out(&buf);
  out << "abc";
  REQUIRE(buf.finish());
  const std::string done = sink.str();
  out << std::string(200'000, 'z') << std::flush;
  CHECK_FALSE(out.good());
  CHECK(sink.str() == done);
  CHECK(cs::test::gunzip(done) == "abc");
}
