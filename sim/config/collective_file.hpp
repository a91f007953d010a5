#pragma once
#include <string>
#include <vector>

#include "sim/config/catalog.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/machine_file.hpp"

namespace cs::config {

/// One box of a collective document: the variant's name and its resolved hardware.
struct CollectiveVariant {
  std::string name;
  Box box;
  int gpus = 0;  ///< GPUs of the box taking part (all of the cluster's unless `gpus` is given)
};

/// A collective document ("kind": "collective", e.g. scenarios/seed-claims/claim7-*.json): one
/// collective of one size, timed on each variant's box as `clustersim collective` times it.
struct CollectiveDoc {
  std::string name, description;
  std::string op;    ///< a collective op name (allreduce, allgather, ...), checked by the caller's parser
  std::string algo;  ///< an algorithm name, default "auto"
  double bytes = 0;
  std::vector<CollectiveVariant> variants;
};

/// Parses and resolves a collective document; problems name the file and JSON pointer.
[[nodiscard]] CollectiveDoc parse_collective_doc(const JsonDoc& doc, const Catalog& catalog);

}  // namespace cs::config
