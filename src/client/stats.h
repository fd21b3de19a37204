// Small statistics helpers for the benchmarks: mean, median and percentiles (linear interpolation between
// closest ranks, as numpy's default; empty input gives 0), and the reports' number formatting. Pure
// functions.
#pragma once

#include <string>
#include <vector>

namespace lockstep::client {

double Mean(const std::vector<double>& values);
double Median(std::vector<double> values);
// p in [0, 100].
double Percentile(std::vector<double> values, double p);
// `v` printed with one printf conversion for a double (`format` such as "%.3f"), for the reports' tables.
std::string FormatNumber(const char* format, double v);

}  // namespace lockstep::client
