// bench/retest.cpp: the interleaved top-K re-test: reading its candidates and ordering its rounds (retest.hpp).
#include "retest.hpp"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "names.hpp"

namespace ktune::bench {

std::vector<Candidate> parse_candidates(std::string_view json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text.begin(), json_text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(std::string("candidates: not valid JSON: ") + e.what());
  }
  std::vector<Candidate> out;
  try {
    for (const nlohmann::json& c : j.at("candidates")) {
      Candidate k;
      k.op = c.at("op").get<std::string>();
      const std::string dtype = c.at("dtype").get<std::string>();
      if (!parse_dtype(dtype, k.dtype)) throw std::runtime_error("candidates: unknown dtype '" + dtype + "'");
      std::string err;
      if (!parse_shape_key(c.at("shape").get<std::string>(), k.shape, err)) throw std::runtime_error("candidates: " + err);
      for (const nlohmann::json& id : c.at("ids")) {
        const std::string s = id.get<std::string>();
        if (std::find(k.ids.begin(), k.ids.end(), s) == k.ids.end()) k.ids.push_back(s);
      }
      if (k.ids.empty()) throw std::runtime_error("candidates: " + k.op + " " + dtype + " " + k.shape.key() + " has no ids");
      out.push_back(std::move(k));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("candidates: missing or mistyped field: ") + e.what());
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

RoundStats round_stats(const std::vector<double>& round_medians) {
  RoundStats s;
  if (round_medians.empty()) return s;
  s.median = median(round_medians);
  s.min = *std::min_element(round_medians.begin(), round_medians.end());
  s.max = *std::max_element(round_medians.begin(), round_medians.end());
  s.spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
  return s;
}

std::vector<std::size_t> round_order(std::size_t n, std::size_t round) {
  std::vector<std::size_t> order(n);
  for (std::size_t k = 0; k < n; ++k) order[k] = (k + round) % n;
  return order;
}

}  // namespace ktune::bench
