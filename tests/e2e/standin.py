"""What the loopback stand-ins of the vendors' APIs share (messages_api.py, responses_api.py,
gemini_api.py): a threaded HTTP server on 127.0.0.1 and a free port that records every
request, answers 404 with the API's own error body for a path it does not know, and, as the
client's HTTPS_PROXY and HTTP_PROXY, records and refuses (403) every request meant for
elsewhere.

Python 3 standard library only."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StandIn:
    """The server, in a thread of its own: start(), stop(). A subclass answers the API (its
    _handler() returns a StandInHandler subclass) and says what a 404 holds."""

    REQUEST_ID = "request-id"  # the response header that names a request

    def __init__(self, command, tool_name, log=None):
        # The commands of the tool calls, one a turn: a string, or a list for several.
        self.commands = list(command) if isinstance(command, (list, tuple)) else [command]
        self.tool_name = tool_name
        self.log = log  # a file for one line per request, or None
        self.requests = []  # {"method", "path", "query", "headers", "body"}
        self.unknown = []  # "METHOD PATH" of the requests answered 404
        self.proxied = []  # "METHOD URL" of the requests for elsewhere, sent through it
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def reset(self):
        with self.lock:
            self.requests, self.unknown, self.proxied = [], [], []
            self._reset_results()

    def _reset_results(self):
        pass

    def next_command(self, done):
        """The command of the tool call that follows done calls, or None after the last."""
        return self.commands[done] if done < len(self.commands) else None

    def not_found_body(self, path):
        raise NotImplementedError

    def _handler(self):
        raise NotImplementedError


class StandInHandler(BaseHTTPRequestHandler):
    """One request; api is the StandIn it serves (set by the subclass)."""

    protocol_version = "HTTP/1.1"
    api = None
    ids = None  # a function of a prefix giving a fresh id

    def log_message(self, fmt, *args):
        pass

    def _record(self, body):
        api = self.api
        headers = {k.lower(): v for k, v in self.headers.items()}
        with api.lock:
            api.requests.append({"method": self.command, "path": self.path.split("?")[0],
                                 "query": self.path.partition("?")[2],
                                 "headers": headers, "body": body})
        if api.log:
            api.log.write("%s %s %s\n" % (self.command, self.path,
                                          json.dumps(body)[:200] if body else ""))
            api.log.flush()

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"_raw": raw.decode("latin-1")}

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header(self.api.REQUEST_ID, type(self).ids("req"))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data):
        """One chunk of a chunked response; b"" is the last."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _not_found(self):
        with self.api.lock:
            self.api.unknown.append("%s %s%s" % (
                self.command, self.path, " (websocket)" if self.headers.get("Upgrade") else ""))
        self._json(404, self.api.not_found_body(self.path))

    def _proxied(self):
        """A request for elsewhere, sent to this server as the client's proxy (HTTPS_PROXY,
        HTTP_PROXY): recorded, refused."""
        if self.command != "CONNECT" and not self.path.startswith(("http://", "https://")):
            return False
        api = self.api
        with api.lock:
            api.proxied.append("%s %s" % (self.command, self.path))
        if api.log:
            api.log.write("PROXY %s %s\n" % (self.command, self.path))
            api.log.flush()
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        return True

    def do_CONNECT(self):
        self._proxied()
