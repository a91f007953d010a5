#pragma once
#include <compare>
#include <cstdint>

namespace cs {

/// The end of simulated time, in seconds (about 104 days): far beyond any step or serving run,
/// and with picosecond resolution still well inside an int64 and a double's exact integers.
/// Inputs are range-checked against it where they are read.
inline constexpr double kMaxSimSeconds = 9.0e6;

/// Simulated time: a strong count of picoseconds. Integer so that event order never depends on
/// floating-point rounding; doubles become SimTime in exactly one place (`SimTime::from_seconds`).
struct SimTime {
  std::int64_t ps = 0;

  /// Rounds a duration in seconds to the nearest picosecond (the only double -> time conversion).
  /// A negative or non-finite duration is a bug (assert); one at or past kMaxSimSeconds is a run
  /// too long to simulate: InfeasibleError, with the figure.
  [[nodiscard]] static SimTime from_seconds(double seconds);
  [[nodiscard]] double seconds() const { return static_cast<double>(ps) * 1e-12; }

  friend constexpr SimTime operator+(SimTime a, SimTime b) { return {a.ps + b.ps}; }
  friend constexpr SimTime operator-(SimTime a, SimTime b) { return {a.ps - b.ps}; }
  constexpr SimTime& operator+=(SimTime o) {
    ps += o.ps;
    return *this;
  }
  friend constexpr auto operator<=>(SimTime, SimTime) = default;
  friend constexpr bool operator==(SimTime, SimTime) = default;
};

}  // namespace cs
