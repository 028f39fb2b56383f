"""A loopback stand-in of the Anthropic Messages API, for agent CLIs run end to end.

POST /v1/messages answers as the API does: a JSON message, or with "stream": true the
server-sent events message_start, content_block_start / content_block_delta /
content_block_stop per block, message_delta and message_stop. The answer is scripted:

- a request that offers the tool named tool_name and carries no tool_result yet: a tool_use
  block calling that tool with {"command": command} (command: the first of a list);
- a request whose last user message carries a tool_result: the next command's tool_use, or,
  after the last, a text that echoes what the tool returned (so that what reached the model
  can also be seen in the CLI's output);
- any other request (a title, a topic, a quota check): a short text.

POST /v1/messages/count_tokens answers a token count. Any other path: 404 with the API's error
body, logged. Set as the client's HTTPS_PROXY and HTTP_PROXY (with NO_PROXY=127.0.0.1), it
also sees every request meant for elsewhere: recorded and refused (403). Every request to
the API is recorded (method, path, headers, JSON body); so is the content of every
tool_result the client sent.

Python 3 standard library only. Run on its own to watch a client:
    python3 messages_api.py [PORT] [COMMAND]
"""
import itertools
import json
import sys

from http.server import ThreadingHTTPServer

from standin import StandIn, StandInHandler

_ids = itertools.count(1)


def _id(prefix):
    return "%s_01e2e%020d" % (prefix, next(_ids))


def tool_result_text(block):
    """The text of a tool_result block: its content as a string, or its text blocks joined."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _last_user_tool_results(body):
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return []


def _count_tool_results(body):
    return sum(1 for m in body.get("messages") or [] if isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")


class MessagesAPI(StandIn):
    """The server, on 127.0.0.1 and a free port, in a thread of its own: start(), stop()."""

    REQUEST_ID = "request-id"

    def __init__(self, command, tool_name="Bash", log=None):
        self.tool_results = []  # the text of each tool_result the client sent
        super().__init__(command, tool_name, log)

    def _reset_results(self):
        self.tool_results = []

    def not_found_body(self, path):
        return {"type": "error",
                "error": {"type": "not_found_error", "message": "Not found: " + path}}

    def messages(self):
        """The recorded requests to /v1/messages."""
        with self.lock:
            return [r for r in self.requests if r["path"] == "/v1/messages"]

    # --- what to answer ---------------------------------------------------------------------

    def answer(self, body):
        """The content blocks and stop reason for one request to /v1/messages."""
        results = _last_user_tool_results(body)
        done = _count_tool_results(body)
        tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        command = self.next_command(done) if self.tool_name in tools else None
        if results:
            texts = [tool_result_text(b) for b in results]
            with self.lock:
                self.tool_results += texts
            if command is None:
                return [{"type": "text", "text": "The command printed:\n" + "\n".join(texts)}], \
                    "end_turn"
        if command is not None and (results or not done):
            return [{"type": "tool_use", "id": _id("toolu"), "name": self.tool_name,
                     "input": {"command": command,
                               "description": "Run the command the test chose"}}], \
                "tool_use"
        return [{"type": "text", "text": "Done."}], "end_turn"

    # --- HTTP -------------------------------------------------------------------------------

    def _handler(self):
        api = self

        class Handler(StandInHandler):
            ids = staticmethod(_id)

            def do_GET(self):
                if self._proxied():
                    return
                self._record(None)
                self._not_found()

            def do_HEAD(self):
                self._record(None)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                body = self._read_body()
                if self._proxied():
                    return
                self._record(body)
                path = self.path.split("?")[0]
                if path == "/v1/messages/count_tokens":
                    self._json(200, {"input_tokens": 42})
                elif path == "/v1/messages" and isinstance(body, dict):
                    self._messages(body)
                else:
                    self._not_found()

            def _messages(self, body):
                blocks, stop = api.answer(body)
                model = body.get("model") or "claude-e2e"
                usage = {"input_tokens": 12, "output_tokens": 0, "cache_creation_input_tokens": 0,
                         "cache_read_input_tokens": 0}
                if not body.get("stream"):
                    usage["output_tokens"] = 8
                    self._json(200, {"id": _id("msg"), "type": "message", "role": "assistant",
                                     "model": model, "content": blocks, "stop_reason": stop,
                                     "stop_sequence": None, "usage": usage})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("request-id", _id("req"))
                self.end_headers()
                self._event("message_start", {"type": "message_start", "message": {
                    "id": _id("msg"), "type": "message", "role": "assistant", "model": model,
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": dict(usage, output_tokens=1)}})
                self._event("ping", {"type": "ping"})
                for i, b in enumerate(blocks):
                    if b["type"] == "text":
                        start = {"type": "text", "text": ""}
                        deltas = [{"type": "text_delta", "text": b["text"][j:j + 40]}
                                  for j in range(0, len(b["text"]), 40)]
                    else:
                        start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                        js = json.dumps(b["input"])
                        deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                            {"type": "input_json_delta", "partial_json": js[j:j + 20]}
                            for j in range(0, len(js), 20)]
                    self._event("content_block_start", {"type": "content_block_start",
                                                        "index": i, "content_block": start})
                    for d in deltas:
                        self._event("content_block_delta", {"type": "content_block_delta",
                                                            "index": i, "delta": d})
                    self._event("content_block_stop", {"type": "content_block_stop", "index": i})
                self._event("message_delta", {"type": "message_delta",
                                              "delta": {"stop_reason": stop,
                                                        "stop_sequence": None},
                                              "usage": {"output_tokens": 8}})
                self._event("message_stop", {"type": "message_stop"})
                self._chunk(b"")

            def _event(self, name, obj):
                self._chunk(("event: %s\ndata: %s\n\n" % (name, json.dumps(obj))).encode())

        Handler.api = api
        return Handler


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    command = sys.argv[2] if len(sys.argv) > 2 else "echo MARKER-$((6*7))"
    api = MessagesAPI(command, log=sys.stdout)
    if port:
        api.server.server_close()
        api.server = ThreadingHTTPServer(("127.0.0.1", port), api._handler())
        api.port, api.url = port, "http://127.0.0.1:%d" % port
    print("listening on " + api.url, flush=True)
    try:
        api.server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
