#include "server/metrics.h"

#include <fmt/format.h>

#include <cmath>

namespace lockstep::server {

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

namespace {

std::string LabelKey(const Labels& labels, const std::string& extra_name = "",
                     const std::string& extra = "") {
  if (labels.empty() && extra_name.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    out += (first ? "" : ",") + k + "=\"" + EscapeLabelValue(v) + "\"";
    first = false;
  }
  if (!extra_name.empty()) out += (first ? "" : ",") + extra_name + "=\"" + extra + "\"";
  return out + "}";
}

// Inserts `le` into an existing rendered label set.
std::string WithLe(const std::string& key, const std::string& le) {
  if (key.empty()) return "{le=\"" + le + "\"}";
  return key.substr(0, key.size() - 1) + ",le=\"" + le + "\"}";
}

}  // namespace

MetricFamily::MetricFamily(Kind kind, std::string name, std::string help, std::vector<double> buckets)
    : kind_(kind), name_(std::move(name)), help_(std::move(help)), buckets_(std::move(buckets)) {}

MetricFamily::Series& MetricFamily::Get(const Labels& labels) {
  Series& s = series_[LabelKey(labels)];
  if (kind_ == Kind::kHistogram && s.bucket_counts.empty()) s.bucket_counts.assign(buckets_.size() + 1, 0);
  return s;
}

void MetricFamily::Add(double v, const Labels& labels) {
  std::lock_guard lock(mu_);
  Get(labels).value += v;
}

void MetricFamily::Set(double v, const Labels& labels) {
  std::lock_guard lock(mu_);
  Get(labels).value = v;
}

void MetricFamily::Observe(double v, const Labels& labels) {
  std::lock_guard lock(mu_);
  Series& s = Get(labels);
  size_t i = 0;
  while (i < buckets_.size() && v > buckets_[i]) ++i;
  s.bucket_counts[i]++;
  s.sum += v;
  s.count++;
}

double MetricFamily::Value(const Labels& labels) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(LabelKey(labels));
  if (it == series_.end()) return 0;
  return kind_ == Kind::kHistogram ? static_cast<double>(it->second.count) : it->second.value;
}

void MetricFamily::Render(std::string& out) const {
  static const char* kTypes[] = {"counter", "gauge", "histogram"};
  out += "# HELP " + name_ + " " + help_ + "\n";
  out += "# TYPE " + name_ + " " + kTypes[static_cast<int>(kind_)] + "\n";
  std::lock_guard lock(mu_);
  if (series_.empty() && kind_ != Kind::kHistogram) out += name_ + " 0\n";
  if (series_.empty() && kind_ == Kind::kHistogram) {
    for (double b : buckets_) out += name_ + "_bucket" + WithLe("", FormatMetricValue(b)) + " 0\n";
    out += name_ + "_bucket{le=\"+Inf\"} 0\n" + name_ + "_sum 0\n" + name_ + "_count 0\n";
  }
  for (const auto& [key, s] : series_) {
    if (kind_ != Kind::kHistogram) {
      out += name_ + key + " " + FormatMetricValue(s.value) + "\n";
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      cumulative += s.bucket_counts[i];
      out += name_ + "_bucket" + WithLe(key, FormatMetricValue(buckets_[i])) + " " +
             std::to_string(cumulative) + "\n";
    }
    cumulative += s.bucket_counts.back();
    out += name_ + "_bucket" + WithLe(key, "+Inf") + " " + std::to_string(cumulative) + "\n";
    out += name_ + "_sum" + key + " " + FormatMetricValue(s.sum) + "\n";
    out += name_ + "_count" + key + " " + std::to_string(s.count) + "\n";
  }
}

MetricFamily* MetricsRegistry::Counter(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  families_.push_back(std::make_unique<MetricFamily>(MetricFamily::Kind::kCounter, name, help));
  return families_.back().get();
}

MetricFamily* MetricsRegistry::Gauge(const std::string& name, const std::string& help) {
  std::lock_guard lock(mu_);
  families_.push_back(std::make_unique<MetricFamily>(MetricFamily::Kind::kGauge, name, help));
  return families_.back().get();
}

MetricFamily* MetricsRegistry::Histogram(const std::string& name, const std::string& help,
                                         std::vector<double> buckets) {
  std::lock_guard lock(mu_);
  families_.push_back(
      std::make_unique<MetricFamily>(MetricFamily::Kind::kHistogram, name, help, std::move(buckets)));
  return families_.back().get();
}

std::string MetricsRegistry::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& f : families_) f->Render(out);
  return out;
}

}  // namespace lockstep::server
