#include "tools/cli/plan_args.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "sim/core/errors.hpp"
#include "tools/cli/field_flags.hpp"

namespace cs::cli {

namespace {

constexpr const char* kJobForm =
    "expected train:TOKENS[:DEADLINE], finetune:TOKENS[:DEADLINE] (TOKENS like 2B or 1.5T, DEADLINE like 30d or "
    "12h) or serve:RATE:ISL:OSL";

/// A finite number followed by a suffix; false when `text` is not that.
bool number_and_suffix(const std::string& text, double& value, std::string& suffix) {
  if (text.empty()) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value)) return false;
  suffix = std::string(end);
  return true;
}

/// The multiplier of a count's suffix, either case (K 1e3, M 1e6, B 1e9, T 1e12; none 1); 0 when
/// it is none of those. `2k` prompts and `1b` tokens read as they do in other flags.
double count_scale(const std::string& suffix) {
  if (suffix.empty()) return 1.0;
  if (suffix.size() != 1) return 0.0;
  switch (suffix[0]) {
    case 'k':
    case 'K': return 1e3;
    case 'm':
    case 'M': return 1e6;
    case 'b':
    case 'B': return 1e9;
    case 't':
    case 'T': return 1e12;
    default: return 0.0;
  }
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string::size_type a = 0;
  for (;;) {
    const auto b = s.find(sep, a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) return out;
    a = b + 1;
  }
}

}  // namespace

JobArg parse_job(const std::string& text) {
  const auto parts = split(text, ':');
  auto fail = [&](const std::string& why) -> JobArg {
    throw InputError(kCommandLine, "--job", std::string(kJobForm) + "; got '" + text + "'" + why);
  };
  if (parts[0] == "serve") {
    if (parts.size() != 4) return fail("");
    JobArg job;
    job.kind = "serve";
    double v = 0;
    std::string suffix;
    if (!number_and_suffix(parts[1], v, suffix) || !suffix.empty() || v <= 0)
      return fail(": RATE must be a positive number of requests/s");
    job.rate = v;
    for (int k : {2, 3}) {
      const auto& t = parts[static_cast<std::size_t>(k)];
      const bool number = number_and_suffix(t, v, suffix) && count_scale(suffix) > 0;
      if (number) v *= count_scale(suffix);
      if (!number || v < 1 || v != std::floor(v) || v > 1e7)
        return fail(k == 2 ? ": ISL must be a whole number of prompt tokens from 1 to 1e7 (like 2048 or 2k)"
                           : ": OSL must be a whole number of output tokens from 1 to 1e7 (like 512 or 1k)");
      (k == 2 ? job.isl : job.osl) = static_cast<std::int64_t>(v);
    }
    return job;
  }
  // A fine-tune is a training job on a pretrained model: the same search, with LoRA when asked.
  if ((parts[0] != "train" && parts[0] != "finetune") || parts.size() < 2 || parts.size() > 3) return fail("");
  JobArg job;
  job.kind = parts[0];
  double v = 0;
  std::string suffix;
  if (!number_and_suffix(parts[1], v, suffix) || v <= 0) return fail(": TOKENS must be a positive number");
  if (count_scale(suffix) == 0) return fail(": the TOKENS suffix is one of K, M, B, T");
  job.tokens = v * count_scale(suffix);
  if (job.tokens < 1) return fail(": TOKENS must be at least 1");
  if (parts.size() == 3) {
    if (!number_and_suffix(parts[2], v, suffix) || v <= 0) return fail(": DEADLINE must be a positive time");
    const double unit = suffix == "s"   ? 1.0
                        : suffix == "m" ? 60.0
                        : suffix == "h" ? 3600.0
                        : suffix == "d" ? 86400.0
                        : suffix == "w" ? 7 * 86400.0
                                        : 0.0;
    if (unit == 0) return fail(": the DEADLINE unit is one of s, m, h, d, w");
    job.deadline_s = v * unit;
  }
  return job;
}

double parse_slo_time(const std::string& text, const std::string& flag) {
  double v = 0;
  std::string suffix;
  const bool ok = number_and_suffix(text, v, suffix) && v > 0 && (suffix.empty() || suffix == "s" || suffix == "ms");
  if (!ok)
    throw InputError(kCommandLine, flag,
                     "expected a positive time in seconds (1, 1s) or ms (800ms); got '" + text + "'");
  return suffix == "ms" ? v / 1e3 : v;
}

SloArg parse_slo(const std::string& text, const std::string& flag) {
  SloArg out;
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    out.seconds = parse_slo_time(text, flag);
    return out;
  }
  const std::string pct = text.substr(0, colon);
  if (pct != "p50" && pct != "p90" && pct != "p99")
    throw InputError(
        kCommandLine, flag,
        "expected a percentile p50, p90 or p99 before ':' (e.g. p99:800ms), or a time alone (p90); got '" + text + "'");
  out.percentile = std::stoi(pct.substr(1));
  out.seconds = parse_slo_time(text.substr(colon + 1), flag);
  return out;
}

double parse_amount(const std::string& text, const std::string& flag) {
  double v = 0;
  std::string suffix;
  if (!number_and_suffix(text, v, suffix) || !suffix.empty() || v <= 0)
    throw InputError(kCommandLine, flag, "expected a positive amount (e.g. 20000); got '" + text + "'");
  return v;
}

sizing::ExchangeRates parse_fx(const std::string& text, const std::string& flag) {
  sizing::ExchangeRates out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto eq = item.find('=');
    const std::string code = eq == std::string::npos ? item : item.substr(0, eq);
    const bool letters = !code.empty() && std::all_of(code.begin(), code.end(), [](char c) {
      return std::isalpha(static_cast<unsigned char>(c)) != 0;
    });
    double rate = 0;
    std::string suffix;
    if (eq == std::string::npos || !letters || !number_and_suffix(item.substr(eq + 1), rate, suffix) ||
        !suffix.empty() || !(rate > 0) || !std::isfinite(rate))
      throw InputError(kCommandLine, flag,
                       "expected CUR=RATE pairs separated by commas, a currency code and a positive rate (e.g. "
                       "CNY=0.14); got '" +
                           item + "'");
    if (!out.emplace(code, rate).second)
      throw InputError(kCommandLine, flag, "names " + code + " twice; expected one rate per currency");
  }
  return out;
}

}  // namespace cs::cli
