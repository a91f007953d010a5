#include "sim/config/reader.hpp"

#include <algorithm>
#include <cmath>

#include "sim/config/json_doc.hpp"

namespace cs::config {

namespace {
constexpr std::size_t kMaxProblems = 20;

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += (i + 1 == items.size()) ? " or " : ", ";
    out += "'" + items[i] + "'";
  }
  return out;
}
}  // namespace

std::string json_type_name(const nlohmann::json& v) {
  if (v.is_string()) return "a string \"" + v.get<std::string>() + "\"";
  if (v.is_boolean()) return std::string("the boolean ") + (v.get<bool>() ? "true" : "false");
  if (v.is_number()) return "the number " + v.dump();
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "a value";
}

std::optional<std::string> closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    // Equal distances: prefer a candidate with the same first letter (typos rarely start there).
    const bool same_start = !c.empty() && !word.empty() && c[0] == word[0];
    const bool best_same_start = best && !best->empty() && !word.empty() && (*best)[0] == word[0];
    if (d < best_d || (d == best_d && best && same_start && !best_same_start)) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

void Problems::add(InputProblem p) {
  if (list_.size() < kMaxProblems) list_.push_back(std::move(p));
}

void Problems::throw_if_any() const {
  if (!list_.empty()) throw InputError(list_);
}

Reader::Reader(const nlohmann::json& value, std::string file, std::string pointer, Problems& problems)
    : value_(value), file_(std::move(file)), pointer_(std::move(pointer)), problems_(&problems) {
  is_object_ = value_.is_object();
  if (!is_object_) fail("expected an object; got " + json_type_name(value_));
}

Reader Reader::root(const JsonDoc& doc, Problems& problems) { return Reader(doc.json, doc.path, "", problems); }

bool Reader::has(const std::string& key) const { return is_object_ && value_.contains(key); }

std::string Reader::pointer_of(const std::string& key) const { return pointer_ + "/" + escape_pointer_token(key); }

void Reader::fail(const std::string& message) const {
  problems_->add({file_, pointer_.empty() ? "/" : pointer_, message});
}

void Reader::fail_at(const std::string& key, const std::string& message) const {
  problems_->add({file_, pointer_of(key), message});
}

const nlohmann::json* Reader::find(const std::string& key, bool required, const char* expected) {
  if (!is_object_) return nullptr;
  consumed_.insert(key);
  auto it = value_.find(key);
  if (it == value_.end()) {
    if (required) fail_at(key, std::string("missing required field; expected ") + expected);
    return nullptr;
  }
  return &*it;
}

const nlohmann::json* Reader::raw(const std::string& key) { return find(key, false, ""); }

std::vector<std::string> Reader::keys() {
  std::vector<std::string> out;
  if (!is_object_) return out;
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    out.push_back(it.key());
    consumed_.insert(it.key());
  }
  return out;
}

std::string Reader::req_string(const std::string& key) {
  const auto* v = find(key, true, "a string");
  if (!v) return {};
  if (!v->is_string()) {
    fail_at(key, "expected a string; got " + json_type_name(*v));
    return {};
  }
  return v->get<std::string>();
}

std::string Reader::opt_string(const std::string& key, const std::string& fallback) {
  if (!has(key)) {
    consumed_.insert(key);
    return fallback;
  }
  return req_string(key);
}

std::string Reader::req_enum(const std::string& key, const std::vector<std::string>& choices) {
  const auto* v = find(key, true, ("one of " + quoted_list(choices)).c_str());
  if (!v) return {};
  if (!v->is_string() || std::find(choices.begin(), choices.end(), v->get<std::string>()) == choices.end()) {
    std::string msg = "expected one of " + quoted_list(choices) + "; got " + json_type_name(*v);
    if (v->is_string()) {
      if (auto m = closest_match(v->get<std::string>(), choices)) msg += " (did you mean '" + *m + "'?)";
    }
    fail_at(key, msg);
    return {};
  }
  return v->get<std::string>();
}

std::string Reader::opt_enum(const std::string& key, const std::vector<std::string>& choices,
                             const std::string& fallback) {
  if (!has(key)) {
    consumed_.insert(key);
    return fallback;
  }
  return req_enum(key, choices);
}

std::int64_t Reader::req_int(const std::string& key, std::int64_t min, std::int64_t max) {
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  const auto* v = find(key, true, range.c_str());
  if (!v) return min;
  if (!v->is_number_integer() && !(v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>())) {
    fail_at(key, "expected " + range + "; got " + json_type_name(*v));
    return min;
  }
  const double d = v->get<double>();
  if (d < static_cast<double>(min) || d > static_cast<double>(max)) {
    fail_at(key, "expected " + range + "; got " + v->dump());
    return min;
  }
  return static_cast<std::int64_t>(d);
}

std::int64_t Reader::opt_int(const std::string& key, std::int64_t min, std::int64_t max, std::int64_t fallback) {
  if (!has(key)) {
    consumed_.insert(key);
    return fallback;
  }
  return req_int(key, min, max);
}

double Reader::req_number(const std::string& key, double min, double max) {
  const std::string range = "a number from " + shortest(min) + " to " + shortest(max);
  const auto* v = find(key, true, range.c_str());
  if (!v) return min;
  if (!v->is_number()) {
    fail_at(key, "expected " + range + "; got " + json_type_name(*v));
    return min;
  }
  const double d = v->get<double>();
  if (!(d >= min && d <= max)) {
    fail_at(key, "expected " + range + "; got " + v->dump());
    return min;
  }
  return d;
}

double Reader::opt_number(const std::string& key, double min, double max, double fallback) {
  if (!has(key)) {
    consumed_.insert(key);
    return fallback;
  }
  return req_number(key, min, max);
}

bool Reader::req_bool(const std::string& key) {
  const auto* v = find(key, true, "true or false");
  if (!v) return false;
  if (!v->is_boolean()) {
    fail_at(key, "expected true or false; got " + json_type_name(*v));
    return false;
  }
  return v->get<bool>();
}

bool Reader::opt_bool(const std::string& key, bool fallback) {
  if (!has(key)) {
    consumed_.insert(key);
    return fallback;
  }
  return req_bool(key);
}

double Reader::req_quantity(const std::string& key, Dimension dim, double min_si) {
  const std::string expected(dimension_name(dim));
  const auto* v = find(key, true, expected.c_str());
  if (!v) return min_si;
  if (!v->is_string()) {
    fail_at(key, "expected " + expected + " (a string with a unit); got " + json_type_name(*v));
    return min_si;
  }
  const auto r = parse_quantity(v->get<std::string>(), dim);
  if (!r.error.empty()) {
    fail_at(key, r.error);
    return min_si;
  }
  if (r.value < min_si || (min_si > 0 && r.value <= 0)) {
    fail_at(key, "expected a positive value; got \"" + v->get<std::string>() + "\"");
    return min_si;
  }
  return r.value;
}

double Reader::opt_quantity(const std::string& key, Dimension dim, double fallback) {
  if (!has(key)) {
    consumed_.insert(key);
    return fallback;
  }
  return req_quantity(key, dim);
}

Reader Reader::child(const std::string& key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const auto* v = find(key, true, "an object");
  if (!v) return Reader(kEmpty, file_, pointer_of(key), *problems_);  // missing: already reported
  return Reader(*v, file_, pointer_of(key), *problems_);
}

std::optional<Reader> Reader::opt_child(const std::string& key) {
  if (!has(key)) {
    consumed_.insert(key);
    return std::nullopt;
  }
  return child(key);
}

std::vector<Reader> Reader::each(const std::string& key, bool required) {
  std::vector<Reader> out;
  const auto* v = find(key, required, "an array");
  if (!v) return out;
  if (!v->is_array()) {
    fail_at(key, "expected an array; got " + json_type_name(*v));
    return out;
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    out.emplace_back((*v)[i], file_, pointer_of(key) + "/" + std::to_string(i), *problems_);
  }
  return out;
}

std::vector<std::string> Reader::opt_string_list(const std::string& key) {
  std::vector<std::string> out;
  const auto* v = find(key, false, "");
  if (!v) return out;
  if (!v->is_array()) {
    fail_at(key, "expected an array of strings; got " + json_type_name(*v));
    return out;
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      problems_->add(
          {file_, pointer_of(key) + "/" + std::to_string(i), "expected a string; got " + json_type_name((*v)[i])});
      continue;
    }
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

void Reader::finish() {
  if (!is_object_) return;
  std::vector<std::string> known(consumed_.begin(), consumed_.end());
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (consumed_.count(it.key())) continue;
    std::string msg = "unknown key '" + it.key() + "'";
    if (auto m = closest_match(it.key(), known))
      msg += "; did you mean '" + *m + "'?";
    else if (!known.empty())
      msg += "; expected one of " + quoted_list(known);
    fail_at(it.key(), msg);
  }
}

}  // namespace cs::config
