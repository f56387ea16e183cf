// generator/derive/command.cpp: `ktune derive` (command.hpp).
#include "generator/derive/command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include <unistd.h>  // getpid

#include "generator/derive/derive.hpp"
#include "generator/record/files.hpp"
#include "generator/toolchain/toolchain.hpp"
#include "ktune/cli.hpp"

namespace ktune::gen {

namespace fs = std::filesystem;

namespace {

struct Options {
  fs::path source, spec, kernels_dir = "kernels", toolchain;
  std::string op;
  bool force = false;
};

/// Whether `path` is a tuned table a tune wrote (one with rows): that one is never replaced. A missing table,
/// or one before the first tune, is derived from space.hpp like the other files.
bool has_tuned_rows(const fs::path& path) {
  if (!fs::exists(path)) return false;
  std::string err;
  const std::string text = read_file(path, err);
  return !err.empty() || text.find("inline constexpr std::nullptr_t entries = nullptr;") == std::string::npos;
}

/// The default-only tuned table of folder/space.hpp, from the space probe; empty `error` on success.
DerivedFile default_table_of(const Options& o, const fs::path& folder, std::string& error) {
  Toolchain tc;
  if (error = load_toolchain(toolchain_path(o.toolchain), tc); !error.empty()) return {};
  // The probe includes "kernels/OP/space.hpp": give it a root whose kernels/OP is the folder.
  std::error_code ec;
  const fs::path work = fs::temp_directory_path(ec) / fmt::format("ktune-derive-{}-{}", o.op, ::getpid());
  const fs::path root = work / "root";
  fs::create_directories(root / "kernels", ec);
  fs::create_directory_symlink(fs::absolute(folder), root / "kernels" / o.op, ec);
  if (ec) {
    error = "cannot prepare the space probe in " + work.string() + ": " + ec.message();
    fs::remove_all(work, ec);
    return {};
  }
  SpaceProbe probe;
  std::string log;
  bool timed_out = false;
  error = probe_space(tc, o.op, root, work, work, probe, log, timed_out);
  fs::remove_all(work, ec);
  if (!error.empty()) {
    error = fmt::format("{}/space.hpp does not compile on its own{}:\n{}", folder.string(),
                        timed_out ? " (the compile ran out of time)" : "", error);
    return {};
  }
  std::cout << fmt::format("ktune derive: space of {}: {} points, feasible on sm_{}: fp32 {}, fp16 {}, bf16 {}; default {}\n", o.op,
                           probe.total, tc.arch, probe.feasible["fp32"], probe.feasible["fp16"], probe.feasible["bf16"],
                           probe.default_id);
  return default_tuned_table(o.op, probe.hash);
}

}  // namespace

int derive_command(const std::vector<std::string>& args) {
  CLI::App app{"Writes the parts of DIR/OP/ (default kernels/OP/) that follow from the original kernel S and its spec\n"
               "alone, exactly as `ktune agent` derives them: spec.json, args.hpp, original.cuh, harness.hpp,\n"
               "family_base.cuh, OP.hpp, OP.cuh and OP.cu (generator/derive/README.md). The two files a person or an\n"
               "LLM writes, space.hpp and family.cuh, are never touched. Once space.hpp exists, the default-only tuned\n"
               "table tuned.cuh is derived too (its space hash comes from compiling space.hpp with the toolchain's\n"
               "nvcc); a tuned.cuh with tuned rows is kept, since a tune wrote it. Every file is written atomically;\n"
               "when anything would fail, nothing is changed.",
               "ktune derive"};
  cli::style(app);
  Options o;
  app.add_option("S.cu", o.source, "the original kernel S")->required();
  app.add_option("--spec", o.spec, "spec.json of the op (docs/kernel-folder.md)")->required();
  app.add_option("--name", o.op, "the op's name (lowercase identifier; the spec's \"op\")")->required();
  app.add_option("--kernels", o.kernels_dir, "the folder that holds OP/ (default: kernels)");
  app.add_option("--toolchain", o.toolchain,
                 "the build's toolchain.json, for the space probe (default: the one this binary was built with)");
  app.add_flag("--force", o.force, "replace derived files that differ from what S and the spec give now");
  if (auto done = cli::parse(app, args)) return *done;
  auto fail = [](const std::string& why) {
    std::cerr << "ktune derive: " << why << "\n";
    return 1;
  };
  std::string err;
  const std::string s_source = read_file(o.source, err);
  const std::string spec_text = err.empty() ? read_file(o.spec, err) : "";
  if (!err.empty()) return fail(err);
  DeriveResult derived = derive_kernel_folder(o.op, s_source, o.source.filename().string(), spec_text);
  if (!derived.ok()) return fail("cannot derive the kernel folder from S and the spec: " + derived.error);

  const fs::path folder = o.kernels_dir / o.op;
  const bool has_space = fs::exists(folder / "space.hpp");
  if (has_space && !has_tuned_rows(folder / "tuned.cuh")) {
    DerivedFile table = default_table_of(o, folder, err);
    if (!err.empty()) return fail(err);
    derived.files.push_back(std::move(table));
  }

  // Decide everything before writing anything: a derived file that differs needs --force.
  std::vector<const DerivedFile*> to_write;
  for (const DerivedFile& f : derived.files) {
    const fs::path path = folder / f.name;
    if (!fs::exists(path)) {
      to_write.push_back(&f);
      continue;
    }
    std::string read_err;
    if (read_file(path, read_err) == f.content && read_err.empty()) continue;
    if (!o.force)
      return fail(path.string() + " exists and differs from what S and the spec give now; pass --force to replace the "
                                  "derived files (space.hpp, family.cuh and a tuned.cuh with tuned rows are never replaced)");
    to_write.push_back(&f);
  }
  for (const DerivedFile* f : to_write)
    if (std::string e = write_file_atomic(folder / f->name, f->content); !e.empty()) return fail(e);
  std::cout << fmt::format("ktune derive: {}: {} file(s) written, {} unchanged\n", folder.string(), to_write.size(),
                           derived.files.size() - to_write.size());
  if (!has_space)
    std::cout << fmt::format("ktune derive: next, write {0}/space.hpp and {0}/family.cuh (generator/derive/README.md), "
                             "then run ktune derive again for the default tuned table\n",
                             folder.string());
  else if (!fs::exists(folder / "family.cuh"))
    std::cout << fmt::format("ktune derive: next, write {}/family.cuh (generator/derive/README.md)\n", folder.string());
  return 0;
}

}  // namespace ktune::gen
