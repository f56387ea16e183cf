// bench/retest.cpp: the interleaved top-K re-test: reading its candidates and ordering its rounds (retest.hpp).
#include "retest.hpp"

#include <algorithm>
#include <cmath>
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

std::vector<std::vector<double>> clock_normalised(const std::vector<std::vector<double>>& medians) {
  const std::size_t n = medians.size();
  std::size_t rounds = 0;
  for (const auto& m : medians) rounds = std::max(rounds, m.size());
  std::vector<std::vector<double>> y(n);  // logs
  for (std::size_t k = 0; k < n; ++k)
    for (double v : medians[k]) y[k].push_back(v > 0 ? std::log(v) : 0.0);
  std::vector<std::size_t> timed(rounds, 0);  // candidates per round
  for (const auto& m : medians)
    for (std::size_t r = 0; r < m.size(); ++r) ++timed[r];
  std::vector<double> level(n), round(rounds, 0.0);
  for (std::size_t k = 0; k < n; ++k) level[k] = median(y[k]);
  // Median polish: a few sweeps settle it to well under a sample's scatter.
  for (int sweep = 0; sweep < 8; ++sweep) {
    std::vector<double> fitted;  // the factors of rounds with something to compare
    for (std::size_t r = 0; r < rounds; ++r) {
      if (timed[r] < 2) continue;
      std::vector<double> d;
      for (std::size_t k = 0; k < n; ++k)
        if (r < y[k].size()) d.push_back(y[k][r] - level[k]);
      round[r] = median(d);
      fitted.push_back(round[r]);
    }
    const double centre = median(fitted);
    for (std::size_t r = 0; r < rounds; ++r) round[r] = timed[r] < 2 ? 0.0 : round[r] - centre;
    for (std::size_t k = 0; k < n; ++k) {
      std::vector<double> d;
      for (std::size_t r = 0; r < y[k].size(); ++r) d.push_back(y[k][r] - round[r]);
      level[k] = median(d);
    }
  }
  std::vector<std::vector<double>> out(n);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t r = 0; r < y[k].size(); ++r) {
      if (medians[k][r] <= 0 || timed[r] < 2) {
        out[k].push_back(medians[k][r]);
        continue;
      }
      const double widen = std::sqrt(static_cast<double>(timed[r]) / static_cast<double>(timed[r] - 1));
      out[k].push_back(std::exp(level[k] + widen * (y[k][r] - level[k] - round[r])));
    }
  return out;
}

std::vector<std::size_t> round_order(std::size_t n, std::size_t round) {
  std::vector<std::size_t> order(n);
  for (std::size_t k = 0; k < n; ++k) order[k] = (k + round) % n;
  return order;
}

}  // namespace ktune::bench
