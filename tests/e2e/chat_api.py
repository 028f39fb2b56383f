"""A loopback stand-in of the OpenAI Chat Completions API, for agent CLIs run end to end that
speak it (Qwen Code, and any client of an "OpenAI-compatible" endpoint).

POST /v1/chat/completions answers as the API does: a chat.completion object, or with
"stream": true server-sent chat.completion.chunk events and "data: [DONE]". The answer is
scripted:

- a request that offers the function tool named tool_name and carries no tool message yet: a
  tool call of that function with {"command": command} (the first of a list);
- a request whose messages end with tool messages: the next command's tool call or, after the
  last, a text that echoes what the tool returned (so that what reached the model can also be
  seen in the CLI's output);
- a request for JSON (response_format json_object or json_schema, a CLI's side questions):
  the least object ("{}", or the schema's required properties);
- any other request: a short text.

GET /v1/models lists one model. Any other path: 404 with the API's error body, logged. Set as
the client's HTTPS_PROXY and HTTP_PROXY (with NO_PROXY=127.0.0.1), it also sees every request
meant for elsewhere: recorded and refused (403); standin.py does that part. Every request to
the API is recorded (method, path, headers, JSON body); so is the content of every tool
message the client sent.

Python 3 standard library only."""
import itertools
import json
import time

from standin import StandIn, StandInHandler
from gemini_api import schema_value

_ids = itertools.count(1)


def _id(prefix):
    return "%s-e2e%020d" % (prefix, next(_ids))


def _text(content):
    """A message's content as text: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class ChatAPI(StandIn):
    """The server, on 127.0.0.1 and a free port, in a thread of its own: start(), stop()."""

    REQUEST_ID = "x-request-id"

    def __init__(self, command, tool_name="run_shell_command", log=None):
        self.tool_results = []  # the content of each tool message the client sent
        super().__init__(command, tool_name, log)

    def _reset_results(self):
        self.tool_results = []

    def not_found_body(self, path):
        return {"error": {"message": "Not found: " + path, "type": "invalid_request_error",
                          "param": None, "code": "not_found"}}

    def answer(self, body):
        """The assistant message (content, tool_calls) and finish reason for one request."""
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema") or {}
            return {"content": json.dumps(schema_value(schema))}, "stop"
        if fmt.get("type") == "json_object":
            return {"content": "{}"}, "stop"
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        last = []
        for m in reversed(msgs):
            if m.get("role") != "tool":
                break
            last.insert(0, m)
        done = sum(1 for m in msgs if m.get("role") == "tool")
        called = any(m.get("role") == "assistant" and m.get("tool_calls") for m in msgs)
        tools = [(t.get("function") or {}).get("name") for t in body.get("tools") or []
                 if isinstance(t, dict)]
        command = self.next_command(done) if self.tool_name in tools else None
        if last:
            texts = [_text(m.get("content")) for m in last]
            with self.lock:
                self.tool_results += texts
            if command is None:
                return {"content": "The command printed:\n" + "\n".join(texts)}, "stop"
        if command is not None and (last or not called):
            return {"content": None, "tool_calls": [{
                "id": _id("call"), "type": "function",
                "function": {"name": self.tool_name,
                             "arguments": json.dumps({"command": command})}}]}, "tool_calls"
        return {"content": "Done."}, "stop"

    def _handler(self):
        api = self

        class Handler(StandInHandler):
            ids = staticmethod(_id)

            def do_GET(self):
                if self._proxied():
                    return
                self._record(None)
                if self.path.split("?")[0] == "/v1/models":
                    self._json(200, {"object": "list", "data": [
                        {"id": "qwen-e2e", "object": "model", "owned_by": "e2e"}]})
                else:
                    self._not_found()

            def do_POST(self):
                body = self._read_body()
                if self._proxied():
                    return
                self._record(body)
                if self.path.split("?")[0] == "/v1/chat/completions" and isinstance(body, dict):
                    self._completions(body)
                else:
                    self._not_found()

            def _completions(self, body):
                msg, finish = api.answer(body)
                model = body.get("model") or "qwen-e2e"
                cid, created = _id("chatcmpl"), int(time.time())
                usage = {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}
                if not body.get("stream"):
                    self._json(200, {"id": cid, "object": "chat.completion", "created": created,
                                     "model": model, "usage": usage, "choices": [{
                                         "index": 0, "finish_reason": finish,
                                         "message": dict(msg, role="assistant")}]})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("x-request-id", _id("req"))
                self.end_headers()

                def chunk(delta, finish=None, with_usage=False):
                    obj = {"id": cid, "object": "chat.completion.chunk", "created": created,
                           "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    if with_usage:
                        obj["usage"] = usage
                    self._chunk(("data: %s\n\n" % json.dumps(obj)).encode())

                chunk({"role": "assistant", "content": ""})
                text = msg.get("content") or ""
                for j in range(0, len(text), 40):
                    chunk({"content": text[j:j + 40]})
                for i, call in enumerate(msg.get("tool_calls") or []):
                    chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                           "function": {"name": call["function"]["name"],
                                                        "arguments": ""}}]})
                    args = call["function"]["arguments"]
                    for j in range(0, len(args), 20):
                        chunk({"tool_calls": [{"index": i,
                                               "function": {"arguments": args[j:j + 20]}}]})
                chunk({}, finish, with_usage=True)
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")

        Handler.api = api
        return Handler
