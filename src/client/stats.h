// Small statistics helpers for the benchmarks: mean, median and percentiles (linear interpolation between
// closest ranks, as numpy's default). Empty input gives 0. Pure functions.
#pragma once

#include <vector>

namespace lockstep::client {

double Mean(const std::vector<double>& values);
double Median(std::vector<double> values);
// p in [0, 100].
double Percentile(std::vector<double> values, double p);

}  // namespace lockstep::client
