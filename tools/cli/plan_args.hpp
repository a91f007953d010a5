#pragma once
#include <cstdint>
#include <string>

#include "sim/sizing/currency.hpp"

namespace cs::cli {

/// `--job train:TOKENS[:DEADLINE]`, `finetune:TOKENS[:DEADLINE]` or `serve:RATE:ISL:OSL` as `plan`
/// reads it.
struct JobArg {
  std::string kind;  ///< "train", "finetune" or "serve"
  double tokens = 0;
  double deadline_s = 0;  ///< 0: none
  double rate = 0;        ///< serve: requests/s
  std::int64_t isl = 0, osl = 0;

  [[nodiscard]] bool training() const { return kind != "serve"; }  ///< train or finetune: the training search
};

/// Parses `train:2B`, `train:1.5T:30d`, `finetune:500M`: TOKENS a positive number with an optional K, M, B or T
/// (1e3 ... 1e12); DEADLINE a positive number with s, m (minutes), h, d or w. Throws InputError
/// naming --job and what was expected.
[[nodiscard]] JobArg parse_job(const std::string& text);
/// An SLO time: seconds (`1`, `0.5`) or with a unit (`1s`, `800ms`); throws InputError naming `flag`.
[[nodiscard]] double parse_slo_time(const std::string& text, const std::string& flag);
/// A latency objective on a percentile: `p99:800ms`, `p50:1s`, or a time alone (p90). Throws
/// InputError naming `flag` (percentiles: 50, 90, 99, the ones every command reports).
struct SloArg {
  int percentile = 90;
  double seconds = 0;
};
[[nodiscard]] SloArg parse_slo(const std::string& text, const std::string& flag);
/// A positive amount of money (`--budget 20000`); throws InputError naming `flag`.
[[nodiscard]] double parse_amount(const std::string& text, const std::string& flag);
/// Exchange rates `CNY=0.14,EUR=1.08` (empty text: none): a currency code of letters, a positive
/// finite rate; throws InputError naming `flag`.
[[nodiscard]] sizing::ExchangeRates parse_fx(const std::string& text, const std::string& flag);

}  // namespace cs::cli
