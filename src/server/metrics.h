// Metrics: a small Prometheus registry (text exposition format 0.0.4) with counters, gauges and histograms,
// each optionally labelled. Metric families are declared once (Counter/Gauge/Histogram return a stable
// pointer owned by the registry); updates and Render() are thread-safe (a mutex per family).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class MetricFamily {
 public:
  enum class Kind { kCounter, kGauge, kHistogram };
  MetricFamily(Kind kind, std::string name, std::string help, std::vector<double> buckets = {});

  // Counter: adds `v` (>= 0). Gauge: adds (may be negative).
  void Add(double v, const Labels& labels = {});
  void Inc(const Labels& labels = {}) { Add(1, labels); }
  // Gauge only.
  void Set(double v, const Labels& labels = {});
  // Histogram only.
  void Observe(double v, const Labels& labels = {});
  // Current value of a counter/gauge series (0 when absent) or a histogram's count.
  double Value(const Labels& labels = {}) const;

  void Render(std::string& out) const;
  const std::string& name() const { return name_; }

 private:
  struct Series {
    double value = 0;                     // counter / gauge
    std::vector<uint64_t> bucket_counts;  // histogram (non-cumulative per bucket, +Inf last)
    double sum = 0;
    uint64_t count = 0;
  };
  Series& Get(const Labels& labels);

  Kind kind_;
  std::string name_;
  std::string help_;
  std::vector<double> buckets_;
  mutable std::mutex mu_;
  std::map<std::string, Series> series_;  // key: rendered label set, e.g. {status="200"}
};

class MetricsRegistry {
 public:
  MetricFamily* Counter(const std::string& name, const std::string& help);
  MetricFamily* Gauge(const std::string& name, const std::string& help);
  MetricFamily* Histogram(const std::string& name, const std::string& help, std::vector<double> buckets);
  // The whole registry in the Prometheus text format, families in declaration order.
  std::string Render() const;
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MetricFamily>> families_;
};

// Label value escaping (\\, \", \n) and number formatting (+Inf, -Inf, NaN) of the text format.
std::string EscapeLabelValue(const std::string& v);
std::string FormatMetricValue(double v);

}  // namespace lockstep::server
