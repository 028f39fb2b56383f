"""A loopback stand-in of the OpenAI Responses API, as Codex uses it, for agent CLIs run end to
end.

POST /v1/responses answers as the API does: a JSON response, or with "stream": true the
server-sent events response.created, response.in_progress, per output item
response.output_item.added, its deltas (response.function_call_arguments.* or
response.content_part.* and response.output_text.*) and response.output_item.done, then
response.completed. The answer is scripted:

- a request that offers the function tool named tool_name (at the top level or, as Codex 0.169
  sends them, in an "additional_tools" input item, in a namespace) and carries no
  function_call_output yet: a function_call of that tool with {"cmd": command} (exec_command),
  or {"command": command} (shell_command), command being the first of a list;
- a request whose input ends with function_call_outputs: the next command's function_call,
  or, after the last, a message that echoes what the tool returned (so that what reached the model can also be seen in the CLI's output);
- a prewarm ("generate": false, sent first on the websocket): an empty response;
- any other request: a short message.

GET /v1/responses with a websocket upgrade is the transport Codex tries first: each text
message {"type": "response.create", ...} is a request, answered with the same events, one
message each (websocket=False refuses the upgrade: then Codex retries for some seconds and
falls back to POST). Any other path: 404 with the API's error body, logged. Set as the client's
HTTPS_PROXY and HTTP_PROXY (with NO_PROXY=127.0.0.1), it also sees every request meant for
elsewhere: recorded and refused (403); standin.py does that part, for both stand-ins. Every
request to the API is recorded (method, path, headers, JSON body); so is the output of every
function call the client sent back.

Python 3 standard library only. Run on its own to watch a client:
    python3 responses_api.py [PORT] [COMMAND]
"""
import base64
import hashlib
import itertools
import json
import struct
import sys
import time

from http.server import ThreadingHTTPServer

from standin import StandIn, StandInHandler

_ids = itertools.count(1)


def _id(prefix):
    return "%s_e2e%020d" % (prefix, next(_ids))


def output_text(item):
    """The text of a function_call_output item: its output as a string, or its text parts
    joined."""
    out = item.get("output")
    if isinstance(out, str):
        return out
    if isinstance(out, list):
        return "".join(p.get("text", "") for p in out if isinstance(p, dict))
    return ""


def _tool_names(tools):
    """The names of the function tools in a list of tool definitions, namespaces included."""
    names = []
    for t in tools or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace":
            names += _tool_names(t.get("tools"))
        elif t.get("name"):
            names.append(t["name"])
    return names


def offered_tools(body):
    """The tools a request offers: its "tools", and those of its "additional_tools" items."""
    names = _tool_names(body.get("tools"))
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            names += _tool_names(item.get("tools"))
    return names


def _input(body):
    items = body.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _last_outputs(body):
    """The function_call_output items after the last message of the input."""
    outs = []
    for item in reversed(_input(body)):
        if item.get("type") == "function_call_output":
            outs.insert(0, item)
        elif item.get("type") != "function_call":
            break
    return outs


class ResponsesAPI(StandIn):
    """The server, on 127.0.0.1 and a free port, in a thread of its own: start(), stop()."""

    REQUEST_ID = "x-request-id"

    def __init__(self, command, tool_name="exec_command", websocket=True, log=None):
        self.websocket = websocket  # False: the upgrade is refused (404), the client falls back
        self.tool_outputs = []  # the text of each function_call_output the client sent
        self.counts = {}  # response id: (function calls, outputs) up to and in it
        super().__init__(command, tool_name, log)

    def _reset_results(self):
        self.tool_outputs = []
        self.counts = {}

    def not_found_body(self, path):
        return {"error": {"message": "Not found: " + path, "type": "invalid_request_error",
                          "param": None, "code": "not_found"}}

    def responses(self):
        """The recorded requests to /v1/responses: POSTs and websocket messages ("WS")."""
        with self.lock:
            return [r for r in self.requests
                    if r["path"] == "/v1/responses" and r["method"] in ("POST", "WS")]

    # --- what to answer ---------------------------------------------------------------------

    def answer(self, body, rid=None):
        """The output items for one request to /v1/responses, whose response is rid. A request
        that continues an earlier response (previous_response_id, as Codex does on the
        websocket) carries only what is new: the calls and outputs before it are counted
        from that response's."""
        if body.get("generate") is False:  # a websocket prewarm: nothing to say
            return []
        outs = _last_outputs(body)
        with self.lock:
            calls, done = self.counts.get(body.get("previous_response_id"), (0, 0))
        calls += sum(1 for i in _input(body) if i.get("type") == "function_call")
        done += sum(1 for i in _input(body) if i.get("type") == "function_call_output")
        command = self.next_command(done) if self.tool_name in offered_tools(body) else None
        items = None
        if outs:
            texts = [output_text(i) for i in outs]
            with self.lock:
                self.tool_outputs += texts
            if command is None:
                items = [_message("The command printed:\n" + "\n".join(texts))]
        if items is None and command is not None and (outs or not calls):
            args = {"cmd": command} if self.tool_name == "exec_command" else {
                "command": command}
            items = [{"type": "function_call", "id": _id("fc"), "call_id": _id("call"),
                      "name": self.tool_name, "arguments": json.dumps(args),
                      "status": "completed"}]
            calls += 1
        with self.lock:
            self.counts[rid] = (calls, done)
        return items if items is not None else [_message("Done.")]

    # --- HTTP -------------------------------------------------------------------------------

    def _handler(self):
        api = self

        class Handler(StandInHandler):
            ids = staticmethod(_id)

            def do_GET(self):
                if self._proxied():
                    return
                self._record(None)
                if (self.path.split("?")[0] == "/v1/responses"
                        and self.headers.get("Upgrade", "").lower() == "websocket"
                        and api.websocket):
                    self._websocket()
                else:
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
                if self.path.split("?")[0] == "/v1/responses" and isinstance(body, dict):
                    self._responses(body)
                else:
                    self._not_found()

            def _responses(self, body):
                if not body.get("stream"):
                    rid = _id("resp")
                    items = api.answer(body, rid)
                    self._json(200, _response(body, rid, items, "completed"))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("x-request-id", _id("req"))
                self.end_headers()
                self._stream(body)
                self._chunk(b"")

            def _stream(self, body):
                """The events of one response, to the SSE stream or the websocket."""
                rid = _id("resp")
                items = api.answer(body, rid)
                self.seq = itertools.count()
                self._event({"type": "response.created",
                             "response": _response(body, rid, [], "in_progress")})
                self._event({"type": "response.in_progress",
                             "response": _response(body, rid, [], "in_progress")})
                for n, item in enumerate(items):
                    self._item(n, item)
                self._event({"type": "response.completed",
                             "response": _response(body, rid, items, "completed")})

            # The websocket transport (RFC 6455): one text message per request
            # ({"type": "response.create", ...the body's fields}), one per event.
            def _websocket(self):
                key = self.headers.get("Sec-WebSocket-Key", "")
                accept = base64.b64encode(hashlib.sha1(
                    (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
                self.send_response(101, "Switching Protocols")
                self.send_header("Upgrade", "websocket")
                self.send_header("Connection", "Upgrade")
                self.send_header("Sec-WebSocket-Accept", accept.decode())
                self.send_header("x-request-id", _id("req"))
                self.end_headers()
                self.wfile.flush()
                self.ws = True
                self.close_connection = True
                while True:
                    msg = self._ws_read()
                    if msg is None:
                        return
                    try:
                        body = json.loads(msg)
                    except ValueError:
                        body = {"_raw": msg}
                    self.command = "WS"
                    self._record(body)
                    if isinstance(body, dict) and body.get("type") == "response.create":
                        self._stream(body)

            def _ws_read(self):
                """The next text or binary message, None once the client closes."""
                data = b""
                while True:
                    head = self.rfile.read(2)
                    if len(head) < 2:
                        return None
                    fin, op, n = head[0] & 0x80, head[0] & 0x0F, head[1] & 0x7F
                    if n == 126:
                        n = struct.unpack(">H", self.rfile.read(2))[0]
                    elif n == 127:
                        n = struct.unpack(">Q", self.rfile.read(8))[0]
                    mask = self.rfile.read(4) if head[1] & 0x80 else b""
                    payload = self.rfile.read(n)
                    if mask:
                        m = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
                        payload = (int.from_bytes(payload, "big") ^ m).to_bytes(n, "big")
                    if op == 8:  # close: answered
                        self._ws_send(8, payload[:2])
                        return None
                    if op == 9:  # ping
                        self._ws_send(10, payload)
                    elif op in (0, 1, 2):
                        data += payload
                        if fin:
                            return data.decode("utf-8", "replace")

            def _ws_send(self, op, payload):
                n = len(payload)
                if n < 126:
                    head = struct.pack(">BB", 0x80 | op, n)
                elif n < 65536:
                    head = struct.pack(">BBH", 0x80 | op, 126, n)
                else:
                    head = struct.pack(">BBQ", 0x80 | op, 127, n)
                self.wfile.write(head + payload)
                self.wfile.flush()

            def _item(self, n, item):
                at = {"item_id": item["id"], "output_index": n}
                if item["type"] == "function_call":
                    self._event({"type": "response.output_item.added", "output_index": n,
                                 "item": dict(item, arguments="", status="in_progress")})
                    js = item["arguments"]
                    for j in range(0, len(js), 20):
                        self._event(dict(at, type="response.function_call_arguments.delta",
                                         delta=js[j:j + 20]))
                    self._event(dict(at, type="response.function_call_arguments.done",
                                     arguments=js))
                else:
                    text = item["content"][0]["text"]
                    part = {"type": "output_text", "text": "", "annotations": []}
                    self._event({"type": "response.output_item.added", "output_index": n,
                                 "item": dict(item, content=[], status="in_progress")})
                    self._event(dict(at, type="response.content_part.added", content_index=0,
                                     part=part))
                    for j in range(0, len(text), 40):
                        self._event(dict(at, type="response.output_text.delta", content_index=0,
                                         delta=text[j:j + 40]))
                    self._event(dict(at, type="response.output_text.done", content_index=0,
                                     text=text))
                    self._event(dict(at, type="response.content_part.done", content_index=0,
                                     part=dict(part, text=text)))
                self._event({"type": "response.output_item.done", "output_index": n,
                             "item": item})

            def _event(self, obj):
                obj = dict(obj, sequence_number=next(self.seq))
                if getattr(self, "ws", False):
                    self._ws_send(1, json.dumps(obj).encode())
                else:
                    self._chunk(("event: %s\ndata: %s\n\n" % (obj["type"], json.dumps(obj)))
                                .encode())

        Handler.api = api
        return Handler


def _response(body, rid, items, status):
    usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 8, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 20} if status == "completed" else None
    return {"id": rid, "object": "response", "created_at": int(time.time()), "status": status,
            "model": body.get("model") or "gpt-e2e", "output": items, "usage": usage}


def _message(text):
    return {"type": "message", "id": _id("msg"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    command = sys.argv[2] if len(sys.argv) > 2 else "echo MARKER-$((6*7))"
    api = ResponsesAPI(command, log=sys.stdout)
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
