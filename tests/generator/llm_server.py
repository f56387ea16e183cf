#!/usr/bin/env python3
# tests/generator/llm_server.py: a scripted OpenAI-compatible Chat Completions server on loopback for
# the generator's CPU tests (Python standard library only).
"""Scripted Chat Completions server.

    llm_server.py --script SCRIPT.json --log REQUESTS.jsonl [--port-file PORT] [--host 127.0.0.1]
                  [--max-lifetime-s 600]

Binds HOST on a free port, writes the port to --port-file (atomically: write then rename) and prints it
as the first line of stdout. Every POST whose path ends in /chat/completions takes the next step of the
script, in order; after the last step it answers 500 {"error": {"message": "script exhausted"}}. Any
other path answers 404. Each received request is appended to the --log file as one JSON line, before
the answer goes out:

    {"n": 1, "step": 0, "method": "POST", "path": "/v1/chat/completions",
     "headers": {"authorization": "Bearer ...", ...},   # names in lower case, Authorization included
     "body": {...}}                                       # parsed JSON, or the raw text if it is not JSON

("step" is null once the script is exhausted.) The server exits on SIGTERM, when its parent process
dies, or after --max-lifetime-s.

SCRIPT: a JSON list of steps, or an object {"steps": [...]}. Relative file names in steps are
resolved against the script file's folder. A step is an object; all fields are optional:

    status        HTTP status (default 200)
    headers       {"name": "value"} sent with the answer (e.g. {"retry-after": "2"})
    body          an object/list (sent as JSON) or a string (sent verbatim)
    body_file     a file sent verbatim as the body
    content       shorthand for a whole chat.completion answer with this message content
                  (null allowed: the message's content is then null)
    content_file  the same, with the content read from a file (answers stored as files)
    finish_reason with content/content_file (default "stop")
    reasoning_content  with content/content_file: added to the message (DeepSeek thinking mode)
    usage         with content/content_file: the usage object (default: prompt_tokens 10,
                  completion_tokens = the content's length in words, total the sum)
    model         with content/content_file: the model field (default: the request's model)
    leading_blank_lines  prepend this many "\n" to the body (DeepSeek sends blank lines while queued)
    delay_s       wait this long before answering
    stall_s       read the request, send nothing for this long, then drop the connection
    close         true: read the request and drop the connection without a byte of answer

Example: [{"status": 429, "headers": {"retry-after": "2"}, "body": {"error": {"message": "slow down"}}},
          {"content": "{\"ok\": true}", "usage": {"prompt_tokens": 5, "completion_tokens": 3,
           "total_tokens": 8}}]
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def load_script(path):
    with open(path, "r", encoding="utf-8") as f:
        script = json.load(f)
    if isinstance(script, dict):
        script = script.get("steps", [])
    if not isinstance(script, list) or not all(isinstance(s, dict) for s in script):
        raise SystemExit(f"{path}: a script is a list of step objects (or {{\"steps\": [...]}})")
    return script


def read_text(base, name):
    with open(os.path.join(base, name), "r", encoding="utf-8") as f:
        return f.read()


def completion(step, request_body, content):
    message = {"role": "assistant", "content": content}
    if "reasoning_content" in step:
        message["reasoning_content"] = step["reasoning_content"]
    words = len(content.split()) if isinstance(content, str) else 0
    usage = step.get("usage", {"prompt_tokens": 10, "completion_tokens": words, "total_tokens": 10 + words})
    model = step.get("model", request_body.get("model", "scripted") if isinstance(request_body, dict) else "scripted")
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": step.get("finish_reason", "stop")}],
        "usage": usage,
    }


class State:
    def __init__(self, script, base, log_path):
        self.script = script
        self.base = base
        self.log_path = log_path
        self.lock = threading.Lock()
        self.next_step = 0
        self.received = 0

    def take(self, method, path, headers, body):
        """Logs the request and returns (its step index or None, the step or None)."""
        with self.lock:
            self.received += 1
            index = None
            if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                if self.next_step < len(self.script):
                    index = self.next_step
                self.next_step += 1
            entry = {"n": self.received, "step": index, "method": method, "path": path,
                     "headers": headers, "body": body}
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")
                f.flush()
            return index, (self.script[index] if index is not None else None)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ktune-scripted-llm/1"

    def log_message(self, fmt, *args):  # quiet: the JSONL log is the record
        pass

    def drop(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def answer(self, status, body_bytes, headers=None):
        self.send_response(status)
        names = {k.lower() for k in (headers or {})}
        if "content-type" not in names:
            self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body_bytes)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body_bytes)
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        self.state.take("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None)
        self.answer(404, b'{"error": {"message": "not found"}}')

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0") or 0)
        raw = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw
        index, step = self.state.take("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.answer(404, b'{"error": {"message": "not found", "type": "invalid_request_error"}}')
            return
        if step is None:
            self.answer(500, b'{"error": {"message": "script exhausted", "type": "server_error"}}')
            return
        if step.get("delay_s"):
            time.sleep(float(step["delay_s"]))
        if step.get("stall_s") is not None:
            time.sleep(float(step["stall_s"]))
            self.drop()
            return
        if step.get("close"):
            self.drop()
            return
        base = self.state.base
        if "content" in step or "content_file" in step:
            content = read_text(base, step["content_file"]) if "content_file" in step else step["content"]
            payload = json.dumps(completion(step, body, content)).encode("utf-8")
        elif "body_file" in step:
            with open(os.path.join(base, step["body_file"]), "rb") as f:
                payload = f.read()
        elif isinstance(step.get("body"), str):
            payload = step["body"].encode("utf-8")
        elif "body" in step:
            payload = json.dumps(step["body"]).encode("utf-8")
        else:
            payload = b""
        payload = b"\n" * int(step.get("leading_blank_lines", 0)) + payload
        self.answer(int(step.get("status", 200)), payload, step.get("headers"))


def main():
    parser = argparse.ArgumentParser(description="scripted OpenAI-compatible chat server (tests)")
    parser.add_argument("--script", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port-file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--max-lifetime-s", type=float, default=600)
    args = parser.parse_args()

    script = load_script(args.script)
    state = State(script, os.path.dirname(os.path.abspath(args.script)), args.log)
    open(args.log, "a").close()
    Handler.state = state

    server = ThreadingHTTPServer((args.host, 0), Handler)
    server.daemon_threads = True  # a stalled step must not hold up the exit
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)
    print(port, flush=True)

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    parent = os.getppid()
    started = time.monotonic()

    def watchdog():
        # An orphaned server (the test crashed) must not outlive it.
        while True:
            time.sleep(0.2)
            if os.getppid() != parent or time.monotonic() - started > args.max_lifetime_s:
                os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
