"""The reference renderer both golden makers use: Jinja2 configured the way Hugging Face transformers configures
it for apply_chat_template (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
raise_exception, tojson with ensure_ascii=False, strftime_now — here of a fixed day, FIXED_NOW, so that goldens
do not change with the date), and the loop that renders every template over every
conversation, with and without the generation prompt. Developer tool only: tests never run it.
"""
import datetime
import json

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment


FIXED_NOW = datetime.datetime(2026, 1, 2, 12, 0, 0)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def environment(mutable_lists=False):
    """mutable_lists: a sandbox that lets templates change lists (list.append, pop), for templates that do (Kimi
    K2 Thinking's; Hugging Face's immutable sandbox refuses them, llama.cpp's minja runs them)."""
    sandbox = SandboxedEnvironment if mutable_lists else ImmutableSandboxedEnvironment
    env = sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    # transformers' tojson: its keyword arguments are json.dumps's.
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = FIXED_NOW.strftime
    return env


def render_cases(templates, conversations, mutable_lists=False, **variables):
    """One case per (template, conversation, add_generation_prompt): the rendering, or the error it raised."""
    env = environment(mutable_lists)
    cases = []
    for name, source in templates.items():
        template = env.from_string(source)
        for ci, messages in enumerate(conversations):
            for gen in (True, False):
                case = {"family": name, "conversation": ci, "add_generation_prompt": gen}
                try:
                    case["expected"] = template.render(messages=messages, add_generation_prompt=gen, **variables)
                except jinja2.exceptions.TemplateError as e:
                    case["error"] = str(e)
                cases.append(case)
    return cases
