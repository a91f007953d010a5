#pragma once
#include <CLI/CLI.hpp>
#include <fstream>
#include <memory>
#include <string>

#include "sim/report/gzip_stream.hpp"
#include "sim/report/training_trace.hpp"

namespace cs::cli {

/// `--trace FILE` and the flags that choose what it shows; shared by `run`, `train` and `infer`.
struct TraceFlags {
  std::string path;              ///< --trace: empty = no trace
  std::string gpus;              ///< --trace-gpus 0-3,8
  std::string window;            ///< --trace-window 10ms:40ms
  std::string micro_batches;     ///< --trace-micro-batches 0:1
  int link_points = 1000;        ///< --trace-link-points
  std::string detail = "layer";  ///< --trace-detail layer|full

  [[nodiscard]] bool wanted() const { return !path.empty(); }
};

/// Registers the trace flags on `cmd`; `training` adds the ones only a training step has (GPUs,
/// micro-batches, link counters).
void add_trace_flags(CLI::App* cmd, TraceFlags& flags, bool training);

/// The selection the flags ask for, checked against the run (its GPU and micro-batch counts): a bad
/// list, range or time is an InputError naming the flag; any of them without --trace is one too.
[[nodiscard]] report::TraceSelection trace_selection(const TraceFlags& flags, int gpus, std::int64_t micro_batches);

/// `--trace-window` alone (serving traces), checked the same way; the training-only flags are an
/// InputError here.
void trace_window(const TraceFlags& flags, SimTime& from, SimTime& to);

/// The trace file of one variant: `base` itself for a file without variants, else the variant's
/// name slugged in before the extension (`t.json` -> `t.8x-h100-pcie.json`, `t.json.gz` ->
/// `t.8x-h100-pcie.json.gz`).
[[nodiscard]] std::string variant_trace_path(const std::string& base, const std::string& variant);

/// The file a trace is written to: gzip-compressed when its name ends in `.gz` (Perfetto and
/// chrome://tracing open those as they are), plain otherwise.
class TraceFile {
 public:
  explicit TraceFile(std::string path);  ///< InputError naming the file if it cannot be created
  [[nodiscard]] std::ostream& stream() { return gzip_ ? *gzip_stream_ : file_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  /// Ends the gzip stream and the file; InputError naming the file if anything failed to be written.
  void close();

 private:
  std::string path_;
  std::ofstream file_;
  std::unique_ptr<report::GzipStreambuf> gzip_;
  std::unique_ptr<std::ostream> gzip_stream_;
};

}  // namespace cs::cli
