#pragma once
#include <memory>
#include <string>
#include <vector>

namespace cs::calib {
class KernelTableSource;
}

namespace cs::config {

/// The kinds of data file a scenario refers to by id.
enum class CatalogKind { kModel, kProfile, kCluster, kOffer, kFabric, kEngine };

/// Where shipped data files live, and how an id or a path becomes a file to load.
/// Ids are file stems: `models/llm/llama3.1-8b.json` has id `llama3.1-8b`.
class Catalog {
 public:
  /// `root` is the repository (or install) folder holding models/, calibration/ and scenarios/.
  explicit Catalog(std::string root);

  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] std::string folder(CatalogKind kind) const;
  /// Every id of one kind, sorted: the folder's files, and those of its folders one level down
  /// (scenarios/offers/usd-2026/), which are ids like the others.
  [[nodiscard]] std::vector<std::string> ids(CatalogKind kind) const;
  /// The file for an id (the folder's, else the first folder one level down, by name, that has it),
  /// or for a path (anything containing '/' or ending in ".json").
  /// Throws InputError naming `referrer`/`pointer` when there is no such id or file.
  [[nodiscard]] std::string locate(CatalogKind kind, const std::string& id_or_path, const std::string& referrer,
                                   const std::string& pointer) const;
  /// The measured kernel tables in folder `dir`, opened once per catalog (and its copies): every
  /// scenario resolved through it shares the tables it has loaded (thread-safe).
  [[nodiscard]] std::shared_ptr<const calib::KernelTableSource> kernel_folder(const std::string& dir) const;

 private:
  struct KernelFolders;
  std::string root_;
  std::shared_ptr<KernelFolders> kernel_folders_;
};

[[nodiscard]] const char* kind_name(CatalogKind kind);

}  // namespace cs::config
