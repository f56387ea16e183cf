// Writes tests/tools/data/profile/profile.json in ktune_profile's --json format (tools/profile/main.cu): real
// ProfileRecords and the findings diagnose() gives them. Rebuild: g++ -std=c++17 -Iinclude this.cpp && ./a.out OUT
#include <fstream>
#include <ktune/diagnose.hpp>
using namespace ktune::profile;
using J = nlohmann::ordered_json;
DeviceFacts h200() {
  DeviceFacts d; d.name = "NVIDIA H200"; d.arch = 90; d.sms = 132; d.l2_bytes = 52428800; d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32; d.regs_per_sm = 65536; d.smem_per_sm = 233472; return d;
}
ProfileRecord rec(const char* op, const char* shape, const char* variant, long tokens, double bytes, double event_us,
                  double act_us, long grid, long block, int regs, double dram_r, double dram_w, double occ, double ldsec,
                  double ldreq, double ldbytes) {
  ProfileRecord r; r.op = op; r.dtype = "bf16"; r.shape = shape; r.variant = variant; r.device = h200();
  r.tokens = tokens; r.expected_bytes = bytes; r.copy_ceiling_gbps = 4312.5; r.empty_kernel_us = 2.1;
  r.event_us = event_us; r.event_spread = 0.004; r.event_graph = event_us < 10;
  KernelMetrics k; k.name = std::string("_ZN5ktune6kernel_") + variant; k.grid[0] = grid; k.grid[1] = k.grid[2] = 1;
  k.block[0] = block; k.block[1] = k.block[2] = 1; k.registers = regs; k.static_smem = 0; k.dynamic_smem = 0; k.local_bytes = 0;
  k.duration_us = act_us; k.duration_spread = 0.01; k.duration_samples = 30;
  k.gpu_time_ns = act_us * 1000 * 1.02; k.dram_read_bytes = dram_r; k.dram_write_bytes = dram_w;
  k.dram_throughput_pct = 100 * (dram_r + dram_w) / (act_us * 1e3) / 4800; k.achieved_occupancy = occ;
  k.sm_throughput_pct = 21.5; k.l2_hit_pct = 1.2; k.l1_hit_pct = 0; k.ld_sectors = ldsec; k.ld_requests = ldreq; k.ld_bytes = ldbytes;
  k.st_sectors = ldsec / 2; k.st_requests = ldreq / 2; k.st_bytes = ldbytes / 2;
  k.stalls = {{"long_scoreboard", 18.25}, {"lg_throttle", 1.5}, {"wait", 0.75}};
  r.kernels.push_back(k); r.activity_status = "ok"; r.metrics_status = "ok"; r.metric_passes = 14; return r;
}
int main(int, char** argv) {
  J out = J::array();
  auto add = [&](const ProfileRecord& r) { J e; e["record"] = to_json(r); e["findings"] = to_json(diagnose(r)); out.push_back(e); };
  const double big = 8192.0 * 28672 * 2 * 3;
  // S: 2-byte loads per thread (4 sectors per request is ideal for them), 72% of the copy ceiling.
  add(rec("silu_and_mul", "tokens=8192,d=28672", "original", 8192, big, 455.0, 452.3, 8192, 1024, 16, big * 2 / 3 * 1.01,
          big / 3 * 1.003, 0.86, 29.4e6, 7.34e6, 939.5e6));
  add(rec("silu_and_mul", "tokens=8192,d=28672", "tpb_256.vb_16.ur_2", 8192, big, 346.1, 344.8, 8192, 256, 32,
          big * 2 / 3 * 1.004, big / 3 * 1.002, 0.91, 29.4e6, 1.84e6, 939.5e6));
  // T = 1: S with one block for the row, the winner with more blocks.
  add(rec("silu_and_mul", "tokens=1,d=28672", "original", 1, 28672.0 * 6, 4.6, 2.9, 1, 1024, 16, 172032, 57344, 0.02, 3584, 896, 114688));
  add(rec("silu_and_mul", "tokens=1,d=28672", "tpb_128.vb_16.ur_1", 1, 28672.0 * 6, 3.4, 1.8, 14, 128, 28, 172032, 57344, 0.03,
          3584, 224, 114688));
  // A variant that is not the winner of its shape in the results any more, and another op.
  add(rec("silu_and_mul", "tokens=1,d=28672", "tpb_64.vb_8.ur_1", 1, 28672.0 * 6, 3.6, 1.9, 28, 64, 24, 172032, 57344, 0.02,
          3584, 448, 114688));
  add(rec("fused_add_rmsnorm", "tokens=1,d=4096", "original", 1, 4096.0 * 8, 3.0, 2.0, 1, 1024, 30, 32768, 16384, 0.02, 512, 128, 16384));
  // A variant that cannot implement the shape: ktune_profile records it with "skipped".
  ProfileRecord sk; sk.op = "silu_and_mul"; sk.dtype = "bf16"; sk.shape = "tokens=16,d=28672"; sk.variant = "tpb_1024.vb_16.ur_4";
  sk.device = h200(); sk.tokens = 16; sk.expected_bytes = 16.0 * 28672 * 6; sk.copy_ceiling_gbps = 4312.5; sk.empty_kernel_us = 2.1;
  J e; e["record"] = to_json(sk); e["skipped"] = "cannot_implement: d / vb = 1792 is not a multiple of tpb * ur = 4096"; out.push_back(e);
  J doc; doc["tool"] = "ktune_profile"; doc["device"] = "NVIDIA H200"; doc["copy_ceiling_gbps"] = 4312.5;
  doc["empty_kernel_us"] = 2.1; doc["profiles"] = out; doc["gpu_slug"] = "nvidia-h200";
  std::ofstream(argv[1]) << doc.dump(2) << "\n";
}
