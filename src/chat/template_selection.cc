#include "chat/template_selection.h"

#include <filesystem>

#include "base/file_util.h"
#include "chat/builtin_templates.h"

namespace lockstep::chat {
namespace {

std::string Piece(const Tokenizer& tokenizer, int32_t id) { return id >= 0 ? tokenizer.TokenPiece(id) : ""; }

// A file's template: the text itself, or the "chat_template" string of a tokenizer_config.json.
Result<std::string> ReadTemplateFile(const std::string& path) {
  LOCKSTEP_ASSIGN_OR_RETURN(std::string source, ReadFlagFile(path, "--chat-template"));
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    const nlohmann::json config = nlohmann::json::parse(source, nullptr, /*allow_exceptions=*/false);
    if (!config.is_object() || !config.contains("chat_template") || !config["chat_template"].is_string()) {
      return InvalidArgument("--chat-template '" + path +
                             "': a .json file must be an object with a \"chat_template\" string "
                             "(as tokenizer_config.json has)");
    }
    source = config["chat_template"].get<std::string>();
  }
  if (source.empty()) return InvalidArgument("--chat-template '" + path + "': the file is empty");
  return source;
}

struct TemplateSource {
  std::string source;
  std::string origin;  // "file t.jinja", "built-in llama3"
};

// The template a non-empty --chat-template names: a file (a directory or an unreadable path too, unless it is
// a built-in's name: the read says what is wrong with it), else a built-in.
Result<TemplateSource> ResolveOverride(const std::string& override_spec) {
  std::error_code error;
  const BuiltinTemplate* builtin = FindBuiltinTemplate(override_spec);
  if (std::filesystem::is_regular_file(override_spec, error) ||
      (builtin == nullptr && std::filesystem::exists(override_spec, error))) {
    LOCKSTEP_ASSIGN_OR_RETURN(std::string source, ReadTemplateFile(override_spec));
    return TemplateSource{std::move(source), "file " + override_spec};
  }
  if (builtin != nullptr) return TemplateSource{std::string(builtin->source), "built-in " + override_spec};
  return NotFound("--chat-template '" + override_spec + "': no such file, and not a built-in template (" +
                  BuiltinTemplateNames() + ")");
}

std::string Quoted(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) out += (out.empty() ? "" : ", ") + t;
  return out;
}

}  // namespace

Status CheckChatTemplateSpec(const std::string& override_spec) {
  if (override_spec.empty()) return Status::Ok();
  LOCKSTEP_ASSIGN_OR_RETURN(TemplateSource named, ResolveOverride(override_spec));
  // bos/eos only change what a rendering prints, not whether the template parses.
  auto parsed = ChatTemplate::Parse(named.source, named.origin, "", "");
  return parsed.ok() ? Status::Ok() : parsed.status();
}

std::vector<std::string> MissingSpecialTokens(const Tokenizer& tokenizer,
                                              const std::vector<std::string>& tokens) {
  std::vector<std::string> missing;
  for (const std::string& token : tokens) {
    auto ids = tokenizer.Encode(token, /*add_bos=*/false, /*parse_special=*/true);
    if (!ids.ok() || ids->size() != 1 || tokenizer.TokenPiece((*ids)[0]) != token) missing.push_back(token);
  }
  return missing;
}

Result<SelectedChatTemplate> SelectChatTemplate(const GgufFile& file, const Tokenizer& tokenizer,
                                                const std::string& override_spec) {
  const std::string bos = Piece(tokenizer, tokenizer.bos_id());
  const std::string eos = Piece(tokenizer, tokenizer.eos_id());
  SelectedChatTemplate selected;
  if (override_spec.empty()) {
    LOCKSTEP_ASSIGN_OR_RETURN(std::string own, file.GetStringOr("tokenizer.chat_template", ""));
    auto tmpl = std::make_shared<ChatTemplate>(ChatTemplate::Create(own, bos, eos));
    selected.origin = tmpl->is_default() ? "default" : "the model's own";
    if (tmpl->is_default()) selected.warnings.push_back(tmpl->note());
    selected.chat_template = std::move(tmpl);
  } else {
    LOCKSTEP_ASSIGN_OR_RETURN(TemplateSource named, ResolveOverride(override_spec));
    selected.origin = named.origin;
    auto tmpl = ChatTemplate::Parse(named.source, selected.origin, bos, eos);
    if (!tmpl.ok()) return tmpl.status();
    selected.chat_template = std::make_shared<ChatTemplate>(*std::move(tmpl));
  }

  const ChatTemplate& in_use = *selected.chat_template;
  const std::vector<std::string> missing =
      MissingSpecialTokens(tokenizer, FamilySpecialTokens(in_use.family()));
  if (!missing.empty()) {
    std::string fits;
    for (const BuiltinTemplate& b : BuiltinTemplates()) {
      std::vector<std::string> needed(b.special_tokens.begin(), b.special_tokens.end());
      if (b.name != in_use.family() && MissingSpecialTokens(tokenizer, needed).empty()) {
        fits += (fits.empty() ? "" : ", ") + std::string(b.name);
      }
    }
    selected.warnings.push_back(
        "chat template: the " + (in_use.is_default() ? std::string("default ChatML") : in_use.family()) +
        " template (" + selected.origin + ") uses " + Quoted(missing) +
        ", which the vocabulary does not have as special tokens, so prompts will spell them out as plain "
        "text; choose a template with --chat-template FILE|NAME" +
        (fits.empty() ? std::string() : " (built-ins this vocabulary can express: " + fits + ")"));
  }
  return selected;
}

}  // namespace lockstep::chat
