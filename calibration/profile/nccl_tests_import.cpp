#include "calibration/profile/nccl_tests_import.hpp"

#include <charconv>
#include <cmath>
#include <sstream>

#include "calibration/profile/text_tokens.hpp"
#include "sim/core/errors.hpp"

namespace cs::calib {

namespace {

bool to_double(const std::string& s, double& out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc{} && p == e && std::isfinite(out);
}

/// A header count ("nGpus 8"): digits only, 1 to kMaxImportGpus, or false.
bool to_count(const std::string& s, int& out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc{} && p == e && out >= 1 && out <= kMaxImportGpus;
}

std::string op_from_name(const std::string& text) {
  static const std::vector<std::pair<std::string, std::string>> names{{"all_reduce", "allreduce"},
                                                                      {"all_gather", "allgather"},
                                                                      {"reduce_scatter", "reducescatter"},
                                                                      {"alltoall", "alltoall"},
                                                                      {"sendrecv", "sendrecv"}};
  for (const auto& [needle, op] : names) {
    if (text.find(needle) != std::string::npos) return op;
  }
  return "";
}

}  // namespace

NcclTestsRun parse_nccl_tests(const std::string& text, const std::string& file, const std::string& op_hint,
                              int gpus_hint) {
  NcclTestsRun run;
  run.file = file;
  run.op = op_hint;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  int ngpus_header = 0, nthreads = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto t = split_words(line);
    if (t.empty()) continue;
    if (t[0][0] == '#') {
      if (run.op.empty() && line.find("_perf") != std::string::npos) run.op = op_from_name(line);
      // "#  Rank  0 Group  0 Pid 1234 on host device  0 [0x18] NVIDIA H100 80GB HBM3"
      if (t.size() > 2 && t[1] == "Rank") {
        const auto close = line.find(']');
        if (close != std::string::npos) {
          std::string name = line.substr(close + 1);
          while (!name.empty() && name.front() == ' ') name.erase(name.begin());
          run.devices.push_back(name);
        }
      }
      for (std::size_t i = 0; i + 1 < t.size(); ++i) {
        if (t[i] != "nGpus" && t[i] != "nThread") continue;
        int v = 0;
        if (!to_count(t[i + 1], v)) {
          throw InputError(file + ":" + std::to_string(lineno), "",
                           t[i] + ": expected a count from 1 to " + std::to_string(kMaxImportGpus) + "; got '" +
                               t[i + 1].substr(0, 20) + "'");
        }
        (t[i] == "nGpus" ? ngpus_header : nthreads) = v;
      }
      continue;
    }
    double first = 0;
    if (!to_double(t[0], first) || first < 0) {
      throw InputError(file + ":" + std::to_string(lineno), "",
                       "not nccl-tests output: expected a '#' comment or a result row starting with a size; got '" +
                           line.substr(0, 60) + "'");
    }
    // Rows: size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong
    const std::size_t with_root = 13, without_root = 12;
    if (t.size() != with_root && t.size() != without_root) {
      throw InputError(file + ":" + std::to_string(lineno), "",
                       "truncated or unknown result row: expected 12 or 13 columns (size count type redop [root] "
                       "time algbw busbw #wrong, then in-place); got " +
                           std::to_string(t.size()));
    }
    const std::size_t time_col = t.size() == with_root ? 5 : 4;
    NcclTestsRun::Row row;
    double time_us = 0;
    if (!to_double(t[time_col], time_us) || !to_double(t[time_col + 1], row.algbw) ||
        !to_double(t[time_col + 2], row.busbw) || time_us <= 0) {
      throw InputError(file + ":" + std::to_string(lineno), "",
                       "result row has a non-numeric or non-positive time/algbw/busbw: '" + line.substr(0, 80) + "'");
    }
    row.bytes = first;
    row.time_s = time_us * 1e-6;
    row.algbw *= 1e9;
    row.busbw *= 1e9;
    run.rows.push_back(row);
  }
  if (run.rows.empty()) throw InputError(file, "", "no result rows: is this the output of an nccl-tests binary?");
  if (run.op.empty()) run.op = op_from_name(file);
  if (run.op.empty()) {
    throw InputError(file, "",
                     "cannot tell which collective this is (no *_perf name in the file or its name); pass --op");
  }
  // Counts are capped at kMaxImportGpus each, so the product fits an int64 and is checked as one.
  const std::int64_t gpus = gpus_hint > 0          ? gpus_hint
                            : !run.devices.empty() ? static_cast<std::int64_t>(run.devices.size())
                                                   : std::int64_t{ngpus_header} * nthreads;
  if (gpus > kMaxImportGpus) {
    throw InputError(file, "",
                     "the run spans " + std::to_string(gpus) +
                         " GPUs (--gpus, its '#  Rank' lines or nGpus x nThread); " + "expected at most " +
                         std::to_string(kMaxImportGpus));
  }
  run.gpus = static_cast<int>(gpus);
  if (run.gpus < 2) throw InputError(file, "", "cannot tell how many GPUs ran this (no '#  Rank' lines); pass --gpus");
  return run;
}

}  // namespace cs::calib
