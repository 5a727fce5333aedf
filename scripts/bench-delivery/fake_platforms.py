"""A fake of the Signal (signal-cli JSON-RPC), Matrix, Mattermost, Home Assistant, Twilio,
WhatsApp Cloud, DingTalk and Feishu APIs for the delivery bench. Where a platform documents a send limit,
the fake enforces it and answers like the real service when a sender exceeds it:
  - Matrix:      Synapse's default rc_message, per user: burst 10, then 0.2 msg/s
                 (429 M_LIMIT_EXCEEDED with retry_after_ms)
  - Mattermost:  the server's default rate limit: 10 req/s, burst 100 (429 Retry-After)
  - WhatsApp:    Meta's pair rate limit: burst 45, then 1 msg / 6 s per user
                 (400, Graph error 131056), and 80 msg/s per business number
  - DingTalk:    20 messages a minute per robot (errcode 410100)
  - Feishu:      5 messages a second per chat, 50 per app (429, code 99991400)
Signal (signal-cli paces itself and Signal documents no text limit), Home Assistant and
Twilio (which queues messages instead of refusing them) accept everything.
Logs every message request and every refusal to a JSON-lines file."""
import json, sys, threading, time
from collections import defaultdict
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
from urllib.parse import parse_qs

lock = threading.Lock()
log = open(sys.argv[2], "a")


class Bucket:
    def __init__(self, capacity, per_sec):
        self.capacity, self.per_sec = capacity, per_sec
        self.tokens, self.at = capacity, time.monotonic()

    def take(self):
        """Takes a token; returns 0, or the seconds until one is available."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.per_sec)
        self.at = now
        if self.tokens >= 1 - 1e-6:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.per_sec


buckets = defaultdict(lambda: None)


def bucket(key, capacity, per_sec):
    if buckets[key] is None:
        buckets[key] = Bucket(capacity, per_sec)
    return buckets[key]


def record(platform, chat, status):
    log.write(json.dumps({"t": time.monotonic(), "platform": platform, "chat": chat, "status": status}) + "\n")
    log.flush()


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def answer(self, code, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self):
        self.do_POST()

    def do_GET(self):
        # Matrix: no room is encrypted.
        self.answer(404, {"errcode": "M_NOT_FOUND", "error": "Event not found."})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path
        with lock:
            if path == "/api/v1/rpc":
                body = json.loads(raw)
                record("signal", str(body["params"].get("recipient")), 200)
                return self.answer(200, {"jsonrpc": "2.0", "result": {"timestamp": 1}, "id": body["id"]})
            if path.startswith("/_matrix/client/v3/rooms/"):
                wait = bucket("matrix:" + self.headers.get("Authorization", ""), 10, 0.2).take()
                room = path.split("/")[5]
                if wait:
                    record("matrix", room, 429)
                    return self.answer(429, {"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests",
                                             "retry_after_ms": int(wait * 1000) + 1})
                record("matrix", room, 200)
                return self.answer(200, {"event_id": "$e"})
            if path == "/api/v4/posts":
                body = json.loads(raw)
                wait = bucket("mattermost", 100, 10).take()
                if wait:
                    record("mattermost", body["channel_id"], 429)
                    return self.answer(429, {"message": "limit exceeded"}, [("Retry-After", str(int(wait) + 1))])
                record("mattermost", body["channel_id"], 201)
                return self.answer(201, {"id": "p"})
            if path == "/api/services/notify/notify":
                body = json.loads(raw)
                record("homeassistant", body.get("target"), 200)
                return self.answer(200, [])
            if path.endswith("/Messages.json"):
                form = parse_qs(raw.decode())
                record("sms", form["To"][0], 201)
                return self.answer(201, {"sid": "SM1", "status": "queued"})
            if path.startswith("/robot/send"):
                body = json.loads(raw)
                # A sliding minute: at most 20 messages in any 60 s.
                recent = buckets["dingtalk"] or []
                now = time.monotonic()
                recent = [t for t in recent if now - t < 60]
                buckets["dingtalk"] = recent
                if len(recent) >= 20:
                    record("dingtalk", "robot", 410100)
                    return self.answer(200, {"errcode": 410100, "errmsg": "send too fast, exceed 20 times per minute"})
                recent.append(now)
                record("dingtalk", "robot", 200)
                return self.answer(200, {"errcode": 0, "errmsg": "ok"})
            if path == "/open-apis/auth/v3/tenant_access_token/internal":
                return self.answer(200, {"code": 0, "msg": "ok", "tenant_access_token": "t-bench", "expire": 7200})
            if path.startswith("/open-apis/im/v1/messages"):
                body = json.loads(raw)
                chat = bucket("feishu:" + body["receive_id"], 5, 5).take()
                app = bucket("feishu-app", 50, 50).take()
                if chat or app:
                    record("feishu", body["receive_id"], 429)
                    return self.answer(429, {"code": 99991400, "msg": "request trigger frequency limit"},
                                       [("x-ogw-ratelimit-reset", "1")])
                record("feishu", body["receive_id"], 200)
                return self.answer(200, {"code": 0, "msg": "success", "data": {"message_id": "om_1"}})
            if path.endswith("/messages"):
                body = json.loads(raw)
                to = body["to"]
                pair = bucket("wa:" + to, 45, 1 / 6).take()
                number = bucket("wa-number", 80, 80).take()
                if pair or number:
                    record("whatsapp_cloud", to, 400)
                    return self.answer(400, {"error": {"message": "(#131056) pair rate limit hit",
                                                       "type": "OAuthException", "code": 131056 if pair else 130429}})
                record("whatsapp_cloud", to, 200)
                return self.answer(200, {"messaging_product": "whatsapp", "messages": [{"id": "wamid.1"}]})
            self.answer(404, {"error": "not found"})


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
