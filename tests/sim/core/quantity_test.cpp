#include <doctest/doctest.h>

#include "sim/core/quantity.hpp"
#include "sim/core/sim_time.hpp"

using cs::Dimension;
using cs::parse_quantity;

TEST_CASE("quantities parse to SI units with decimal rates and binary capacities") {
  CHECK(parse_quantity("450 GB/s", Dimension::kBandwidth).value == doctest::Approx(450e9));
  CHECK(parse_quantity("400 Gb/s", Dimension::kBandwidth).value == doctest::Approx(50e9));
  CHECK(parse_quantity("80 GiB", Dimension::kBytes).value == doctest::Approx(80.0 * 1073741824.0));
  CHECK(parse_quantity("2.5 us", Dimension::kTime).value == doctest::Approx(2.5e-6));
  CHECK(parse_quantity("989.4 TFLOP/s", Dimension::kFlopRate).value == doctest::Approx(989.4e12));
  CHECK(parse_quantity("1G", Dimension::kBytes).value == doctest::Approx(1073741824.0));
}

TEST_CASE("a quantity with a bare number, a wrong dimension or an unknown unit is rejected with the expectation") {
  CHECK(parse_quantity("450", Dimension::kBandwidth).error ==
        "expected a bandwidth such as \"450 GB/s\" or \"400 Gb/s\"; got \"450\" (a bare number needs a unit)");
  CHECK(parse_quantity("450 us", Dimension::kBandwidth).error.find("wrong dimension") != std::string::npos);
  CHECK(parse_quantity("450 furlongs", Dimension::kBandwidth).error.find("unknown unit 'furlongs'") !=
        std::string::npos);
  CHECK_FALSE(parse_quantity("fast", Dimension::kBandwidth).error.empty());
}

TEST_CASE("SimTime rounds seconds to the nearest picosecond, once") {
  CHECK(cs::SimTime::from_seconds(1e-6).ps == 1000000);
  CHECK(cs::SimTime::from_seconds(1.4e-12).ps == 1);
  CHECK(cs::SimTime::from_seconds(1.6e-12).ps == 2);
  CHECK((cs::SimTime{5} + cs::SimTime{7}).ps == 12);
}

TEST_CASE("numbers print in shortest round-trip form") {
  CHECK(cs::shortest(0.1) == "0.1");
  CHECK(cs::shortest(1e-6) == "1e-06");
  CHECK(cs::fixed(2.345, 1) == "2.3");
  CHECK(cs::human_bytes(1536.0 * 1024 * 1024) == "1.50 GiB");
}

TEST_CASE("csv_cell quotes a cell only when it holds a comma, a quote or a line break (RFC 4180)") {
  CHECK(cs::csv_cell("TP8 x DP2") == "TP8 x DP2");
  CHECK(cs::csv_cell("a,b") == "\"a,b\"");
  CHECK(cs::csv_cell("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(cs::csv_cell("two\nlines") == "\"two\nlines\"");
}
