#pragma once
#include <memory>
#include <string>
#include <vector>

namespace cs::cli {

/// This process as one rank of a job that mpirun started (docs/sweep.md, "Across machines"). MPI is
/// initialised only when the launcher's environment says so (OMPI_COMM_WORLD_SIZE, PMIX_RANK or
/// PMI_SIZE), so a plain `clustersim` never pays MPI's start-up. Finalised when destroyed.
class MpiSession {
 public:
  /// The session when mpirun started this process; null for a plain process. Built without MPI
  /// (CLUSTERSIM_MPI=OFF) and started by mpirun: InputError saying so (each rank would otherwise
  /// run the whole sweep).
  [[nodiscard]] static std::unique_ptr<MpiSession> start_if_launched();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  /// Every rank's text at rank 0, in rank order (other ranks get an empty list). Collective.
  [[nodiscard]] std::vector<std::string> gather(const std::string& mine) const;
  /// Every rank's text on every rank, in rank order. Collective.
  [[nodiscard]] std::vector<std::string> all_gather(const std::string& mine) const;
  /// Rank 0's flag on every rank. Collective.
  [[nodiscard]] bool broadcast(bool flag) const;

 private:
  MpiSession(int rank, int size) : rank_(rank), size_(size) {}
  int rank_ = 0, size_ = 1;
};

}  // namespace cs::cli
