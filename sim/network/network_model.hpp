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
class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  /// Starts a flow of `bytes` on `route` at `now`, never faster than `rate_cap` bytes/s.
  virtual void start(FlowId id, const Route& route, double bytes, double rate_cap, SimTime now) = 0;
  /// The earliest time an active flow finishes, if any is active.
  [[nodiscard]] virtual std::optional<SimTime> next_completion() const = 0;
  /// Advances to `now`; returns the flows finished by then, in id order, and forgets them.
  virtual std::vector<FlowId> complete(SimTime now) = 0;
  /// Current load of every directed link in bytes/s (for utilisation counters).
  [[nodiscard]] virtual const std::vector<double>& link_loads() const = 0;
  [[nodiscard]] virtual std::size_t active_flows() const = 0;
};

/// Per-link state (load in bytes/s, active flows). Several models may share one when their flows
/// use disjoint links, as the parallel executor's partitions do (a node's links, the fabric's):
/// each link is then touched by one model only, and no model owns a copy of every link.
struct LinkState {
  explicit LinkState(std::size_t links) : loads(links, 0.0), flows(links) {}
  std::vector<double> loads;
  std::vector<std::vector<std::uint32_t>> flows;  ///< active flows on each link, in start order
};

enum class NetworkModelKind { kFlow, kAnalytical };
[[nodiscard]] const char* network_model_name(NetworkModelKind k);

/// `flow`: max-min fair sharing of every link among the flows crossing it, recomputed whenever a
/// flow starts or ends. `analytical`: each flow runs at its route's bottleneck as if alone.
/// `shared`: per-link state owned by the caller (null: the model keeps its own).
[[nodiscard]] std::unique_ptr<NetworkModel> make_network_model(NetworkModelKind kind, const Topology& topo,
                                                               LinkState* shared = nullptr);

}  // namespace cs::net
