#include "jinja/list_methods.h"

#include <iterator>

namespace lockstep::jinja {
namespace {

// What an added item costs: its string bytes, plus the Value it takes.
size_t ItemBytes(const Value& item) { return item.AsString().size() + sizeof(Value); }

// Python's index of an insert or pop: negative from the end; insert clamps, pop must be in range.
int64_t Position(const Value& index, int64_t size, bool clamp, const std::string& method) {
  if (index.kind() != Value::Kind::kInt && index.kind() != Value::Kind::kBool) {
    throw Error("list." + method + "() index must be an integer, not " + index.TypeName());
  }
  int64_t at = index.AsInt();
  if (at < 0) at += size;
  if (clamp) return at < 0 ? 0 : (at > size ? size : at);
  if (at < 0 || at >= size) throw Error("list." + method + "() index out of range");
  return at;
}

}  // namespace

bool IsListMethod(const std::string& name) {
  return name == "append" || name == "insert" || name == "extend" || name == "pop";
}

Value CallListMethod(const Value& list, const std::string& name, const CallArgs& args, size_t& added_bytes) {
  Array& items = list.AsArray();
  const int64_t size = static_cast<int64_t>(items.size());
  if (name == "pop") {
    if (items.empty()) throw Error("pop from empty list");
    const Value* index = args.Get(0, "index");
    const int64_t at = index == nullptr ? size - 1 : Position(*index, size, /*clamp=*/false, name);
    Value out = items[static_cast<size_t>(at)];
    items.erase(items.begin() + at);
    return out;
  }
  // append, insert, extend: the items to add, checked before any is added.
  Array added;
  if (name == "extend") {
    added = args.Required(0, "iterable", "list." + name + "()").Iterate();
  } else {
    added.push_back(
        args.Required(name == "insert" ? 1 : 0, name == "insert" ? "object" : "x", "list." + name + "()"));
  }
  for (const Value& item : added) {
    switch (item.kind()) {
      case Value::Kind::kNone:
      case Value::Kind::kBool:
      case Value::Kind::kInt:
      case Value::Kind::kFloat:
      case Value::Kind::kString:
        break;
      default:
        throw Error("list." + name + "() adds strings, numbers, booleans or none here, not a " +
                    item.TypeName() + " (a list that holds lists could come to hold itself)");
    }
    added_bytes += ItemBytes(item);
    if (added_bytes > Value::kMaxStringBytes) {
      throw Error("list." + name + "(): this rendering added over " + std::to_string(Value::kMaxStringBytes) +
                  " bytes to lists");
    }
  }
  const int64_t at = name == "insert" ? Position(args.Required(0, "index", "list." + name + "()"), size,
                                                 /*clamp=*/true, name)
                                      : size;
  items.insert(items.begin() + at, std::make_move_iterator(added.begin()),
               std::make_move_iterator(added.end()));
  return Value::None();
}

}  // namespace lockstep::jinja
