#!/usr/bin/env python3
"""Asya actor runtime, current generation (sidecar 0.5+): serves ASYA_HANDLER
to the asya-sidecar as HTTP on a Unix socket, a thread per connection. With
ASYA_STATE_PROXY_MOUNTS set, the handler's files under each mount are the
keys of a state connector. asya-sync's runtime/README.md has the contract.
Python 3.7+, standard library only. Underscore names are those upstream's
runtime tests call.
"""
import asyncio
import base64
import codecs
import copy
import dataclasses
import decimal
import errno
import http.client
import http.server
import importlib
import inspect
import json
import logging
import os
import re
import shutil
import signal
import socket
import socketserver
import stat
import sys
import tempfile
import threading
import traceback
import urllib.parse
import uuid

log = logging.getLogger("asya-runtime")
env = os.environ.get

ASYA_HANDLER = env("ASYA_HANDLER", "")
ASYA_ENABLE_VALIDATION = (env("ASYA_ENABLE_VALIDATION") or "true").strip().lower() not in ("false", "0", "no", "off")
ASYA_SOCKET_CHMOD = env("ASYA_SOCKET_CHMOD", "0o666")
SOCKET_DIR = env("ASYA_SOCKET_DIR") or "/var/run/asya"
SOCKET_PATH = os.path.join(SOCKET_DIR, env("ASYA_SOCKET_NAME") or "asya-runtime.sock")
READY_PATH = os.path.join(SOCKET_DIR, "runtime-ready")
DEFAULT_MAX_MESSAGE_SIZE = 64 << 20
# Why the runtime cannot start, which Kubernetes shows as the termination message.
TERMINATION_LOG = "/dev/termination-log"
TERMINATION_LIMIT = 2048


# ---- startup ----

class LoadError(Exception):
    """ASYA_HANDLER names nothing this runtime can call."""


def load_handler(spec):
    parts = spec.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise LoadError("expected module.function or module.Class.method")
    # The longest module prefix first; other import errors are the handler's.
    for i in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:i])
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                continue
            raise
        return _resolve(module, parts[i:])
    raise LoadError("no module named %r" % parts[0])


def _resolve(obj, rest):
    if len(rest) > 2:
        raise LoadError("too many names after the module: %s" % ".".join(rest))
    for name in rest:
        if not hasattr(obj, name):
            raise LoadError("%s has no attribute %r" % (getattr(obj, "__name__", type(obj).__name__), name))
        obj = getattr(obj, name)
        if inspect.isclass(obj):
            if name == rest[-1]:
                raise LoadError("%s is a class; name a method: module.Class.method" % name)
            obj = obj()  # once, with no arguments
    if not callable(obj):
        raise LoadError("%s is not callable" % ".".join(rest))
    return obj


def _load_function():
    """The handler ASYA_HANDLER names; exits with status 1 if there is none."""
    try:
        return load_handler(ASYA_HANDLER)
    except LoadError as e:
        reason = "cannot load handler %r: %s" % (ASYA_HANDLER, e)
    except Exception:
        reason = "cannot load handler %r: import failed\n%s" % (ASYA_HANDLER, traceback.format_exc())
    raise SystemExit(_fail(reason))


def _fail(message):
    """Logs why the runtime cannot serve; its end is the termination message."""
    log.error("%s", message)
    # Kubernetes makes the default file; elsewhere none is made in /dev.
    path = env("ASYA_TERMINATION_LOG") or (TERMINATION_LOG if os.path.exists(TERMINATION_LOG) else "")
    try:
        if path:
            with open(path, "w") as f:
                f.write(message.rstrip().encode("utf-8")[-TERMINATION_LIMIT:].decode("utf-8", "ignore"))
    except OSError:
        pass  # the log has it
    return 1


# ---- envelopes and answers ----

def _parse_envelope_json(data):
    return json.loads(data.decode("utf-8"))


def _check(ok, message):
    if not ok:
        raise ValueError(message)


def _names(value, what):
    value = [] if value is None else value  # Go writes an empty list as null
    _check(isinstance(value, list) and all(isinstance(a, str) for a in value), "Field '%s' must be a list" % what)
    return value


def _validate_envelope(e):
    """The envelope's fields, checked; a ValueError for a bad one."""
    _check(isinstance(e, dict), "Envelope must be a JSON object")
    for key in ("payload", "route"):
        _check(key in e, "Missing required field %r in envelope" % key)
    route = e["route"]
    _check(isinstance(route, dict), "Field 'route' must be a dict")
    for key in ("prev", "curr", "next"):
        _check(key in route, "Missing required field %r in route" % key)
    _check(isinstance(route["curr"], str), "Field 'route.curr' must be a string")
    _check(isinstance(e.get("headers") or {}, dict), "Field 'headers' must be a dict")
    _check(isinstance(e.get("id", ""), str), "Field 'id' must be a string")
    out = {"payload": e["payload"], "route": {"prev": _names(route["prev"], "route.prev"),
                                              "curr": route["curr"], "next": _names(route["next"], "route.next")}}
    out.update((k, e[k]) for k in ("id", "parent_id", "headers", "status") if k in e)
    return out


def _read_envelope(data):
    envelope = _parse_envelope_json(data)
    if ASYA_ENABLE_VALIDATION:
        return _validate_envelope(envelope)
    # The sink and sump actors: any route goes, read leniently.
    _check(isinstance(envelope, dict), "Envelope must be a JSON object")
    return envelope


def _type_name(cls):
    return cls.__qualname__ if cls.__module__ == "builtins" else cls.__module__ + "." + cls.__qualname__


def _error_response(code, exc=None):
    """An error answer; the sidecar's retry policy matches type and mro."""
    answer = {"error": code}
    if exc is not None:
        cls = type(exc)
        answer["details"] = {
            "message": str(exc), "type": _type_name(cls),
            "mro": [_type_name(c) for c in cls.__mro__[1:] if c not in (BaseException, object)],
            "traceback": "".join(traceback.format_exception(cls, exc, exc.__traceback__))}
    return answer


def _json_default(obj):
    """Encodes what handlers commonly return besides plain JSON."""
    if hasattr(obj, "model_dump"):  # pydantic 2
        return obj.model_dump(mode="json")
    if hasattr(obj, "__fields__") and hasattr(obj, "dict"):  # pydantic 1
        return obj.dict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "_asdict"):  # named tuples
        return obj._asdict()
    if hasattr(obj, "isoformat"):  # dates and times
        return obj.isoformat()
    if isinstance(obj, (uuid.UUID, decimal.Decimal)):
        return str(obj)
    if isinstance(obj, (bytes, bytearray)):
        return base64.b64encode(obj).decode("ascii")
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    raise TypeError("Not JSON serializable: %s" % type(obj).__name__)


def _encode(value):
    # No NaN: the sidecar could not read it back.
    return json.dumps(value, default=_json_default, allow_nan=False, separators=(",", ":")).encode("utf-8")


# ---- the generator ABI ----

_STEP = re.compile(r'\.([A-Za-z_][\w-]*)|\["([^"]*)"\]|\[(-?\d+)\]|\[(-?\d+)?:(-?\d+)?\]')
_WRITABLE = (("headers",), ("status",), ("route", "next"))


def _parse_path(path):
    """.route.next[0] or .headers["a.b"] as ("key"|"idx"|"slc", arg) steps."""
    _check(isinstance(path, str) and path.startswith("."), "Path must start with '.': %r" % (path,))
    _check(path != ".", "Empty path: '.'")
    steps, pos = [], int(path.startswith(".["))
    while pos < len(path):
        m = _STEP.match(path, pos)
        _check(m, "Invalid path %r at position %d" % (path, pos))
        key, quoted, index, start, stop = m.groups()
        if index is not None:
            steps.append(("idx", int(index)))
        elif key is None and quoted is None:
            steps.append(("slc", slice(start and int(start), stop and int(stop))))
        else:
            steps.append(("key", quoted if key is None else key))
        pos = m.end()
    return steps


def _walk(data, steps, create=False):
    for kind, arg in steps:
        _check(kind != "slc", "Slice not valid here: only as the last step of SET")
        if create and kind == "key" and isinstance(data, dict) and arg not in data:
            data[arg] = {}
        data = data[arg]
    return data


def _resolve_get(data, steps):
    _check(steps[-1][0] != "slc", "Slice not valid for GET")
    return copy.deepcopy(_walk(data, steps))  # changes go through SET and DEL only


def _resolve_set(data, steps, value):
    _walk(data, steps[:-1], create=True)[steps[-1][1]] = copy.deepcopy(value)


def _resolve_del(data, steps):
    _check(steps[-1][0] != "slc", "Slice not valid for DEL")
    del _walk(data, steps[:-1])[steps[-1][1]]


def _check_set_access(path, verb="SET"):
    keys = tuple(arg for _, arg in _parse_path(path)[:2])
    if not any(keys[:len(w)] == w for w in _WRITABLE):
        raise PermissionError("Cannot %s %s: it is read-only" % (verb, path))


def _check_del_access(path):
    _check_set_access(path, "DEL")


class _AbiContext:
    """What a handler may read and change of one envelope: a copy, unless
    nothing can change it (a function's result)."""

    def __init__(self, envelope, isolated=True):
        route = envelope.get("route")
        route = route if isinstance(route, dict) else {}
        self.input_route = {k: route.get(k) if isinstance(route.get(k), t) else t()
                            for k, t in (("prev", list), ("curr", str), ("next", list))}
        self.copy = copy.deepcopy if isolated else lambda x: x
        self.data = self.copy({
            "id": envelope.get("id", ""), "parent_id": envelope.get("parent_id", ""),
            "route": self.input_route, "headers": envelope.get("headers") or {},
            "status": envelope.get("status") or {}})

    def snapshot(self):
        data = self.data
        return self.copy({"route_next": (data.get("route") or {}).get("next") or [],
                          "headers": data.get("headers") or {}, "status": data.get("status") or {}})


def _build_frame(payload, ctx):
    """A result, routed past this actor to .route.next as it is now."""
    state = ctx.snapshot()
    nxt, headers = state["route_next"], state["headers"]
    if not isinstance(nxt, list) or not all(isinstance(a, str) for a in nxt) or not isinstance(headers, dict):
        raise TypeError(".route.next must be a list of actor names and .headers an object")
    route = ctx.input_route
    frame = {"payload": payload, "route": {"prev": route["prev"] + [route["curr"]],
                                           "curr": nxt[0] if nxt else "", "next": nxt[1:]}}
    frame.update((k, state[k]) for k in ("headers", "status") if state[k])
    return frame


def _apply(ctx, item, frames, on_fly, on_emit):
    """Carries out one value a generator yielded; returns what goes back."""
    if not isinstance(item, tuple) or len(item) < 2:
        if item is not None:
            (on_emit or frames.append)(_build_frame(item, ctx))
        return None
    verb, arg, n = item[0], item[1], len(item)
    if verb == "GET" and n == 2:
        return _resolve_get(ctx.data, _parse_path(arg))
    if verb == "SET" and n == 3:
        _check_set_access(arg)
        _resolve_set(ctx.data, _parse_path(arg), item[2])
    elif verb == "DEL" and n == 2:
        _check_del_access(arg)
        _resolve_del(ctx.data, _parse_path(arg))
    elif verb == "FLY" and n == 2:
        if on_fly:
            on_fly(arg)
    else:
        raise RuntimeError("ABI protocol error: unknown verb %r of %d items" % (verb, n))
    return None


def _drive_generator(gen, ctx, on_fly=None, on_emit=None):
    frames, reply = [], None
    while True:
        try:
            item = gen.send(reply)
        except StopIteration:
            return frames
        reply = _apply(ctx, item, frames, on_fly, on_emit)


async def _drive_async_generator(gen, ctx, on_fly=None, on_emit=None):
    frames, reply = [], None
    while True:
        try:
            item = await gen.asend(reply)
        except StopAsyncIteration:
            return frames
        reply = _apply(ctx, item, frames, on_fly, on_emit)


def _drive(gen, ctx, on_fly=None, on_emit=None):
    if inspect.isasyncgen(gen):
        return asyncio.run(_drive_async_generator(gen, ctx, on_fly, on_emit))
    return _drive_generator(gen, ctx, on_fly, on_emit)


def _call_handler(user_func, arg):
    """The result, awaited for async def; a generator comes back unstarted."""
    result = user_func(arg)
    return asyncio.run(result) if inspect.iscoroutine(result) else result


def _failure(exc):
    log.warning("handler failed: %s: %s", type(exc).__name__, exc)
    return _error_response("processing_error", exc)


def _begin(data, user_func):
    """(status, body), or (None, (generator, context)) for a generator."""
    try:
        envelope = _read_envelope(data)
    except ValueError as exc:  # JSON and UTF-8 errors too
        log.warning("rejecting envelope: %s", exc)
        return 400, _encode(_error_response("msg_parsing_error", exc))
    try:
        result = _call_handler(user_func, envelope.get("payload"))
        if inspect.isgenerator(result) or inspect.isasyncgen(result):
            return None, (result, _AbiContext(envelope))
        if result is None:
            return 204, b""
        # A result JSON cannot carry is the handler's error too.
        return 200, _encode({"frames": [_build_frame(result, _AbiContext(envelope, False))]})
    except Exception as exc:
        return 500, _encode(_failure(exc))


def _handle_invoke(data, user_func):
    """(status, body), a generator's frames collected."""
    status, body = _begin(data, user_func)
    if status is not None:
        return status, body
    try:
        frames = _drive(*body)
        return (200, _encode({"frames": frames})) if frames else (204, b"")
    except Exception as exc:
        return 500, _encode(_failure(exc))


# ---- HTTP on the Unix socket ----

class _ClientGone(Exception):
    """The sidecar closed the connection during a stream."""


class _InvokeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60.0  # a client that stops reading or sending must not hold a thread

    def log_message(self, fmt, *args):
        log.debug(fmt, *args)

    def do_GET(self):
        if self.path != "/healthz":
            return self._not_found()
        self._send(200, _encode({"status": "ready"}))

    def do_POST(self):
        data = self._read_body()  # even for a wrong path: see _read_body
        if data is None:
            return
        if self.path != "/invoke":
            return self._not_found()
        status, body = _begin(data, self.server.user_func)
        if status is None:
            return self._stream(*body)
        self._send(status, body)

    def _not_found(self):
        self._send(404, b'{"error":"not_found"}')

    def _send(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Connection", "close")
        if body:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        elif body is None:  # a stream, ended by closing the connection
            self.send_header("Content-Type", content_type)
        self.end_headers()
        self.wfile.write(body or b"")

    def _read_body(self):
        """The request body, or None once the request is answered."""
        try:  # no body, or a bad length, is an empty envelope: a 400
            size = max(int(self.headers.get("Content-Length") or 0), 0)
        except ValueError:
            size = 0
        limit = self.server.max_message_size
        if size <= limit:
            data = self.rfile.read(size)
            if len(data) == size:
                return data
            log.warning("connection closed after %d of %d bytes", len(data), size)
            return None
        why = ValueError("message of %d bytes exceeds ASYA_MAX_MESSAGE_SIZE (%d bytes)" % (size, limit))
        log.warning("rejecting envelope: %s", why)
        self._send(413, _encode(_error_response("msg_parsing_error", why)))
        # Drop the body a chunk at a time: closing on unread data resets
        # the connection before the client reads the answer.
        try:
            while size > 0:
                chunk = self.rfile.read1(min(size, 1 << 16))
                if not chunk:
                    break
                size -= len(chunk)
        except OSError:
            pass

    def _event(self, name, value):
        try:  # wfile is unbuffered: the event leaves now
            self.wfile.write(b"event: %s\ndata: %s\n\n" % (name, _encode(value)))
        except OSError as e:
            raise _ClientGone(e)

    def _stream(self, gen, ctx):
        self._send(200, None, "text/event-stream")
        try:
            try:
                _drive(gen, ctx, lambda v: self._event(b"upstream", {"payload": v}),
                       lambda frame: self._event(b"downstream", frame))
            except _ClientGone:
                raise
            except Exception as exc:
                self._event(b"error", _failure(exc))
            self._event(b"done", {})
        except _ClientGone as e:
            log.warning("sidecar closed the stream: %s", e)


class _UnixHTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """HTTP on a Unix socket, each connection served in a thread of its own."""

    address_family = socket.AF_UNIX
    # Untracked non-daemon threads: the interpreter finishes the calls in
    # hand before it exits (the SIGTERM drain), and keeps no finished ones.
    block_on_close = False
    max_message_size = DEFAULT_MAX_MESSAGE_SIZE
    user_func = None

    def server_bind(self):
        path = self.server_address
        try:  # a socket left by an earlier run would make bind fail
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                os.unlink(path)
        except FileNotFoundError:
            pass
        self.socket.bind(path)
        if ASYA_SOCKET_CHMOD:
            os.chmod(path, int(ASYA_SOCKET_CHMOD, 8))
        self.server_name, self.server_port = "asya-runtime", 0

    def server_close(self):
        super().server_close()
        try:
            if stat.S_ISSOCK(os.lstat(self.server_address).st_mode):
                os.unlink(self.server_address)
        except OSError:
            pass


# ---- the state layer: files under ASYA_STATE_PROXY_MOUNTS ----
# With mounts set, open, os.stat and the rest route the paths under each
# mount to its connector: HTTP on the Unix socket <dir>/<name>.sock, a key
# per file. runtime/README.md#state-files-under-asya_state_proxy_mounts has
# the protocol.

STATE_SOCKET_DIR = env("ASYA_STATE_SOCKET_DIR") or "/var/run/asya/state"
SPOOL_SIZE = 4 << 20  # bytes of a file held in memory; more goes to disk
XATTR_PREFIX = "user.asya."
_STATUS_TO_EXCEPTION = {400: ValueError, 403: PermissionError, 404: FileNotFoundError, 409: FileExistsError,
                        412: FileExistsError, 503: ConnectionError, 504: TimeoutError}
_STATUS_ERRNO = {403: errno.EACCES, 404: errno.ENOENT, 409: errno.EEXIST, 412: errno.EEXIST,
                 413: errno.EFBIG, 504: errno.ETIMEDOUT}


def _parse_state_proxy_mounts(spec):
    """name:/path:write=buffered|passthrough[,...] entries, ;-separated, as
    dicts of name, path (ending in /), socket and write_mode."""
    mounts = []
    for entry in filter(None, (e.strip() for e in spec.split(";"))):
        parts = entry.split(":", 2)
        _check(len(parts) == 3, "Invalid mount %r: expected name:path:options" % entry)
        name, path = parts[0].strip(), parts[1].strip()
        opts = dict((k.strip(), v.strip()) for k, _, v in (o.partition("=") for o in parts[2].split(",") if "=" in o))
        mode = opts.get("write", "buffered")
        _check(re.match(r"\w[\w.-]*$", name), "Invalid mount %r: the name must be a file name" % entry)
        _check(os.path.isabs(path) and os.path.normpath(path) != "/", "Invalid mount %r: the path must be "
               "absolute and not /" % entry)
        _check(mode in ("buffered", "passthrough"), "Invalid mount %r: write must be buffered or passthrough" % entry)
        mounts.append({"name": name, "path": os.path.normpath(path) + "/", "write_mode": mode,
                       "socket": os.path.join(STATE_SOCKET_DIR, name + ".sock")})
    return mounts


def _resolve_mount(path, mounts):
    """(mount, key) of the first mount holding path, else (None, None)."""
    if isinstance(path, (str, bytes, os.PathLike)):
        path = os.fspath(path)
        path = os.fsdecode(path) if isinstance(path, bytes) else path
        if os.path.isabs(path):
            path = os.path.normpath(path)
            for m in mounts:
                if path == m["path"][:-1] or path.startswith(m["path"]):
                    return m, path[len(m["path"]):]
    return None, None


def _url(key, route="/keys/"):
    # What a URL path cannot carry raw is %-encoded, % too.
    return route + urllib.parse.quote(key, safe="/!$&'()*+,;=:@~")


class _UnixHTTPClient(http.client.HTTPConnection):
    """HTTP to a state connector on its Unix socket."""

    def __init__(self, sock_path):
        super().__init__("localhost")
        self._sock_path = sock_path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(self._sock_path)
        except OSError as e:  # not a FileNotFoundError: the key may well exist
            self.close()
            raise ConnectionError(e.errno, "state connector unreachable at %s: %s" % (self._sock_path, e)) from None


def _raise_for_status(resp, key):
    """The exception of an error status, with the connector's message."""
    if resp.status < 400:
        return
    try:
        body = json.loads(resp.read())
        message = body.get("message") or body.get("error") or "State proxy error"
    except Exception:
        message = "State proxy error (status %d)" % resp.status
    cls = _STATUS_TO_EXCEPTION.get(resp.status, OSError)
    raise cls(message) if cls is ValueError else cls(_STATUS_ERRNO.get(resp.status, errno.EIO), message, key)


def _send(sock_path, method, url, key, body=None, headers=None, check=_raise_for_status):
    """(connection, response) of one request; an error status raised."""
    conn = _UnixHTTPClient(sock_path)
    try:
        conn.request(method, url, body, headers or {})
        resp = conn.getresponse()
        check(resp, key)
        return conn, resp
    except BaseException:
        conn.close()
        raise


def _ask(sock_path, method, url, key, body=None, headers=None, check=_raise_for_status):
    """(response, body) of one request; an error status raised."""
    conn, resp = _send(sock_path, method, url, key, body, headers, check)
    try:
        return resp, resp.read()
    finally:
        conn.close()


class _StateIO:
    closed = False

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        self._end(exc_type is None)

    def close(self):
        self._end(True)

    def flush(self):
        pass

    def readable(self):
        return False

    writable = seekable = readable


class _StateFile(_StateIO):
    """A key open for reading: bytes, or str in text mode."""

    def __init__(self, stream, seekable, text_mode=False, encoding=None, errors=None, conn=None):
        self._stream, self._seekable, self._conn, self.name = stream, seekable, conn, ""
        self._decoder = codecs.getincrementaldecoder(encoding or "utf-8")(errors or "strict") if text_mode else None

    def _decode(self, data, final):
        return self._decoder.decode(data, final) if self._decoder else data

    def read(self, size=-1):
        whole = size is None or size < 0
        while True:  # a text read(n) gives "" only at the end
            data = self._stream.read() if whole else self._stream.read(size)
            text = self._decode(data, whole or not data)
            if text or not data:
                return text

    def readline(self, limit=-1):
        while True:  # as read
            data = self._stream.readline(limit)
            text = self._decode(data, not data)
            if text or not data:
                return text

    def readlines(self, hint=-1):
        return list(self)

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def _seekable_or_fail(self):
        if not self._seekable:
            raise OSError(errno.ESPIPE, "seek and tell not supported on a streamed state file")

    def seek(self, offset, whence=0):
        self._seekable_or_fail()
        if self._decoder:
            self._decoder.reset()
        self._stream.seek(offset, whence)
        return self._stream.tell()

    def tell(self):
        self._seekable_or_fail()
        return self._stream.tell()

    def seekable(self):
        return self._seekable

    def readable(self):
        return True

    def _end(self, commit):
        if not self.closed:
            self.closed = True
            self._stream.close()
            if self._conn:
                self._conn.close()


class _WriteFile(_StateIO):
    def writable(self):
        return True

    def _bytes(self, data):
        return data.encode(*self._codec) if self._codec and isinstance(data, str) else data

    def __del__(self):  # like a file: one dropped unclosed is written
        try:
            self._end(True)
        except Exception:
            pass


class _BufferedWriteFile(_WriteFile):
    """Writes held in a spooled file, one PUT on close (If-None-Match: * when
    exclusive); nothing is written if the with block raises."""

    def __init__(self, sock_path, key, text_mode=False, encoding=None, exclusive=False, errors=None):
        self._sock, self._key, self.name, self._exclusive = sock_path, key, key, exclusive
        self._codec = (encoding or "utf-8", errors or "strict") if text_mode else None
        self._buf = tempfile.SpooledTemporaryFile(SPOOL_SIZE)

    def write(self, data):
        self._buf.write(self._bytes(data))
        return len(data)

    def seek(self, offset, whence=0):
        self._buf.seek(offset, whence)
        return self._buf.tell()

    def tell(self):
        return self._buf.tell()

    def seekable(self):
        return True

    def _end(self, commit):
        if self.closed:
            return
        self.closed = True
        try:
            if commit:
                self._buf.seek(0, 2)
                headers = {"Content-Length": str(self._buf.tell())}
                if self._exclusive:
                    headers["If-None-Match"] = "*"
                self._buf.seek(0)
                _ask(self._sock, "PUT", _url(self._key), self.name, self._buf, headers)
        finally:
            self._buf.close()


class _PassthroughWriteFile(_WriteFile):
    """Each write sent at once, a chunk of one chunked PUT that close ends;
    if the with block raises, the PUT is cut off unended."""

    def __init__(self, sock_path, key, text_mode=False, encoding=None, errors=None):
        self._key = self.name = key
        self._codec = (encoding or "utf-8", errors or "strict") if text_mode else None
        self.closed, self._conn = True, _UnixHTTPClient(sock_path)  # closed until the PUT is begun
        self._conn.putrequest("PUT", _url(key))
        self._conn.putheader("Transfer-Encoding", "chunked")
        self._conn.endheaders()
        self.closed = False

    def write(self, data):
        chunk = bytes(self._bytes(data))
        if self.closed:
            raise ValueError("I/O operation on closed file")
        if chunk:  # an empty chunk would end the body
            self._conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        return len(data)

    def seek(self, *_):
        raise OSError(errno.ESPIPE, "seek not supported on a passthrough state file")

    tell = seek

    def _end(self, commit):
        if self.closed:
            return
        self.closed = True
        try:
            if commit:
                self._conn.send(b"0\r\n\r\n")
                resp = self._conn.getresponse()
                _raise_for_status(resp, self.name)
                resp.read()
        finally:
            self._conn.close()


def _open_read(sock_path, key, text_mode, encoding=None, errors=None):
    """The key open for reading: spooled whole if its length is given, else streamed."""
    conn, resp = _send(sock_path, "GET", _url(key), key)
    if resp.getheader("Content-Length") is None:
        return _StateFile(resp, False, text_mode, encoding, errors, conn)
    try:
        buf = tempfile.SpooledTemporaryFile(SPOOL_SIZE)
        shutil.copyfileobj(resp, buf)
        buf.seek(0)
    finally:
        conn.close()
    return _StateFile(buf, True, text_mode, encoding, errors)


def _open_write(sock_path, key, write_mode, text_mode, exclusive=False, encoding=None, errors=None):
    if exclusive or write_mode == "buffered":
        return _BufferedWriteFile(sock_path, key, text_mode, encoding, exclusive, errors)
    return _PassthroughWriteFile(sock_path, key, text_mode, encoding, errors)


def _install_state_proxy_hooks(spec):
    """Routes open, os.stat, os.lstat, os.listdir, os.remove, os.unlink,
    os.makedirs and the user.asya.* xattrs under spec's mounts to their
    connectors; everything else, and an empty spec, is left alone."""
    mounts = _parse_state_proxy_mounts(spec)
    if not mounts:
        return
    import builtins
    log.info("state mounts: %s", ", ".join("%s at %s (%s)" % (m["name"], m["path"], m["socket"]) for m in mounts))
    real_open = builtins.open
    real = {n: getattr(os, n, None) for n in ("stat", "lstat", "listdir", "unlink", "remove", "makedirs",
                                               "getxattr", "listxattr", "setxattr")}

    def state_open(file, mode="r", *args, **kwargs):
        mount, key = _resolve_mount(file, mounts)
        if mount is None:
            return real_open(file, mode, *args, **kwargs)
        if not key or os.fsdecode(os.fspath(file)).endswith("/"):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), file)
        opts = dict(zip(("buffering", "encoding", "errors"), args), **kwargs)
        sock, text, codec = mount["socket"], "b" not in mode, (opts.get("encoding"), opts.get("errors"))
        if "r" in mode or not any(c in mode for c in "wax"):
            f = _open_read(sock, key, text, *codec)
        elif "a" in mode:  # a key is written whole: what it holds, then the writes
            f = _BufferedWriteFile(sock, key, text, codec[0], False, codec[1])
            try:
                old = _open_read(sock, key, False)
            except FileNotFoundError:
                pass
            else:
                with old:
                    shutil.copyfileobj(old, f._buf)
        else:
            f = _open_write(sock, key, mount["write_mode"], text, "x" in mode, *codec)
        f.name = file
        return f

    def stat_via(real_stat):
        def state_stat(path, *args, **kwargs):
            mount, key = _resolve_mount(path, mounts)
            if mount is None:
                return real_stat(path, *args, **kwargs)
            size, is_file = 0, False  # the mount itself is a directory
            if key:
                def check(resp, key):
                    if resp.status == 404:
                        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
                    _raise_for_status(resp, key)
                resp, _ = _ask(mount["socket"], "HEAD", _url(key), key, check=check)
                size = int(resp.getheader("Content-Length") or 0)
                is_file = (resp.getheader("X-Is-File") or "true").lower() == "true"
            mode = stat.S_IFREG | 0o644 if is_file else stat.S_IFDIR | 0o755
            return os.stat_result((mode, 0, 0, 1, os.getuid(), os.getgid(), size, 0, 0, 0))
        return state_stat

    def state_listdir(path="."):
        mount, key = _resolve_mount(path, mounts)
        if mount is None:
            return real["listdir"](path)
        prefix = key + "/" if key else ""
        query = "?prefix=%s&delimiter=/" % urllib.parse.quote(prefix, safe="/")
        listing = json.loads(_ask(mount["socket"], "GET", "/keys/" + query, prefix)[1])
        names = (n[len(prefix):] if n.startswith(prefix) else n for n in listing.get("keys", []) +
                 listing.get("prefixes", []))
        names = list(dict.fromkeys(n.rstrip("/") for n in names if n.rstrip("/")))
        return [os.fsencode(n) for n in names] if isinstance(path, bytes) else names

    def unlink_via(real_unlink):
        def state_unlink(path, *args, **kwargs):
            mount, key = _resolve_mount(path, mounts)
            if mount is None:
                return real_unlink(path, *args, **kwargs)
            _ask(mount["socket"], "DELETE", _url(key), key)
        return state_unlink

    def state_makedirs(name, mode=0o777, exist_ok=False):
        if _resolve_mount(name, mounts)[0] is None:  # under a mount: directories are implied by keys
            return real["makedirs"](name, mode, exist_ok)

    def xattr_target(path, attribute):
        attribute = os.fsdecode(attribute)
        if attribute.startswith(XATTR_PREFIX):
            mount, key = _resolve_mount(path, mounts)
            if mount is not None:
                bare = attribute[len(XATTR_PREFIX):]
                url = _url(key, "/meta/") + "?attr=" + urllib.parse.quote(bare, safe="")

                def check(resp, key):
                    if resp.status in (400, 403):
                        resp.read()  # read, so that the connector's write of it cannot fail
                        cls, code, why = (OSError, errno.ENODATA, "not supported") if resp.status == 400 else (
                            PermissionError, errno.EACCES, "read-only")
                        raise cls(code, "Attribute is %s: %s" % (why, bare), path)
                    _raise_for_status(resp, key)
                return mount["socket"], url, key, check
        return None

    def real_xattr(name, *args, **kwargs):
        if real[name] is None:
            raise OSError(errno.ENOTSUP, "Extended attributes not supported")
        return real[name](*args, **kwargs)

    def state_getxattr(path, attribute, *args, **kwargs):
        target = xattr_target(path, attribute)
        if target is None:
            return real_xattr("getxattr", path, attribute, *args, **kwargs)
        sock, url, key, check = target
        return json.loads(_ask(sock, "GET", url, key, check=check)[1])["value"].encode("utf-8")

    def state_setxattr(path, attribute, value, *args, **kwargs):
        target = xattr_target(path, attribute)
        if target is None:
            return real_xattr("setxattr", path, attribute, value, *args, **kwargs)
        sock, url, key, check = target
        body = json.dumps({"value": os.fsdecode(value)}).encode("utf-8")
        _ask(sock, "PUT", url, key, body, {"Content-Type": "application/json"}, check)

    def state_listxattr(path=None, *args, **kwargs):
        mount, key = _resolve_mount(path, mounts)
        if mount is None:
            return real["listxattr"](path, *args, **kwargs) if real["listxattr"] else []
        return [XATTR_PREFIX + a for a in json.loads(_ask(mount["socket"], "GET", _url(key, "/meta/"), key)[1])["attrs"]]

    builtins.open = state_open
    os.stat, os.lstat, os.listdir, os.makedirs = stat_via(real["stat"]), stat_via(real["lstat"]), state_listdir, state_makedirs
    os.unlink, os.remove = unlink_via(real["unlink"]), unlink_via(real["remove"])
    os.getxattr, os.setxattr, os.listxattr = state_getxattr, state_setxattr, state_listxattr


# ---- main ----

def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def main():
    level = getattr(logging, (env("ASYA_LOG_LEVEL") or "INFO").strip().upper(), None)
    logging.basicConfig(stream=sys.stderr, level=level if isinstance(level, int) else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:  # before the handler loads: its constructor may read state
        _install_state_proxy_hooks(env("ASYA_STATE_PROXY_MOUNTS") or "")
    except ValueError as e:
        return _fail("ASYA_STATE_PROXY_MOUNTS: %s" % e)
    limit = env("ASYA_MAX_MESSAGE_SIZE") or str(DEFAULT_MAX_MESSAGE_SIZE)
    if not limit.isdigit():
        return _fail("ASYA_MAX_MESSAGE_SIZE must be a number of bytes, got %r" % limit)
    _remove(READY_PATH)  # it must not announce a handler not loaded yet
    handler = _load_function()
    # Before the socket exists: no signal may leave it behind.
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    try:
        os.makedirs(SOCKET_DIR, exist_ok=True)
        server = _UnixHTTPServer(SOCKET_PATH, _InvokeHandler)
    except (OSError, ValueError) as e:
        return _fail("cannot listen on %s: %s" % (SOCKET_PATH, e))
    server.user_func, server.max_message_size = handler, int(limit)
    try:
        with open(READY_PATH, "w") as f:
            f.write("ready")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        log.info("serving %s on %s", ASYA_HANDLER, SOCKET_PATH)
        stop.wait()
        log.info("shutting down")
        server.shutdown()
    finally:
        _remove(READY_PATH)
        server.server_close()
    return 0  # once the calls in hand have finished


if __name__ == "__main__":
    sys.exit(main())
