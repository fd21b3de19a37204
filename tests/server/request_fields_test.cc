// FieldReader and the JSON body rules: every read type-checked, errors that name the field and the JSON
// type without printing (or recursing over) the value, the nesting limit.
#include "server/request_fields.h"

#include <gtest/gtest.h>

#include "base/excerpt.h"
#include "server/api_error.h"

namespace lockstep::server {
namespace {

using nlohmann::json;

std::string Message(const FieldReader& f) { return f.error().status.message(); }

TEST(RequestFieldsTest, DescribeNamesTheTypeAndShowsOnlyScalars) {
  EXPECT_EQ(DescribeJson(json(nullptr)), "null");
  EXPECT_EQ(DescribeJson(json(true)), "true");
  EXPECT_EQ(DescribeJson(json(3)), "a number 3");
  EXPECT_EQ(DescribeJson(json(2.5)), "a number 2.5");
  EXPECT_EQ(DescribeJson(json("hot")), "a string \"hot\"");
  EXPECT_EQ(DescribeJson(json(std::string(100, 'x'))), "a string \"" + std::string(40, 'x') + "...\"");
  // A long string is an Excerpt: cut at a character boundary ("é" is two bytes; 40 bytes of "aéé…" would end
  // inside one, and the JSON of the message would carry U+FFFD for it).
  std::string accents = "a";
  for (int i = 0; i < 30; ++i) accents += "\xc3\xa9";
  EXPECT_EQ(DescribeJson(json(accents)), "a string \"" + accents.substr(0, 39) + "...\"");
  EXPECT_EQ(DescribeJson(json::array()), "an empty array");
  EXPECT_EQ(DescribeJson(json::array({1})), "an array of 1 item");
  EXPECT_EQ(DescribeJson(json::array({1, 2})), "an array of 2 items");
  EXPECT_EQ(DescribeJson(json::object()), "an empty object");
  EXPECT_EQ(DescribeJson(json{{"a", 1}}), "an object");
}

TEST(RequestFieldsTest, ADeepValueInAnErrorIsNotRecursedOver) {
  // 200 000 levels: printing this value recursively overflows the stack of a default thread.
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const json body = json::parse("{\"temperature\":" + deep + ",\"stop\":[" + deep + "]}");
  FieldReader f(body);
  EXPECT_FALSE(f.Number("temperature", 0, 2).has_value());
  ASSERT_TRUE(f.failed());
  EXPECT_EQ(f.error().param, "temperature");
  EXPECT_EQ(Message(f), "temperature must be a number between 0 and 2, got an array of 1 item");
  FieldReader g(body);
  EXPECT_FALSE(g.StringOrList("stop", 4).has_value());
  EXPECT_EQ(Message(g), "stop[0] must be a string, got an array of 1 item");
}

TEST(RequestFieldsTest, EveryReadChecksTheType) {
  const json body = json::parse(R"({"n": "2", "b": 1, "s": 5, "o": [], "a": {}, "e": "x", "f": 1.5,
                                    "big": 18446744073709551615, "neg": -3, "ok": 4, "nul": null})");
  struct Read {
    const char* field;
    std::function<void(FieldReader&)> read;
    const char* message;
  };
  const std::vector<Read> reads = {
      {"n", [](FieldReader& f) { f.Int("n", 0, 10); },
       "n must be an integer between 0 and 10, got a string \"2\""},
      {"b", [](FieldReader& f) { f.Bool("b"); }, "b must be a boolean, got a number 1"},
      {"s", [](FieldReader& f) { f.String("s"); }, "s must be a string, got a number 5"},
      {"o", [](FieldReader& f) { f.Object("o"); }, "o must be an object, got an empty array"},
      {"a", [](FieldReader& f) { f.Array("a"); }, "a must be an array, got an empty object"},
      {"e",
       [](FieldReader& f) {
         f.Enum("e", {"y", "z"});
       },
       "e must be one of \"y\", \"z\", got a string \"x\""},
      {"f", [](FieldReader& f) { f.Int("f", 0, 10); },
       "f must be an integer between 0 and 10, got a number 1.5"},
      {"big", [](FieldReader& f) { f.Int("big", INT64_MIN, INT64_MAX); }, nullptr},
      {"neg", [](FieldReader& f) { f.Int("neg", 0, 10); },
       "neg must be an integer between 0 and 10, got a number -3"},
  };
  for (const Read& r : reads) {
    FieldReader f(body, "parameters");
    r.read(f);
    ASSERT_TRUE(f.failed()) << r.field;
    EXPECT_EQ(f.error().param, std::string("parameters.") + r.field);
    if (r.message != nullptr) {
      EXPECT_EQ(Message(f), std::string("parameters.") + r.message);
    }
  }
  FieldReader f(body);
  EXPECT_EQ(f.Int("ok", 0, 10), 4);
  EXPECT_FALSE(f.Int("nul", 0, 10).has_value());  // null reads as absent
  EXPECT_EQ(f.Object("nul"), nullptr);
  EXPECT_FALSE(f.failed());
}

TEST(RequestFieldsTest, TheFirstFailureIsKeptAndNestedReadersAreAbsorbed) {
  const json body = json::parse(R"({"x": "a", "y": "b", "inner": {"k": true}})");
  FieldReader f(body);
  f.Int("x", 0, 1);
  f.Int("y", 0, 1);
  EXPECT_EQ(f.error().param, "x");
  FieldReader outer(body);
  FieldReader inner(*outer.Object("inner"), "inner");
  inner.Int("k", 0, 1);
  outer.Absorb(inner);
  EXPECT_EQ(outer.error().param, "inner.k");
}

TEST(RequestFieldsTest, BodiesNestedTooDeeplyAreRefusedBeforeParsing) {
  EXPECT_FALSE(NestsDeeperThan("[[[]]]", 3));
  EXPECT_TRUE(NestsDeeperThan("[[[[]]]]", 3));
  EXPECT_FALSE(NestsDeeperThan(R"({"a": "[[[[[[", "b": "\"[[[["})", 1));  // brackets inside strings
  EXPECT_TRUE(NestsDeeperThan(R"({"a": "\\", "b": [[1]]})", 2));  // an escaped backslash ends no string
  const std::string at_limit =
      "{\"a\":" + std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']') + "}";
  EXPECT_TRUE(ParseJsonObject(at_limit).ok());
  const std::string over =
      "{\"a\":" + std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "}";
  const auto parsed = ParseJsonObject(over);
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(parsed.error.malformed_json);
  EXPECT_NE(parsed.error.status.message().find("deeper than 128"), std::string::npos);
  EXPECT_FALSE(ParseJsonObject(std::string(1000000, '[')).ok());  // unclosed: refused, no recursion
}

TEST(RequestFieldsTest, InvalidJsonSaysWhereAndWhy) {
  const auto comma = ParseJsonObject(R"({"prompt":"hi","max_tokens":1,})");
  ASSERT_FALSE(comma.ok());
  EXPECT_TRUE(comma.error.malformed_json);
  const std::string message(comma.error.status.message());
  EXPECT_NE(message.find("not valid JSON: parse error at line 1, column 31"), std::string::npos) << message;
  EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
  // Invalid UTF-8 says so; the token read so far (here a long string) is not repeated back.
  const auto utf8 = ParseJsonObject("{\"prompt\":\"" + std::string(100000, 'a') + "\xff\"}");
  ASSERT_FALSE(utf8.ok());
  const std::string utf8_message(utf8.error.status.message());
  EXPECT_NE(utf8_message.find("UTF-8"), std::string::npos) << utf8_message;
  EXPECT_LT(utf8_message.size(), 300u);
}

TEST(ExcerptTest, CutsLongTextAtACharacterBoundary) {
  EXPECT_EQ(Excerpt("short"), "short");
  EXPECT_EQ(Excerpt(std::string(60, 'a')), std::string(60, 'a'));
  EXPECT_EQ(Excerpt(std::string(61, 'a')), std::string(60, 'a') + "...");
  // "é" is two bytes: a cut after 5 bytes of "aaaaé..." would split it, so the excerpt stops before it.
  EXPECT_EQ(Excerpt("aaaa\xc3\xa9"
                    "bbbb",
                    5),
            "aaaa...");
  EXPECT_EQ(Excerpt("aaaa\xc3\xa9"
                    "bbbb",
                    6),
            "aaaa\xc3\xa9...");
}

TEST(ApiErrorTest, MessagesAndParamsAreCutToTheirBounds) {
  const ApiError e = ApiError::Field(std::string(5000, 'p'), "bad: " + std::string(5000, 'm'));
  EXPECT_EQ(e.status.message().size(), ApiError::kMaxMessageBytes + 3);
  EXPECT_EQ(e.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.param.size(), ApiError::kMaxParamBytes + 3);
  EXPECT_EQ(ApiError::Field("temperature", "temperature must be a number").status.message(),
            "temperature must be a number");
}

}  // namespace
}  // namespace lockstep::server
