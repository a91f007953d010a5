#include "tools/cli/mpi_session.hpp"

#include <cstdlib>

#include "sim/core/errors.hpp"

#ifdef CLUSTERSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace cs::cli {

namespace {

/// Whether an MPI launcher started this process (Open MPI's mpirun sets the first two; PMI_SIZE is
/// MPICH's and Slurm's).
bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_SIZE");
}

/// The job's size as the launcher's environment gives it (0: not said).
[[maybe_unused]] long launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* v = std::getenv(name)) return std::strtol(v, nullptr, 10);
  }
  return 0;
}

}  // namespace

#ifdef CLUSTERSIM_HAVE_MPI

std::unique_ptr<MpiSession> MpiSession::start_if_launched() {
  if (!launched_by_mpirun()) return nullptr;
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiSession>(new MpiSession(rank, size));
}

MpiSession::~MpiSession() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

namespace {
/// Where each rank's bytes start in the gathered buffer (the displacements of MPI_Gatherv).
std::vector<int> offsets_of(const std::vector<int>& lengths) {
  std::vector<int> offsets(lengths.size(), 0);
  for (std::size_t i = 1; i < lengths.size(); ++i) offsets[i] = offsets[i - 1] + lengths[i - 1];
  return offsets;
}
/// The gathered buffer cut back into each rank's text.
std::vector<std::string> split(const std::string& all, const std::vector<int>& lengths,
                               const std::vector<int>& offsets) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lengths.size(); ++i)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lengths[i])));
  return out;
}
}  // namespace

std::vector<std::string> MpiSession::gather(const std::string& mine) const {
  // Sizes first, then the bytes; one rank's text stays well under 2 GiB (a million points).
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  const auto offsets = offsets_of(lengths);
  std::string all(static_cast<std::size_t>(offsets.empty() ? 0 : offsets.back() + lengths.back()), '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  return split(all, lengths, offsets);
}

std::vector<std::string> MpiSession::all_gather(const std::string& mine) const {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const auto offsets = offsets_of(lengths);
  std::string all(static_cast<std::size_t>(offsets.empty() ? 0 : offsets.back() + lengths.back()), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  return split(all, lengths, offsets);
}

bool MpiSession::broadcast(bool flag) const {
  int v = flag ? 1 : 0;
  MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return v != 0;
}

#else

std::unique_ptr<MpiSession> MpiSession::start_if_launched() {
  if (!launched_by_mpirun() || launcher_size() <= 1) return nullptr;  // one process: nothing to split
  throw InputError("command line", "mpirun",
                   "this clustersim was built without MPI (CMake option CLUSTERSIM_MPI=OFF or no MPI found), so its "
                   "ranks cannot share the points; rebuild with libopenmpi-dev installed, or run --shard I/N per "
                   "process and join the outputs with --merge");
}

MpiSession::~MpiSession() = default;

std::vector<std::string> MpiSession::gather(const std::string& mine) const { return {mine}; }

std::vector<std::string> MpiSession::all_gather(const std::string& mine) const { return {mine}; }

bool MpiSession::broadcast(bool flag) const { return flag; }

#endif

}  // namespace cs::cli
