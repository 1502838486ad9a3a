"""Tests of redis_connector.py against a real redis-server, started here on a
free port: the connector's protocol, then the runtime's state layer through
it (runtime/asya_runtime_http.py, a handler writing a file in one call and
reading it back in the next).

Run from the repository root:
    python3 -m unittest discover -s e2e/connector -p 'test_*.py' -v

Without redis-server (Debian: apt-get install redis-server) the tests are
skipped, saying so; with ASYA_REQUIRE_INTEGRATION=1 (CI) they fail.
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME_DIR = os.path.join(HERE, "..", "..", "runtime")
sys.path.insert(0, RUNTIME_DIR)

import redis_connector  # noqa: E402
import test_asya_runtime_http as runtime_tests  # noqa: E402  (its Runtime and envelope)
import test_support  # noqa: E402
from test_support import WAIT, wait_for  # noqa: E402

CONNECTOR = os.path.join(HERE, "redis_connector.py")


def redis_server():
    """The redis-server binary; skips the test without one, or fails under
    ASYA_REQUIRE_INTEGRATION=1."""
    path = shutil.which("redis-server")
    if path:
        return path
    why = "redis-server not found (Debian: apt-get install redis-server)"
    if os.environ.get("ASYA_REQUIRE_INTEGRATION") == "1":
        raise AssertionError(why + " and ASYA_REQUIRE_INTEGRATION=1")
    raise unittest.SkipTest(why + "; set ASYA_REQUIRE_INTEGRATION=1 to make this a failure")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """redis-server on a free loopback port, in memory only."""

    def __init__(self, tmp, port=None):
        binary = redis_server()
        self.port = port or free_port()
        self.log = open(os.path.join(tmp, "redis.log"), "wb")
        self.proc = subprocess.Popen([binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", tmp], stdout=self.log, stderr=self.log)
        self.url = "redis://127.0.0.1:%d/0" % self.port
        self.client = redis_connector.Redis(self.url)
        if not wait_for(self._up):
            self.close()
            raise AssertionError("redis-server did not answer on port %d" % self.port)

    def _up(self):
        try:
            return self.client.call("PING") == "PONG"
        except OSError:
            return self.proc.poll() is not None  # it exited: fail at once

    def close(self):
        self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Connector:
    """redis_connector.py in a subprocess, serving socket_path."""

    def __init__(self, tmp, socket_path, redis_url, prefix="test"):
        self.socket_path = socket_path
        self.stderr_path = os.path.join(tmp, "connector-%d.log" % time.monotonic_ns())
        self._stderr = open(self.stderr_path, "wb")
        env = dict(os.environ, CONNECTOR_SOCKET=socket_path, REDIS_URL=redis_url, STATE_PREFIX=prefix)
        self.proc = subprocess.Popen([sys.executable, CONNECTOR], env=env, stdout=subprocess.DEVNULL,
                                     stderr=self._stderr)
        if not wait_for(lambda: self._healthy() or self.proc.poll() is not None) or self.proc.poll() is not None:
            raise AssertionError("connector not ready; stderr:\n" + self.stderr())

    def _healthy(self):
        try:
            return self.request("GET", "/healthz")[0] == 200
        except OSError:
            return False

    def request(self, method, path, body=None, headers=None):
        """(status, headers, body) of one request on its own connection."""
        conn = runtime_tests.UnixHTTPConnection(self.socket_path)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.headers, resp.read()
        finally:
            conn.close()

    def stderr(self):
        self._stderr.flush()
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(timeout=WAIT)
        self._stderr.close()
        return code


class Store:
    """A TestCase's redis-server and connector, stopped after the test."""

    def start_store(self, tmp):
        self.redis = self.start_redis(tmp)
        self.state_dir = os.path.join(tmp, "state")
        os.mkdir(self.state_dir)
        self.connector = self.start_connector()

    def start_redis(self, tmp, port=None):
        r = RedisServer(tmp, port)
        self.addCleanup(r.close)
        return r

    def start_connector(self):
        c = Connector(os.path.dirname(self.state_dir), os.path.join(self.state_dir, "meta.sock"), self.redis.url)
        self.addCleanup(c.stop)
        return c

    def stored(self, key):
        return self.redis.client.call("GET", "test:" + key)


class ProtocolTest(Store, unittest.TestCase):
    """The connector's HTTP, as upstream's server serves it."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="asya-redis-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.start_store(self.tmp)

    def put(self, key, body, **headers):
        return self.connector.request("PUT", "/keys/" + key, body, dict({"Content-Length": str(len(body))}, **headers))

    def chunked_put(self, key, chunks, end=True):
        """A chunked PUT written by hand; end=False cuts it off before its last chunk."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(WAIT)
            s.connect(self.connector.socket_path)
            s.sendall(b"PUT /keys/%s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" % key.encode())
            for c in chunks:
                s.sendall(b"%x\r\n%s\r\n" % (len(c), c))
            if not end:
                return None
            s.sendall(b"0\r\n\r\n")
            return int(s.makefile("rb").readline().split()[1])

    def test_write_read_stat_delete(self):
        self.assertEqual(self.put("a/b.txt", b"hello")[0], 204)
        self.assertEqual(self.stored("a/b.txt"), b"hello")
        status, headers, body = self.connector.request("GET", "/keys/a/b.txt")
        self.assertEqual((status, headers["Content-Length"], body), (200, "5", b"hello"))
        status, headers, _ = self.connector.request("HEAD", "/keys/a/b.txt")
        self.assertEqual((status, headers["Content-Length"], headers["X-Is-File"]), (204, "5", "true"))
        self.assertEqual(self.connector.request("DELETE", "/keys/a/b.txt")[0], 204)
        self.assertIsNone(self.stored("a/b.txt"))
        for method in ("GET", "DELETE", "HEAD"):
            with self.subTest(method=method):
                self.assertEqual(self.connector.request(method, "/keys/a/b.txt")[0], 404)

    def test_missing_key_is_404_with_a_message(self):
        status, _, body = self.connector.request("GET", "/keys/nope")
        self.assertEqual(status, 404)
        self.assertEqual(json.loads(body), {"error": "key_not_found", "message": "no key nope"})

    def test_empty_and_binary_values(self):
        blob = bytes(range(256)) * 4096  # 1 MiB: two pieces on the way in
        self.put("empty", b"")
        self.put("blob", blob + b"!")
        self.assertEqual(self.connector.request("GET", "/keys/empty")[2], b"")
        self.assertEqual(self.connector.request("HEAD", "/keys/empty")[1]["Content-Length"], "0")
        self.assertEqual(self.connector.request("GET", "/keys/blob")[2], blob + b"!")

    def test_if_none_match_creates_only(self):
        self.assertEqual(self.put("once", b"1", **{"If-None-Match": "*"})[0], 204)
        status, _, body = self.put("once", b"2", **{"If-None-Match": "*"})
        self.assertEqual(status, 412, body)
        self.assertEqual(self.stored("once"), b"1")
        self.assertEqual(self.put("once", b"3")[0], 204)
        self.assertEqual(self.stored("once"), b"3")

    def test_chunked_put(self):
        self.assertEqual(self.chunked_put("c", [b"ab", b"c" * 70000, b"d"]), 204)
        self.assertEqual(self.stored("c"), b"ab" + b"c" * 70000 + b"d")

    def test_a_body_cut_off_writes_nothing(self):
        self.put("c", b"before")
        self.chunked_put("c", [b"partial"], end=False)
        with socket.socket(socket.AF_UNIX) as s:  # a Content-Length body cut short
            s.connect(self.connector.socket_path)
            s.sendall(b"PUT /keys/c HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nshort")
        self.assertTrue(wait_for(lambda: self.connector.stderr().count("nothing written") == 2), self.connector.stderr())
        self.assertEqual(self.stored("c"), b"before")
        self.assertEqual(self.redis.client.call("KEYS", "*upload*"), [])  # no upload left behind

    def test_listing(self):
        for key in ("d/a", "d/b", "d/e/f", "d/e/g", "dx", "other"):
            self.put(key, b"v")
        self.redis.client.call("SET", "elsewhere:d/z", "not ours")  # another prefix
        listing = json.loads(self.connector.request("GET", "/keys/?prefix=d/&delimiter=/")[2])
        self.assertEqual(listing, {"keys": ["d/a", "d/b"], "prefixes": ["d/e/"]})
        listing = json.loads(self.connector.request("GET", "/keys/?prefix=&delimiter=/")[2])
        self.assertEqual(listing, {"keys": ["dx", "other"], "prefixes": ["d/"]})
        listing = json.loads(self.connector.request("GET", "/keys/?prefix=d&delimiter=")[2])
        self.assertEqual(listing["keys"], ["d/a", "d/b", "d/e/f", "d/e/g", "dx"])
        self.assertEqual(json.loads(self.connector.request("GET", "/keys?prefix=nothing/")[2]),
                         {"keys": [], "prefixes": []})

    def test_a_prefix_is_a_directory(self):
        self.put("d/e/f", b"v")
        for key in ("d", "d/e"):
            with self.subTest(key=key):
                status, headers, _ = self.connector.request("HEAD", "/keys/" + key)
                self.assertEqual((status, headers["X-Is-File"]), (204, "false"))
        self.assertEqual(self.connector.request("HEAD", "/keys/d/e/f")[1]["X-Is-File"], "true")
        self.assertEqual(self.connector.request("HEAD", "/keys/d/x")[0], 404)

    def test_glob_characters_in_a_prefix_are_literal(self):
        for key in ("a*/1", "ab/2", "a?/3", "[a]/4"):
            self.put(urllib.parse.quote(key), b"v")
        for prefix, want in (("a*/", ["a*/1"]), ("a?/", ["a?/3"]), ("[a]/", ["[a]/4"])):
            with self.subTest(prefix=prefix):
                q = "/keys/?prefix=%s&delimiter=/" % urllib.parse.quote(prefix, "")
                self.assertEqual(json.loads(self.connector.request("GET", q)[2])["keys"], want)

    def test_keys_are_percent_decoded(self):
        self.put("a%20b%3Fc%25d+%C3%A9", b"v")
        self.assertEqual(self.stored("a b?c%d+é"), b"v")

    def test_ttl_attribute(self):
        self.put("k", b"v")
        self.assertEqual(json.loads(self.connector.request("GET", "/meta/k")[2]), {"attrs": ["ttl"]})
        self.assertEqual(json.loads(self.connector.request("GET", "/meta/k?attr=ttl")[2]), {"attr": "ttl", "value": "-1"})
        body = b'{"value": "300"}'
        self.assertEqual(self.connector.request("PUT", "/meta/k?attr=ttl", body, {"Content-Length": "16"})[0], 204)
        self.assertTrue(0 < self.redis.client.call("TTL", "test:k") <= 300)
        self.put("k", b"w")  # a write replaces the key, TTL and all
        self.assertEqual(self.redis.client.call("TTL", "test:k"), -1)
        self.assertEqual(self.connector.request("GET", "/meta/k?attr=color")[0], 400)
        self.assertEqual(self.connector.request("GET", "/meta/missing?attr=ttl")[0], 404)
        self.assertEqual(self.connector.request("PUT", "/meta/k?attr=ttl", b'{"value": "soon"}')[0], 400)
        self.assertEqual(self.connector.request("PUT", "/meta/k", b'{"value": "1"}')[0], 400)

    def test_redis_down_is_503_and_recovers(self):
        self.put("k", b"v")
        port = self.redis.port
        self.redis.close()
        status, _, body = self.connector.request("GET", "/keys/k")
        self.assertEqual(status, 503, body)
        self.assertEqual(json.loads(body)["error"], "unavailable")
        self.assertEqual(self.connector.request("GET", "/healthz")[0], 503)
        # An empty store again on the same port: the connector reconnects.
        self.redis = self.start_redis(self.tmp, port)
        self.assertEqual(self.connector.request("GET", "/healthz")[0], 200)
        self.assertEqual(self.connector.request("GET", "/keys/k")[0], 404)

    def test_sigterm_removes_the_socket(self):
        self.assertEqual(self.connector.stop(), 0)
        self.assertFalse(os.path.exists(self.connector.socket_path))


# ---- the runtime's state layer through the connector ----

HANDLERS = '''
import json
import os

ROOT = "/state/meta"


def save(p):
    os.makedirs(os.path.join(ROOT, "users"), exist_ok=True)
    with open(os.path.join(ROOT, "users", p["user"] + ".json"), "w") as f:
        json.dump(p["profile"], f)
    return {"saved": p["user"]}


def load(p):
    path = os.path.join(ROOT, "users", p["user"] + ".json")
    if not os.path.exists(path):
        return {"found": False}
    with open(path) as f:
        return {"found": True, "profile": json.load(f), "size": os.path.getsize(path),
                "users": sorted(os.listdir(os.path.join(ROOT, "users"))), "dir": os.path.isdir(os.path.join(ROOT, "users"))}


def count(p):
    path = os.path.join(ROOT, "counter")
    try:
        with open(path) as f:
            n = int(f.read())
    except FileNotFoundError:
        n = 0
    with open(path, "w") as f:
        f.write(str(n + 1))
    return {"count": n + 1}


def log(p):
    with open(os.path.join(ROOT, "log.txt"), "a") as f:
        f.write(p["line"] + "\\n")
    return None


def stream(p):
    with open(os.path.join(ROOT, "big.bin"), "wb") as f:
        for i in range(p["pieces"]):
            f.write(bytes([i % 256]) * 65536)
    return {"size": os.stat(os.path.join(ROOT, "big.bin")).st_size}


def forget(p):
    os.remove(os.path.join(ROOT, "users", p["user"] + ".json"))
    return {"left": os.listdir(os.path.join(ROOT, "users"))}


def ttl(p):
    path = os.path.join(ROOT, "counter")
    os.setxattr(path, "user.asya.ttl", str(p["seconds"]).encode())
    return {"attrs": os.listxattr(path), "ttl": int(os.getxattr(path, "user.asya.ttl"))}
'''


class RuntimeThroughRedisTest(Store, test_support.RuntimeTestCase):
    """asya_runtime_http.py with ASYA_STATE_PROXY_MOUNTS, its mount served by
    the connector, the connector by redis-server."""

    RUNTIME = runtime_tests.Runtime
    MODULES = {"state_handlers": HANDLERS}

    def setUp(self):
        super().setUp()
        self.start_store(self.tmp)

    def runtime(self, handler, write="buffered"):
        return self.start("state_handlers." + handler, ASYA_STATE_PROXY_MOUNTS="meta:/state/meta:write=" + write,
                          ASYA_STATE_SOCKET_DIR=self.state_dir)

    def call(self, rt, **payload):
        resp = rt.invoke(runtime_tests.envelope(payload))
        self.assertIn(resp.status, (200, 204), resp.body)
        return resp.json()["frames"][0]["payload"] if resp.status == 200 else None

    def test_a_file_written_in_one_call_is_read_in_the_next(self):
        for write in ("buffered", "passthrough"):
            with self.subTest(write=write):
                self.redis.client.call("FLUSHDB")
                saver, loader = self.runtime("save", write), self.runtime("load", write)
                self.assertEqual(self.call(loader, user="ada"), {"found": False})
                self.assertEqual(self.call(saver, user="ada", profile={"name": "Ada", "langs": ["en"]}),
                                 {"saved": "ada"})
                self.assertEqual(json.loads(self.stored("users/ada.json")), {"name": "Ada", "langs": ["en"]})
                self.call(saver, user="bob", profile={"name": "Bob"})
                got = self.call(loader, user="ada")
                self.assertEqual(got, {"found": True, "profile": {"name": "Ada", "langs": ["en"]},
                                       "size": len(self.stored("users/ada.json")),
                                       "users": ["ada.json", "bob.json"], "dir": True})

    def test_state_outlives_the_connector(self):
        rt = self.runtime("count")
        self.assertEqual([self.call(rt)["count"] for _ in range(3)], [1, 2, 3])
        self.connector.stop()
        self.start_connector()  # the same socket, the same Redis
        self.assertEqual(self.call(rt)["count"], 4)
        self.assertEqual(self.stored("counter"), b"4")

    def test_append(self):
        rt = self.runtime("log", "passthrough")
        for line in ("one", "two", "three"):
            self.call(rt, line=line)
        self.assertEqual(self.stored("log.txt"), b"one\ntwo\nthree\n")

    def test_passthrough_streams_a_large_file(self):
        got = self.call(self.runtime("stream", "passthrough"), pieces=40)  # 2.5 MiB, a write a chunk
        self.assertEqual(got, {"size": 40 * 65536})
        data = self.stored("big.bin")
        self.assertEqual(len(data), 40 * 65536)
        self.assertEqual(data[65536 * 39:65536 * 39 + 3], b"\x27\x27\x27")

    def test_remove(self):
        saver, forgetter = self.runtime("save"), self.runtime("forget")
        self.call(saver, user="ada", profile={})
        self.call(saver, user="bob", profile={})
        self.assertEqual(self.call(forgetter, user="ada"), {"left": ["bob.json"]})
        self.assertIsNone(self.stored("users/ada.json"))
        resp = forgetter.invoke(runtime_tests.envelope({"user": "ada"}))
        self.assertEqual(resp.status, 500)
        self.assertEqual(resp.json()["details"]["type"], "FileNotFoundError")

    def test_ttl_through_xattrs(self):
        self.call(self.runtime("count"))
        got = self.call(self.runtime("ttl"), seconds=600)
        self.assertEqual(got["attrs"], ["user.asya.ttl"])
        self.assertTrue(590 <= got["ttl"] <= 600, got)
        self.assertTrue(590 <= self.redis.client.call("TTL", "test:counter") <= 600)


if __name__ == "__main__":
    unittest.main()
