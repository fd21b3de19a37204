// Tool-call parsing against the real templates' own text: the goldens of tests/chat (Llama 3.1, Qwen2.5,
// Mistral Nemo, Qwen3-Coder, Mistral Small 3.2, DeepSeek V3.1 and R1, GLM-4.6, GLM-4.7-Flash and Kimi K2
// rendered by Python jinja2 as Hugging Face does) hold each assistant tool-call turn exactly as the model was
// trained to write it. Every such turn, cut out of the rendered prompt, must parse back into the
// conversation's tool calls (names, arguments as JSON, content), with its marker ([TOOL_CALLS], <tool_call>)
// kept or dropped (a control token may be skipped when decoding), whole and streamed in pieces as OpenAI
// sends the deltas. The same turns are what a forced tool choice's grammar (server/tool_grammar.h) must
// accept in the syntax found from each template's text. DeepSeek's and GLM's turns open with a (here empty)
// reasoning block: it is split off first (chat::SplitReasoning), as the server does, and the parser sees the
// rest.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "chat/reasoning.h"
#include "grammar_check.h"
#include "server/tool_calls.h"
#include "server/tool_grammar.h"

namespace lockstep::server {
namespace {

struct Turn {
  std::string text;  // what the model writes for this assistant turn (no end-of-turn token)
  nlohmann::ordered_json message;
};

// The assistant turns of a rendered conversation, in order, by the family's turn delimiters.
std::vector<std::string> AssistantTexts(const std::string& family, const std::string& rendered) {
  std::vector<std::string> opens, closes;
  if (family == "llama3.1") {
    opens = {"<|start_header_id|>assistant<|end_header_id|>\n\n"};
    closes = {"<|eot_id|>"};
  } else if (family == "qwen2.5" || family == "qwen3-coder" || family == "qwen3.5" ||
             family == "nemotron-3-nano") {
    opens = {"<|im_start|>assistant\n"};
    closes = {"<|im_end|>"};
  } else if (family == "deepseek-v3.1") {
    opens = {"<｜Assistant｜>", "<｜tool▁output▁end｜>"};  // a reply after tool results has no role marker
    closes = {"<｜end▁of▁sentence｜>"};
  } else if (family == "deepseek-r1") {
    opens = {"<｜Assistant｜>", "<｜tool▁outputs▁end｜>"};
    closes = {"<｜end▁of▁sentence｜>", "<｜tool▁outputs▁begin｜>"};  // a single call's turn is never closed
  } else if (family == "gemma-4") {
    opens = {"<|turn>model\n"};
    closes = {"<turn|>", "<|tool_response>"};  // calls end the turn's text; their results follow
  } else if (family == "deepseek-v3.2" || family == "deepseek-v4") {
    opens = {"<｜Assistant｜>", "</function_results>\n\n"};  // V3.2: a reply after the results has no role
    closes = {"<｜end▁of▁sentence｜>"};
  } else if (family == "glm-4.6" || family == "glm-4.7-flash" || family == "glm-5.2") {
    opens = {"<|assistant|>"};
    closes = {"<|observation|>", "<|user|>"};  // GLM ends a turn with the next role's marker
  } else if (family == "kimi-k2" || family == "kimi-k2-thinking") {
    opens = {"<|im_assistant|>assistant<|im_middle|>"};
    closes = {"<|im_end|>"};
  } else {
    opens = {"[/INST]", "[/TOOL_RESULTS]"};  // Mistral: a reply follows the user's turn or the tool results
    closes = {"</s>"};
  }
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    size_t begin = std::string::npos;
    for (const std::string& open : opens) {
      const size_t found = rendered.find(open, at);
      if (found != std::string::npos && (begin == std::string::npos || found + open.size() < begin)) {
        begin = found + open.size();
      }
    }
    if (begin == std::string::npos) break;
    size_t end = std::string::npos, close_size = 0;
    for (const std::string& close : closes) {
      const size_t found = rendered.find(close, begin);
      if (found < end) end = found, close_size = close.size();
    }
    if (end == std::string::npos) break;  // the last user turn: nothing written after it
    const size_t next_open = [&] {
      size_t n = std::string::npos;
      for (const std::string& open : opens) n = std::min(n, rendered.find(open, begin));
      return n;
    }();
    at = end + close_size;
    if (next_open < end) {  // e.g. [/TOOL_RESULTS] before the reply's </s>: start again from there
      at = next_open;
      continue;
    }
    out.push_back(rendered.substr(begin, end - begin));
  }
  return out;
}

// Streams `text` in pieces of `step` bytes; the calls the deltas add up to (index -> {id, name, arguments}).
std::map<int, nlohmann::json> StreamCalls(const ToolSpec& spec, const std::string& text, size_t step,
                                          bool mistral_ids, std::string* content, bool* called) {
  std::map<int, nlohmann::json> calls;
  for (size_t at = 0;;) {
    const size_t next = std::min(text.size(), at + step);
    const bool last = next == text.size();
    ToolStreamDelta d =
        ToolStreamStep(spec, std::string_view(text).substr(0, at), std::string_view(text).substr(0, next),
                       at == 0, last, "seed", mistral_ids);
    *content += d.content;
    if (d.tool_calls.is_array()) {
      for (const auto& tc : d.tool_calls) {
        nlohmann::json& acc = calls[tc["index"].get<int>()];
        if (tc.contains("id")) acc["id"] = tc["id"];
        if (tc["function"].contains("name")) acc["name"] = tc["function"]["name"];
        acc["arguments"] = acc.value("arguments", "") + tc["function"]["arguments"].get<std::string>();
      }
    }
    *called = d.called;
    at = next;
    if (last) break;
  }
  return calls;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \n") - b + 1);
}

TEST(ToolCallGoldens, EveryTemplatesOwnCallTextParsesBackIntoItsCalls) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/tool_template_goldens.json");
  ASSERT_TRUE(in.good());
  const nlohmann::ordered_json goldens = nlohmann::ordered_json::parse(in);
  const nlohmann::json body = {{"tools", nlohmann::json::parse(goldens["tools"].dump())}};
  auto spec = ReadToolFields(body, body.dump());
  ASSERT_TRUE(spec.ok()) << spec.error.status.message();
  std::map<std::string, int> calls_checked;
  for (const auto& c : goldens["cases"]) {
    if (!c.contains("expected") || c["add_generation_prompt"].get<bool>()) continue;
    const std::string family = c["family"];
    const bool mistral_ids = family == "mistral-nemo" || family == "mistral-small-3.2";
    // v11's [ARGS] and [CALL_ID] separate the name from the arguments: the server keeps them in the text
    // (ToolMarkerTokens), so only v3's JSON is also tried with its marker dropped.
    const bool marker_may_drop = family != "mistral-small-3.2" && family != "ministral-3-reasoning";
    std::vector<nlohmann::ordered_json> messages;
    for (const auto& m : goldens["conversations"][c["conversation"].get<size_t>()]) {
      if (m["role"] == "assistant") messages.push_back(m);
    }
    // Gemma 4's template writes a reply after tool results into the calls' model turn, after the results:
    // no marker tells it apart.
    if (family == "gemma-4" && c["conversation"] == 2) continue;
    const std::vector<std::string> texts = AssistantTexts(family, c["expected"]);
    ASSERT_EQ(texts.size(), messages.size()) << family << " conversation " << c["conversation"];
    for (size_t t = 0; t < texts.size(); ++t) {
      const nlohmann::ordered_json& want = messages[t];
      // R1's template drops the calls of a message that has content.
      const bool has_calls =
          want.contains("tool_calls") &&
          (family != "deepseek-r1" || texts[t].find("tool▁call▁begin") != std::string::npos);
      // GLM-4.7-Flash's and DeepSeek V3.2 / V4's prompts open the reasoning block; their turns start with
      // the closing tag. Ministral 3 Reasoning's turns show theirs in [THINK] tags.
      const chat::ReasoningTags tags =
          family == "ministral-3-reasoning" ? chat::kMistralThinkTags : chat::kThinkTags;
      const std::string reply = chat::SplitReasoning(texts[t], tags,
                                                     /*opened=*/family == "glm-4.7-flash" ||
                                                         family == "deepseek-v3.2" || family == "deepseek-v4",
                                                     /*final=*/true)
                                    .content;
      std::vector<std::string> variants = {reply};
      for (const char* marker : {"[TOOL_CALLS]", "<|python_tag|>"}) {
        if (marker_may_drop && reply.rfind(marker, 0) == 0)
          variants.push_back(reply.substr(std::string(marker).size()));
      }
      for (const std::string& text : variants) {
        const std::string where =
            family + " conversation " + c["conversation"].dump() + " turn " + std::to_string(t) + ": " + text;
        const ToolOutput out = ParseToolOutput(*spec.value, text, "seed", mistral_ids);
        const size_t n = has_calls ? want["tool_calls"].size() : 0;
        ASSERT_EQ(out.calls.size(), n) << where;
        for (size_t k = 0; k < n; ++k) {
          const auto& f = want["tool_calls"][k]["function"];
          EXPECT_EQ(out.calls[k].name, f["name"].get<std::string>()) << where;
          EXPECT_EQ(nlohmann::json::parse(out.calls[k].arguments),
                    nlohmann::json::parse(f["arguments"].dump()))
              << where;
          if (family.rfind("kimi-k2", 0) == 0) {  // the model's own id, as the template numbers the calls
            EXPECT_EQ(out.calls[k].id, "functions." + f["name"].get<std::string>() + ":" + std::to_string(k));
          } else {
            EXPECT_EQ(out.calls[k].id.size(), mistral_ids ? 9u : 29u) << where;
          }
        }
        // The content the turn's text holds (Mistral Nemo's template drops it beside tool calls).
        // GLM's templates print a null content as Python does, "None", before the calls.
        std::string want_content = want["content"].is_string()   ? want["content"].get<std::string>()
                                   : family.rfind("glm", 0) == 0 ? "None"
                                                                 : "";
        if (text.find(want_content) == std::string::npos) want_content.clear();
        EXPECT_EQ(Trim(out.content.value_or("")), want_content) << where;
        for (size_t step : {size_t(1), size_t(5), text.size()}) {
          std::string content;
          bool called = false;
          const auto streamed = StreamCalls(*spec.value, text, step, mistral_ids, &content, &called);
          EXPECT_EQ(called, n > 0) << where << " step " << step;
          EXPECT_EQ(content, out.content.value_or("")) << where << " step " << step;
          ASSERT_EQ(streamed.size(), n) << where << " step " << step;
          for (size_t k = 0; k < n; ++k) {
            EXPECT_EQ(streamed.at(int(k))["id"], out.calls[k].id) << where;
            EXPECT_EQ(streamed.at(int(k))["name"], out.calls[k].name) << where;
            EXPECT_EQ(streamed.at(int(k))["arguments"], out.calls[k].arguments) << where;
          }
        }
        calls_checked[family] += int(n);
      }
    }
  }
  // Llama 3.1 renders single calls only (its template raises on parallel ones); the others render both.
  EXPECT_GE(calls_checked["llama3.1"], 2);
  EXPECT_GE(calls_checked["qwen2.5"], 4);
  EXPECT_GE(calls_checked["mistral-nemo"], 8);       // with and without the [TOOL_CALLS] marker
  EXPECT_GE(calls_checked["qwen3-coder"], 4);        // <function=NAME> blocks, arguments typed by the schemas
  EXPECT_GE(calls_checked["mistral-small-3.2"], 3);  // v11: NAME[CALL_ID]ID[ARGS]{...}
  EXPECT_GE(calls_checked["ministral-3-reasoning"], 3);  // v11 without ids: NAME[ARGS]{...}
  EXPECT_GE(calls_checked["deepseek-v3.2"], 3);          // DSML <｜DSML｜function_calls>
  EXPECT_GE(calls_checked["deepseek-v4"], 3);            // DSML <｜DSML｜tool_calls>
  EXPECT_GE(calls_checked["glm-5.2"], 3);
  EXPECT_GE(calls_checked["gemma-4"], 3);          // <|tool_call>call:NAME{KEY:<|"|>text<|"|>}<tool_call|>
  EXPECT_GE(calls_checked["qwen3.5"], 3);          // Qwen3-Coder's <function=NAME> blocks
  EXPECT_GE(calls_checked["nemotron-3-nano"], 3);  // the same
  EXPECT_GE(calls_checked["deepseek-v3.1"], 4);  // NAME<｜tool▁sep｜>{...}, after an empty <think></think>
  EXPECT_GE(calls_checked["glm-4.6"], 4);        // <tool_call>NAME <arg_key>/<arg_value> over lines
  EXPECT_GE(calls_checked["glm-4.7-flash"], 4);     // the same on one line
  EXPECT_GE(calls_checked["kimi-k2"], 4);           // functions.NAME:IDX
  EXPECT_GE(calls_checked["kimi-k2-thinking"], 4);  // the same, after an empty <think></think>
  EXPECT_GE(calls_checked["deepseek-r1"], 2);       // function<｜tool▁sep｜>NAME and a ```json fence
}

TEST(ToolCallGoldens, ForcedGrammarsAcceptEveryTemplatesOwnCallText) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/chat/testdata/tool_template_goldens.json");
  ASSERT_TRUE(in.good());
  const nlohmann::ordered_json goldens = nlohmann::ordered_json::parse(in);
  // The syntax each real template's text shows.
  const std::map<std::string, ToolSyntax> want_syntax = {{"llama3.1", ToolSyntax::kJson},
                                                         {"qwen2.5", ToolSyntax::kHermes},
                                                         {"mistral-nemo", ToolSyntax::kMistralV3},
                                                         {"qwen3-coder", ToolSyntax::kQwenXml},
                                                         {"mistral-small-3.2", ToolSyntax::kMistral},
                                                         {"deepseek-v3.1", ToolSyntax::kDeepSeek},
                                                         {"glm-4.6", ToolSyntax::kGlm},
                                                         {"glm-4.7-flash", ToolSyntax::kGlm},
                                                         {"kimi-k2", ToolSyntax::kKimi},
                                                         {"kimi-k2-thinking", ToolSyntax::kKimi},
                                                         {"deepseek-v3.2", ToolSyntax::kDsml},
                                                         {"deepseek-v4", ToolSyntax::kDsmlV4},
                                                         {"glm-5.2", ToolSyntax::kGlm},
                                                         {"qwen3.5", ToolSyntax::kQwenXml},
                                                         {"nemotron-3-nano", ToolSyntax::kQwenXml},
                                                         {"gemma-4", ToolSyntax::kGemma4},
                                                         {"deepseek-r1", ToolSyntax::kDeepSeekR1},
                                                         {"ministral-3-reasoning", ToolSyntax::kMistral}};
  for (const auto& [family, source] : goldens["templates"].items()) {
    ASSERT_TRUE(want_syntax.count(family)) << family;
    EXPECT_EQ(ToolSyntaxName(DetectToolSyntax(source.get<std::string>())),
              ToolSyntaxName(want_syntax.at(family)))
        << family;
  }
  // The tools' text as the goldens hold it: the property order is the grammars' order.
  const std::string raw =
      nlohmann::ordered_json{{"tools", goldens["tools"]}, {"tool_choice", "required"}}.dump();
  auto spec = ReadToolFields(nlohmann::json::parse(raw), raw);
  ASSERT_TRUE(spec.ok()) << spec.error.status.message();
  std::map<std::string, int> checked;
  for (const auto& c : goldens["cases"]) {
    if (!c.contains("expected") || c["add_generation_prompt"].get<bool>()) continue;
    const std::string family = c["family"];
    const ToolSyntax syntax = want_syntax.at(family);
    if (syntax == ToolSyntax::kJson || (family == "gemma-4" && c["conversation"] == 2)) continue;
    spec.value->syntax = syntax;
    const bool opened = family == "deepseek-v3.2" || family == "deepseek-v4" || family == "glm-4.7-flash";
    const chat::ReasoningTags tags =
        family == "ministral-3-reasoning" ? chat::kMistralThinkTags : chat::kThinkTags;
    for (const std::string& turn : AssistantTexts(family, c["expected"])) {
      const std::string reply = chat::SplitReasoning(turn, tags, opened, /*final=*/true).content;
      const size_t region = ToolRegionStart(reply, /*final=*/true);
      if (region == std::string::npos) continue;  // a turn without calls
      std::string calls = reply.substr(region);
      calls = calls.substr(0, calls.find_last_not_of(" \n") + 1);
      const ToolOutput parsed = ParseToolOutput(*spec.value, calls, "seed", false);
      ASSERT_FALSE(parsed.calls.empty()) << family << ": " << calls;
      const std::string where = family + " conversation " + c["conversation"].dump() + ": " + calls;
      auto required = ForcedToolGbnf(*spec.value);
      ASSERT_TRUE(required.ok()) << required.error.status.message();
      EXPECT_TRUE(testing::GbnfAccepts(*required.value, calls)) << where << "\n" << *required.value;
      // Without parallel calls, or named, only single-call turns are accepted.
      ToolSpec single = *spec.value;
      single.parallel = false;
      EXPECT_EQ(testing::GbnfAccepts(*ForcedToolGbnf(single).value, calls), parsed.calls.size() == 1)
          << where;
      ToolSpec named = *spec.value;
      named.choice = ToolChoice::kNamed;
      named.named = parsed.calls[0].name;
      EXPECT_EQ(testing::GbnfAccepts(*ForcedToolGbnf(named).value, calls), parsed.calls.size() == 1) << where;
      // With a reasoning block first; when the prompt opened it, its rest.
      const std::string thought = "Let me think.\n</think>\n\n";
      auto thinking = ForcedToolGbnf(*spec.value, chat::kThinkTags, false);
      EXPECT_TRUE(testing::GbnfAccepts(*thinking.value, "<think>" + thought + calls)) << where;
      EXPECT_TRUE(testing::GbnfAccepts(*thinking.value, calls)) << where;
      EXPECT_TRUE(
          testing::GbnfAccepts(*ForcedToolGbnf(*spec.value, chat::kThinkTags, true).value, thought + calls))
          << where;
      // The old forced grammar's JSON array is not this syntax.
      std::string json = "[";
      for (const ToolCall& call : parsed.calls) {
        json += (json.size() > 1 ? ", " : "") + std::string("{\"name\": \"") + call.name +
                "\", \"arguments\": " + call.arguments + "}";
      }
      EXPECT_FALSE(testing::GbnfAccepts(*required.value, json + "]")) << where;
      ++checked[family];
    }
  }
  for (const char* family :
       {"qwen2.5", "mistral-nemo", "mistral-small-3.2", "deepseek-v3.1", "kimi-k2", "kimi-k2-thinking",
        "deepseek-v3.2", "deepseek-v4", "gemma-4", "deepseek-r1", "ministral-3-reasoning", "glm-4.6",
        "glm-4.7-flash", "glm-5.2", "qwen3-coder", "qwen3.5", "nemotron-3-nano"}) {
    EXPECT_GE(checked[family], 2) << family;
  }
}

}  // namespace
}  // namespace lockstep::server
