"""Fake services for the soak (Python 3 stdlib only, 127.0.0.1 only).

  python3 fakes.py llm      PORTFILE LOGDIR
  python3 fakes.py telegram PORTFILE LOGDIR

Both bind 127.0.0.1:0, write the chosen port to PORTFILE, and append JSON lines to
LOGDIR/<kind>.log: one line per request with what was done ("ok", or the fault injected).
Faults are injected at random while LOGDIR/faults_on exists (the driver removes it for
the quiet phase at the end). Every sleep is bounded; the process exits when its parent
driver dies (it polls its parent pid) or on SIGTERM.

LLM (OpenAI-compatible /v1/chat/completions): the reply embeds the soak tag found in the
prompt ("tag=<...>") and a per-process counter, so every answer is unique.
Faults: 429 (Retry-After: 1), 500/502/503, connection reset before answering,
slow answer (1-3 s, within the client's timeout), timeout (hang 6 s, longer than the
configured agent.request_timeout_seconds=4, then close without answering).

Telegram (/bot<TOKEN>/sendMessage): every *accepted* message is logged with chat and text
(kind "accepted"). Faults: 429 (parameters.retry_after 1-2), 500/502, reset before
reading, accepted-then-reset (the message is accepted and logged, the answer is lost —
the ambiguous case a correct client must not resend), slow (1-3 s), timeout (hang 62 s,
longer than the client's 60 s, then accept and drop: again accepted but unanswered).
Outage: while LOGDIR/outage_on exists (the driver creates it for bounded windows during the
chaos phase), every request is read and answered 502 (nginx's HTML "Bad Gateway" page, as
api.telegram.org answers when its backend is down) or 503 (JSON "Service Unavailable"),
overriding the random faults: a run's 3 in-run attempts fail within ~2 s and the
delivery goes to the outbox. Requests whose body was read are logged with chat and text.
"""
import json
import os
import random
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KIND, PORTFILE, LOGDIR = sys.argv[1], sys.argv[2], sys.argv[3]
PARENT = os.getppid()
LOCK = threading.Lock()
LOG = open(os.path.join(LOGDIR, f"{KIND}.log"), "a", buffering=1)
COUNTER = [0]
FAULTS_FILE = os.path.join(LOGDIR, "faults_on")
OUTAGE_FILE = os.path.join(LOGDIR, "outage_on")
rng = random.Random()

LLM_FAULTS = [("429", 0.08), ("5xx", 0.06), ("reset", 0.04), ("slow", 0.08), ("timeout", 0.03)]
TG_FAULTS = [("429", 0.08), ("5xx", 0.06), ("reset", 0.04), ("accepted_reset", 0.02),
             ("slow", 0.05), ("timeout", 0.01)]


def pick(table):
    if not os.path.exists(FAULTS_FILE):
        return "ok"
    r = rng.random()
    for name, p in table:
        if r < p:
            return name
        r -= p
    return "ok"


def log(entry):
    entry["t"] = time.time()
    with LOCK:
        LOG.write(json.dumps(entry, ensure_ascii=False) + "\n")


def next_n():
    with LOCK:
        COUNTER[0] += 1
        return COUNTER[0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # idle keep-alive connections are closed after this

    def log_message(self, *a):
        pass

    def reset(self):
        # SO_LINGER 0 + close = TCP RST.
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass

    def answer(self, code, body, headers=(), content_type="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def do_POST(self):
        try:
            if KIND == "llm":
                self.llm()
            else:
                self.telegram()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    # ---- OpenAI-compatible model server -------------------------------------------
    def llm(self):
        fault = pick(LLM_FAULTS)
        if fault == "reset":
            # Reset before reading the request: the client sees a broken connection.
            log({"fault": "reset"})
            return self.reset()
        req = self.body()
        n = next_n()
        text = json.dumps(req.get("messages", []), ensure_ascii=False)
        m = re.search(r"tag=([A-Za-z0-9_.-]+)", text)
        tag = m.group(1) if m else "none"
        if fault == "timeout":
            log({"fault": "timeout", "tag": tag, "n": n})
            time.sleep(6)
            return self.reset()
        if fault == "429":
            log({"fault": "429", "tag": tag, "n": n})
            return self.answer(429, {"error": {"message": f"rate limited (fault {n})", "type": "rate_limit"}},
                               [("Retry-After", "1")])
        if fault == "5xx":
            code = rng.choice([500, 502, 503])
            log({"fault": "5xx", "code": code, "tag": tag, "n": n})
            return self.answer(code, {"error": {"message": f"upstream trouble (fault {n})", "type": "server_error"}})
        if fault == "slow":
            time.sleep(rng.uniform(1, 3))
        reply = f"soak-reply tag={tag} n={n}"
        log({"fault": fault, "tag": tag, "n": n, "reply": reply})
        self.answer(200, {
            "id": f"chatcmpl-{n}", "object": "chat.completion", "model": req.get("model", "soak"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        })

    # ---- Telegram Bot API ---------------------------------------------------------
    def telegram(self):
        fault = "outage" if os.path.exists(OUTAGE_FILE) else pick(TG_FAULTS)
        if fault == "reset":
            log({"fault": "reset"})
            return self.reset()
        req = self.body()
        method = self.path.rsplit("/", 1)[-1]
        chat = str(req.get("chat_id", ""))
        text = req.get("text", "")
        n = next_n()
        if method != "sendMessage":
            log({"fault": "unsupported", "method": method})
            return self.answer(400, {"ok": False, "error_code": 400, "description": f"Bad Request: {method} not faked"})
        if fault == "outage":
            code = rng.choice([502, 503])
            log({"fault": "outage", "code": code, "chat": chat, "text": text})
            if code == 502:
                return self.answer(502, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
                                        "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n"
                                        "</body>\r\n</html>\r\n", content_type="text/html")
            return self.answer(503, {"ok": False, "error_code": 503, "description": "Service Unavailable"})
        if fault == "429":
            ra = rng.choice([1, 2])
            log({"fault": "429", "chat": chat, "text": text})
            return self.answer(429, {"ok": False, "error_code": 429, "description": f"Too Many Requests: retry after {ra}",
                                     "parameters": {"retry_after": ra}})
        if fault == "5xx":
            code = rng.choice([500, 502])
            log({"fault": "5xx", "code": code, "chat": chat, "text": text})
            return self.answer(code, {"ok": False, "error_code": code, "description": "Internal Server Error"})
        if fault == "slow":
            time.sleep(rng.uniform(1, 3))
        if fault == "timeout":
            time.sleep(62)
        entry = {"fault": fault, "kind": "accepted", "chat": chat, "text": text,
                 "thread": req.get("message_thread_id"), "parse_mode": req.get("parse_mode"), "n": n}
        log(entry)
        if fault in ("accepted_reset", "timeout"):
            return self.reset()
        self.answer(200, {"ok": True, "result": {"message_id": n, "date": int(time.time()),
                                                 "chat": {"id": int(chat) if chat.lstrip("-").isdigit() else 0},
                                                 "text": text}})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def watchdog():
    while True:
        time.sleep(1)
        if os.getppid() != PARENT:
            os._exit(0)


server = Server(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
threading.Thread(target=watchdog, daemon=True).start()
server.serve_forever()
