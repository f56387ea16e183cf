// The generated headers are written by bench/CMakeLists.txt into the build tree.
#include "build_info.hpp"

#include "ktune_bench_build_info.hpp"
#include "ktune_bench_config.hpp"
#include "ktune_bench_git.hpp"

namespace ktune::bench {

namespace generated {
struct SpaceHash {
  const char* op;
  std::uint64_t hash;
};
extern const SpaceHash space_hashes[];  // ktune_bench_spaces.cpp; ends with {nullptr, 0}
}  // namespace generated

const BuildInfo& build_info() {
  static const BuildInfo info = [] {
    BuildInfo b;
    b.version = KTUNE_BENCH_VERSION;
    b.git_commit = KTUNE_BENCH_GIT_COMMIT;
    b.toolchain = generated::toolchain;
    for (const generated::OpSource* s = generated::op_sources; s->op; ++s) {
      OpBuild o;
      o.op = s->op;
      o.source_hash = s->source_hash;
      o.spec_json = s->spec_json;
      for (const generated::SpaceHash* h = generated::space_hashes; h->op; ++h)
        if (o.op == h->op) {
          o.has_space_hash = true;
          o.space_hash = h->hash;
        }
      b.ops.push_back(std::move(o));
    }
    return b;
  }();
  return info;
}

}  // namespace ktune::bench
