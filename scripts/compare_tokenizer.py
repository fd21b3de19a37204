#!/usr/bin/env python3
"""lockstep's tokenizer against llama.cpp's llama-tokenize on many generated strings.

For each vocabulary of ../shared/testdata/vocab: strings made of words, whitespace runs, newlines, emoji and
the vocabulary's special and user-defined tokens (so text right before and after them is covered), each
tokenized by the peer with and without special-token parsing, no BOS. The ids are written as a golden file
(tests/tokenizer/testdata/peer_tokenize.json with --update), which tests/tokenizer/peer_tokenize_test.cc
checks without the peer; this script also compares `lockstep tokenize` directly and prints the differences.
It builds and downloads nothing.

  scripts/compare_tokenizer.py --peer /work/peers/llama.cpp/build/bin/llama-tokenize [--update]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "tokenizer", "testdata", "peer_tokenize.json")
# Vocabulary -> its special and user-defined pieces to mix in.
VOCABS = {
    "phi-3": ["<|user|>", "<|end|>", "<|assistant|>", "<|system|>", "</s>", "<s>", "<|endoftext|>", "<unk>",
              "<|placeholder1|>"],
    "llama-spm": ["<s>", "</s>", "<unk>"],
    "gpt-2": ["<|endoftext|>"],
    "starcoder": ["<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>"],
}
WORDS = ["Hello", "world", " ", "  ", "\n", "\n\n", "\t", "a", "The", "ünï", "😀", "123", ".", "!", "  x", " y ",
         "\r\n", "'s", "<", "|>"]
STRINGS_PER_VOCAB = 150


def strings(specials, seed):
    rng = random.Random(seed)
    out = [s + sep + w for s in specials for sep in ("", "\n") for w in ("Hello", " Hello", "\nHello", "  Hi")]
    while len(out) < STRINGS_PER_VOCAB:
        out.append("".join(rng.choice(WORDS + specials * 2) for _ in range(rng.randint(1, 6))))
    return out


def run(cmd, text, work):
    path = os.path.join(work, "in.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return subprocess.run(cmd + ["-f", path], capture_output=True, text=True, cwd=work)  # llama.log lands there


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="llama.cpp's llama-tokenize binary")
    ap.add_argument("--lockstep", default=os.path.join(ROOT, "build", "lockstep"))
    ap.add_argument("--testdata", default=os.path.join(os.path.dirname(ROOT), "shared", "testdata"))
    ap.add_argument("--update", action="store_true", help="write " + GOLDEN)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="compare-tokenizer-")
    peer_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(args.peer))))
    commit = subprocess.run(["git", "-C", peer_root, "log", "-1", "--format=%h"], capture_output=True,
                            text=True).stdout.strip()
    golden = {"peer": f"{os.path.basename(peer_root)} {commit} llama-tokenize --no-bos", "vocabs": {}}
    mismatches = 0
    for seed, (name, specials) in enumerate(VOCABS.items()):
        vocab = os.path.join(args.testdata, "vocab", f"ggml-vocab-{name}.gguf")
        cases = []
        for text in strings(specials, seed):
            case = {"text": text}
            for mode, flags in (("special", []), ("plain", ["--no-parse-special"])):
                peer = run([args.peer, "-m", vocab, "--ids", "--log-disable", "--no-bos"] + flags, text, work)
                case[mode] = json.loads(peer.stdout.strip().splitlines()[-1])
                ours = run([args.lockstep, "tokenize", "-m", vocab, "--no-bos"] +
                           ([] if mode == "special" else ["--no-special"]), text, work)
                got = [int(t) for t in ours.stdout.split()] if ours.returncode == 0 else ours.stderr.strip()
                if got != case[mode]:
                    mismatches += 1
                    print(f"{name} {mode} {text!r}: peer {case[mode]}, lockstep {got}")
            cases.append(case)
        golden["vocabs"][name] = cases
        print(f"{name}: {len(cases)} strings x 2 modes")
    if args.update:
        with open(GOLDEN, "w", encoding="utf-8") as f:  # one string per line
            f.write('{"peer": %s, "vocabs": {\n' % json.dumps(golden["peer"]))
            f.write(",\n".join(f'{json.dumps(name)}: [\n' + ",\n".join(json.dumps(c, ensure_ascii=False)
                                                                     for c in cases) + "]"
                               for name, cases in golden["vocabs"].items()))
            f.write("}}\n")
    print(f"{mismatches} differences")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
