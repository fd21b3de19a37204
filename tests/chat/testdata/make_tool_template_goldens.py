#!/usr/bin/env python3
"""Writes tool_template_goldens.json: the chat templates of Llama 3.1, Qwen2.5 and Mistral Nemo (verbatim
tokenizer_config.json `chat_template` strings of meta-llama/Llama-3.1-8B-Instruct, Qwen/Qwen2.5-7B-Instruct and
mistralai/Mistral-Nemo-Instruct-2407) rendered with `tools` and tool-call conversations by the reference
implementation, Jinja2 configured as Hugging Face transformers' apply_chat_template configures it
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, raise_exception, tojson with
ensure_ascii=False). The conversations are what lockstep's server hands the template after reading an OpenAI
request: assistant tool_calls with their arguments parsed into objects, tool results with tool_call_id, keys
only where the request had them. tool_template_test.cc must reproduce every rendering byte for byte and raise
where the reference raises. Developer tool only: tests never run it.

Usage: python3 make_tool_template_goldens.py > tool_template_goldens.json
"""
import json
import sys

from hf_reference import render_cases
from make_chat_template_goldens import TEMPLATES as CHAT_TEMPLATES

TEMPLATES = {
    'llama3.1': '{{- bos_token }}\n{%- if custom_tools is defined %}\n    {%- set tools = custom_tools %}\n{%- endif %}\n{%- if not tools_in_user_message is defined %}\n    {%- set tools_in_user_message = true %}\n{%- endif %}\n{%- if not date_string is defined %}\n    {%- set date_string = "26 Jul 2024" %}\n{%- endif %}\n{%- if not tools is defined %}\n    {%- set tools = none %}\n{%- endif %}\n\n{#- This block extracts the system message, so we can slot it into the right place. #}\n{%- if messages[0][\'role\'] == \'system\' %}\n    {%- set system_message = messages[0][\'content\']|trim %}\n    {%- set messages = messages[1:] %}\n{%- else %}\n    {%- set system_message = "" %}\n{%- endif %}\n\n{#- System message + builtin tools #}\n{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}\n{%- if builtin_tools is defined or tools is not none %}\n    {{- "Environment: ipython\\n" }}\n{%- endif %}\n{%- if builtin_tools is defined %}\n    {{- "Tools: " + builtin_tools | reject(\'equalto\', \'code_interpreter\') | join(", ") + "\\n\\n"}}\n{%- endif %}\n{{- "Cutting Knowledge Date: December 2023\\n" }}\n{{- "Today Date: " + date_string + "\\n\\n" }}\n{%- if tools is not none and not tools_in_user_message %}\n    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}\n    {{- \'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\' }}\n    {{- "Do not use variables.\\n\\n" }}\n    {%- for t in tools %}\n        {{- t | tojson(indent=4) }}\n        {{- "\\n\\n" }}\n    {%- endfor %}\n{%- endif %}\n{{- system_message }}\n{{- "<|eot_id|>" }}\n\n{#- Custom tools are passed in a user message with some extra guidance #}\n{%- if tools_in_user_message and not tools is none %}\n    {#- Extract the first user message so we can plug it in here #}\n    {%- if messages | length != 0 %}\n        {%- set first_user_message = messages[0][\'content\']|trim %}\n        {%- set messages = messages[1:] %}\n    {%- else %}\n        {{- raise_exception("Cannot put tools in the first user message when there\'s no first user message!") }}\n{%- endif %}\n    {{- \'<|start_header_id|>user<|end_header_id|>\\n\\n\' -}}\n    {{- "Given the following functions, please respond with a JSON for a function call " }}\n    {{- "with its proper arguments that best answers the given prompt.\\n\\n" }}\n    {{- \'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\' }}\n    {{- "Do not use variables.\\n\\n" }}\n    {%- for t in tools %}\n        {{- t | tojson(indent=4) }}\n        {{- "\\n\\n" }}\n    {%- endfor %}\n    {{- first_user_message + "<|eot_id|>"}}\n{%- endif %}\n\n{%- for message in messages %}\n    {%- if not (message.role == \'ipython\' or message.role == \'tool\' or \'tool_calls\' in message) %}\n        {{- \'<|start_header_id|>\' + message[\'role\'] + \'<|end_header_id|>\\n\\n\'+ message[\'content\'] | trim + \'<|eot_id|>\' }}\n    {%- elif \'tool_calls\' in message %}\n        {%- if not message.tool_calls|length == 1 %}\n            {{- raise_exception("This model only supports single tool-calls at once!") }}\n        {%- endif %}\n        {%- set tool_call = message.tool_calls[0].function %}\n        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}\n            {{- \'<|start_header_id|>assistant<|end_header_id|>\\n\\n\' -}}\n            {{- "<|python_tag|>" + tool_call.name + ".call(" }}\n            {%- for arg_name, arg_val in tool_call.arguments | items %}\n                {{- arg_name + \'="\' + arg_val + \'"\' }}\n                {%- if not loop.last %}\n                    {{- ", " }}\n                {%- endif %}\n                {%- endfor %}\n            {{- ")" }}\n        {%- else  %}\n            {{- \'<|start_header_id|>assistant<|end_header_id|>\\n\\n\' -}}\n            {{- \'{"name": "\' + tool_call.name + \'", \' }}\n            {{- \'"parameters": \' }}\n            {{- tool_call.arguments | tojson }}\n            {{- "}" }}\n        {%- endif %}\n        {%- if builtin_tools is defined %}\n            {#- This means we\'re in ipython mode #}\n            {{- "<|eom_id|>" }}\n        {%- else %}\n            {{- "<|eot_id|>" }}\n        {%- endif %}\n    {%- elif message.role == "tool" or message.role == "ipython" %}\n        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}\n        {%- if message.content is mapping or message.content is iterable %}\n            {{- message.content | tojson }}\n        {%- else %}\n            {{- message.content }}\n        {%- endif %}\n        {{- "<|eot_id|>" }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- \'<|start_header_id|>assistant<|end_header_id|>\\n\\n\' }}\n{%- endif %}\n',
    'qwen2.5': CHAT_TEMPLATES['qwen2.5'],
    'mistral-nemo': CHAT_TEMPLATES['mistral-nemo'],
}

TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The current weather in a city",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers",
        "parameters": {"type": "object", "properties": {"b": {"type": "number"}, "a": {"type": "number"}},
                       "required": ["a", "b"]}}},
]

CALL = {"id": "abcDEF123", "type": "function",
        "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}}
CALL2 = {"id": "xyzUVW789", "type": "function", "function": {"name": "add", "arguments": {"b": 2, "a": 1.5}}}

CONVERSATIONS = [
    [{"role": "user", "content": "What's the weather in Paris?"}],
    [{"role": "system", "content": "You are a weather bot."},
     {"role": "user", "content": "Weather in Paris, please."},
     {"role": "assistant", "content": None, "tool_calls": [CALL]},
     {"role": "tool", "tool_call_id": "abcDEF123", "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}],
    [{"role": "user", "content": "Weather in Paris?"},
     {"role": "assistant", "content": None, "tool_calls": [CALL]},
     {"role": "tool", "tool_call_id": "abcDEF123", "content": "21 degrees"},
     {"role": "assistant", "content": "It is 21 \u00b0C in Paris."},
     {"role": "user", "content": "And 1.5 + 2?"}],
    [{"role": "user", "content": "Paris weather and 1.5 + 2"},
     {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL, CALL2]},
     {"role": "tool", "tool_call_id": "abcDEF123", "content": "21"},
     {"role": "tool", "tool_call_id": "xyzUVW789", "content": "3.5"}],
]


def main():
    cases = render_cases(TEMPLATES, CONVERSATIONS, tools=TOOLS, **TOKENS)
    json.dump({"tokens": TOKENS, "tools": TOOLS, "templates": TEMPLATES, "conversations": CONVERSATIONS,
               "cases": cases}, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
