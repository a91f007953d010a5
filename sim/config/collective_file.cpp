#include "sim/config/collective_file.hpp"

#include "sim/config/reader.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/quantity.hpp"

namespace cs::config {

CollectiveDoc parse_collective_doc(const JsonDoc& doc, const Catalog& catalog) {
  Problems problems;
  auto r = Reader::root(doc, problems);
  problems.throw_if_any();
  CollectiveDoc out;
  (void)r.req_enum("kind", {"collective"});
  out.name = r.req_string("name");
  out.description = r.opt_string("description", "");
  out.op = r.req_enum("op", {"allreduce", "allgather", "reducescatter", "alltoall"});
  out.algo = r.opt_enum("algo", {"auto", "ring", "tree", "nvls", "direct"}, "auto");
  out.bytes = r.req_quantity("bytes", Dimension::kBytes, 1.0);
  struct Ref {
    std::string name, cluster, profile, pointer;
    int gpus = 0;
  };
  std::vector<Ref> refs;
  auto variants = r.each("variants");
  for (std::size_t i = 0; i < variants.size(); ++i) {
    auto& v = variants[i];
    Ref ref;
    ref.name = v.req_string("name");
    ref.cluster = v.req_string("cluster");
    ref.profile = v.opt_string("profile", "");
    ref.gpus = static_cast<int>(v.opt_int("gpus", 2, 1024, 0));
    ref.pointer = "/variants/" + std::to_string(i);
    v.finish();
    refs.push_back(ref);
  }
  if (variants.empty() && r.has("variants")) r.fail_at("variants", "expected at least one variant");
  r.finish();
  problems.throw_if_any();
  for (const auto& ref : refs) {
    CollectiveVariant cv;
    cv.name = ref.name;
    cv.box = resolve_box(catalog, doc.path,
                         BoxRefs{ref.cluster, ref.profile, "", ref.pointer + "/cluster", ref.pointer + "/profile", ""});
    cv.gpus = ref.gpus == 0 ? cv.box.cluster.gpus : ref.gpus;
    if (cv.gpus > cv.box.cluster.gpus) {
      throw InputError(
          doc.path, ref.pointer + "/gpus",
          "at most the cluster's " + std::to_string(cv.box.cluster.gpus) + " GPUs; got " + std::to_string(cv.gpus));
    }
    out.variants.push_back(std::move(cv));
  }
  return out;
}

}  // namespace cs::config
