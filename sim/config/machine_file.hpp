#pragma once
#include <optional>
#include <string>

#include "calibration/profile/hardware_profile.hpp"
#include "sim/config/catalog.hpp"
#include "sim/network/cluster_spec.hpp"
#include "sim/network/fabric_spec.hpp"

namespace cs::config {

/// A box and what it runs on, resolved from catalog ids or paths: the cluster (one node), its
/// GPU profile (the cluster's own unless another is named) and, for several nodes, the fabric.
/// The one place every command resolves hardware (scenarios, `collective`, validation cases).
struct Box {
  net::ClusterSpec cluster;
  calib::HardwareProfile profile;
  std::optional<net::FabricSpec> fabric;
};

/// What to resolve, and where each reference came from in `file` (a JSON pointer, or a flag when
/// `file` is "command line"), so an unknown id is reported where the user wrote it.
struct BoxRefs {
  std::string cluster, profile, fabric;  ///< profile empty: the cluster's; fabric empty: one node
  std::string cluster_at = "/cluster", profile_at = "/profile", fabric_at = "/fabric";
};

[[nodiscard]] Box resolve_box(const Catalog& catalog, const std::string& file, const BoxRefs& refs);

/// One hardware profile by id or path, its kernel tables attached (the unknown id reported at
/// `file` / `pointer`).
[[nodiscard]] calib::HardwareProfile resolve_profile(const Catalog& catalog, const std::string& id_or_path,
                                                     const std::string& file, const std::string& pointer);

}  // namespace cs::config
