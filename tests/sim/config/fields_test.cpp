// The field table: parsing, --dump-resolved and the flags agree on every field.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "sim/config/fields.hpp"
#include "sim/config/json_doc.hpp"
#include "sim/config/scenario_file.hpp"
#include "tests/support/builders.hpp"

using namespace cs;
using config::ScenarioKind;

namespace {

config::Scenario resolve_text(const nlohmann::json& j) {
  const auto doc = config::JsonDoc{"t.json", j};
  return config::resolve(config::parse_scenario(doc).specs.at(0), test::catalog(), doc.path);
}

}  // namespace

TEST_CASE("a resolved scenario written by --dump-resolved parses back to itself, every field at its path") {
  const auto base = nlohmann::json::parse(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "offer": "cn-8x-h100-sxm",
    "parallel": {"tp": 2, "pp": 2, "zero": 1, "schedule": "gpipe", "sp": true, "cp_comm": "allgather"},
    "training": {"seq": 4096, "global_batch": 16, "micro_batch": 2, "recompute": "selective", "dtype": "fp8",
                 "lora_rank": 16, "qlora": true, "attention": "unfused", "grad_bucket_params": 1000000},
    "network_model": "analytical", "symmetry": "dp", "allow_oom": true})");
  const auto s = resolve_text(base);
  const auto dumped = config::dump_resolved(s);
  // Every training field the table can resolve is in the dump, at its path.
  for (const auto* f : config::fields_of(ScenarioKind::kTrain)) {
    CAPTURE(f->path);
    if (f->path == "/fabric") continue;  // one node: no fabric
    CHECK(dumped.contains(nlohmann::ordered_json::json_pointer(f->path)));
  }
  const auto again = config::dump_resolved(resolve_text(nlohmann::json::parse(dumped.dump())));
  CHECK(again == dumped);
  CHECK(dumped["parallel"]["dp"] == 2);
  CHECK(dumped["training"]["lora_rank"] == 16);
}

TEST_CASE("field entries are consistent: paths unique, enum defaults among the choices, flags unique") {
  for (auto kind : {ScenarioKind::kTrain, ScenarioKind::kInfer}) {
    std::set<std::string> paths, flags;
    for (const auto* f : config::fields_of(kind)) {
      CAPTURE(f->path);
      CHECK(paths.insert(f->path).second);
      CHECK(!f->meaning.empty());
      CHECK(!f->default_text.empty());
      if (f->type == config::FieldType::kEnum) {
        CHECK(!f->choices.empty());
        if (!f->required) CHECK(std::count(f->choices.begin(), f->choices.end(), f->fallback.get<std::string>()) == 1);
      }
      if (f->type == config::FieldType::kInt || f->type == config::FieldType::kNumber) CHECK(f->min <= f->max);
      // --disaggregate sets several fields at once; every other flag sets one.
      if (!f->flag.empty() && f->flag != "--disaggregate") CHECK(flags.insert(f->flag).second);
      if (kind == ScenarioKind::kTrain) {
        CHECK(static_cast<bool>(f->resolved));
        if (f->path != "/kind") CHECK(f->member.index() != 0);
      }
    }
  }
  CHECK(config::find_field(ScenarioKind::kTrain, "parallel.zero") ==
        &config::field(ScenarioKind::kTrain, "/parallel/zero"));
  CHECK(config::find_field(ScenarioKind::kTrain, "parallel.replicas") == nullptr);
}

TEST_CASE("the parser checks each field with the table's range and names the JSON path") {
  const auto& zero = config::field(ScenarioKind::kTrain, "/parallel/zero");
  auto j = nlohmann::json::parse(R"({"model": "llama3.1-8b", "cluster": "hgx-h100", "parallel": {"tp": 8, "zero": 9},
    "training": {"seq": 4096, "global_batch": 8}})");
  try {
    (void)config::parse_scenario(config::JsonDoc{"t.json", j});
    FAIL("accepted ZeRO 9");
  } catch (const InputError& e) {
    REQUIRE(e.problems().size() == 1);
    CHECK(e.problems()[0].pointer == "/parallel/zero");
    CHECK(e.problems()[0].message == "expected an integer from " + std::to_string(static_cast<int>(zero.min)) + " to " +
                                         std::to_string(static_cast<int>(zero.max)) + "; got 9");
  }
}

TEST_CASE("text from a flag or --set is typed by its field") {
  using config::value_from_text;
  CHECK(value_from_text(&config::field(ScenarioKind::kTrain, "/parallel/tp"), "4") == 4);
  CHECK(value_from_text(&config::field(ScenarioKind::kTrain, "/name"), "123") == "123");  // a string stays one
  CHECK(value_from_text(&config::field(ScenarioKind::kTrain, "/name"), "\"x\"") == "x");
  CHECK(value_from_text(&config::field(ScenarioKind::kInfer, "/workload/input_len"), "128") == 128);
  CHECK(value_from_text(&config::field(ScenarioKind::kInfer, "/workload/input_len"), "64-128") == "64-128");
  CHECK(value_from_text(&config::field(ScenarioKind::kInfer, "/workload/rate"), "inf") == "inf");
  CHECK(value_from_text(&config::field(ScenarioKind::kInfer, "/workload/rate"), "2.5") == 2.5);
  CHECK(value_from_text(nullptr, "true") == true);
  nlohmann::json doc = {{"kind", "infer"}};
  config::set_field_text(doc, "engine.max_batch", "64", "test");
  CHECK(doc["engine"]["max_batch"] == 64);
}
