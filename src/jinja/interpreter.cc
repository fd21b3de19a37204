#include "jinja/interpreter.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <stdexcept>
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/list_methods.h"

namespace lockstep::jinja {

namespace {

// Python's ints do not overflow; int64 arithmetic does, and in C++ that is undefined behaviour: here it is an
// error naming the operator.
[[noreturn]] void ThrowOverflow(const std::string& op) { throw Error("integer overflow in '" + op + "'"); }

int64_t IntArithmetic(const std::string& op, int64_t a, int64_t b) {
  int64_t out = 0;
  bool overflow = false;
  if (op == "+") overflow = __builtin_add_overflow(a, b, &out);
  if (op == "-") overflow = __builtin_sub_overflow(a, b, &out);
  if (op == "*") overflow = __builtin_mul_overflow(a, b, &out);
  if (overflow) ThrowOverflow(op);
  return out;
}

}  // namespace

Value BinaryOp(const std::string& op, const Value& a, const Value& b) {
  using K = Value::Kind;
  const auto numeric = [](const Value& v) { return v.IsNumber() || v.kind() == K::kBool; };
  const bool ints =
      (a.kind() == K::kInt || a.kind() == K::kBool) && (b.kind() == K::kInt || b.kind() == K::kBool);
  if (op == "==") return Value(a.Equals(b));
  if (op == "!=") return Value(!a.Equals(b));
  if (op == "<") return Value(a.Less(b));
  if (op == ">") return Value(b.Less(a));
  if (op == "<=") return Value(!b.Less(a));
  if (op == ">=") return Value(!a.Less(b));
  if (op == "~") return Value(a.ToString() + b.ToString());
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.IsString()) {
      if (!a.IsString()) throw Error("'in <string>' requires a string as left operand, not " + a.TypeName());
      found = b.AsString().find(a.AsString()) != std::string::npos;
    } else if (b.IsObject()) {
      found = (a.IsString() || a.kind() == Value::Kind::kInt) && !b.GetKey(DictKey(a)).IsUndefined();
    } else if (b.IsArray()) {
      for (const Value& item : b.AsArray()) found = found || item.Equals(a);
    } else if (!b.IsUndefined()) {
      throw Error("argument of type " + b.TypeName() + " is not iterable");
    }
    return Value(op == "in" ? found : !found);
  }
  if (op == "+") {
    if (a.IsString() && b.IsString()) return Value(a.AsString() + b.AsString());
    if (a.IsArray() && b.IsArray()) {
      Array items = a.AsArray();
      items.insert(items.end(), b.AsArray().begin(), b.AsArray().end());
      return Value::MakeArray(std::move(items));
    }
  }
  if (op == "*" && ((a.IsString() && b.kind() == K::kInt) || (a.kind() == K::kInt && b.IsString()))) {
    const std::string& s = a.IsString() ? a.AsString() : b.AsString();
    const int64_t n = a.IsString() ? b.AsInt() : a.AsInt();
    if (n > 0 && !s.empty())
      CheckStringSize(s.size() > Value::kMaxStringBytes / size_t(n) ? SIZE_MAX : s.size() * size_t(n));
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value(out);
  }
  if (!numeric(a) || !numeric(b)) {
    throw Error("unsupported operand types for " + op + ": " + a.TypeName() + " and " + b.TypeName());
  }
  if (op == "+")
    return ints ? Value(IntArithmetic(op, a.AsInt(), b.AsInt())) : Value(a.AsDouble() + b.AsDouble());
  if (op == "-")
    return ints ? Value(IntArithmetic(op, a.AsInt(), b.AsInt())) : Value(a.AsDouble() - b.AsDouble());
  if (op == "*")
    return ints ? Value(IntArithmetic(op, a.AsInt(), b.AsInt())) : Value(a.AsDouble() * b.AsDouble());
  if (op == "**") {
    if (ints && b.AsInt() >= 0) {
      const double power = std::pow(a.AsDouble(), b.AsDouble());
      if (!(std::fabs(power) < 0x1p63)) ThrowOverflow(op);  // NaN included
      return Value(static_cast<int64_t>(std::llround(power)));
    }
    return Value(std::pow(a.AsDouble(), b.AsDouble()));
  }
  if (b.AsDouble() == 0) throw Error("division by zero");
  if (op == "/") return Value(a.AsDouble() / b.AsDouble());
  if (op == "//") {
    if (ints) {
      if (b.AsInt() == -1) return Value(IntArithmetic("-", 0, a.AsInt()));  // INT64_MIN / -1 overflows
      const int64_t q = a.AsInt() / b.AsInt();
      return Value((a.AsInt() % b.AsInt() != 0 && ((a.AsInt() < 0) != (b.AsInt() < 0))) ? q - 1 : q);
    }
    return Value(std::floor(a.AsDouble() / b.AsDouble()));
  }
  if (op == "%") {
    if (ints) {
      if (b.AsInt() == -1) return Value(int64_t{0});  // INT64_MIN % -1 is undefined in C++
      const int64_t r = a.AsInt() % b.AsInt();
      return Value((r != 0 && ((r < 0) != (b.AsInt() < 0))) ? r + b.AsInt() : r);
    }
    const double r = std::fmod(a.AsDouble(), b.AsDouble());
    return Value((r != 0 && ((r < 0) != (b.AsDouble() < 0))) ? r + b.AsDouble() : r);
  }
  throw Error("unknown operator " + op);
}

Value Index(const Value& value, const Value& index) {
  if (value.IsObject()) return value.GetKey(DictKey(index));
  if ((value.IsArray() || value.IsString()) && (index.IsNumber() || index.kind() == Value::Kind::kBool)) {
    const Array items = value.IsArray() ? value.AsArray() : value.Iterate();
    int64_t i = index.AsInt();
    const int64_t n = static_cast<int64_t>(items.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value();
    return items[static_cast<size_t>(i)];
  }
  return Value();
}

Value Slice(const Value& value, const Value& start, const Value& stop, const Value& step) {
  const Array items = value.IsArray() ? value.AsArray() : value.Iterate();
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t st = step.IsNumber() ? step.AsInt() : 1;
  if (st == 0) throw Error("slice step cannot be zero");
  const auto clamp = [&](const Value& v, int64_t dflt) {
    if (!v.IsNumber()) return dflt;
    int64_t i = v.AsInt();
    if (i < 0) i += n;
    return st > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t b = clamp(start, st > 0 ? 0 : n - 1);
  const int64_t e = clamp(stop, st > 0 ? n : -1);
  Array out;
  for (int64_t i = b; st > 0 ? i < e : i > e;) {
    out.push_back(items[static_cast<size_t>(i)]);
    if (__builtin_add_overflow(i, st, &i)) break;  // a step past the end of int64 is past the end
  }
  if (value.IsString()) {
    std::string s;
    for (const Value& c : out) s += c.AsString();
    return Value(s);
  }
  return Value::MakeArray(std::move(out));
}

namespace {

enum class Flow { kNormal, kBreak, kContinue };

// Rendering recurses once per block, expression level and macro call. The parser bounds a tree's depth
// (jinja/ast.h); this bounds the calls, so a macro calling itself without end is an error, not a stack
// overflow. Real chat templates stay under ~50.
constexpr int kMaxRenderDepth = 1024;

class Interpreter {
 public:
  Interpreter(const Value& context, int64_t max_steps) : max_steps_(max_steps) {
    scopes_.emplace_back();
    const Value globals = MakeGlobals();
    for (const auto& [k, v] : globals.AsObject()) scopes_.back()[k] = v;
    if (context.IsObject()) {
      for (const auto& [k, v] : context.AsObject()) scopes_.back()[k] = v;
    }
  }

  Flow RenderList(const NodeList& nodes, std::string& out) {
    for (const auto& node : nodes) {
      const Flow flow = RenderNode(*node, out);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

 private:
  Value Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return Value();
  }

  // Counts one level of rendering recursion while alive.
  class DepthGuard {
   public:
    explicit DepthGuard(Interpreter& interpreter) : interpreter_(interpreter) {
      interpreter_.Step();
      if (++interpreter_.depth_ > kMaxRenderDepth) {
        throw Error("rendering nested deeper than " + std::to_string(kMaxRenderDepth) +
                    " levels (a macro calling itself without end?)");
      }
    }
    ~DepthGuard() { --interpreter_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Interpreter& interpreter_;
  };

  // A loop iteration counts as kIterationSteps (it allocates a scope and a `loop` object).
  static constexpr int64_t kIterationSteps = 16;
  void Step(int64_t steps = 1) {
    if ((steps_ += steps) > max_steps_)
      throw Error("rendering took over " + std::to_string(max_steps_) + " steps (loops inside loops?)");
  }

  Flow RenderNode(const Node& node, std::string& out) {
    const DepthGuard guard(*this);
    line_ = node.line;
    switch (node.kind) {
      case Node::Kind::kText:
        out += node.text;
        return Flow::kNormal;
      case Node::Kind::kOutput:
        out += Eval(*node.expr).ToString();
        CheckStringSize(out);
        return Flow::kNormal;
      case Node::Kind::kIf:
        for (size_t i = 0; i < node.conditions.size(); ++i) {
          if (Eval(*node.conditions[i]).Truthy()) return RenderList(node.bodies[i], out);
        }
        if (node.bodies.size() > node.conditions.size()) return RenderList(node.bodies.back(), out);
        return Flow::kNormal;
      case Node::Kind::kFor:
        RenderFor(node, out);
        return Flow::kNormal;
      case Node::Kind::kSet:
        Assign(node.targets, Eval(*node.expr));
        return Flow::kNormal;
      case Node::Kind::kSetBlock: {
        std::string captured;
        RenderList(node.bodies[0], captured);
        Assign(node.targets, Value(captured));
        return Flow::kNormal;
      }
      case Node::Kind::kMacro:
        DefineMacro(node);
        return Flow::kNormal;
      case Node::Kind::kBreak:
        return Flow::kBreak;
      case Node::Kind::kContinue:
        return Flow::kContinue;
      case Node::Kind::kBlock:
        return RenderList(node.bodies[0], out);
      case Node::Kind::kFilterBlock: {
        std::string captured;
        const Flow flow = RenderList(node.bodies[0], captured);
        out += ApplyFilterChain(*node.expr, Value(std::move(captured))).ToString();
        return flow;
      }
    }
    return Flow::kNormal;
  }

  // A filter block's chain (jinja/ast.h, Node::expr) applied to `body`, innermost first.
  Value ApplyFilterChain(const Expr& filter, Value body) {
    if (filter.kind != Expr::Kind::kFilter) return body;
    Value inner = ApplyFilterChain(*filter.args[0], std::move(body));
    return ApplyFilter(filter.name, inner, EvalArgs(filter, 1));
  }

  void Assign(const std::vector<std::string>& targets, Value value) {
    if (targets.size() == 1) {
      scopes_.back()[targets[0]] = std::move(value);
      return;
    }
    const Value ns = Lookup(targets[0]);
    if (!ns.IsObject())
      throw Error("cannot assign '" + targets[1] + "' on '" + targets[0] + "' (not a namespace)");
    ns.SetKey(targets[1], std::move(value));
  }

  void RenderFor(const Node& node, std::string& out) {
    const Value iterable = Eval(*node.expr);
    Array items;
    for (Value& item : iterable.Iterate()) {
      Step();
      if (node.filter) {
        scopes_.emplace_back();
        BindTargets(node.targets, item);
        const bool keep = Eval(*node.filter).Truthy();
        scopes_.pop_back();
        if (!keep) continue;
      }
      items.push_back(std::move(item));
    }
    if (items.empty()) {
      if (node.bodies.size() > 1) RenderList(node.bodies[1], out);
      return;
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      Step(kIterationSteps);
      scopes_.emplace_back();
      BindTargets(node.targets, items[static_cast<size_t>(i)]);
      Object loop = {{"index", Value(i + 1)},
                     {"index0", Value(i)},
                     {"revindex", Value(n - i)},
                     {"revindex0", Value(n - i - 1)},
                     {"first", Value(i == 0)},
                     {"last", Value(i == n - 1)},
                     {"length", Value(n)},
                     {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value()},
                     {"nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value()}};
      loop.emplace_back("cycle", Value::MakeCallable([i](const CallArgs& args) {
                          if (args.positional.empty()) throw Error("loop.cycle() needs arguments");
                          return args.positional[static_cast<size_t>(i) % args.positional.size()];
                        }));
      scopes_.back()["loop"] = Value::MakeObject(std::move(loop));
      const Flow flow = RenderList(node.bodies[0], out);
      scopes_.pop_back();
      if (flow == Flow::kBreak) break;
    }
  }

  void BindTargets(const std::vector<std::string>& targets, const Value& item) {
    if (targets.size() == 1) {
      scopes_.back()[targets[0]] = item;
      return;
    }
    const Array parts = item.Iterate();
    if (parts.size() != targets.size())
      throw Error("cannot unpack " + std::to_string(parts.size()) + " values");
    for (size_t i = 0; i < targets.size(); ++i) scopes_.back()[targets[i]] = parts[i];
  }

  void DefineMacro(const Node& node) {
    const Node* macro = &node;
    scopes_.back()[node.targets[0]] = Value::MakeCallable([this, macro](const CallArgs& args) {
      const size_t num_params = macro->targets.size() - 1;
      const size_t first_default = num_params - macro->defaults.size();
      scopes_.emplace_back();
      for (size_t p = 0; p < num_params; ++p) {
        const Value* v = args.Get(p, macro->targets[p + 1]);
        scopes_.back()[macro->targets[p + 1]] =
            v ? *v : (p >= first_default ? Eval(*macro->defaults[p - first_default]) : Value());
      }
      std::string out;
      RenderList(macro->bodies[0], out);
      scopes_.pop_back();
      return Value(out);
    });
  }

  CallArgs EvalArgs(const Expr& e, size_t first) {
    CallArgs args;
    const size_t num_keyword = e.kwarg_names.size();
    const size_t num_positional = e.args.size() - first - num_keyword;
    for (size_t i = 0; i < num_positional; ++i) args.positional.push_back(Eval(*e.args[first + i]));
    for (size_t i = 0; i < num_keyword; ++i) {
      args.keyword.emplace_back(e.kwarg_names[i], Eval(*e.args[first + num_positional + i]));
    }
    return args;
  }

  Value Eval(const Expr& e) {
    const DepthGuard guard(*this);
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.literal;
      case Expr::Kind::kName:
        return Lookup(e.name);
      case Expr::Kind::kList: {
        Array items;
        for (const auto& a : e.args) items.push_back(Eval(*a));
        return Value::MakeArray(std::move(items));
      }
      case Expr::Kind::kDict: {
        Object items;  // a repeated key keeps its first place and its last value, as in Python
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          std::string key = DictKey(Eval(*e.args[i]));
          Value value = Eval(*e.args[i + 1]);
          auto same =
              std::find_if(items.begin(), items.end(), [&](const auto& kv) { return kv.first == key; });
          if (same != items.end()) {
            same->second = std::move(value);
          } else {
            items.emplace_back(std::move(key), std::move(value));
          }
        }
        return Value::MakeObject(std::move(items));
      }
      case Expr::Kind::kUnary: {
        const Value v = Eval(*e.args[0]);
        if (e.name == "-") return BinaryOp("-", Value(0), v);
        return BinaryOp("+", Value(0), v);
      }
      case Expr::Kind::kBinary:
        return BinaryOp(e.name, Eval(*e.args[0]), Eval(*e.args[1]));
      case Expr::Kind::kAnd: {
        Value a = Eval(*e.args[0]);
        return a.Truthy() ? Eval(*e.args[1]) : a;
      }
      case Expr::Kind::kOr: {
        Value a = Eval(*e.args[0]);
        return a.Truthy() ? a : Eval(*e.args[1]);
      }
      case Expr::Kind::kNot:
        return Value(!Eval(*e.args[0]).Truthy());
      case Expr::Kind::kTernary:
        return Eval(*e.args[0]).Truthy() ? Eval(*e.args[1]) : Eval(*e.args[2]);
      case Expr::Kind::kAttr: {
        const Value obj = Eval(*e.args[0]);
        if (obj.IsObject()) return obj.GetKey(e.name);
        return Value();
      }
      case Expr::Kind::kItem:
        return Index(Eval(*e.args[0]), Eval(*e.args[1]));
      case Expr::Kind::kSlice:
        return Slice(Eval(*e.args[0]), Eval(*e.args[1]), Eval(*e.args[2]), Eval(*e.args[3]));
      case Expr::Kind::kCall:
        return EvalCall(e);
      case Expr::Kind::kFilter:
        return ApplyFilter(e.name, Eval(*e.args[0]), EvalArgs(e, 1));
      case Expr::Kind::kTest: {
        const bool result = ApplyTest(e.name, Eval(*e.args[0]), EvalArgs(e, 1));
        return Value(e.negated ? !result : result);
      }
    }
    return Value();
  }

  Value EvalCall(const Expr& e) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::kAttr) {
      const Value obj = Eval(*callee.args[0]);
      const Value attr = obj.IsObject() ? obj.GetKey(callee.name) : Value();
      if (attr.IsCallable()) return attr.AsCallable()(EvalArgs(e, 1));
      if (obj.IsArray() && IsListMethod(callee.name)) {
        return CallListMethod(obj, callee.name, EvalArgs(e, 1), list_bytes_);
      }
      if (HasMethod(obj, callee.name)) return CallMethod(obj, callee.name, EvalArgs(e, 1));
      throw Error("'" + obj.TypeName() + "' object has no callable attribute '" + callee.name + "'");
    }
    const Value fn = Eval(callee);
    if (!fn.IsCallable()) {
      throw Error(callee.kind == Expr::Kind::kName ? "'" + callee.name + "' is undefined or not callable"
                                                   : "called a value that is not a function");
    }
    return fn.AsCallable()(EvalArgs(e, 1));
  }

  std::vector<std::unordered_map<std::string, Value>> scopes_;
  int depth_ = 0;  // live DepthGuards
  const int64_t max_steps_;
  int64_t steps_ = 0;
  size_t list_bytes_ = 0;  // added to lists by their methods (jinja/list_methods.h)

 public:
  int line_ = 0;
};

}  // namespace

Result<std::string> Render(const Template& tmpl, const Value& context, int64_t max_steps) {
  Interpreter interpreter(context, max_steps);
  std::string out;
  try {
    interpreter.RenderList(tmpl.body, out);
  } catch (const Error& e) {
    return InvalidArgument("chat template line " + std::to_string(interpreter.line_) + ": " + e.what());
  } catch (const std::length_error&) {  // a value too large to build (checked sizes catch most first)
    return InvalidArgument("chat template line " + std::to_string(interpreter.line_) + ": a value too large");
  } catch (const std::bad_alloc&) {
    return InvalidArgument("chat template line " + std::to_string(interpreter.line_) + ": out of memory");
  }
  return out;
}

}  // namespace lockstep::jinja
