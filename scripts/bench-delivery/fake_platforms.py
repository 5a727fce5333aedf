"""A fake of the Signal (signal-cli JSON-RPC), Matrix, Mattermost, Home Assistant, Twilio,
WhatsApp Cloud, DingTalk, Feishu, Hermes' WhatsApp bridge, BlueBubbles, QQ bot and WeCom
app APIs for the delivery bench. Where a platform documents a send limit,
the fake enforces it and answers like the real service when a sender exceeds it:
  - Matrix:      Synapse's default rc_message, per user: burst 10, then 0.2 msg/s
                 (429 M_LIMIT_EXCEEDED with retry_after_ms)
  - Mattermost:  the server's default rate limit: 10 req/s, burst 100 (429 Retry-After)
  - WhatsApp:    Meta's pair rate limit: burst 45, then 1 msg / 6 s per user
                 (400, Graph error 131056), and 80 msg/s per business number
  - DingTalk:    20 messages a minute per robot (errcode 410100)
  - Feishu:      5 messages a second per chat, 50 per app (429, code 99991400)
  - QQ bot:      5 messages a second per guild sub-channel (429, code 22009
                 "msg limit exceed")
  - WeCom app:   30 messages a minute per member (errcode 45009 in an HTTP 200; WeCom
                 documents that it drops the excess, the fake refuses it to make it seen)
Signal (signal-cli paces itself and Signal documents no text limit), Home Assistant,
Twilio (which queues messages instead of refusing them), the WhatsApp bridge (Baileys,
no documented limit) and BlueBubbles (no documented limit) accept everything.
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


def window_full(key, limit, span):
    """A sliding window: True when `limit` messages already went in the last `span` seconds,
    else counts this one."""
    now = time.monotonic()
    recent = [t for t in (buckets[key] or []) if now - t < span]
    buckets[key] = recent
    if len(recent) >= limit:
        return True
    recent.append(now)
    return False


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
        if self.path.startswith("/cgi-bin/gettoken"):
            return self.answer(200, {"errcode": 0, "errmsg": "ok", "access_token": "wecom-bench", "expires_in": 7200})
        # Matrix: no room is encrypted.
        self.answer(404, {"errcode": "M_NOT_FOUND", "error": "Event not found."})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path
        with lock:
            if self.newer_platforms(path, raw):
                return
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


    def newer_platforms(self, path, raw):
        """The WhatsApp bridge, BlueBubbles, QQ bot and WeCom app; False for any other path."""
        route = path.split("?")[0]
        if route == "/send":
            body = json.loads(raw)
            record("whatsapp", body["chatId"], 200)
            self.answer(200, {"success": True, "messageId": "3EB0C431C26A1916"})
        elif route == "/api/v1/message/text":
            body = json.loads(raw)
            record("bluebubbles", body["chatGuid"], 200)
            self.answer(200, {"status": 200, "message": "Message sent!", "data": {"guid": "p:0/1"}})
        elif route == "/app/getAppAccessToken":
            self.answer(200, {"access_token": "qq-bench", "expires_in": "7200"})
        elif route.startswith("/channels/") and route.endswith("/messages"):
            channel = route.split("/")[2]
            if window_full("qq:" + channel, 5, 1.0):
                record("qqbot", channel, 429)
                self.answer(429, {"message": "msg limit exceed", "code": 22009, "err_code": 22009,
                                  "trace_id": "bench"})
            else:
                record("qqbot", channel, 200)
                self.answer(200, {"id": "ROBOT1.0_bench", "timestamp": "2026-03-01T09:00:01+08:00"})
        elif route == "/cgi-bin/message/send":
            body = json.loads(raw)
            member = body["touser"]
            if window_full("wecom:" + member, 30, 60.0):
                record("wecom_callback", member, 45009)
                self.answer(200, {"errcode": 45009, "errmsg": "api freq out of limit"})
            else:
                record("wecom_callback", member, 200)
                self.answer(200, {"errcode": 0, "errmsg": "ok", "invaliduser": "", "msgid": "m1"})
        else:
            return False
        return True


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
