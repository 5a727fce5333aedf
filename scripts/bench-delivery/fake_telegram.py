"""A fake Telegram Bot API that enforces Telegram's documented send limits and answers
429 {"parameters":{"retry_after":N}} like the real one when a bot exceeds them:
  - private chat (id > 0): at most 1 message per second per chat
  - group (id < 0):        at most 20 messages per 60 s per chat (and 1/s)
  - whole bot:             at most 30 messages per second
Logs every accepted message and every 429 to a JSON-lines file."""
import json, sys, threading, time
from collections import defaultdict, deque
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

lock = threading.Lock()
per_chat = defaultdict(deque)
global_q = deque()
log = open(sys.argv[2], "a")
TOL = 0.02  # 20 ms tolerance for network jitter

class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        chat = int(body.get("chat_id", 0))
        now = time.monotonic()
        with lock:
            q = per_chat[chat]
            while q and now - q[0] > 60: q.popleft()
            while global_q and now - global_q[0] > 1: global_q.popleft()
            wait = 0.0
            if q and now - q[-1] < 1.0 - TOL: wait = max(wait, 1.0 - (now - q[-1]))
            if chat < 0 and len(q) >= 20: wait = max(wait, 60 - (now - q[-20]))
            if len(global_q) >= 30: wait = max(wait, 1 - (now - global_q[0]))
            if wait > 0:
                ra = max(1, int(wait + 0.999))
                log.write(json.dumps({"t": now, "chat": chat, "status": 429, "retry_after": ra}) + "\n"); log.flush()
                out = {"ok": False, "error_code": 429, "description": f"Too Many Requests: retry after {ra}", "parameters": {"retry_after": ra}}
                code = 429
            else:
                q.append(now); global_q.append(now)
                log.write(json.dumps({"t": now, "chat": chat, "status": 200}) + "\n"); log.flush()
                out = {"ok": True, "result": {"message_id": len(q), "chat": {"id": chat}}}
                code = 200
        data = json.dumps(out).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
