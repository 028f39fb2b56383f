"""A loopback stand-in of the Gemini API, as Gemini CLI uses it, for agent CLIs run end to end.

POST /v1beta/models/MODEL:streamGenerateContent?alt=sse answers as the API does: server-sent
events, each a GenerateContentResponse (a candidate with some of the parts; the last one also
with the finishReason and the usage); POST /v1beta/models/MODEL:generateContent, the whole
response as one JSON object. Gemini CLI 0.61.0 calls both, with its key as x-goog-api-key.
The answer is scripted:

- a request for JSON with a schema (generationConfig.responseJsonSchema: the CLI's side
  questions, such as its router's complexity score): the least object the schema allows (its
  required properties: strings "e2e", numbers 1, the first of an enum);
- a request that declares the function named tool_name and carries no functionResponse yet: a
  functionCall of that function with {"command": command} (the first of a list);
- a request whose last content carries functionResponses: the next command's functionCall,
  or, after the last, a text that echoes what the function returned (so that what reached the model can also be seen in the CLI's output);
- any other request: a short text.

Any other path (countTokens too, which 0.61.0 calls only for images): 404 with the API's error
body, logged. Set as the client's HTTPS_PROXY and HTTP_PROXY (with NO_PROXY=127.0.0.1), it
also sees every request meant for elsewhere: recorded and refused (403); standin.py does that
part, for every stand-in. Every request to the API is recorded (method, path, query, headers,
JSON body); so is the output of every functionResponse the client sent.

Python 3 standard library only. Run on its own to watch a client:
    python3 gemini_api.py [PORT] [COMMAND]
"""
import itertools
import json
import re
import sys

from http.server import ThreadingHTTPServer

from standin import StandIn, StandInHandler

_ids = itertools.count(1)

# /v1beta/models/MODEL:METHOD (the SDK's default API version; v1 and v1alpha alike)
PATH = re.compile(r"^/(v1|v1beta|v1alpha)/models/([^/:]+):([A-Za-z]+)$")


def _id(prefix):
    return "%s-e2e%020d" % (prefix, next(_ids))


def response_text(part):
    """What a functionResponse part carries: its response's output (or error), else the whole
    response as JSON."""
    resp = part["functionResponse"].get("response")
    if isinstance(resp, dict):
        for k in ("output", "error"):
            if isinstance(resp.get(k), str):
                return resp[k]
    return json.dumps(resp)


def schema_value(schema):
    """The least value of a JSON schema (types in either case, as the Gemini API takes them)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: schema_value(props.get(k) or {}) for k in schema.get("required") or []}
    return {"string": "e2e", "integer": 1, "number": 1, "boolean": False,
            "array": []}.get(kind)


def _contents(body):
    items = body.get("contents")
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def _parts(content):
    parts = content.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def declared_functions(body):
    return [d.get("name") for t in body.get("tools") or [] if isinstance(t, dict)
            for d in t.get("functionDeclarations") or [] if isinstance(d, dict)]


def _last_function_responses(body):
    contents = _contents(body)
    if not contents:
        return []
    return [p for p in _parts(contents[-1]) if isinstance(p.get("functionResponse"), dict)]


def _any_function_part(body):
    return any("functionCall" in p or "functionResponse" in p
               for c in _contents(body) for p in _parts(c))


class GeminiAPI(StandIn):
    """The server, on 127.0.0.1 and a free port, in a thread of its own: start(), stop()."""

    REQUEST_ID = "x-request-id"

    def __init__(self, command, tool_name="run_shell_command", log=None):
        self.function_outputs = []  # the text of each functionResponse the client sent
        super().__init__(command, tool_name, log)

    def _reset_results(self):
        self.function_outputs = []

    def not_found_body(self, path):
        return {"error": {"code": 404, "message": "Not found: " + path, "status": "NOT_FOUND"}}

    # --- what to answer ---------------------------------------------------------------------

    def answer(self, body):
        """The parts of the model's content for one generate request."""
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if isinstance(schema, dict):
            return [{"text": json.dumps(schema_value(schema))}]
        responses = _last_function_responses(body)
        done = sum(1 for c in _contents(body) for p in _parts(c)
                   if isinstance(p.get("functionResponse"), dict))
        command = self.next_command(done) if self.tool_name in declared_functions(body) else None
        if responses:
            texts = [response_text(p) for p in responses]
            with self.lock:
                self.function_outputs += texts
            if command is None:
                return [{"text": "The command printed:\n" + "\n".join(texts)}]
        if command is not None and (responses or not _any_function_part(body)):
            return [{"functionCall": {"id": _id("call"), "name": self.tool_name,
                                      "args": {"command": command}}}]
        return [{"text": "Done."}]

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
                m = PATH.match(self.path.split("?")[0])
                method = m.group(3) if m and isinstance(body, dict) else None
                if method == "generateContent":
                    self._json(200, _response(m.group(2), api.answer(body), "STOP",
                                              _id("resp")))
                elif method == "streamGenerateContent":
                    self._stream(m.group(2), body)
                else:
                    self._not_found()

            def _stream(self, model, body):
                """The parts, the text in pieces, one event each; the last event also has the
                finishReason and the usage."""
                parts = api.answer(body)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("x-request-id", _id("req"))
                self.end_headers()
                rid = _id("resp")
                pieces = []
                for p in parts:
                    if "text" in p:
                        pieces += [{"text": p["text"][j:j + 40]}
                                   for j in range(0, len(p["text"]), 40)] or [p]
                    else:
                        pieces.append(p)
                for n, piece in enumerate(pieces):
                    last = n == len(pieces) - 1
                    self._event(_response(model, [piece], "STOP" if last else None, rid))
                self._chunk(b"")

            def _event(self, obj):
                self._chunk(("data: %s\r\n\r\n" % json.dumps(obj)).encode())

        Handler.api = api
        return Handler


def _response(model, parts, finish, rid):
    """A GenerateContentResponse (or one event of its stream), rid: one candidate with parts,
    finished with finish (None: not yet, and no usage)."""
    cand = {"content": {"role": "model", "parts": parts}, "index": 0}
    resp = {"candidates": [cand], "modelVersion": model, "responseId": rid}
    if finish:
        cand["finishReason"] = finish
        resp["usageMetadata"] = {"promptTokenCount": 12, "candidatesTokenCount": 8,
                                 "totalTokenCount": 20}
    return resp


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    command = sys.argv[2] if len(sys.argv) > 2 else "printf MARKER-; expr 6 \\* 7"
    api = GeminiAPI(command, log=sys.stdout)
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
