#include "server/structured_fields.h"

#include <vector>

#include "base/excerpt.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"
#include "server/request_fields.h"

namespace lockstep::server {
namespace {

using Ordered = nlohmann::ordered_json;

// The request body again, order-preserving (parsed only when a schema needs it).
class OrderedBody {
 public:
  explicit OrderedBody(const std::string& raw) : raw_(raw) {}
  // The value at `path` (object keys); nullptr when absent.
  const Ordered* At(std::initializer_list<const char*> path) {
    if (!parsed_) {
      parsed_ = true;
      root_ = Ordered::parse(raw_, nullptr, /*allow_exceptions=*/false);
    }
    const Ordered* node = &root_;
    for (const char* key : path) {
      if (!node->is_object() || !node->contains(key)) return nullptr;
      node = &(*node)[key];
    }
    return node;
  }

 private:
  const std::string& raw_;
  bool parsed_ = false;
  Ordered root_;
};

bool Present(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && !object[key].is_null();
}

// A schema given as an object / boolean, or as JSON text in a string (vLLM and TGI accept both).
Parsed<std::string> SchemaFrom(const Ordered* value, const std::string& param) {
  if (value == nullptr) return ApiError::Field(param, param + " is missing");
  if (value->is_string()) {
    auto parsed = ParseJsonText(value->get<std::string>(), param, param + " is a string but not valid JSON");
    if (!parsed.ok()) return parsed.error;
    return SchemaGbnf(*parsed.value, param);
  }
  if (!value->is_object() && !value->is_boolean()) {
    return ApiError::Field(param, param + " must be a JSON schema (an object)");
  }
  return SchemaGbnf(*value, param);
}

Parsed<std::string> RegexGbnf(const nlohmann::json& value, const std::string& param) {
  if (!value.is_string()) return ApiError::Field(param, param + " must be a string (a regular expression)");
  auto expr = grammar::RegexToGbnf(value.get<std::string>(), /*json_string=*/false);
  if (!expr.ok()) return ApiError::Field(param, param + ": " + expr.status().message());
  return "root ::= " + *expr + "\n";
}

Parsed<std::string> GrammarText(const nlohmann::json& value, const std::string& param) {
  if (!value.is_string() || value.get<std::string>().empty()) {
    return ApiError::Field(param, param + " must be a non-empty string of GBNF grammar");
  }
  return value.get<std::string>();
}

Parsed<std::string> Choices(const nlohmann::json& value, const std::string& param) {
  if (!value.is_array() || value.empty()) {
    return ApiError::Field(param, param + " must be a non-empty array of strings");
  }
  std::vector<std::string> choices;
  for (const auto& c : value) {
    if (!c.is_string()) return ApiError::Field(param, param + " must be a non-empty array of strings");
    choices.push_back(c.get<std::string>());
  }
  return ChoiceGbnf(choices);
}

class Collector {
 public:
  void Add(const std::string& param, Parsed<std::string> gbnf) {
    if (!error_.status.ok()) return;
    if (!gbnf.ok()) {
      error_ = gbnf.error;
      return;
    }
    found_.push_back({*gbnf.value, param});
  }
  void Fail(ApiError e) {
    if (error_.status.ok()) error_ = std::move(e);
  }
  Parsed<std::optional<OutputConstraint>> Done() {
    if (!error_.status.ok()) return error_;
    if (found_.size() > 1) {
      return ApiError::Field(found_[1].param, "only one output constraint may be given; got both " +
                                                  found_[0].param + " and " + found_[1].param);
    }
    if (found_.empty()) return std::optional<OutputConstraint>();
    return std::optional<OutputConstraint>(found_[0]);
  }

 private:
  std::vector<OutputConstraint> found_;
  ApiError error_;
};

void ReadResponseFormat(const nlohmann::json& rf, OrderedBody& ordered, Collector& out) {
  if (!rf.is_object()) {
    return out.Fail(
        ApiError::Field("response_format", "response_format must be an object, got " + DescribeJson(rf)));
  }
  // A null type counts as absent (FieldReader's rule): {"type": "text"}.
  if (rf.contains("type") && !rf["type"].is_null() && !rf["type"].is_string()) {
    return out.Fail(ApiError::Field("response_format.type",
                                    "response_format.type must be one of \"text\", \"json_object\", "
                                    "\"json_schema\", got " +
                                        DescribeJson(rf["type"])));
  }
  const std::string type =
      rf.contains("type") && rf["type"].is_string() ? rf["type"].get<std::string>() : "text";
  if (type == "text") return;
  if (type == "json_object") {
    if (Present(rf, "schema")) {  // llama.cpp's form
      return out.Add("response_format.schema",
                     SchemaFrom(ordered.At({"response_format", "schema"}), "response_format.schema"));
    }
    return out.Add("response_format", grammar::JsonObjectGbnf());
  }
  if (type == "json_schema") {
    if (Present(rf, "json_schema")) {
      const nlohmann::json& js = rf["json_schema"];
      if (!js.is_object()) {
        return out.Fail(
            ApiError::Field("response_format.json_schema",
                            "response_format.json_schema must be an object {name, schema, strict}"));
      }
      if (Present(js, "name") && !js["name"].is_string()) {
        return out.Fail(ApiError::Field("response_format.json_schema.name",
                                        "response_format.json_schema.name must be a string"));
      }
      if (Present(js, "strict") && !js["strict"].is_boolean()) {
        return out.Fail(ApiError::Field("response_format.json_schema.strict",
                                        "response_format.json_schema.strict must be a boolean"));
      }
      if (!Present(js, "schema")) return out.Add("response_format.json_schema", grammar::JsonObjectGbnf());
      return out.Add("response_format.json_schema.schema",
                     SchemaFrom(ordered.At({"response_format", "json_schema", "schema"}),
                                "response_format.json_schema.schema"));
    }
    if (Present(rf, "schema")) {
      return out.Add("response_format.schema",
                     SchemaFrom(ordered.At({"response_format", "schema"}), "response_format.schema"));
    }
    return out.Fail(ApiError::Field("response_format.json_schema",
                                    "response_format of type json_schema needs json_schema.schema"));
  }
  out.Fail(ApiError::Field("response_format.type",
                           "response_format.type must be one of \"text\", "
                           "\"json_object\", \"json_schema\"; got \"" +
                               Excerpt(type) + "\""));
}

void ReadStructuredOutputs(const nlohmann::json& so, OrderedBody& ordered, Collector& out) {
  if (!so.is_object()) {
    return out.Fail(ApiError::Field("structured_outputs", "structured_outputs must be an object"));
  }
  for (const auto& [key, value] : so.items()) {
    if (value.is_null()) continue;
    const std::string param = "structured_outputs." + key;
    if (key == "json") {
      out.Add(param, SchemaFrom(ordered.At({"structured_outputs", "json"}), param));
    } else if (key == "regex") {
      out.Add(param, RegexGbnf(value, param));
    } else if (key == "choice") {
      out.Add(param, Choices(value, param));
    } else if (key == "grammar") {
      out.Add(param, GrammarText(value, param));
    } else if (key == "json_object") {
      if (!value.is_boolean()) return out.Fail(ApiError::Field(param, param + " must be a boolean"));
      if (value.get<bool>()) out.Add(param, grammar::JsonObjectGbnf());
    } else {
      return out.Fail(ApiError::Field(param, param + " is not supported (json, regex, choice, grammar and "
                                                     "json_object are)"));
    }
  }
}

}  // namespace

Parsed<std::string> SchemaGbnf(const nlohmann::ordered_json& schema, const std::string& param) {
  auto gbnf = grammar::JsonSchemaToGbnf(schema);
  if (!gbnf.ok()) return ApiError::Field(param, param + ": " + gbnf.status().message());
  return *gbnf;
}

std::string ChoiceGbnf(const std::vector<std::string>& choices) {
  std::string body;
  for (const std::string& c : choices) body += (body.empty() ? "" : " | ") + grammar::GbnfLiteral(c);
  return "root ::= " + body + "\n";
}

Parsed<std::optional<OutputConstraint>> ReadOpenAiConstraint(const nlohmann::json& body,
                                                             const std::string& raw_body) {
  OrderedBody ordered(raw_body);
  Collector out;
  if (Present(body, "response_format")) ReadResponseFormat(body["response_format"], ordered, out);
  if (Present(body, "grammar")) out.Add("grammar", GrammarText(body["grammar"], "grammar"));
  if (Present(body, "json_schema"))
    out.Add("json_schema", SchemaFrom(ordered.At({"json_schema"}), "json_schema"));
  if (Present(body, "guided_json"))
    out.Add("guided_json", SchemaFrom(ordered.At({"guided_json"}), "guided_json"));
  if (Present(body, "guided_regex")) out.Add("guided_regex", RegexGbnf(body["guided_regex"], "guided_regex"));
  if (Present(body, "guided_choice"))
    out.Add("guided_choice", Choices(body["guided_choice"], "guided_choice"));
  if (Present(body, "guided_grammar")) {
    out.Add("guided_grammar", GrammarText(body["guided_grammar"], "guided_grammar"));
  }
  if (Present(body, "guided_decoding_backend") && !body["guided_decoding_backend"].is_string()) {
    out.Fail(ApiError::Field("guided_decoding_backend", "guided_decoding_backend must be a string"));
  }
  if (Present(body, "guided_whitespace_pattern")) {
    out.Fail({Unimplemented("guided_whitespace_pattern is not supported by this server"),
              "guided_whitespace_pattern", false});
  }
  if (Present(body, "structured_outputs")) ReadStructuredOutputs(body["structured_outputs"], ordered, out);
  return out.Done();
}

Parsed<std::optional<OutputConstraint>> ReadLlamaCppConstraint(const nlohmann::json& body,
                                                               const std::string& raw_body) {
  OrderedBody ordered(raw_body);
  Collector out;
  const bool no_grammar = Present(body, "grammar") && body["grammar"].is_string() &&
                          body["grammar"].get_ref<const std::string&>().empty();
  if (Present(body, "grammar") && !no_grammar) out.Add("grammar", GrammarText(body["grammar"], "grammar"));
  if (Present(body, "json_schema"))
    out.Add("json_schema", SchemaFrom(ordered.At({"json_schema"}), "json_schema"));
  return out.Done();
}

Parsed<std::optional<OutputConstraint>> ReadTgiConstraint(const nlohmann::json* parameters,
                                                          const std::string& raw_body) {
  if (parameters == nullptr || !Present(*parameters, "grammar")) return std::optional<OutputConstraint>();
  const nlohmann::json& g = (*parameters)["grammar"];
  const std::string param = "parameters.grammar";
  if (!g.is_object() || !g.contains("type") || !g["type"].is_string()) {
    return ApiError::Field(
        param, param + " must be {\"type\": \"json\" | \"json_schema\" | \"regex\", \"value\": ...}");
  }
  if (!Present(g, "value")) return ApiError::Field(param + ".value", param + ".value is required");
  OrderedBody ordered(raw_body);
  const std::string type = g["type"].get<std::string>();
  Collector out;
  if (type == "json") {
    out.Add(param, SchemaFrom(ordered.At({"parameters", "grammar", "value"}), param + ".value"));
  } else if (type == "json_schema") {
    out.Add(param,
            SchemaFrom(ordered.At({"parameters", "grammar", "value", "schema"}), param + ".value.schema"));
  } else if (type == "regex") {
    out.Add(param, RegexGbnf(g["value"], param + ".value"));
  } else {
    return ApiError::Field(
        param + ".type",
        param + ".type must be \"json\", \"json_schema\" or \"regex\"; got \"" + Excerpt(type) + "\"");
  }
  return out.Done();
}

Parsed<bool> ApplyConstraint(GrammarCache& cache, const OutputConstraint& constraint, Request* request) {
  auto masker = cache.Get(constraint.gbnf, constraint.markers);
  if (!masker.ok())
    return ApiError::Field(constraint.param, constraint.param + ": " + masker.status().message());
  request->grammar = *masker;
  return true;
}

}  // namespace lockstep::server
