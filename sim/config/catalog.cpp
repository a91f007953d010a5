#include "sim/config/catalog.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>

#include "sim/config/json_doc.hpp"
#include "sim/config/kernel_table_file.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"

namespace cs::config {

namespace fs = std::filesystem;

const char* kind_name(CatalogKind kind) {
  switch (kind) {
    case CatalogKind::kModel: return "model";
    case CatalogKind::kProfile: return "profile";
    case CatalogKind::kCluster: return "cluster";
    case CatalogKind::kOffer: return "offer";
    case CatalogKind::kFabric: return "fabric";
    case CatalogKind::kEngine: return "engine";
  }
  return "item";
}

/// The kernel-table folders a catalog has opened, by path.
struct Catalog::KernelFolders {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const calib::KernelTableSource>> open;
};

Catalog::Catalog(std::string root) : root_(std::move(root)), kernel_folders_(std::make_shared<KernelFolders>()) {}

std::shared_ptr<const calib::KernelTableSource> Catalog::kernel_folder(const std::string& dir) const {
  const std::lock_guard lock(kernel_folders_->mutex);
  auto& slot = kernel_folders_->open[dir];
  if (!slot) slot = open_kernel_folder(dir);
  return slot;
}

std::string Catalog::folder(CatalogKind kind) const {
  switch (kind) {
    case CatalogKind::kModel: return root_ + "/models/llm";
    case CatalogKind::kProfile: return root_ + "/calibration/profiles";
    case CatalogKind::kCluster: return root_ + "/scenarios/clusters";
    case CatalogKind::kOffer: return root_ + "/scenarios/offers";
    case CatalogKind::kFabric: return root_ + "/scenarios/fabrics";
    case CatalogKind::kEngine: return root_ + "/scenarios/engines";
  }
  return root_;
}

std::vector<std::string> Catalog::ids(CatalogKind kind) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder(kind), ec)) {
    if (entry.path().extension() == ".json") {
      out.push_back(entry.path().stem().string());
    } else if (entry.is_directory(ec)) {
      // One level of grouping (scenarios/offers/usd-2026/): its files are ids like the others.
      for (const auto& inner : fs::directory_iterator(entry.path(), ec))
        if (inner.path().extension() == ".json") out.push_back(inner.path().stem().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Catalog::locate(CatalogKind kind, const std::string& id_or_path, const std::string& referrer,
                            const std::string& pointer) const {
  const bool is_path =
      id_or_path.find('/') != std::string::npos || (id_or_path.size() > 5 && id_or_path.ends_with(".json"));
  if (is_path) {
    if (!is_regular_file(id_or_path)) {
      throw InputError(referrer, pointer, std::string("no ") + kind_name(kind) + " file '" + id_or_path + "'");
    }
    return id_or_path;
  }
  const std::string path = folder(kind) + "/" + id_or_path + ".json";
  if (is_regular_file(path)) return path;
  std::error_code ec;
  std::vector<std::string> grouped;  // the id in a folder one level down, in name order
  for (const auto& entry : fs::directory_iterator(folder(kind), ec)) {
    if (!entry.is_directory(ec)) continue;
    const auto inner = (entry.path() / (id_or_path + ".json")).string();
    if (is_regular_file(inner)) grouped.push_back(inner);
  }
  std::sort(grouped.begin(), grouped.end());
  if (!grouped.empty()) return grouped.front();
  const auto all = ids(kind);
  // Name the folder relative to the data root, so messages read the same on every checkout.
  const std::string rel = folder(kind).substr(root_.size() + 1);
  std::string msg = std::string("no ") + kind_name(kind) + " '" + id_or_path + "' in " + rel + "/";
  if (auto m = closest_match(id_or_path, all)) msg += "; did you mean '" + *m + "'?";
  msg += " (see `clustersim list " + std::string(kind_name(kind)) + "s`)";
  throw InputError(referrer, pointer, msg);
}

}  // namespace cs::config
