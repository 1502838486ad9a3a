#!/usr/bin/env python3
"""A state connector backed by Redis, for tests: it serves the Asya state
connector protocol (what upstream's asya-state-proxy server serves, and
asya_runtime_http.py's state layer calls) on a Unix socket, keeping each
key as a Redis string.

Environment:
    CONNECTOR_SOCKET        the Unix socket to serve on (required), e.g.
                            /var/run/asya/state/meta.sock; a stale one is
                            replaced, and it is removed on exit
    CONNECTOR_SOCKET_CHMOD  its mode, octal (default 0o666, so that a
                            runtime running as another user can connect;
                            empty leaves it alone)
    REDIS_URL               redis://[[user]:password@]host[:port][/db]
                            (default redis://127.0.0.1:6379/0)
    STATE_PREFIX            stored keys are STATE_PREFIX:key (default: none,
                            the key itself)
    LOG_LEVEL               default INFO

Run:
    CONNECTOR_SOCKET=/tmp/state/meta.sock REDIS_URL=redis://127.0.0.1:6379/0 \\
        python3 redis_connector.py

The protocol, on one connection per request:
    GET    /keys/{key}                    200, the bytes with Content-Length; 404
    PUT    /keys/{key}                    204: the body (Content-Length or chunked)
                                          replaces the key; with If-None-Match: *
                                          only if there is none, else 412
    HEAD   /keys/{key}                    204, Content-Length and X-Is-File
                                          (false for a prefix that has keys
                                          below it: a directory); 404
    DELETE /keys/{key}                    204; 404
    GET    /keys/?prefix=P&delimiter=D    {"keys": [...], "prefixes": [...]}
    GET    /meta/{key}                    {"attrs": ["ttl"]}
    GET    /meta/{key}?attr=ttl           {"attr": "ttl", "value": "<seconds>"} (-1: none)
    PUT    /meta/{key}?attr=ttl           {"value": "<seconds>"}: 204
    GET    /healthz                       {"status": "ready"}, or 503 without Redis
Keys are percent-decoded from the path. An error is {"error", "message"}:
400 bad request or unsupported attribute, 404 no such key, 409/412
conflict, 503 Redis unreachable, 504 Redis timed out, 500 anything else.

A write streams the body into a hidden upload key a piece at a time and
renames it into place when the body is whole, so neither a large body
nor a body cut off (a runtime's with block that raised) is held in
memory or half written. Standard library only: it runs on Debian's
python3 alone.
"""
import http.server
import json
import logging
import os
import signal
import socket
import socketserver
import stat
import sys
import threading
import urllib.parse
import uuid

log = logging.getLogger("redis-connector")

PIECE = 1 << 20  # bytes sent to Redis per APPEND
UPLOAD = "\x00upload\x00"  # in no key a runtime makes: its keys are paths
# Puts the upload in place, atomically: KEYS = upload, key; ARGV[1] "nx"
# keeps an existing key (0), dropping the upload.
COMMIT = """
if ARGV[1] == "nx" and redis.call("EXISTS", KEYS[2]) == 1 then
  redis.call("DEL", KEYS[1])
  return 0
end
redis.call("RENAME", KEYS[1], KEYS[2])
redis.call("PERSIST", KEYS[2])
return 1
"""


# ---- Redis: RESP over a socket ----

class RedisError(Exception):
    """An error reply."""


class Redis:
    """A Redis client for one thread: one connection, opened when needed
    and reopened after a failure."""

    def __init__(self, url, timeout=10.0):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "redis":
            raise ValueError("REDIS_URL %r: only redis:// is supported" % url)
        self.address = (u.hostname or "127.0.0.1", u.port or 6379)
        self.username = urllib.parse.unquote(u.username) if u.username else None
        self.password = urllib.parse.unquote(u.password) if u.password else None
        self.db = int(u.path.strip("/") or 0)
        self.timeout = timeout
        self.sock = self.reader = None

    def _open(self):
        try:
            self.sock = socket.create_connection(self.address, self.timeout)
        except socket.timeout as e:
            raise TimeoutError("Redis at %s:%d: %s" % (self.address + (e,))) from None
        except OSError as e:
            raise ConnectionError("Redis at %s:%d: %s" % (self.address + (e,))) from None
        self.reader = self.sock.makefile("rb")
        if self.password is not None:
            self._call(*(["AUTH"] + ([self.username] if self.username else []) + [self.password]))
        if self.db:
            self._call("SELECT", self.db)

    def close(self):
        if self.sock:
            self.reader.close()
            self.sock.close()
            self.sock = self.reader = None

    def call(self, *args):
        """The reply to one command: bytes, int, str, None or a list; an
        error reply is a RedisError, a lost connection a ConnectionError."""
        if self.sock is None:
            self._open()
        try:
            return self._call(*args)
        except RedisError:
            raise
        except socket.timeout as e:
            self.close()
            raise TimeoutError("Redis at %s:%d: %s" % (self.address + (e,))) from None
        except (OSError, EOFError) as e:
            self.close()
            raise ConnectionError("Redis at %s:%d: %s" % (self.address + (e,))) from None

    def _call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode("utf-8")
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        return self._reply()

    def _reply(self):
        line = self.reader.readline()
        if not line.endswith(b"\r\n"):
            raise EOFError("connection closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.reader.read(n + 2)
            if len(data) != n + 2:
                raise EOFError("connection closed")
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RedisError("unexpected reply %r" % line)


def glob_escape(s):
    """s matched literally by a SCAN MATCH pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in s)


# ---- the connector: upstream's StateProxyConnector methods ----

class PreconditionFailed(FileExistsError):
    """If-None-Match: * and the key exists."""


class RedisConnector:
    """Keys as Redis strings, named STATE_PREFIX:key (or key)."""

    def __init__(self, url, prefix=""):
        self.url, self.prefix = url, prefix
        self.local = threading.local()
        Redis(url)  # a bad URL fails now

    @property
    def redis(self):
        r = getattr(self.local, "redis", None)
        if r is None:
            r = self.local.redis = Redis(self.url)
        return r

    def _full(self, key):
        return "%s:%s" % (self.prefix, key) if self.prefix else key

    def _key(self, full):
        return full[len(self.prefix) + 1:] if self.prefix else full

    def read(self, key):
        data = self.redis.call("GET", self._full(key))
        if data is None:
            raise FileNotFoundError("no key %s" % key)
        return data

    def write(self, key, body, exclusive=False):
        """body.read(n) gives the bytes; a body cut off raises, and nothing is written."""
        full = self._full(key)
        if exclusive and self.redis.call("EXISTS", full):
            raise PreconditionFailed("key exists: %s" % key)
        upload = full + UPLOAD + uuid.uuid4().hex
        # Left behind only if the connector dies mid-write: it expires.
        self.redis.call("SET", upload, b"", "EX", 86400)
        try:
            while True:
                piece = body.read(PIECE)
                if not piece:
                    break
                self.redis.call("APPEND", upload, piece)
            done = self.redis.call("EVAL", COMMIT, 2, upload, full, "nx" if exclusive else "")
        except BaseException:
            try:
                self.redis.call("DEL", upload)
            except Exception:
                pass
            raise
        if not done:
            raise PreconditionFailed("key exists: %s" % key)

    def exists(self, key):
        return bool(self.redis.call("EXISTS", self._full(key)))

    def stat(self, key):
        """(size, is_file), or None: a key's, or a prefix's with keys below it (a directory)."""
        full = self._full(key)
        size = self.redis.call("STRLEN", full)
        if size or self.exists(key):
            return size, True
        keys, prefixes = self.list(key.rstrip("/") + "/", "/")
        return (0, False) if key and (keys or prefixes) else None

    def list(self, prefix, delimiter="/"):
        """(keys, prefixes) under prefix: prefixes end at the first delimiter past it."""
        keys, prefixes, cursor = set(), set(), b"0"
        pattern = glob_escape(self._full(prefix)) + "*"
        while True:
            cursor, batch = self.redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
            for full in batch:
                full = full.decode("utf-8", "surrogateescape")
                if UPLOAD in full:
                    continue
                key = self._key(full)
                rest = key[len(prefix):]
                if delimiter and delimiter in rest:
                    prefixes.add(prefix + rest[:rest.index(delimiter) + len(delimiter)])
                else:
                    keys.add(key)
            if cursor == b"0":
                return sorted(keys), sorted(prefixes)

    def delete(self, key):
        if not self.redis.call("DEL", self._full(key)):
            raise FileNotFoundError("no key %s" % key)

    def listxattr(self, key):
        if not self.exists(key):
            raise FileNotFoundError("no key %s" % key)
        return ["ttl"]

    def getxattr(self, key, attr):
        if attr != "ttl":
            raise KeyError("unsupported attribute: %s" % attr)
        ttl = self.redis.call("TTL", self._full(key))
        if ttl == -2:
            raise FileNotFoundError("no key %s" % key)
        return str(ttl)

    def setxattr(self, key, attr, value):
        if attr != "ttl":
            raise KeyError("unsupported attribute: %s" % attr)
        try:
            seconds = int(value)
        except ValueError:
            raise ValueError("ttl must be a whole number of seconds, got %r" % value) from None
        full = self._full(key)
        done = self.redis.call("EXPIRE", full, seconds) if seconds >= 0 else self.redis.call("PERSIST", full)
        if not done and not self.exists(key):
            raise FileNotFoundError("no key %s" % key)

    def ping(self):
        return self.redis.call("PING") == "PONG"


# ---- HTTP on the Unix socket ----

class BodyCutOff(Exception):
    """The client closed the connection before the body's end."""


class LengthBody:
    def __init__(self, rfile, size):
        self.rfile, self.left = rfile, size

    def read(self, n):
        if not self.left:
            return b""
        data = self.rfile.read(min(n, self.left))
        if not data:
            raise BodyCutOff("%d bytes short" % self.left)
        self.left -= len(data)
        return data


class ChunkedBody:
    def __init__(self, rfile):
        self.rfile, self.left, self.done = rfile, 0, False

    def _line(self):
        line = self.rfile.readline(1024)
        if not line.endswith(b"\n"):
            raise BodyCutOff("chunked body cut off")
        return line.strip()

    def read(self, n):
        if not self.left and not self.done:
            try:
                self.left = int(self._line().split(b";")[0], 16)
            except ValueError:
                raise BodyCutOff("bad chunk size") from None
            if not self.left:
                while self._line():  # trailers, then the blank line
                    pass
                self.done = True
        if self.done:
            return b""
        data = self.rfile.read(min(n, self.left))
        if not data:
            raise BodyCutOff("chunked body cut off")
        self.left -= len(data)
        if not self.left and self._line():
            raise BodyCutOff("chunk not followed by CRLF")
        return data


# An exception's class: its status and error code, as upstream's server.
ERRORS = [(KeyError, 400, "unsupported_attribute"), (FileNotFoundError, 404, "key_not_found"),
          (PreconditionFailed, 412, "precondition_failed"), (FileExistsError, 409, "conflict"),
          (ValueError, 400, "bad_request"), (PermissionError, 403, "permission_denied"),
          (ConnectionError, 503, "unavailable"), (TimeoutError, 504, "timeout")]


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "redis-connector"

    def log_message(self, fmt, *args):
        log.debug(fmt, *args)

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if status not in (204, 304) and self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def answer_json(self, status, value):
        self.answer(status, json.dumps(value).encode(), [("Content-Type", "application/json")])

    def fail(self, exc):
        for cls, status, code in ERRORS:
            if isinstance(exc, cls):
                break
        else:
            log.exception("%s %s failed", self.command, self.path)
            status, code = 500, "internal_error"
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        self.answer_json(status, {"error": code, "message": message})

    def route(self):
        """(route, key, query) of the request's URL: route "keys", "meta" or the path."""
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        for route in ("keys", "meta"):
            if url.path.startswith("/%s/" % route):
                return route, urllib.parse.unquote(url.path[len(route) + 2:], errors="surrogateescape"), query
            if url.path == "/" + route:
                return route, "", query
        return url.path, "", query

    def do_GET(self):
        c = self.server.connector
        route, key, query = self.route()
        try:
            if route == "/healthz":
                ok = c.ping()
                return self.answer_json(200 if ok else 503, {"status": "ready" if ok else "unavailable"})
            if route == "keys" and not key:
                keys, prefixes = c.list(query.get("prefix", ""), query.get("delimiter", "/"))
                return self.answer_json(200, {"keys": keys, "prefixes": prefixes})
            if route == "keys":
                return self.answer(200, c.read(key), [("Content-Type", "application/octet-stream")])
            if route == "meta" and key:
                if "attr" in query:
                    return self.answer_json(200, {"attr": query["attr"], "value": c.getxattr(key, query["attr"])})
                return self.answer_json(200, {"attrs": c.listxattr(key)})
        except Exception as e:
            return self.fail(e)
        self.answer_json(404, {"error": "not_found", "message": "no route %s" % self.path})

    def do_HEAD(self):
        route, key, _ = self.route()
        if route != "keys" or not key:
            return self.answer(404)
        try:
            meta = self.server.connector.stat(key)
        except Exception as e:
            return self.fail(e)
        if meta is None:
            return self.answer(404)
        self.answer(204, headers=[("Content-Length", str(meta[0])), ("X-Is-File", "true" if meta[1] else "false")])

    def body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return ChunkedBody(self.rfile)
        try:
            return LengthBody(self.rfile, max(int(self.headers.get("Content-Length") or 0), 0))
        except ValueError:
            return LengthBody(self.rfile, 0)

    def do_PUT(self):
        c = self.server.connector
        route, key, query = self.route()
        body = self.body()
        try:
            try:
                if route == "keys" and key:
                    c.write(key, body, exclusive=self.headers.get("If-None-Match", "").strip() == "*")
                    return self.answer(204)
                data = b"".join(iter(lambda: body.read(PIECE), b""))
                if route == "meta" and key:
                    if "attr" not in query:
                        raise ValueError("the attr query parameter is required")
                    try:
                        value = json.loads(data)["value"]
                    except (ValueError, KeyError, TypeError):
                        raise ValueError('the body must be {"value": "..."}') from None
                    c.setxattr(key, query["attr"], str(value))
                    return self.answer(204)
            except BodyCutOff:
                raise
            except Exception as e:
                # The rest of the body is read first: a Unix socket closed
                # on unread bytes resets the client before it reads the answer.
                while body.read(PIECE):
                    pass
                return self.fail(e)
        except BodyCutOff as e:
            log.info("%s %s: %s, nothing written", self.command, self.path, e)
            self.close_connection = True
            return None
        self.answer_json(404, {"error": "not_found", "message": "no route %s" % self.path})

    def do_DELETE(self):
        route, key, _ = self.route()
        if route != "keys" or not key:
            return self.answer_json(404, {"error": "not_found", "message": "no route %s" % self.path})
        try:
            self.server.connector.delete(key)
        except Exception as e:
            return self.fail(e)
        self.answer(204)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    address_family = socket.AF_UNIX
    daemon_threads = True
    connector = None
    chmod = None

    def server_bind(self):
        path = self.server_address
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)
        except FileNotFoundError:
            pass
        self.socket.bind(path)
        if self.chmod is not None:
            os.chmod(path, self.chmod)
        self.server_name, self.server_port = "redis-connector", 0

    def server_close(self):
        super().server_close()
        try:
            if stat.S_ISSOCK(os.lstat(self.server_address).st_mode):
                os.unlink(self.server_address)
        except OSError:
            pass


def main():
    env = os.environ.get
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, (env("LOG_LEVEL") or "INFO").upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    path = env("CONNECTOR_SOCKET")
    if not path:
        log.error("CONNECTOR_SOCKET is required: the Unix socket to serve on")
        return 2
    try:
        connector = RedisConnector(env("REDIS_URL") or "redis://127.0.0.1:6379/0", env("STATE_PREFIX") or "")
        mode = env("CONNECTOR_SOCKET_CHMOD", "0o666")
        Server.chmod = int(mode, 8) if mode else None
    except ValueError as e:
        log.error("%s", e)
        return 2
    try:
        connector.ping()
    except OSError as e:  # served anyway: each request answers 503 until Redis is up
        log.warning("Redis not reachable yet: %s", e)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    server = Server(path, Handler)
    server.connector = connector
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log.info("serving %s on %s (prefix %r)", connector.url.split("@")[-1], path, connector.prefix)
    stop.wait()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
