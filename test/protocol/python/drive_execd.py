"""Drives an execd daemon with Python's standard library alone: a Unix socket, JSON, and the
Content-Length framing of JSON-RPC. Usage: drive_execd.py SOCKET STATE_DIR WORKDIR.
Prints one JSON object with what each step answered; the test checks it."""
import base64
import json
import os
import socket
import sys


class Execd:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.next_id = 0
        self.notifications = []

    def send(self, message):
        body = json.dumps(message).encode("utf-8")
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def receive(self):
        while b"\r\n\r\n" not in self.buf:
            self.read_more()
        header, self.buf = self.buf.split(b"\r\n\r\n", 1)
        length = None
        for line in header.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(self.buf) < length:
            self.read_more()
        body, self.buf = self.buf[:length], self.buf[length:]
        return json.loads(body.decode("utf-8"))

    def read_more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        self.buf += chunk

    def call(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if message.get("id") == self.next_id:
                return message
            self.notifications.append(message)  # job/exited and the like arrive in between


def main():
    socket_path, state_dir, workdir = sys.argv[1:4]
    with open(os.path.join(state_dir, "token")) as token_file:
        token = token_file.read().strip()
    out = {}
    unauthenticated = Execd(socket_path)
    out["before_initialize"] = unauthenticated.call("session/open", {"sessionId": "py", "cwd": workdir})["error"]

    execd = Execd(socket_path)
    init = execd.call("initialize", {"protocolVersion": 1, "token": token, "client": {"name": "python"}})
    out["initialize"] = init["result"]
    out["session_open"] = execd.call("session/open", {"sessionId": "py", "cwd": workdir})["result"]
    run = execd.call("shell/run", {"sessionId": "py", "command": "echo hello from $DSH_SESSION_ID; exit 3"})
    out["shell_run"] = run["result"]
    out["bad_params"] = execd.call("shell/run", {"sessionId": "py", "command": "true", "timeoutMs": 0})["error"]
    started = execd.call("shell/start", {"sessionId": "py", "command": "echo job-out; sleep 60"})["result"]
    out["shell_start"] = started
    job_id = started["jobId"]
    # A waiting read: answered as soon as the job prints, no polling loop.
    read = execd.call("job/read", {"sessionId": "py", "jobId": job_id, "waitMs": 20000})["result"]
    out["job_read"] = read
    out["job_kill"] = execd.call("job/kill", {"sessionId": "py", "jobId": job_id})["result"]
    out["job_wait"] = execd.call("job/wait", {"sessionId": "py", "jobId": job_id, "timeoutMs": 10000})["result"]
    out["render_result"] = execd.call("render/result", {"result": run["result"]})["result"]
    out["unknown_method"] = execd.call("no/such", {})["error"]
    # Files through the daemon: bytes travel base64 in `data`.
    payload = bytes(range(256)) * 4
    out["fs_write"] = execd.call(
        "fs/write", {"sessionId": "py", "path": "py-file.bin", "data": base64.b64encode(payload).decode()}
    )["result"]
    read_back = execd.call("fs/read", {"sessionId": "py", "path": "py-file.bin"})["result"]
    out["fs_read_matches"] = base64.b64decode(read_back["data"]) == payload
    out["fs_read"] = {key: read_back[key] for key in ("bytes", "eof", "size", "version")}
    print(json.dumps(out))


main()
