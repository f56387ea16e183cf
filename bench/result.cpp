// bench/result.cpp: one benchmark's outcome to and from JSON (result.hpp).
#include "result.hpp"

namespace ktune::bench {

std::map<std::string, double> counters(const BenchResult& r, double copy_gbps) {
  std::map<std::string, double> c;
  c["bytes"] = r.bytes;
  c["seed"] = static_cast<double>(r.seed);
  c["cold_l2"] = r.cold_l2 ? 1 : 0;
  if (r.refined) c["rounds"] = r.rounds;  // what tells a finalist's rounds from its screen in a search file
  if (!r.ok()) return c;
  const double gbps = r.gbps();
  c["GBps"] = gbps;
  c["pct_copy"] = copy_gbps > 0 ? 100.0 * gbps / copy_gbps : 0;
  if (r.copy_same_size_us > 0 && r.median_us > 0) {
    c["copy_same_size_us"] = r.copy_same_size_us;
    c["pct_copy_same_size"] = 100.0 * r.copy_same_size_us / r.median_us;
  }
  c["median_us"] = r.median_us;
  c["min_us"] = r.min_us;
  c["max_us"] = r.max_us;
  c["spread"] = r.spread;
  c["samples"] = r.samples;
  c["batch"] = r.batch;
  c["registers"] = r.registers;
  c["local_bytes"] = r.local_bytes;
  c["occupancy"] = r.occupancy;
  c["rel_l2"] = r.rel_l2;
  c["max_abs"] = r.max_abs;
  c["cached"] = r.cached ? 1 : 0;
  if (r.rounds > 0) c["rounds"] = r.rounds;
  if (r.remeasured > 0) c["remeasured"] = r.remeasured;
  if (r.noisy) c["noisy"] = 1;
  if (r.pruned) c["pruned"] = 1;
  return c;
}

nlohmann::json to_json(const BenchResult& r) {
  return nlohmann::json{{"name", r.name},         {"op", r.op},
                        {"dtype", r.dtype},       {"shape", r.shape},
                        {"id", r.id},             {"error", r.error},
                        {"median_us", r.median_us}, {"min_us", r.min_us},
                        {"max_us", r.max_us},     {"spread", r.spread},
                        {"samples", r.samples},   {"batch", r.batch},
                        {"rounds", r.rounds},     {"bytes", r.bytes},
                        {"registers", r.registers}, {"local_bytes", r.local_bytes},
                        {"occupancy", r.occupancy}, {"rel_l2", r.rel_l2},
                        {"max_abs", r.max_abs},   {"cold_l2", r.cold_l2},
                        {"seed", r.seed},         {"copy_gbps", r.copy_gbps},
                        {"remeasured", r.remeasured}, {"noisy", r.noisy},
                        {"pruned", r.pruned}};
}

BenchResult result_from_json(const nlohmann::json& j) {
  BenchResult r;
  j.at("name").get_to(r.name);
  j.at("op").get_to(r.op);
  j.at("dtype").get_to(r.dtype);
  j.at("shape").get_to(r.shape);
  j.at("id").get_to(r.id);
  j.at("error").get_to(r.error);
  j.at("median_us").get_to(r.median_us);
  j.at("min_us").get_to(r.min_us);
  j.at("max_us").get_to(r.max_us);
  j.at("spread").get_to(r.spread);
  j.at("samples").get_to(r.samples);
  j.at("batch").get_to(r.batch);
  j.at("rounds").get_to(r.rounds);
  j.at("bytes").get_to(r.bytes);
  j.at("registers").get_to(r.registers);
  j.at("local_bytes").get_to(r.local_bytes);
  j.at("occupancy").get_to(r.occupancy);
  j.at("rel_l2").get_to(r.rel_l2);
  j.at("max_abs").get_to(r.max_abs);
  j.at("cold_l2").get_to(r.cold_l2);
  j.at("seed").get_to(r.seed);
  j.at("copy_gbps").get_to(r.copy_gbps);
  r.remeasured = j.value("remeasured", 0);  // absent in lines written before the search
  r.noisy = j.value("noisy", false);
  r.pruned = j.value("pruned", false);  // absent in lines written before screens were pruned
  return r;
}

}  // namespace ktune::bench
