"""Size of the system prompt Python Hermes and hermes-cron send for the same cron job.

One job, set up identically in two fresh homes: a SOUL.md, one skill, a workdir with an
AGENTS.md, delivery to Telegram, a custom OpenAI-compatible model. Each side runs the job
once against its own capturing fake model (a local HTTP server answering "done"); the
first request's system message and tool list are measured. Python Hermes runs in this
process (cron.scheduler.run_job), hermes-cron as the real binary (`cron add` + `cron run`).

    $(bash scripts/python-hermes/setup.sh) scripts/python-hermes/system_prompt.py target/release/hermes

Prints one line per side and the ratio; nothing is asserted.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

ANSWER = {
    "id": "c1", "object": "chat.completion", "model": "test-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def fake_model():
    """A local chat-completions server that keeps every request body."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
            try:
                seen.append(json.loads(body))
            except ValueError:
                seen.append(None)
            out = json.dumps(ANSWER).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_GET(self):  # model listings some clients probe
            out = json.dumps({"data": [{"id": "test-model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/v1", seen


def make_home(base_url):
    home = Path(tempfile.mkdtemp(prefix="sysprompt-home-"))
    (home / "config.yaml").write_text(
        f"model:\n  default: test-model\n  provider: custom\n  base_url: {base_url}\n"
    )
    (home / "SOUL.md").write_text("You are Quill, a terse release manager for the Acme team.\n")
    skill = home / "skills" / "ops" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from merged PRs\n---\n"
        "List merged pull requests since the last tag and group them by area.\n"
    )
    work = Path(tempfile.mkdtemp(prefix="sysprompt-work-"))
    (work / "AGENTS.md").write_text("# Conventions\nAlways cite the ticket number. Use British spelling.\n")
    return home, work


def first_chat(seen):
    """The first request that carries a system message (auxiliary calls are skipped)."""
    return next((r for r in seen if system_of(r)), {})


def system_of(request):
    for message in (request or {}).get("messages", []):
        if message.get("role") in ("system", "developer"):
            content = message.get("content")
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content)
            return content or ""
    return ""


def python_side():
    base, seen = fake_model()
    home, work = make_home(base)
    os.environ["HERMES_HOME"] = str(home)
    os.environ.setdefault("HOME", str(home))
    os.environ["OPENAI_API_KEY"] = "sk-local-fake"
    from cron.jobs import create_job
    from cron.scheduler import run_job

    job = create_job(prompt="Summarise what changed today", schedule="every 1h",
                     deliver="telegram", workdir=str(work))
    run_job(job)
    first = first_chat(seen)
    return system_of(first), len(first.get("tools") or [])


def rust_side(binary):
    base, seen = fake_model()
    home, work = make_home(base)
    env = {"PATH": os.environ.get("PATH", ""), "HERMES_HOME": str(home), "HOME": str(home),
           "HERMES_TIMEZONE": "UTC"}
    out = subprocess.run([binary, "cron", "add", "every 1h", "Summarise what changed today",
                          "--deliver", "telegram", "--workdir", str(work)],
                         env=env, capture_output=True, text=True, check=True).stdout
    job_id = next(line.split(":", 1)[1].strip() for line in out.splitlines()
                  if line.startswith("Created job:"))
    subprocess.run([binary, "cron", "run", job_id], env=env, capture_output=True, text=True)
    first = first_chat(seen)
    return system_of(first), len(first.get("tools") or [])


def main(argv):
    binary = argv[0] if argv else "target/release/hermes"
    rust_system, rust_tools = rust_side(binary)
    py_system, py_tools = python_side()
    print(f"python hermes 0.19: system prompt {len(py_system.encode())} bytes, {py_tools} tools")
    print(f"hermes-cron:        system prompt {len(rust_system.encode())} bytes, {rust_tools} tools")
    if py_system:
        print(f"ratio (hermes-cron / python): {len(rust_system.encode()) / len(py_system.encode()):.2f}")
    if os.environ.get("SHOW_PROMPTS"):
        print("---- python ----\n" + py_system + "\n---- hermes-cron ----\n" + rust_system)


if __name__ == "__main__":
    main(sys.argv[1:])
