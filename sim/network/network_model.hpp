#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/sim_time.hpp"
#include "sim/network/topology.hpp"

namespace cs::net {

enum class FlowId : std::uint32_t {};
[[nodiscard]] constexpr std::uint32_t index(FlowId f) { return static_cast<std::uint32_t>(f); }

inline constexpr double kUncapped = std::numeric_limits<double>::infinity();

/// The seam between the engine and a network model: flows (bytes on a route) start at a time and
/// the model says when each finishes. Implementations must be deterministic (ties by flow id).
/// Starts at one time are taken together: the model settles them (assigns rates) when it is next
/// asked for a completion, the loads or a later time.
class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  /// Starts a flow of `bytes` on `route` at `now`, never faster than `rate_cap` bytes/s.
  virtual void start(FlowId id, const Route& route, double bytes, double rate_cap, SimTime now) = 0;
  /// The earliest time an active flow finishes, if any is active.
  [[nodiscard]] virtual std::optional<SimTime> next_completion() = 0;
  /// Advances to `now`; returns the flows finished by then, in id order, and forgets them. The
  /// list is the model's own (no allocation per call), valid until the model is next called.
  virtual const std::vector<FlowId>& complete(SimTime now) = 0;
  /// Current load of every directed link in bytes/s (for utilisation counters).
  [[nodiscard]] virtual const std::vector<double>& link_loads() = 0;
  [[nodiscard]] virtual std::size_t active_flows() const = 0;
};

/// An active flow on a link: the flow and which hop of its route the link is.
struct LinkFlow {
  std::uint32_t flow;
  std::uint32_t hop;
};

/// One link's state, in one cache line: its load (bytes/s), the solver's scratch and its active
/// flows (in no particular order). Up to kInline flows sit in the line itself (a link inside a
/// node carries one flow at a time in a ring step); more move to the heap, as a vector's would.
/// Each event touches a few links among hundreds of thousands, so one line a link, not one per
/// field, is what the flow model's misses cost.
struct alignas(64) LinkEntry {
  static constexpr std::uint32_t kInline = 3;
  double load = 0.0;
  std::uint64_t mark = 0;  ///< the owning model's last search that reached the link
  std::uint32_t slot = 0;  ///< the link's index in that search's problem
  std::uint32_t size = 0;  ///< active flows

  LinkEntry() = default;
  LinkEntry(const LinkEntry&) = delete;
  LinkEntry& operator=(const LinkEntry&) = delete;
  LinkEntry(LinkEntry&& o) noexcept;
  LinkEntry& operator=(LinkEntry&&) = delete;
  ~LinkEntry() { delete[] heap_; }

  [[nodiscard]] LinkFlow* begin() { return heap_ ? heap_ : inline_; }
  [[nodiscard]] LinkFlow* end() { return begin() + size; }
  [[nodiscard]] LinkFlow& operator[](std::uint32_t k) { return begin()[k]; }
  void push_back(LinkFlow e) {
    if (size == (heap_ ? capacity_ : kInline)) grow();
    begin()[size++] = e;
  }
  void pop_back() { --size; }

 private:
  void grow();
  std::uint32_t capacity_ = 0;  ///< of heap_
  LinkFlow* heap_ = nullptr;    ///< the flows once more than kInline have been on the link
  LinkFlow inline_[kInline] = {};
};

/// Per-link state. Several models may share one when their flows use disjoint links, as the
/// parallel executor's partitions do (a node's links, the fabric's): each link is then touched by
/// one model only, and no model owns a copy of every link.
struct LinkState {
  explicit LinkState(std::size_t count) : links(count) {}
  std::vector<LinkEntry> links;
};

enum class NetworkModelKind { kFlow, kAnalytical };
[[nodiscard]] const char* network_model_name(NetworkModelKind k);

/// `flow`: max-min fair sharing of every link among the flows crossing it, recomputed over the
/// flows connected (through shared links, transitively) to the flows that start or end. `analytical`: each flow runs at
/// its route's bottleneck as if alone. `shared`: per-link state owned by the caller (null: the model keeps its own).
[[nodiscard]] std::unique_ptr<NetworkModel> make_network_model(NetworkModelKind kind, const Topology& topo,
                                                               LinkState* shared = nullptr);

}  // namespace cs::net
