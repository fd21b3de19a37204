// Chat templates: real tokenizer_config.json templates of each family must render exactly like the reference
// (Jinja2 with Hugging Face's settings; goldens made by testdata/make_chat_template_goldens.py), and raise
// where the reference raises. Plus interpreter unit cases and the documented fallback.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "reference_case.h"

namespace lockstep::chat {
namespace {

nlohmann::json LoadGoldens() {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/chat_template_goldens.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

std::string RenderJinja(const std::string& source, const nlohmann::json& context) {
  auto tmpl = jinja::Parse(source);
  if (!tmpl.ok()) return "PARSE ERROR: " + tmpl.status().message();
  auto out = jinja::Render(**tmpl, jinja::Value::FromJson(context));
  if (!out.ok()) return "RENDER ERROR: " + out.status().message();
  return *out;
}

TEST(ChatTemplateTest, RealTemplatesMatchReferenceRenderings) {
  const nlohmann::json goldens = LoadGoldens();
  int checked = 0;
  for (const auto& c : goldens["cases"]) {
    const std::string family = c["family"];
    const std::string source = goldens["templates"][family];
    nlohmann::json context = goldens["context"];
    context.update(goldens["tokens"]);
    context["messages"] = goldens["conversations"][c["conversation"].get<int>()];
    context["add_generation_prompt"] = c["add_generation_prompt"];
    auto tmpl = jinja::Parse(source);
    ASSERT_TRUE(tmpl.ok()) << family << ": " << tmpl.status().message();
    auto out = jinja::Render(**tmpl, jinja::Value::FromJson(context));
    if (out.ok()) *out = testing::ReadTodayAs(*out, goldens["now"]);  // Granite 3.3 shows the date
    testing::ExpectLikeTheReference(out, c);
    ++checked;
  }
  EXPECT_GE(checked, 170);
}

TEST(ChatTemplateTest, FamiliesAreDetected) {
  const nlohmann::json goldens = LoadGoldens();
  const std::map<std::string, std::string> expected = {
      {"chatml", "chatml"},   {"smollm2", "chatml"},       {"qwen2.5", "chatml"},
      {"llama2", "llama2"},   {"llama3", "llama3"},        {"llama3.2", "llama3"},
      {"mistral", "mistral"}, {"mistral-v0.1", "mistral"}, {"gemma", "gemma"},
      {"phi3", "phi3"},       {"zephyr", "zephyr"},        {"qwen3", "chatml"},
      {"gemma2", "gemma"},    {"gemma3", "gemma"},         {"phi3.5", "phi3"},
      {"phi4-mini", "phi3"},  {"mistral-nemo", "mistral"}, {"smollm3", "chatml"}};
  for (const auto& [name, family] : expected) {
    EXPECT_EQ(DetectChatTemplateFamily(goldens["templates"][name]), family) << name;
  }
}

TEST(ChatTemplateTest, TemplatesThatCannotShowASystemMessageGetItMergedIntoTheNextUserTurn) {
  // Gemma 2 raises "System role not supported" and Mistral v0.1 wants alternating turns: the system text goes
  // before the first user message's, with "\n" (what llama.cpp's server renders, scripts/
  // compare_chat_templates.py). Gemma 3 merges it itself ("\n\n"), so its rendering is the reference's.
  const nlohmann::json goldens = LoadGoldens();
  const nlohmann::json conversation = goldens["conversations"][1];
  auto gemma2 = ChatTemplate::Parse(goldens["templates"]["gemma2"], "test", "<s>", "</s>");
  ASSERT_TRUE(gemma2.ok());
  auto out = gemma2->Apply(conversation, true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(*out,
            "<s><start_of_turn>user\nYou are terse.\nWhat is "
            "2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n"
            "<start_of_turn>user\nAnd 3+3?\nThink \"carefully\".<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_NE(gemma2->note().find("merged"), std::string::npos);
  auto mistral = ChatTemplate::Parse(goldens["templates"]["mistral-v0.1"], "test", "<s>", "</s>");
  ASSERT_TRUE(mistral.ok());
  out = mistral->Apply(conversation, true);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(
      *out,
      "<s>[INST] You are terse.\nWhat is 2+2? [/INST]  4  </s>[INST] And 3+3?\nThink \"carefully\". [/INST]");
  for (const char* name : {"gemma3", "qwen3", "phi3.5", "mistral-nemo", "llama3"}) {
    auto t = ChatTemplate::Parse(goldens["templates"][name], "test", "<s>", "</s>");
    ASSERT_TRUE(t.ok()) << name;
    for (const auto& c : goldens["cases"]) {
      if (c["family"] != name || c["conversation"] != 1 || !c["add_generation_prompt"].get<bool>()) continue;
      auto rendered = t->Apply(conversation, true);
      ASSERT_TRUE(rendered.ok()) << name;
      EXPECT_EQ(*rendered, c["expected"].get<std::string>()) << name;
    }
  }
  // Runs of system messages join with "\n"; one with no user message next becomes a user message.
  const nlohmann::ordered_json merged = MergeSystemMessages(nlohmann::ordered_json::parse(
      R"([{"role":"system","content":"a"},{"role":"system","content":"b"},{"role":"user","content":""},)"
      R"({"role":"assistant","content":"x"},{"role":"system","content":"c"}])"));
  EXPECT_EQ(
      merged.dump(),
      R"([{"role":"user","content":"a\nb"},{"role":"assistant","content":"x"},{"role":"user","content":"c"}])");
}

TEST(ChatTemplateTest, OutOfRangeNumberLiteralsAreAnErrorOrInfinityNotACrash) {
  // Found by fuzz/jinja_fuzzer: std::stoll threw out_of_range, which aborted the process.
  const auto big = jinja::Parse("{{ 55555555555555555555555 }}");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("does not fit in 64 bits"), std::string::npos)
      << big.status().message();
  EXPECT_FALSE(jinja::Parse("{{ x.99999999999999999999 }}").ok());
  // A float literal past double's range reads as infinity (std::stod threw there too).
  const std::string huge = "1" + std::string(400, '0') + ".0";
  EXPECT_EQ(RenderJinja("{{ " + huge + " > 99999.0 }}", nlohmann::json::object()), "True");
}

TEST(ChatTemplateTest, IntegerOverflowIsAnErrorNotUndefinedBehaviour) {
  // Found by fuzz/jinja_fuzzer (UBSan: "signed integer overflow: 1101106893 * 797712071520"); the rest by
  // reading for the same kind. Python's ints do not overflow; ours are int64 and say so.
  const auto render = [](const std::string& source) { return RenderJinja(source, nlohmann::json::object()); };
  const std::string min = "(-9223372036854775807 - 1)";
  EXPECT_EQ(render("{{ 1101106893 * 797712071520 }}"),
            "RENDER ERROR: chat template line 1: integer overflow in '*'");
  EXPECT_NE(render("{{ 9223372036854775807 + 1 }}").find("integer overflow in '+'"), std::string::npos);
  EXPECT_NE(render("{{ -" + min + " }}").find("integer overflow in '-'"), std::string::npos);
  EXPECT_NE(render("{{ " + min + " // -1 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(render("{{ 2 ** 64 }}").find("integer overflow in '**'"), std::string::npos);
  EXPECT_NE(render("{{ " + min + " | abs }}").find("integer overflow in 'abs'"), std::string::npos);
  EXPECT_NE(render("{{ 10 is divisibleby(0) }}").find("division by zero"), std::string::npos);
  // What does fit still computes, as Python does.
  EXPECT_EQ(render("{{ " + min + " }}"), "-9223372036854775808");
  EXPECT_EQ(render("{{ " + min + " % -1 }}"), "0");
  EXPECT_EQ(render("{{ " + min + " is divisibleby(-1) }}"), "True");
  EXPECT_EQ(render("{{ 7 // -2 }} {{ 7 % -2 }} {{ 3 ** 3 }}"), "-4 -1 27");
  EXPECT_EQ(render("{{ range(9223372036854775800, 9223372036854775807, 5) | list }}"),
            "[9223372036854775800, 9223372036854775805]");
  EXPECT_EQ(render("{{ [1, 2, 3][1::9223372036854775807] }}"), "[2]");
  // Floats past int64 convert saturating (a cast would be undefined), NaN to 0.
  EXPECT_EQ(render("{{ (10.0 ** 300) | int }}"), "9223372036854775807");
  EXPECT_EQ(render("{{ (-10.0 ** 301) | int }}"), "-9223372036854775808");
}

// Found by fuzz/jinja_fuzzer (10^6-run, a macro calling itself) and then by reading for the same kind: a
// chat template comes from a model file, so each of these once overflowed the stack, leaked, ran for hours
// or exhausted memory. Each is now an error naming the limit, and the process keeps running.
TEST(ChatTemplateTest, HostileTemplatesAreErrorsNotCrashes) {
  const auto error = [](const std::string& source) {
    const std::string out = RenderJinja(source, nlohmann::json::object());
    return out.rfind("PARSE ERROR", 0) == 0 || out.rfind("RENDER ERROR", 0) == 0 ? out : "rendered: " + out;
  };
  const auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  const auto expect_error = [&](const std::string& source, const std::string& what) {
    const std::string out = error(source);
    EXPECT_NE(out.find(what), std::string::npos) << source.substr(0, 80) << " -> " << out.substr(0, 200);
  };
  // The parser's recursion: nested parentheses, `not`s and signs, blocks; and tall trees built by loops
  // (operator, filter and attribute chains).
  expect_error("{{ " + repeat("(", 50000) + "1" + repeat(")", 50000) + " }}", "nested deeper than 256");
  expect_error("{{ " + repeat("not ", 50000) + "1 }}", "nested deeper than 256");
  expect_error("{{ " + repeat("-", 50000) + "1 }}", "nested deeper than 256");
  expect_error(repeat("{% if true %}", 20000) + "x" + repeat("{% endif %}", 20000), "nested deeper than 256");
  expect_error("{{ 1" + repeat(" ~ 1", 50000) + " }}", "nested deeper than 256");
  expect_error("{{ 'a'" + repeat("|trim", 50000) + " }}", "nested deeper than 256");
  expect_error("{{ x" + repeat(".a", 50000) + " }}", "nested deeper than 256");
  EXPECT_EQ(error("{{ " + repeat("(", 200) + "7" + repeat(")", 200) + " }}"), "rendered: 7");
  // Rendering's recursion: a macro calling itself.
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "deeper than 1024 levels");
  // Values nested by a loop: printing, comparing and freeing them all recurse.
  expect_error("{% set ns = namespace(v=0) %}{% for i in range(99999) %}{% set ns.v = [ns.v] %}{% endfor %}x",
               "nested deeper than 256 levels");
  expect_error(
      "{% set ns = namespace(v=0) %}{% for i in range(9999) %}{% set ns.v = {'a': ns.v} %}{% endfor %}",
      "nested deeper than 256 levels");
  // A namespace holding itself (a reference cycle: leaked, and printed without end), or another namespace
  // (which could chain without limit); attributes of anything but a namespace, as in Jinja2.
  expect_error("{% set ns = namespace(v=0) %}{% set ns.v = ns %}", "cannot assign a namespace");
  expect_error("{% set ns = namespace(v=0) %}{% set ns.v = [namespace()] %}", "cannot assign a namespace");
  expect_error("{% set d = {'a': 1} %}{% set d.a = 2 %}", "only of a namespace");
  // Loops inside loops: a step budget.
  expect_error("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
               "over 1000000 steps");
  // Strings doubled in a loop, repeated or indented past 16 MiB.
  expect_error(
      "{% set ns = namespace(v='ab') %}{% for i in range(64) %}{% set ns.v = ns.v ~ ns.v %}{% endfor %}",
      "longer than 16 MiB");
  expect_error(
      "{% set ns = namespace(v=[1]) %}{% for i in range(64) %}{% set ns.v = [ns.v, ns.v] %}"
      "{% endfor %}{{ ns.v }}",
      "longer than 16 MiB");
  expect_error("{{ 'ab' * 999999999999 }}", "longer than 16 MiB");
  expect_error("{{ 'a\nb' | indent(99999999999) }}", "indent width");
}

TEST(ChatTemplateTest, TheRenderStepBudgetIsTheCallersAndBoundsParseToo) {
  // 100 iterations of 16 steps and more: within the default budget, over a budget of 1000.
  const std::string loop = "{% for i in range(100) %}{{ i }}{% endfor %}{{ messages[0]['content'] }}";
  const nlohmann::json messages = {{{"role", "user"}, {"content", "Hi"}}};
  auto whole = ChatTemplate::Parse(loop, "test", "<s>", "</s>");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_TRUE(whole->shows_system());
  auto rendered = whole->Apply(messages, true);
  ASSERT_TRUE(rendered.ok()) << rendered.status().message();
  EXPECT_EQ(rendered->substr(rendered->size() - 4), "99Hi");

  auto small = ChatTemplate::Parse(loop, "test", "<s>", "</s>", 1000);
  ASSERT_TRUE(small.ok()) << small.status().message();
  // Parse's own rendering (does the template show a system message?) ran out of steps too: it says no.
  EXPECT_FALSE(small->shows_system());
  auto cut = small->Apply(messages, true);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("over 1000 steps"), std::string::npos) << cut.status().message();
}

TEST(ChatTemplateTest, MissingTemplateFallsBackToChatMl) {
  const ChatTemplate tmpl = ChatTemplate::Create("", "<s>", "</s>");
  EXPECT_TRUE(tmpl.is_default());
  EXPECT_EQ(tmpl.family(), "default");
  auto out = tmpl.Apply(nlohmann::json::parse(R"([{"role":"user","content":"Hi"}])"), true);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, UnparseableTemplateFallsBackToChatMl) {
  const ChatTemplate tmpl = ChatTemplate::Create("{% for x in %}", "<s>", "</s>");
  EXPECT_TRUE(tmpl.is_default());
  auto out = tmpl.Apply(nlohmann::json::parse(R"([{"role":"user","content":"Hi"}])"), false);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateTest, TemplateErrorsBecomeStatuses) {
  const ChatTemplate tmpl = ChatTemplate::Create("{{ raise_exception('nope') }}", "", "");
  auto out = tmpl.Apply(nlohmann::json::array(), true);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("nope"), std::string::npos);
}

TEST(JinjaTest, ExpressionsFiltersAndTests) {
  const nlohmann::json ctx = {{"xs", {1, 2, 3}}, {"s", "  Hi There "}, {"d", {{"a", 1}, {"b", "x"}}}};
  EXPECT_EQ(
      RenderJinja("{{ 1 + 2 * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ 2 ** 10 }}|{{ 1 / 4 }}", ctx),
      "7|3|-4|1|1024|0.25");
  EXPECT_EQ(RenderJinja("{{ s | trim }}|{{ s.strip().upper() }}|{{ s | length }}|{{ 'a' ~ 1 }}", ctx),
            "Hi There|HI THERE|11|a1");
  EXPECT_EQ(RenderJinja("{{ xs[1:] }}|{{ xs[-1] }}|{{ xs[::-1] | join(',') }}|{{ xs | first }}", ctx),
            "[2, 3]|3|3,2,1|1");
  EXPECT_EQ(RenderJinja("{{ d | tojson }}|{{ d.b }}|{{ d['a'] }}|{{ 'a' in d }}|{{ 3 not in xs }}", ctx),
            "{\"a\": 1, \"b\": \"x\"}|x|1|True|False");
  EXPECT_EQ(RenderJinja("{{ y is defined }}|{{ xs is iterable }}|{{ d is mapping }}|{{ none is none }}", ctx),
            "False|True|True|True");
  EXPECT_EQ(RenderJinja("{{ 'yes' if xs else 'no' }}|{{ y | default('dflt') }}|{{ 'x' if false }}", ctx),
            "yes|dflt|");
  EXPECT_EQ(RenderJinja("{{ d | tojson(indent=2) }}", ctx), "{\n  \"a\": 1,\n  \"b\": \"x\"\n}");
  // Jinja2's select / reject / selectattr / rejectattr / map yield nothing for a false value (functionary
  // v3.1's template filters `tools` when they are none).
  EXPECT_EQ(
      RenderJinja(
          "{{ none | selectattr('type', 'equalto', 'x') | list | length }}|{{ y | map('upper') | list }}"
          "|{{ none | reject | list }}|{{ '' | select | list }}|{{ 0 | rejectattr('a') | list }}",
          ctx),
      "0|[]|[]|[]|[]");
}

// Dicts with int keys, as Seed-OSS's template builds its thinking-budget table: the keys stay ints (sorted,
// compared, printed and looked up as ints; json.dumps writes them as strings). Expected: Jinja2 3.1.6 with
// Hugging Face's tojson.
TEST(JinjaTest, IntDictKeysStayInts) {
  const std::string budget_lookup =
      "{%- set b = {0: 0, 512: 128, 1024: 256, 16384: 1024} -%}{%- set ns = namespace(interval=None) -%}"
      "{%- for k, v in b | dictsort -%}{%- if ns.interval is none and budget <= k -%}{%- set ns.interval = v "
      "-%}{%- endif -%}{%- endfor -%}{{ ns.interval }}|{{ b[16384] }}|{{ b['512'] is defined }}|{{ 512 in b "
      "}}|{{ '512' in b }}";
  EXPECT_EQ(RenderJinja(budget_lookup, {{"budget", 600}}), "256|1024|False|True|False");
  EXPECT_EQ(RenderJinja(budget_lookup, {{"budget", 511}}), "128|1024|False|True|False");
  EXPECT_EQ(RenderJinja(budget_lookup, {{"budget", 20000}}), "None|1024|False|True|False");
  EXPECT_EQ(
      RenderJinja("{{ {1: 'a', 'x': 2} }}|{{ {1: 'a', 'x': 2} | tojson }}|{% for k in {3: 1, 2: 2} %}{{ k + "
                  "1 }},{% endfor %}|{{ {7: 1}.get(7) }}|{{ {7: 1}.keys() | list }}|{{ {7: 1}.get('7') }}",
                  {}),
      "{1: 'a', 'x': 2}|{\"1\": \"a\", \"x\": 2}|4,3,|1|[7]|None");
  // A string key holding the mark byte stays a string (its bytes are the template's own).
  EXPECT_EQ(
      RenderJinja("{% for k in {'\xff': 1, '\xffab': 2, '\xff99999999999999999999': 3} %}{{ k is string "
                  "}},{% endfor %}",
                  {}),
      "True,True,True,");
}

TEST(JinjaTest, StatementsScopesAndWhitespace) {
  const nlohmann::json ctx = {{"xs", {1, 2, 3, 4}}};
  EXPECT_EQ(RenderJinja("{% for x in xs %}{{ loop.index }}{% if loop.last %}!{% endif %}{% endfor %}", ctx),
            "1234!");
  EXPECT_EQ(RenderJinja("{% set n = 0 %}{% for x in xs %}{% set n = n + x %}{% endfor %}{{ n }}", ctx), "0");
  EXPECT_EQ(RenderJinja("{% set ns = namespace(n=0) %}{% for x in xs %}{% set ns.n = ns.n + x %}{% endfor %}"
                        "{{ ns.n }}",
                        ctx),
            "10");
  EXPECT_EQ(RenderJinja("{% for x in xs if x is even %}{{ x }}{% else %}none{% endfor %}", ctx), "24");
  EXPECT_EQ(RenderJinja("{% for x in [] %}{{ x }}{% else %}none{% endfor %}", ctx), "none");
  EXPECT_EQ(RenderJinja("{% for x in xs %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}", ctx),
            "12");
  EXPECT_EQ(RenderJinja("{% macro greet(name, p='!') %}hi {{ name }}{{ p }}{% endmacro %}{{ greet('a') }}"
                        "{{ greet('b', p='?') }}",
                        ctx),
            "hi a!hi b?");
  // trim_blocks + lstrip_blocks, and explicit - / + markers.
  EXPECT_EQ(RenderJinja("a\n  {% if true %}\n  b\n  {% endif %}\nc", ctx), "a\n  b\nc");
  EXPECT_EQ(RenderJinja("a  {{- ' b ' -}}  c", ctx), "a b c");
  EXPECT_EQ(RenderJinja("a\n  {%+ if true %}x{% endif %}", ctx), "a\n  x");
  EXPECT_EQ(RenderJinja("{# comment #}\nx{#- c -#}  y", ctx), "xy");
}

TEST(JinjaTest, ListMethodsChangeTheListInPlaceAsPythonsDo) {
  // Kimi K2's templates queue tool-call ids in a namespace's list and take them back in order.
  EXPECT_EQ(RenderJinja("{% set q = namespace(ids=[]) %}{% for i in range(3) %}"
                        "{% set _ = q.ids.append('call:' ~ i) %}{% endfor %}{{ q.ids | length }}"
                        "{{ q.ids.pop(0) }}{{ q.ids.pop(0) }}{{ q.ids }}",
                        {}),
            "3call:0call:1['call:2']");
  EXPECT_EQ(
      RenderJinja("{% set xs = [1, 2] %}{% set _ = xs.insert(0, 'a') %}{% set _ = xs.insert(-1, none) %}"
                  "{% set _ = xs.insert(99, true) %}{% set _ = xs.extend('bc') %}{{ xs }}|{{ xs.pop() }}"
                  "|{{ xs.pop(-2) }}|{{ xs.append(3) }}|{{ xs }}",
                  {}),
      "['a', 1, None, 2, True, 'b', 'c']|c|True|None|['a', 1, None, 2, 'b', 3]");
  // The same list seen through two names, as in Python.
  EXPECT_EQ(RenderJinja("{% set a = [] %}{% set b = a %}{% set _ = b.append(1) %}{{ a }}", {}), "[1]");
}

TEST(JinjaTest, ListMethodsCannotMakeAListHoldItselfOrGrowWithoutBound) {
  const auto render = [](const std::string& source) { return RenderJinja(source, nlohmann::json::object()); };
  const auto expect_error = [&](const std::string& source, const std::string& what) {
    const std::string out = render(source);
    EXPECT_EQ(out.rfind("RENDER ERROR", 0), 0u) << source << " -> " << out.substr(0, 200);
    EXPECT_NE(out.find(what), std::string::npos) << source << " -> " << out.substr(0, 200);
  };
  // A list holding itself would be printed without end and leaked; lists and dicts are refused.
  expect_error("{% set a = [] %}{% set _ = a.append(a) %}{{ a }}", "not a list");
  expect_error("{% set a = [] %}{% set _ = a.extend([[1]]) %}", "not a list");
  expect_error("{% set a = [] %}{% set _ = a.insert(0, {'k': 1}) %}", "not a dict");
  // Building a chain of lists by appending each to the last: nothing to nest with.
  expect_error(
      "{% set ns = namespace(v=[]) %}{% for i in range(999) %}{% set n = [] %}"
      "{% set _ = ns.v.append(n) %}{% set ns.v = n %}{% endfor %}",
      "not a list");
  // A 1 MiB string appended 100 times: over the 16 MiB a rendering may add to lists.
  expect_error(
      "{% set s = 'x' * 1048576 %}{% set a = [] %}{% for i in range(100) %}{% set _ = a.append(s) %}"
      "{% endfor %}",
      "added over 16777216 bytes");
  expect_error("{% set a = [] %}{{ a.pop() }}", "pop from empty list");
  expect_error("{% set a = [1] %}{{ a.pop(1) }}", "index out of range");
  expect_error("{% set a = [1] %}{{ a.pop('0') }}", "index must be an integer");
  expect_error("{% set a = [1] %}{{ a.append() }}", "missing its argument 'x'");
  // Neither dicts nor strings have them.
  expect_error("{% set d = {} %}{{ d.append(1) }}", "no callable attribute 'append'");
  expect_error("{{ 'ab'.pop() }}", "no callable attribute 'pop'");
}

TEST(JinjaTest, FilterBlocksPassTheirBodysTextThroughTheFilters) {
  // firefunction-v2's template builds its system prompt so: a set block around a filter block.
  EXPECT_EQ(RenderJinja(
                "{% set x %}{% filter trim %}\n  a {{ 1 + 1 }}  \n{% endfilter %}{% endset %}[{{ x }}]", {}),
            "[a 2]");
  EXPECT_EQ(RenderJinja("{% filter trim | upper %} ab {% endfilter %}|{% filter replace('a', 'b') %}aa"
                        "{% endfilter %}",
                        {}),
            "AB|bb");
  EXPECT_EQ(RenderJinja("{% for i in [1, 2] %}{% filter upper %}x{{ i }}{% endfilter %}{% endfor %}", {}),
            "X1X2");
  EXPECT_NE(RenderJinja("{% filter nosuch %}x{% endfilter %}", {}).find("unknown filter"), std::string::npos);
  EXPECT_NE(RenderJinja("{% filter trim %}x", {}).find("PARSE ERROR"), std::string::npos);
  EXPECT_NE(RenderJinja("{% filter %}x{% endfilter %}", {}).find("PARSE ERROR"), std::string::npos);
}

TEST(JinjaTest, ErrorsNameTheLine) {
  EXPECT_NE(RenderJinja("line1\n{{ 1 + }}", {}).find("line 2"), std::string::npos);
  EXPECT_NE(RenderJinja("{% if x %}", {}).find("PARSE ERROR"), std::string::npos);
  EXPECT_NE(RenderJinja("{{ 'a' + 1 }}", {}).find("RENDER ERROR"), std::string::npos);
  EXPECT_NE(RenderJinja("{{ x | nosuchfilter }}", {}).find("unknown filter"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::chat
