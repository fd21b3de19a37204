#!/usr/bin/env python3
"""Renders the chat-template goldens (tests/chat/testdata/chat_template_goldens.json, made with Python Jinja2 under
Hugging Face's settings) with a peer's llama-server (--jinja --chat-template-file, POST /apply-template) and
reports where the peer differs. It builds nothing and downloads nothing: it takes the peer's llama-server and
lockstep's binary (to write a tiny model for the server to load).

The peer's rendering is normalised before comparing: llama-server drops a leading BOS (it adds BOS when
tokenizing) and uses the loaded model's own EOS text, so the golden's leading "<s>" is removed and its "</s>"
becomes the model's EOS. Cases where the reference raises are reported when the peer renders instead (llama.cpp
merges a system message into the next user turn for templates that cannot show one).

Usage: compare_chat_templates.py --peer .../llama-server --lockstep build/lockstep [--families a,b] [--eos TEXT]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDENS = os.path.join(ROOT, "tests", "chat", "testdata", "chat_template_goldens.json")


def wait_healthy(port, process, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline and process.poll() is None:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2)
            return True
        except Exception:
            time.sleep(0.2)
    return False


def apply_template(port, messages):
    request = urllib.request.Request("http://127.0.0.1:%d/apply-template" % port,
                                     data=json.dumps({"messages": messages}).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        return json.load(urllib.request.urlopen(request, timeout=30))["prompt"]
    except Exception:
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer", required=True, help="the peer's llama-server")
    parser.add_argument("--lockstep", required=True, help="lockstep's binary (make-model)")
    parser.add_argument("--families", default="", help="comma-separated template names (default: all)")
    parser.add_argument("--eos", default="<|endoftext|>", help="EOS text of the tiny model the peer loads")
    args = parser.parse_args()
    goldens = json.load(open(GOLDENS, encoding="utf-8"))
    families = args.families.split(",") if args.families else list(goldens["templates"])
    bos, eos = goldens["tokens"]["bos_token"], goldens["tokens"]["eos_token"]
    work = tempfile.mkdtemp(prefix="compare-chat-templates-")
    model = os.path.join(work, "tiny.gguf")
    subprocess.run([args.lockstep, "make-model", "--shape", "tiny", "-o", model], check=True,
                   stdout=subprocess.DEVNULL)
    totals = {"same": 0, "differ": 0, "peer_renders_where_reference_raises": 0}
    for i, family in enumerate(families):
        path = os.path.join(work, family + ".jinja")
        with open(path, "w", encoding="utf-8") as f:
            f.write(goldens["templates"][family])
        port = 18900 + i
        log = open(os.path.join(work, family + ".log"), "w")
        server = subprocess.Popen([args.peer, "-m", model, "--jinja", "--chat-template-file", path, "--port",
                                   str(port), "-c", "256"], stdout=log, stderr=log)
        try:
            if not wait_healthy(port, server):
                print("%s: the peer did not start (log in %s)" % (family, work))
                continue
            for case in goldens["cases"]:
                if case["family"] != family or not case["add_generation_prompt"]:
                    continue
                where = "%s conversation %d" % (family, case["conversation"])
                got = apply_template(port, goldens["conversations"][case["conversation"]])
                if "error" in case:
                    if got is None:
                        totals["same"] += 1
                    else:
                        totals["peer_renders_where_reference_raises"] += 1
                        print("%s: reference raises (%s); peer renders %r" % (where, case["error"], got))
                    continue
                want = case["expected"]
                if want.startswith(bos):
                    want = want[len(bos):]
                want = want.replace(eos, args.eos)
                if got == want:
                    totals["same"] += 1
                else:
                    totals["differ"] += 1
                    print("%s: DIFFERS\n  peer      %r\n  reference %r" % (where, got, want))
        finally:
            server.terminate()
            server.wait()
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
