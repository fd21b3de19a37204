#!/usr/bin/env python3
"""Checks the project's Markdown: every *.md in the repository root and docs/ (or in the folders given).

For each file:
  - it starts with a `# Title` heading, and every heading outside code fences has a space after its `#`s
    (clang-format run over Markdown turns `# lockstep` into `#lockstep`);
  - code fences (``` or ~~~) are balanced;
  - every relative link or image, `[text](path)` or `[text](path#anchor)`, names a file that exists, and an
    anchor into a Markdown file names one of its headings (GitHub's rule: lower case, punctuation dropped,
    spaces to hyphens);
and for README.md, when checking the repository root:
  - the first code block of its "## Quick start" section holds exactly two commands, each running a script
    that exists, the second being the test command .ci/run runs.

Usage: check_docs.py [--readme-quick-start] [DIR ...]   (default: the repository root and docs/, with the
quick-start check). Prints one line per problem, "FILE:LINE: what", and exits 1 when there is any.
"""
import os
import re
import sys

HEADING = re.compile(r"^(#{1,6})(.*)$")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")
# A link or image: [text](target) where target has no spaces (a title after a space is allowed).
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")
SPACED_LINK = re.compile(r"!?\[[^\]]*\]\(([^)]*\s[^)]*)\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def github_slug(heading_text):
    text = INLINE_CODE.sub(lambda m: m.group(2), heading_text.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


class MarkdownFile:
    """One file's lines split into prose (outside fences) and fenced blocks, with its headings."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.lines = f.read().split("\n")
        self.problems = []
        self.prose = []  # (line number, text) outside fences
        self.blocks = []  # (first line number, [lines]) inside fences
        self.headings = []  # (line number, level, text)
        fence = None
        for number, line in enumerate(self.lines, start=1):
            opened = FENCE.match(line)
            if fence is None:
                if opened:
                    fence = (opened.group(1)[0], len(opened.group(1)), number)
                    self.blocks.append((number, []))
                    continue
                self.prose.append((number, line))
                heading = HEADING.match(line)
                if heading:
                    self.headings.append((number, len(heading.group(1)), heading.group(2)))
            else:
                closes = opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= fence[1] \
                    and not opened.group(2).strip()
                if closes:
                    fence = None
                else:
                    self.blocks[-1][1].append(line)
        if fence is not None:
            self.problem(fence[2], "code fence opened here is never closed")

    def problem(self, line, what):
        self.problems.append(f"{os.path.relpath(self.path)}:{line}: {what}")

    def slugs(self):
        seen = {}
        result = set()
        for _, _, text in self.headings:
            slug = github_slug(text)
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            result.add(slug if count == 0 else f"{slug}-{count}")
        return result


def check_headings(md):
    if not md.headings or md.headings[0][0] != min(n for n, t in md.prose if t.strip()) \
            or md.headings[0][1] != 1:
        md.problem(1, "the file does not start with a '# Title' heading")
    for number, level, text in md.headings:
        if not text.startswith(" ") or not text.strip():
            md.problem(number, f"heading without a space after '{'#' * level}' (was clang-format run on it?)")


def check_links(md, files):
    for number, line in md.prose:
        code_free = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for target in SPACED_LINK.findall(code_free):
            md.problem(number, f"link target '{target}' contains spaces")
        for _, target in LINK.findall(code_free):
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # empty, or a URL (http:, https:, mailto:)
            path, _, anchor = target.partition("#")
            if path:
                resolved = os.path.normpath(os.path.join(os.path.dirname(md.path), path))
                if not os.path.exists(resolved):
                    md.problem(number, f"link to '{target}': no file {resolved}")
                    continue
            else:
                resolved = md.path
            if anchor and resolved.endswith(".md"):
                other = files.get(os.path.abspath(resolved)) or MarkdownFile(resolved)
                if anchor not in other.slugs():
                    md.problem(number, f"link to '{target}': no heading with anchor '#{anchor}' in {resolved}")


def check_quick_start(md, root):
    start = next((n for n, level, text in md.headings if level == 2 and text.strip().lower()
                  .startswith("quick start")), None)
    if start is None:
        md.problem(1, "no '## Quick start' section")
        return
    end = next((n for n, level, _ in md.headings if n > start and level <= 2), len(md.lines) + 1)
    blocks = [(n, lines) for n, lines in md.blocks if start < n < end]
    if not blocks:
        md.problem(start, "the quick start has no code block")
        return
    number, lines = blocks[0]
    commands = [re.sub(r"\s+#.*$", "", l).strip() for l in lines]
    commands = [c for c in commands if c and not c.startswith("#")]
    if len(commands) != 2 or any(c.endswith("\\") for c in commands):
        md.problem(number, f"the quick start must be exactly two one-line commands, found {commands}")
        return
    for command in commands:
        script = re.match(r"^bash\s+(\S+\.sh)$", command)
        if not script or not os.path.isfile(os.path.join(root, script.group(1))):
            md.problem(number, f"quick-start command '{command}' is not 'bash <existing script>'")
    ci = os.path.join(root, ".ci", "run")
    if os.path.isfile(ci):
        with open(ci, encoding="utf-8") as f:
            ci_lines = [l.strip() for l in f]
        if commands[1] not in ci_lines:
            md.problem(number, f"the second quick-start command '{commands[1]}' is not what .ci/run runs")


def main(argv):
    quick_start = "--readme-quick-start" in argv
    dirs = [a for a in argv if not a.startswith("--")]
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if not dirs:
        dirs = [root, os.path.join(root, "docs")]
        quick_start = True
    paths = sorted(os.path.join(d, name) for d in dirs for name in os.listdir(d) if name.endswith(".md"))
    files = {os.path.abspath(p): MarkdownFile(p) for p in paths}
    for md in files.values():
        check_headings(md)
        check_links(md, files)
        if quick_start and os.path.basename(md.path) == "README.md" \
                and os.path.samefile(os.path.dirname(md.path), dirs[0]):
            check_quick_start(md, dirs[0])
    problems = [p for md in files.values() for p in md.problems]
    for p in problems:
        print(p)
    if not paths:
        print("check_docs: no Markdown files in " + ", ".join(dirs))
        return 1
    print(f"check_docs: {len(paths)} files, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
