#include "sim/config/routing_file.hpp"

#include <charconv>
#include <cmath>

#include "sim/config/json_doc.hpp"
#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"

namespace cs::config {

namespace {

std::vector<double> read_loads(const std::string& path, const models::ModelArch& model) {
  const auto doc = config::load(path);
  Problems problems;
  auto r = Reader::root(doc, problems);
  problems.throw_if_any();
  (void)r.opt_string("source", "");
  const auto* v = r.raw("loads");
  std::vector<double> loads;
  const std::string expected = "expected an array of " + std::to_string(model.moe.experts) +
                               " loads (numbers >= 0, not all 0), one per expert of " + model.id;
  if (!v || !v->is_array() || static_cast<std::int64_t>(v->size()) != model.moe.experts) {
    r.fail_at("loads", expected);
  } else {
    double sum = 0;
    for (const auto& e : *v) {
      const double x = e.is_number() ? e.get<double>() : -1;
      if (!(x >= 0) || !std::isfinite(x)) {
        r.fail_at("loads", expected);
        break;
      }
      loads.push_back(x);
      sum += x;
    }
    if (loads.size() == v->size() && sum <= 0) r.fail_at("loads", expected);
  }
  r.finish();
  problems.throw_if_any();
  return loads;
}

}  // namespace

scenario::MoeRouting parse_routing(const std::string& text, const models::ModelArch& model, const std::string& file,
                                   const std::string& pointer) {
  scenario::MoeRouting out;
  out.text = text;
  using Kind = scenario::MoeRouting::Kind;
  if (text == "balanced") return out;
  if (text == "uniform") {
    out.kind = Kind::kUniform;
    return out;
  }
  if (text.rfind("zipf:", 0) == 0) {
    const std::string s = text.substr(5);
    double x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec != std::errc{} || end != s.data() + s.size() || !(x > 0) || x > 10) {
      throw InputError(file, pointer,
                       "expected zipf:S with an exponent S from 0 (exclusive) to 10; got '" + text + "'");
    }
    out.kind = Kind::kZipf;
    out.zipf_exponent = x;
    return out;
  }
  if (text.find(".json") == std::string::npos) {
    throw InputError(
        file, pointer,
        "expected balanced, uniform, zipf:S or the path of a per-expert load file (.json); got '" + text + "'");
  }
  out.kind = Kind::kFile;
  out.loads = read_loads(text, model);
  return out;
}

}  // namespace cs::config
