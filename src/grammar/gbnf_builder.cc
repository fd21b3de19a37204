#include "grammar/gbnf_builder.h"

namespace lockstep::grammar {

std::string GbnfBuilder::UniqueName(const std::string& hint) {
  std::string base;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    base += ok ? c : '-';
  }
  if (base.empty()) base = "rule";
  std::string name = base;
  for (int i = 1; bodies_.count(name) != 0; ++i) name = base + "-" + std::to_string(i);
  order_.push_back(name);
  bodies_[name];
  return name;
}

std::string GbnfBuilder::Add(const std::string& name_hint, const std::string& body) {
  auto key = std::make_pair(name_hint, body);
  if (auto it = by_body_.find(key); it != by_body_.end()) return it->second;
  const std::string name = UniqueName(name_hint);
  bodies_[name] = body;
  by_body_[key] = name;
  return name;
}

std::string GbnfBuilder::Reserve(const std::string& name_hint) { return UniqueName(name_hint); }

void GbnfBuilder::Define(const std::string& name, const std::string& body) { bodies_[name] = body; }

std::string GbnfBuilder::Text() const {
  std::string out;
  if (auto it = bodies_.find("root"); it != bodies_.end()) out += "root ::= " + it->second + "\n";
  for (const std::string& name : order_) {
    if (name != "root") out += name + " ::= " + bodies_.at(name) + "\n";
  }
  return out;
}

}  // namespace lockstep::grammar
