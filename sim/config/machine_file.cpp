#include "sim/config/machine_file.hpp"

#include <filesystem>

#include "sim/config/cluster_file.hpp"
#include "sim/config/fabric_file.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/kernel_table_file.hpp"
#include "sim/config/profile_file.hpp"

namespace cs::config {

Box resolve_box(const Catalog& catalog, const std::string& file, const BoxRefs& refs) {
  Box b;
  const auto cpath = catalog.locate(CatalogKind::kCluster, refs.cluster, file, refs.cluster_at);
  b.cluster = parse_cluster(load(cpath), refs.cluster);
  // A cluster's own profile id that does not resolve is the cluster file's fault.
  const std::string id = refs.profile.empty() ? b.cluster.profile : refs.profile;
  const auto ppath = refs.profile.empty() ? catalog.locate(CatalogKind::kProfile, id, cpath, "/profile")
                                          : catalog.locate(CatalogKind::kProfile, id, file, refs.profile_at);
  b.profile = parse_profile(load(ppath), std::filesystem::path(ppath).stem().string());
  attach_kernel_tables(catalog, ppath, b.profile);
  if (!refs.fabric.empty())
    b.fabric = parse_fabric(load(catalog.locate(CatalogKind::kFabric, refs.fabric, file, refs.fabric_at)), refs.fabric);
  return b;
}

calib::HardwareProfile resolve_profile(const Catalog& catalog, const std::string& id_or_path, const std::string& file,
                                       const std::string& pointer) {
  const auto path = catalog.locate(CatalogKind::kProfile, id_or_path, file, pointer);
  auto p = parse_profile(load(path), std::filesystem::path(path).stem().string());
  attach_kernel_tables(catalog, path, p);
  return p;
}

}  // namespace cs::config
