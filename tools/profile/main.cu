// ktune_profile: profiles compiled variants of any registered op with CUPTI and diagnoses them.
//
//   ktune_profile --op silu_and_mul --dtype bf16 --shape tokens=1,d=11008 --variant original --json out.json
//
// For each (dtype, shape, variant) it measures CUDA-event time, the activity API's exact kernel
// durations and the range profiler's hardware metrics (ktune/profile/profile.cuh), next to the copy
// ceiling and the empty-kernel time of this process, then prints the findings of ktune/diagnose.hpp
// and writes everything as JSON. Generic over ops: it knows an op only through ktune::Registry and
// the op's ktune::Harness (link ktune_variants, like the benchmark).
//
// Exit codes: 0 profiled (hardware metrics may still be missing: see metrics_status), 1 usage,
// 2 no usable GPU, 3 a CUDA or launch failure, 4 nothing matched the selection.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ktune/device_info.hpp>
#include <ktune/diagnose.hpp>
#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/profile/profile.cuh>
#include <ktune/registry.hpp>
#include <ktune/timing.cuh>

namespace {

constexpr const char* usage_text =
    "usage: ktune_profile --op OP --shape DIM=V[,DIM=V...] [options]\n"
    "       ktune_profile --plan FILE --json OUT [--no-metrics] [--no-stalls] [--no-ceiling] [--warm-l2]\n"
    "       ktune_profile --list\n"
    "\n"
    "Profiles compiled variants with CUPTI (activity durations, hardware metrics) and prints findings.\n"
    "\n"
    "  --op OP            the op (a kernels/<op> folder), e.g. silu_and_mul\n"
    "  --shape S          a shape in the spec's dimensions, e.g. tokens=16,d=11008 (repeatable)\n"
    "  --dtype T          fp32, fp16 or bf16 (repeatable; default bf16)\n"
    "  --variant ID       a variant id, 'original' or 'all' (repeatable; default original)\n"
    "  --json FILE        write the records and findings as JSON to FILE\n"
    "  --plan FILE        profile the calls of a `ktune profile-plan` file (per call: op, dtype, shape,\n"
    "                     variants) instead of --op/--shape/--dtype/--variant; ops or variants this binary\n"
    "                     lacks are reported and skipped\n"
    "  --warm-l2          time with one buffer set (default: rotate sets larger than 2x the L2)\n"
    "  --no-metrics       skip the hardware metrics (range profiler)\n"
    "  --no-stalls        hardware metrics without the warp stall reasons (fewer replay passes)\n"
    "  --no-ceiling       skip the copy-ceiling measurement (no bandwidth findings)\n"
    "  --list             list the registered ops and variant counts, then exit (no GPU needed)\n"
    "  --help             this text\n"
    "\n"
    "exit codes: 0 done, 1 usage, 2 no usable GPU, 3 CUDA or launch failure, 4 nothing matched\n";

struct Cli {
  std::string op;
  std::vector<std::string> shapes, variants;
  std::vector<ktune::DType> dtypes;
  std::string json;
  std::string plan;
  bool warm_l2 = false, metrics = true, stalls = true, ceiling = true, list = false, help = false;
};

bool parse_cli(int argc, char** argv, Cli& c, std::string& err) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) {
        err = a + " needs a value";
        return false;
      }
      out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") c.help = true;
    else if (a == "--list") c.list = true;
    else if (a == "--warm-l2") c.warm_l2 = true;
    else if (a == "--no-metrics") c.metrics = false;
    else if (a == "--no-stalls") c.stalls = false;
    else if (a == "--no-ceiling") c.ceiling = false;
    else if (a == "--op") { if (!value(c.op)) return false; }
    else if (a == "--json") { if (!value(c.json)) return false; }
    else if (a == "--plan") { if (!value(c.plan)) return false; }
    else if (a == "--shape") { if (!value(v)) return false; c.shapes.push_back(v); }
    else if (a == "--variant") { if (!value(v)) return false; c.variants.push_back(v); }
    else if (a == "--dtype") {
      if (!value(v)) return false;
      ktune::DType t{};
      if (!ktune::parse_dtype(v, t)) {
        err = "unknown dtype '" + v + "' (fp32, fp16, bf16)";
        return false;
      }
      c.dtypes.push_back(t);
    } else {
      err = "unknown option '" + a + "'";
      return false;
    }
  }
  if (c.help || c.list) return true;
  if (!c.plan.empty()) {
    if (!c.op.empty() || !c.shapes.empty() || !c.dtypes.empty() || !c.variants.empty())
      return err = "--plan replaces --op, --shape, --dtype and --variant", false;
    if (c.json.empty()) return err = "--plan needs --json OUT", false;
    return true;
  }
  if (c.op.empty()) return err = "--op is required", false;
  if (c.shapes.empty()) return err = "--shape is required", false;
  if (c.dtypes.empty()) c.dtypes.push_back(ktune::DType::bf16);
  if (c.variants.empty()) c.variants.push_back("original");
  return true;
}

/// "tokens=16,d=11008" -> Shape; false on malformed text.
bool parse_shape(const std::string& text, ktune::Shape& s) {
  s.dims.clear();
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string term = text.substr(pos, end - pos);
    const std::size_t eq = term.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == term.size()) return false;
    char* rest = nullptr;
    const long long v = std::strtoll(term.c_str() + eq + 1, &rest, 10);
    if (*rest != '\0' || v <= 0) return false;
    s.dims.emplace_back(term.substr(0, eq), v);
    pos = end + 1;
  }
  return !s.dims.empty();
}

std::string describe(const ktune::Status& s) {
  std::string m = std::string(ktune::to_string(s.code)) + ": " + s.message;
  if (s.cuda != cudaSuccess) m += std::string(" (") + cudaGetErrorName(s.cuda) + ": " + cudaGetErrorString(s.cuda) + ")";
  return m;
}

int list_variants() {
  const ktune::Registry& reg = ktune::Registry::global();
  if (reg.size() == 0) {
    std::printf("no variants are compiled into this binary\n");
    return 0;
  }
  for (const std::string& op : reg.ops()) {
    std::printf("%s:", op.c_str());
    for (ktune::DType t : ktune::all_dtypes)
      std::printf(" %s %zu", ktune::name(t), reg.select(op, t).size());
    std::printf(" (variants incl. original, all archs)%s\n",
                ktune::HarnessRegistry::global().find(op) ? "" : " [no harness: cannot be profiled]");
  }
  return 0;
}

/// Device buffers of `sets` copies of a call's tensors, filled from `host` (inputs) once.
struct Buffers {
  std::vector<void*> ptrs;
  ~Buffers() {
    for (void* p : ptrs) cudaFree(p);
  }
};

/// The variants of `op`/`dtype` to profile on a device of compute capability `arch`: the compiled
/// architecture closest to it from below.
std::vector<const ktune::Variant*> variants_for(const std::string& op, ktune::DType dtype, int arch) {
  int best = 0;
  for (const ktune::Variant* v : ktune::Registry::global().select(op, dtype))
    if (v->arch <= arch && v->arch > best) best = v->arch;
  return best ? ktune::Registry::global().select(op, dtype, best) : std::vector<const ktune::Variant*>{};
}

/// One call of a `ktune profile-plan` file: S and the winner of one (op, dtype, shape).
struct PlanCall {
  std::string op;
  ktune::DType dtype{};
  ktune::Shape shape;
  std::vector<std::string> variants;
};

/// Reads a plan ({"schema": "ktune.profile_plan", "gpu_slug", "calls": [...]}); false with `err` set on
/// anything malformed, so a bad plan fails before the GPU is touched.
bool load_plan(const std::string& path, std::vector<PlanCall>& calls, std::string& slug, std::string& err) {
  std::ifstream f(path);
  if (!f) return err = "cannot read " + path, false;
  try {
    const nlohmann::json j = nlohmann::json::parse(f);
    if (j.value("schema", std::string()) != "ktune.profile_plan")
      return err = path + " is not a ktune profile plan (schema ktune.profile_plan)", false;
    slug = j.value("gpu_slug", std::string());
    for (const auto& c : j.at("calls")) {
      PlanCall call;
      call.op = c.at("op").get<std::string>();
      const std::string dtype = c.at("dtype").get<std::string>(), shape = c.at("shape").get<std::string>();
      if (!ktune::parse_dtype(dtype, call.dtype)) return err = path + ": unknown dtype '" + dtype + "'", false;
      if (!parse_shape(shape, call.shape)) return err = path + ": malformed shape '" + shape + "'", false;
      call.variants = c.at("variants").get<std::vector<std::string>>();
      calls.push_back(std::move(call));
    }
  } catch (const nlohmann::json::exception& e) {
    return err = path + ": malformed plan (" + e.what() + ")", false;
  }
  return true;
}

struct Run {
  const Cli& cli;
  double ceiling_gbps = 0;
  double empty_us = 0;
  cudaStream_t stream = nullptr;
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  int matched = 0;

  ktune::Status profile_shape(const std::string& op, const ktune::Harness& h, ktune::DType dtype,
                              const ktune::Shape& shape, const std::vector<const ktune::Variant*>& chosen) {
    const std::vector<ktune::TensorInfo> tensors = h.tensors(shape, dtype);
    std::size_t bytes_per_call = 0, moved = 0;
    for (const ktune::TensorInfo& t : tensors) {
      bytes_per_call += t.bytes();
      moved += t.moved_bytes();
    }
    const ktune::DeviceInfo* dev = nullptr;
    KTUNE_TRY(ktune::current_device(dev));
    const std::size_t sets = cli.warm_l2 ? 1 : ktune::rotations_for_cold_l2(bytes_per_call, static_cast<std::size_t>(dev->l2_bytes));

    ktune::HostTensors host;
    h.fill_inputs(shape, dtype, 0x6b74756e65ull, host);
    Buffers buf;
    std::vector<std::shared_ptr<const void>> args;
    for (std::size_t s = 0; s < sets; ++s) {
      std::vector<void*> ptrs;
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        void* p = nullptr;
        KTUNE_CUDA_TRY(cudaMalloc(&p, std::max<std::size_t>(tensors[i].bytes(), 1)));
        buf.ptrs.push_back(p);
        ptrs.push_back(p);
        if (!host[i].empty())
          KTUNE_CUDA_TRY(cudaMemcpy(p, host[i].data(), host[i].size(), cudaMemcpyHostToDevice));
      }
      args.push_back(h.make_args(shape, dtype, ptrs));
    }

    for (const ktune::Variant* v : chosen) {
      ++matched;
      ktune::profile::ProfileRecord rec;
      rec.op = op;
      rec.dtype = ktune::name(dtype);
      rec.shape = shape.key();
      rec.variant = v->id;
      for (const auto& [n, value] : shape.dims)
        if (n == "tokens") rec.tokens = value;  // every spec's tokens_dim (docs/kernel-folder.md)
      rec.expected_bytes = static_cast<double>(moved);
      if (ceiling_gbps > 0) rec.copy_ceiling_gbps = ceiling_gbps;
      if (empty_us > 0) rec.empty_kernel_us = empty_us;
      rec.warm_l2 = cli.warm_l2;

      nlohmann::ordered_json entry;
      const ktune::Status can = v->can_implement(args[0].get());
      if (!can.ok()) {
        std::printf("%s/%s/%s/%s: skipped, %s\n", rec.op.c_str(), rec.dtype.c_str(), rec.shape.c_str(), v->id.c_str(),
                    describe(can).c_str());
        entry["record"] = ktune::profile::to_json(rec);
        entry["skipped"] = describe(can);
        out.push_back(std::move(entry));
        continue;
      }
      ktune::profile::Options opt;
      opt.metrics = cli.metrics;
      opt.stalls = cli.stalls;
      const std::vector<ktune::KernelResources> res = {v->resources(args[0].get())};
      KTUNE_TRY(ktune::profile::profile_call(
          [&](std::size_t r) { return v->run(args[r % args.size()].get(), stream); }, args.size(), stream, opt, rec, res));
      const std::vector<ktune::profile::Finding> findings = ktune::profile::diagnose(rec);
      print(rec, findings);
      entry["record"] = ktune::profile::to_json(rec);
      entry["findings"] = ktune::profile::to_json(findings);
      out.push_back(std::move(entry));
    }
    return ktune::Status::success();
  }

  static void print(const ktune::profile::ProfileRecord& r, const std::vector<ktune::profile::Finding>& fs) {
    std::printf("%s/%s/%s/%s\n", r.op.c_str(), r.dtype.c_str(), r.shape.c_str(), r.variant.c_str());
    if (r.event_us) std::printf("  events    %10.2f us%s\n", *r.event_us, r.event_graph ? " (graph replay)" : "");
    if (auto a = r.activity_us()) std::printf("  activity  %10.2f us (sum of kernel durations)\n", *a);
    else std::printf("  activity  unavailable: %s\n", r.activity_status.c_str());
    // Rates within 0-100% and no bandwidth above the copy ceiling presented as one (ktune/diagnose.hpp):
    // this report is what the generator's LLM reads.
    if (r.expected_bytes) {
      const std::string bw = ktune::profile::bandwidth_text(r);
      if (!bw.empty()) std::printf("  %s\n", bw.c_str());
      else if (const auto t = ktune::profile::device_time_us(r); t && *t > 0)
        std::printf("  bandwidth %.0f GB/s (no copy ceiling measured)\n", *r.expected_bytes / (*t * 1e3));
    }
    if (r.metrics_status != "ok") std::printf("  metrics   unavailable: %s\n", r.metrics_status.c_str());
    for (const ktune::profile::KernelMetrics& k : r.kernels) {
      std::printf("  kernel %s: grid %lld, block %lld, %d regs, %lld B local\n", k.name.c_str(),
                  static_cast<long long>(k.blocks()), static_cast<long long>(k.threads_per_block()),
                  k.registers.value_or(-1), static_cast<long long>(k.local_bytes.value_or(-1)));
      if (k.dram_bytes()) std::printf("    %s\n", ktune::profile::kernel_metrics_text(k).c_str());
    }
    for (const ktune::profile::Finding& f : fs) std::printf("  finding: %s\n", f.message.c_str());
    if (fs.empty() && r.metrics_status == "ok") std::printf("  no findings\n");
  }
};

}  // namespace

int main(int argc, char** argv) {
  Cli cli;
  std::string err;
  if (!parse_cli(argc, argv, cli, err)) {
    std::fprintf(stderr, "ktune_profile: %s\n\n%s", err.c_str(), usage_text);
    return 1;
  }
  if (cli.help) {
    std::printf("%s", usage_text);
    return 0;
  }
  if (cli.list) return list_variants();

  std::vector<PlanCall> plan;
  std::string plan_slug;
  if (!cli.plan.empty() && !load_plan(cli.plan, plan, plan_slug, err)) {
    std::fprintf(stderr, "ktune_profile: %s\n", err.c_str());
    return 1;
  }
  const ktune::Harness* h = cli.plan.empty() ? ktune::HarnessRegistry::global().find(cli.op) : nullptr;
  if (cli.plan.empty() && !h) {
    std::fprintf(stderr, "ktune_profile: no op '%s' with a harness is compiled into this binary (see --list)\n",
                 cli.op.c_str());
    return 4;
  }
  std::vector<ktune::Shape> shapes;
  for (const std::string& s : cli.shapes) {
    ktune::Shape shape;
    if (!parse_shape(s, shape)) {
      std::fprintf(stderr, "ktune_profile: malformed --shape '%s' (expected DIM=V[,DIM=V...])\n", s.c_str());
      return 1;
    }
    shapes.push_back(shape);
  }

  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "ktune_profile: no usable CUDA device (%s); profiling needs a GPU\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 2;
  }

  Run run{cli};
  auto fail = [](const char* what, const ktune::Status& s) {
    std::fprintf(stderr, "ktune_profile: %s: %s\n", what, describe(s).c_str());
    return 3;
  };
  if (cudaStreamCreateWithFlags(&run.stream, cudaStreamNonBlocking) != cudaSuccess)
    return fail("stream", ktune::Status::from_cuda(cudaGetLastError(), "cudaStreamCreateWithFlags"));
  const ktune::DeviceInfo* dev = nullptr;
  if (const ktune::Status s = ktune::current_device(dev); !s.ok()) return fail("device", s);

  ktune::TimingResult empty;
  if (const ktune::Status s = ktune::time_empty_kernel(run.stream, ktune::TimingOptions{}, empty); !s.ok())
    return fail("empty kernel", s);
  run.empty_us = empty.median_us;
  if (cli.ceiling) {
    ktune::CopyCeiling c;
    if (const ktune::Status s = ktune::measure_copy_ceiling(c, std::size_t{1} << 30, 10, run.stream); !s.ok())
      return fail("copy ceiling", s);
    run.ceiling_gbps = c.best_gbps();
  }
  std::printf("device %s (sm_%d, %d SMs): copy ceiling %.0f GB/s, empty kernel %.2f us\n", dev->name, dev->arch,
              dev->sms, run.ceiling_gbps, run.empty_us);

  // A plan: each call on its own; what this binary lacks (another op subset, a variant of an older
  // build) is reported and skipped, so one missing kernel does not lose the rest of the profile.
  for (const PlanCall& call : plan) {
    const std::string where = call.op + "/" + ktune::name(call.dtype) + "/" + call.shape.key();
    const ktune::Harness* ph = ktune::HarnessRegistry::global().find(call.op);
    if (!ph) {
      std::fprintf(stderr, "ktune_profile: %s: no op '%s' with a harness in this binary; skipped\n", where.c_str(),
                   call.op.c_str());
      continue;
    }
    const std::vector<const ktune::Variant*> all = variants_for(call.op, call.dtype, dev->arch);
    std::vector<const ktune::Variant*> chosen;
    for (const std::string& want : call.variants) {
      const auto it = std::find_if(all.begin(), all.end(), [&](const ktune::Variant* v) { return v->id == want; });
      if (it == all.end())
        std::fprintf(stderr, "ktune_profile: %s: variant %s is not compiled for sm_%d in this binary; skipped\n",
                     where.c_str(), want.c_str(), dev->arch);
      else
        chosen.push_back(*it);
    }
    if (chosen.empty()) continue;
    if (const ktune::Status s = run.profile_shape(call.op, *ph, call.dtype, call.shape, chosen); !s.ok())
      return fail(where.c_str(), s);
  }

  for (ktune::DType dtype : cli.plan.empty() ? cli.dtypes : std::vector<ktune::DType>{}) {
    const std::vector<const ktune::Variant*> all = variants_for(cli.op, dtype, dev->arch);
    std::vector<const ktune::Variant*> chosen;
    for (const std::string& want : cli.variants)
      for (const ktune::Variant* v : all)
        if (want == "all" || v->id == want) chosen.push_back(v);
    if (chosen.empty()) {
      std::fprintf(stderr, "ktune_profile: %s/%s: no compiled variant matches the --variant selection\n",
                   cli.op.c_str(), ktune::name(dtype));
      continue;
    }
    for (const ktune::Shape& shape : shapes)
      if (const ktune::Status s = run.profile_shape(cli.op, *h, dtype, shape, chosen); !s.ok())
        return fail(shape.key().c_str(), s);
  }

  if (!cli.json.empty()) {
    nlohmann::ordered_json doc;
    doc["tool"] = "ktune_profile";
    doc["device"] = dev->name;
    if (!cli.plan.empty()) doc["gpu_slug"] = plan_slug;
    doc["copy_ceiling_gbps"] = run.ceiling_gbps;
    doc["empty_kernel_us"] = run.empty_us;
    doc["profiles"] = run.out;
    std::ofstream f(cli.json);
    f << doc.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "ktune_profile: cannot write %s\n", cli.json.c_str());
      return 3;
    }
  }
  cudaStreamDestroy(run.stream);
  return run.matched ? 0 : 4;
}
