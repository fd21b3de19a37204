// JSON schema -> grammar: documents that must and must not match; seeded random documents produced
// through each grammar (a byte-per-token walk, as a random model would) must parse and validate against
// the schema with an independent validator; unsupported keywords give errors naming keyword and place.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_masker.h"
#include "schema_check.h"

namespace lockstep::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const CompiledGrammar> CompileSchema(const Json& schema) {
  auto gbnf = JsonSchemaToGbnf(schema);
  EXPECT_TRUE(gbnf.ok()) << gbnf.status().ToString() << "\n" << schema.dump();
  if (!gbnf.ok()) return nullptr;
  auto g = CompiledGrammar::FromGbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << *gbnf;
  return g.ok() ? *g : nullptr;
}

bool Accepts(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.AcceptBytes(text) && m.accepting();
}

std::shared_ptr<const TokenVocab> ByteVocab() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, char(b)));
  return TokenVocab::FromPieces(pieces, {});
}

// A random document through the grammar: uniform over the allowed bytes, stopping at a complete match
// with probability 1/2 per step. nullopt if it runs past `limit` bytes.
std::optional<std::string> RandomDocument(const std::shared_ptr<const CompiledGrammar>& g,
                                          TokenMasker& masker, std::mt19937_64& rng, size_t limit = 3000) {
  GrammarMatcher m(g);
  std::vector<uint64_t> mask(masker.vocab().mask_words());
  std::string text;
  while (text.size() < limit) {
    if (m.accepting() && (!m.CanContinue() || rng() % 2 == 0)) return text;
    masker.FillMask(m, mask);
    std::vector<int> bytes;
    for (int b = 0; b < 256; ++b) {
      if ((mask[size_t(b) >> 6] >> (b & 63)) & 1) bytes.push_back(b);
    }
    EXPECT_FALSE(bytes.empty()) << text;
    if (bytes.empty()) return std::nullopt;
    const char c = char(bytes[rng() % bytes.size()]);
    EXPECT_TRUE(m.AcceptBytes(std::string(1, c)));
    text += c;
  }
  return std::nullopt;
}

void ExpectRandomDocumentsValid(const Json& schema, int count = 60) {
  auto g = CompileSchema(schema);
  ASSERT_NE(g, nullptr);
  TokenMasker masker(g, ByteVocab());
  std::mt19937_64 rng(12345);
  int complete = 0;
  for (int i = 0; i < count; ++i) {
    std::optional<std::string> doc = RandomDocument(g, masker, rng);
    if (!doc) continue;
    ++complete;
    Json value;
    try {
      value = Json::parse(*doc);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << *doc << " (" << e.what() << ")\nschema: " << schema.dump();
      continue;
    }
    const std::string why = testing::SchemaViolation(value, schema, schema);
    EXPECT_EQ(why, "") << "document: " << *doc << "\nschema: " << schema.dump();
  }
  EXPECT_GT(complete, count / 2) << schema.dump();
}

const char* kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "score": {"type": "number", "minimum": -1.5, "exclusiveMaximum": 2.25},
    "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
    "active": {"type": "boolean"},
    "nickname": {"type": ["string", "null"], "maxLength": 5}
  },
  "required": ["name", "age", "active"],
  "additionalProperties": false
})";

TEST(JsonSchema, ObjectsKeepOrderRequireAndOmit) {
  auto g = CompileSchema(Json::parse(kPerson));
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Accepts(g, R"({"name": "Ann", "age": 31, "active": true})"));
  EXPECT_TRUE(Accepts(
      g, R"({"name":"Ann","age":150,"score":2.2499,"tags":["red","blue"],"active":false,"nickname":null})"));
  EXPECT_TRUE(Accepts(g, "{\n  \"name\": \"\\u00e9\",\n  \"age\": 0,\n  \"active\": true\n}"));
  EXPECT_FALSE(Accepts(g, R"({"age": 31, "name": "Ann", "active": true})"));  // order
  EXPECT_FALSE(Accepts(g, R"({"name": "Ann", "active": true})"));             // required age
  EXPECT_FALSE(Accepts(g, R"({"name": "Ann", "age": 151, "active": true})"));
  EXPECT_FALSE(Accepts(g, R"({"name": "Ann", "age": 1, "score": 2.25, "active": true})"));
  EXPECT_FALSE(Accepts(g, R"({"name": "", "age": 1, "active": true})"));
  EXPECT_FALSE(Accepts(g, R"({"name": "Ann", "age": 1, "active": true, "x": 1})"));
  EXPECT_FALSE(Accepts(g, R"({"name": "Ann", "age": 1, "tags": ["red","red","red","red"], "active": true})"));
  ExpectRandomDocumentsValid(Json::parse(kPerson));
}

TEST(JsonSchema, RandomDocumentsValidate) {
  const char* schemas[] = {
      R"({"type": "object", "properties": {"id": {"type": "string", "format": "uuid"},
          "day": {"type": "string", "format": "date"}, "at": {"type": "string", "format": "date-time"},
          "t": {"type": "string", "format": "time"}}, "required": ["id", "day", "at", "t"]})",
      R"({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
          "word": {"type": "string", "pattern": "^(foo|ba[rz])+$"}, "q": {"type": "string", "pattern": "^a\"b\\\\c\\.d?$"}},
          "required": ["code", "word", "q"], "additionalProperties": false})",
      R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer", "minimum": -5, "maximum": 5},
          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}, "required": ["v"],
          "additionalProperties": false}}, "$ref": "#/$defs/node"})",
      R"({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "exclusiveMinimum": 10}, {"type": "null"}]})",
      R"({"oneOf": [{"type": "boolean"}, {"type": "array", "prefixItems": [{"const": "x"}, {"type": "number", "minimum": 0.5, "maximum": 0.75}],
          "items": {"type": "integer"}, "maxItems": 4}]})",
      R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 2}},
          "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}, "required": ["b"]})",
      R"({"enum": [1, "a", null, {"x": [1, true]}, 2.5]})",
      R"({"type": "object", "properties": {"v": {"const": {"k": "v"}}, "w": {"type": "number", "nullable": true}},
          "required": ["v"]})",
      R"({"allOf": [{"$ref": "#/definitions/base"}, {"type": "object", "properties": {"extra": {"type": "boolean"}},
          "required": ["extra"]}], "definitions": {"base": {"type": "object", "properties": {"n": {"type": "integer"}},
          "required": ["n"]}}})",
      R"({"type": "array", "items": {"type": "string", "enum": ["é", "☃", "𝄞"]}, "minItems": 2, "maxItems": 5})",
      R"({"type": "object", "properties": {"p": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
          "n": {"type": "integer", "maximum": -1000}, "m": {"type": "number", "minimum": 1e3}}, "required": ["p", "n", "m"]})",
      R"({"type": "object"})",
      R"({})",
  };
  for (const char* text : schemas) {
    SCOPED_TRACE(text);
    ExpectRandomDocumentsValid(Json::parse(text));
  }
}

TEST(JsonSchema, JsonObjectModeIsAnyObject) {
  auto g = CompiledGrammar::FromGbnf(JsonObjectGbnf());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Accepts(*g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(Accepts(*g, "{}"));
  EXPECT_FALSE(Accepts(*g, "[1]"));
  EXPECT_FALSE(Accepts(*g, "\"x\""));
}

TEST(JsonSchema, UnsupportedKeywordsNameKeywordAndPlace) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type": "array", "uniqueItems": true})", "keyword 'uniqueItems' is not supported"},
      {R"({"type": "object", "properties": {"a": {"not": {"type": "string"}}}})",
       "at /properties/a: keyword 'not' is not supported"},
      {R"({"type": "integer", "multipleOf": 3})", "keyword 'multipleOf' is not supported"},
      {R"({"type": "object", "patternProperties": {"^x": {}}})",
       "keyword 'patternProperties' is not supported"},
      {R"({"type": "string", "format": "hostname"})", "format 'hostname' is not supported"},
      {R"({"$ref": "https://example.com/s.json"})", "only local references"},
      {R"({"$ref": "#/$defs/missing"})", "'#/$defs/missing' does not resolve"},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", "no integer satisfies the minimum and maximum"},
      {R"({"type": "string", "pattern": "(a)\\1"})", "backreferences are not supported"},
      {R"({"type": "tuple"})", "unknown type 'tuple'"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "maxItems is smaller than minItems"},
      {R"({"if": {"type": "string"}})", "keyword 'if' is not supported"},
      {R"(false)", "the schema false matches nothing"},
      {R"({"type": "object", "properties": {"a": 3}})",
       "at /properties/a: a schema must be an object or a boolean"},
      // An allOf branch whose $ref does not resolve: the hop loop dereferenced the null it got back.
      {R"({"allOf": [{"$ref": 5}, {"$ref": "#/nowhere"}]})",
       "allOf is supported only over object schemas with properties"},
      // An array index past 2^64 in a $ref: std::stoul threw.
      {R"({"$defs": {"a": [{"type": "string"}]}, "$ref": "#/$defs/a/99999999999999999999999"})",
       "does not resolve in this schema"},
      {R"({"type": "string", "nullable": 1})", "at /nullable: nullable must be a boolean, got number"},
      {R"({"type": "object", "properties": {"a": {"type": "null", "nullable": "yes"}}})",
       "at /properties/a/nullable: nullable must be a boolean, got string"},
  };
  for (const auto& [text, want] : cases) {
    auto gbnf = JsonSchemaToGbnf(Json::parse(text));
    ASSERT_FALSE(gbnf.ok()) << text;
    EXPECT_NE(gbnf.status().message().find(want), std::string::npos)
        << "schema: " << text << "\nerror: " << gbnf.status().message() << "\nwanted: " << want;
  }
}

}  // namespace
}  // namespace lockstep::grammar
