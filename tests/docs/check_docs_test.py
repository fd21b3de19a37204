#!/usr/bin/env python3
"""Tests scripts/check_docs.py on small made-up Markdown trees: clean ones pass, each kind of damage is found."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "check_docs.py")

GOOD_README = """# demo

Intro with a [link](docs/a.md), an [anchor](docs/a.md#second-part-x) and [a site](https://example.com).

## Quick start (fresh Debian 12)

```sh
bash scripts/demo.sh   # the main job
bash scripts/test.sh   # the tests
```

```text
#not a heading: inside a fence
```
"""
GOOD_DOC = "# A\n\n## Second part (x)\n\nBack to the [README](../README.md#demo); `[not](a link)`.\n"


def write_tree(root, readme, doc=GOOD_DOC, ci="bash scripts/test.sh\n"):
    os.makedirs(os.path.join(root, "docs"))
    os.makedirs(os.path.join(root, "scripts"))
    os.makedirs(os.path.join(root, ".ci"))
    for name in ("demo.sh", "test.sh"):
        open(os.path.join(root, "scripts", name), "w").close()
    with open(os.path.join(root, "README.md"), "w") as f:
        f.write(readme)
    with open(os.path.join(root, "docs", "a.md"), "w") as f:
        f.write(doc)
    with open(os.path.join(root, ".ci", "run"), "w") as f:
        f.write("#!/bin/sh\n" + ci)


def check(readme, **kwargs):
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, readme, **kwargs)
        result = subprocess.run([sys.executable, CHECKER, "--readme-quick-start", root, os.path.join(root, "docs")],
                                capture_output=True, text=True)
        return result.returncode, result.stdout


class CheckDocsTest(unittest.TestCase):
    def test_clean_tree_passes(self):
        code, out = check(GOOD_README)
        self.assertEqual((code, out), (0, ""))

    def test_heading_without_space(self):
        code, out = check(GOOD_README.replace("## Quick start", "##Quick start"))
        self.assertEqual(code, 1)
        self.assertIn("heading without a space", out)

    def test_first_line_must_be_a_title(self):
        code, out = check(GOOD_README.replace("# demo", "#demo"))
        self.assertIn("README.md:1: heading without a space", out)
        code, out = check(GOOD_README.replace("# demo\n", "demo\n"))
        self.assertIn("README.md:1: the file does not start with a '# Title' heading", out)

    def test_unbalanced_fence(self):
        code, out = check(GOOD_README + "\n```sh\nopen\n")
        self.assertEqual(code, 1)
        self.assertIn("never closed", out)

    def test_broken_and_spaced_links(self):
        code, out = check(GOOD_README.replace("docs/a.md)", "docs/missing.md)"))
        self.assertIn("no file", out)
        code, out = check(GOOD_README.replace("(docs/a.md)", "(docs / a.md)"))
        self.assertIn("contains spaces", out)

    def test_anchor_must_name_a_heading(self):
        code, out = check(GOOD_README.replace("#second-part-x", "#third-part"))
        self.assertEqual(code, 1)
        self.assertIn("no heading with anchor '#third-part'", out)

    def test_quick_start_is_exactly_two_commands(self):
        code, out = check(GOOD_README.replace("bash scripts/test.sh   # the tests", "bash scripts/test.sh\nmake"))
        self.assertIn("exactly two one-line commands", out)
        code, out = check(GOOD_README.replace("bash scripts/demo.sh", "bash scripts / demo.sh"))
        self.assertIn("is not 'bash <existing script>'", out)
        code, out = check(GOOD_README.replace("scripts/demo.sh", "scripts/gone.sh"))
        self.assertIn("is not 'bash <existing script>'", out)

    def test_quick_start_test_command_is_what_ci_runs(self):
        code, out = check(GOOD_README, ci="bash scripts/other.sh\n")
        self.assertEqual(code, 1)
        self.assertIn("is not what .ci/run runs", out)


if __name__ == "__main__":
    unittest.main()
