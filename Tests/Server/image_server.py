#!/usr/bin/env python3
"""A loopback HTTP server for the AsyncImageCache tests, which misbehaves on purpose at special paths.

Usage: python3 image_server.py <directory>

It listens on 127.0.0.1 on an ephemeral port, prints that port as the first line of stdout, and serves
until stdin reaches end-of-file, its parent process goes away, or it is killed. It never logs requests.
Python 3 standard library only.

Routes (<name> is a file name inside <directory>; no subfolders, no "..")
  GET /images/<name>                 the file, Content-Type from its extension, Content-Length.
  GET /status/<code>                 status <code> with a small HTML body.
  GET /slow/<ms>/<route>             sleeps <ms> milliseconds before sending anything, then serves
                                     /<route>, e.g. /slow/3000/images/a.jpg.
  GET /held/<key>/<route>            sends nothing until the test releases <key> (GET /__release/<key>),
                                     then serves /<route>: a response pending for exactly as long as
                                     a test needs, however slow the machine.
  GET /held-conditional/<key>/<route>
                                     /<route> at once to a request without validators; one that carries
                                     If-None-Match or If-Modified-Since (a revalidation) gets nothing
                                     until the test releases <key>: a server that answers downloads
                                     and never its revalidations.
  GET /held-first/<key>/<route>      the first request of the path gets the response /<route> gives at
                                     once (the file as it is then), sent only once the test releases
                                     <key>; later requests get /<route> at once: a download that read
                                     the old file and arrives after the new one was served.
  GET /interim/<code>/<route>        an informational response <code> (1xx: 103 Early Hints with a Link
                                     header, 100 Continue), then /<route> as the final response.
  GET /truncated/images/<name>       announces the file's full Content-Length, sends the first half,
                                     closes the connection.
  GET /chunked-with-length/images/<name>
                                     the whole file in chunked transfer encoding, with a Content-Length
                                     of twice its size as well, which the chunking overrides (RFC 9112
                                     6.3).
  GET /html-as-jpeg                  an HTML page labelled Content-Type: image/jpeg.
  GET /oversized/<bytes>             <bytes> bytes with Content-Length.
  GET /oversized-stream/<bytes>      <bytes> bytes without Content-Length (chunked transfer encoding).
                                     Both write 16 KiB chunks with a 1 ms sleep between them.
                                     Both oversized routes stop when the client disconnects and record
                                     how many body bytes they handed to the socket (see /__sent).
  GET /etag/images/<name>            the file with an ETag and Cache-Control: max-age=60; answers
                                     304 Not Modified to a matching If-None-Match.
  GET /redirect/<route>              302 Found to /<route>.
  GET /cache/<directives>/images/<name>
                                     the file with Cache-Control: <directives> (e.g. no-store, no-cache,
                                     max-age=3600; "-" sends none), an ETag (hash of the bytes) and
                                     Last-Modified (the file's mtime); answers 304 to a matching
                                     If-None-Match, or without one to an If-Modified-Since not older
                                     than the file.
  GET /cache-lm/<directives>/images/<name>
                                     the same without an ETag (Last-Modified only).
  GET /cache-plain/<directives>/images/<name>
                                     the same with neither ETag nor Last-Modified: a server that
                                     cannot validate, and sends the whole file every time.
  GET /cache-plain-then/<first>/<then>/images/<name>
                                     as /cache-plain, with Cache-Control: <first> on the first request
                                     of the path and <then> on every later one: a server whose
                                     directives change while its bytes do not.
  GET /cache-then/<first>/<then>/images/<name>
                                     as /cache (ETag and Last-Modified, 304s), with Cache-Control:
                                     <first> on the first request of the path and <then> on every later
                                     one, 304s included.
  GET /cache-bare304/<directives>/images/<name>
                                     as /cache, but its 304 carries no Cache-Control (only the
                                     validators), as many servers answer.
  GET /cache-length304/<directives>/images/<name>
                                     as /cache, but its 304 carries the Content-Length of the 200
                                     (no body), as RFC 9110 8.6 allows.
  GET /cache-age/<seconds>/<directives>/images/<name>
                                     as /cache, with an Age header of <seconds>, as a CDN that has
                                     kept the response that long sends it.
  GET /cache-expires/<when>/images/<name>
                                     as /cache with no Cache-Control, but an Expires header: +<s> or
                                     -<s> seconds from now, or <when> as written (e.g. 0).
  GET /cache-fields/<first>/<then>/images/<name>
                                     the file with an ETag and Last-Modified, and the header fields
                                     <first>; answers every conditional request with a 304 that carries
                                     the ETag and the fields <then>, which may replace it. Each is "-"
                                     for none, or Name=value pairs joined by ";", the values
                                     percent-decoded, an Expires or Date of +<s> or -<s> seconds from now
                                     as at /cache-expires (e.g. Cache-Control=max-age=60;Expires=+3600).
                                     A Date given takes the place of the server's own.
  GET /cache-status/<code>/<directives>/images/<name>
                                     the file with status <code> (a 2xx), and Cache-Control:
                                     <directives> ("-" for none); no validators.
  GET /redirect-to/<code>?<location>
                                     status <code> (a 3xx) with Location: <location>, the query
                                     percent-decoded: any URL, e.g. ?file%3A%2F%2F%2Fetc%2Fpasswd.
  GET /redirect-cache/<code>/<directives>/<route>
                                     status <code> (a 3xx) with Cache-Control: <directives> ("-" sends
                                     none) and Location: /<route>.
  GET /redirect-body/<code>/<route> status <code> (a 3xx) to /<route> with a 2 KB HTML body, as many servers
                                     send one ("Moved: click here").
  GET /redirect-then/<code>/<directives>?<first>&<then>
                                     status <code> (a 3xx) with Cache-Control: <directives> ("-" sends
                                     none) and Location: <first> (percent-decoded) on the first request
                                     of the path and query, <then> on every later one: a redirect whose
                                     target changes, as /avatar/42 does when the user picks another.
  GET /redirect-once/<code>/<route>?<first>
                                     status <code> (a 3xx, no Cache-Control) with Location: <first>
                                     (percent-decoded) on the first request of the path and query, then
                                     /<route> itself: a URL that led elsewhere and now serves an image.
  GET /bounce                        302 Found to /bounce on the other name of this server: to localhost
                                     when asked as 127.0.0.1, else to 127.0.0.1; a redirect loop between
                                     two hosts that never ends.
  GET /bare/<code>                   status <code> with neither Location nor body (Content-Length: 0).
  GET /trickle/<ms>/<code>[?<location>]
                                     status <code> (with Location: <location>, percent-decoded, when
                                     given) and a chunked body of 64 bytes every <ms> milliseconds that
                                     never ends: a server that stays just inside every inactivity
                                     timeout. It records the bytes sent (see /__sent) and, once the
                                     client hangs up, that it did (see /__ended).
  GET /partial/images/<name>         206 Partial Content with the first half of the file and its
                                     Content-Range, to a request that asked no Range.
  GET /alias/<n>/images/<name>       the file <name>, as /images/<name> serves it: one file under as
                                     many distinct URLs as a test needs (counted per full path).
  GET /long-etag/<bytes>/<key>/images/<name>
                                     the file with Cache-Control: max-age=3600 and an ETag <bytes>
                                     long that starts with <key>: validators as long as a header
                                     line may be, one per URL.
  GET /malformed/<kind>/images/<name>
                                     the file <name> behind a response header that URLSession on
                                     Linux cannot read, written as raw bytes and the connection then
                                     closed: <kind> is no-reason (a status line without its reason
                                     phrase), bare-lf (lines ended by LF alone), latin1 (a header
                                     value in Latin-1) or huge (a 200 KB header line); well-formed
                                     writes the same response the right way.
  GET /negotiate/<stem>              content negotiation as image CDNs do it: <stem>.webp when the
                                     request's Accept lists image/webp, else <stem>.jpg; Vary: Accept.
  GET /gzip/images/<name>            the file gzip-compressed, with Content-Encoding: gzip and the
                                     compressed Content-Length, whatever the request's Accept-Encoding.
  GET /gzip-zeros/<code>/<mebibytes> status <code> with a gzip body (Content-Encoding: gzip) that
                                     decompresses to <mebibytes> MiB of zeros, about 1 KB per MiB: a
                                     compression bomb. Made once per size and kept.

Control routes (not counted as hits)
  GET /__hits                        JSON {path: count} of every request so far, query strings removed.
  GET /__sent                        JSON {path: bytes} of body bytes sent by the oversized routes.
  GET /__ended                       JSON {path: true} of the /trickle paths whose client hung up.
  GET /__statuses                    JSON {path: [status, ...]} of the statuses the /cache routes sent.
  GET /__accepts                     JSON {path: [accept, ...]} of the Accept headers of every request
                                     ("" for none), control routes not included.
  GET /__accept-encodings            the same for the Accept-Encoding headers.
  GET /__reset                       clears every table.
  GET /__release/<key>               lets the /held/<key>/ requests go, those waiting and later ones.
  GET /__made                        JSON {key: true} of the /held-first/<key>/ responses made (and held).
"""

import email.utils
import gzip
import hashlib
import io
import http.server
import json
import mimetypes
import os
import sys
import threading
import time
import urllib.parse
import zlib

# The oversized routes write 16 KiB per millisecond at most (~16 MB/s), so a client that hangs up
# a moment late still shows in /__sent as having stopped far short of the whole body.
CHUNK = 16 * 1024
CONTENT_TYPES = {
    ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif",
    ".webp": "image/webp", ".bmp": "image/bmp", ".svg": "image/svg+xml", ".txt": "text/plain",
}


class State:
    """The counters the control routes report, shared by every handler thread."""

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.lock = threading.Lock()
        self.hits = {}
        self.sent = {}
        self.ended = {}
        self.statuses = {}
        self.accepts = {}
        self.accept_encodings = {}
        self.releases = {}
        self.firsts = set()
        self.made = {}
        self.bombs = {}

    def release_event(self, key):
        """The event that lets /held/<key>/ requests go, made on first use by either side."""
        with self.lock:
            return self.releases.setdefault(key, threading.Event())

    def claim_first(self, path):
        """Whether this is the first request of `path`."""
        with self.lock:
            first = path not in self.firsts
            self.firsts.add(path)
            return first

    def record_made(self, key):
        with self.lock:
            self.made[key] = True

    def record_accept(self, path, accept, accept_encoding):
        with self.lock:
            self.accepts.setdefault(path, []).append(accept)
            self.accept_encodings.setdefault(path, []).append(accept_encoding)

    def bomb(self, mebibytes):
        """A gzip stream of <mebibytes> MiB of zeros, made once per size (under the lock: two requests
        for one size make it once)."""
        with self.lock:
            if mebibytes not in self.bombs:
                compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
                zeros = bytes(1 << 20)
                parts = [compressor.compress(zeros) for _ in range(mebibytes)]
                self.bombs[mebibytes] = b"".join(parts) + compressor.flush()
            return self.bombs[mebibytes]

    def record_status(self, path, code):
        with self.lock:
            self.statuses.setdefault(path, []).append(code)

    def record_hit(self, path):
        with self.lock:
            self.hits[path] = self.hits.get(path, 0) + 1

    def record_sent(self, path, count):
        with self.lock:
            self.sent[path] = count

    def record_ended(self, path):
        with self.lock:
            self.ended[path] = True

    def snapshot(self, table):
        with self.lock:
            return {key: (list(value) if isinstance(value, list) else value) for key, value in getattr(self, table).items()}

    def reset(self):
        with self.lock:
            self.hits.clear()
            self.sent.clear()
            self.ended.clear()
            self.statuses.clear()
            self.accepts.clear()
            self.accept_encodings.clear()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "AsyncImageCacheTestServer/1"

    def log_message(self, format, *args):
        pass  # Quiet: the test output is for the tests.

    @property
    def state(self):
        return self.server.state

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path.startswith("/__"):
            self.control(path)
            return
        self.state.record_hit(path)
        self.state.record_accept(path, self.headers.get("Accept", ""), self.headers.get("Accept-Encoding", ""))
        try:
            self.route(path)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def control(self, path):
        if path == "/__hits":
            self.send_json(self.state.snapshot("hits"))
        elif path == "/__statuses":
            self.send_json(self.state.snapshot("statuses"))
        elif path == "/__ended":
            self.send_json(self.state.snapshot("ended"))
        elif path == "/__sent":
            self.send_json(self.state.snapshot("sent"))
        elif path == "/__made":
            self.send_json(self.state.snapshot("made"))
        elif path == "/__accepts":
            self.send_json(self.state.snapshot("accepts"))
        elif path == "/__accept-encodings":
            self.send_json(self.state.snapshot("accept_encodings"))
        elif path.startswith("/__release/") and len(path) > len("/__release/"):
            self.state.release_event(path[len("/__release/"):]).set()
            self.send_json({})
        elif path == "/__reset":
            self.state.reset()
            self.send_json({})
        else:
            self.send_status(404)

    def route(self, path):
        parts = path.strip("/").split("/")
        head, rest = parts[0], parts[1:]
        if head == "images" and len(rest) == 1:
            self.send_file(rest[0])
        elif head == "status" and len(rest) == 1 and rest[0].isdigit():
            self.send_status(int(rest[0]))
        elif head == "held" and len(rest) >= 2:
            self.state.release_event(rest[0]).wait()
            self.route("/" + "/".join(rest[1:]))
        elif head == "held-conditional" and len(rest) >= 2:
            if self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since"):
                self.state.release_event(rest[0]).wait()
            self.route("/" + "/".join(rest[1:]))
        elif head == "held-first" and len(rest) >= 2:
            if self.state.claim_first(path):
                # Made now, into a buffer, and sent as it was made once <key> is released.
                socket_file, self.wfile = self.wfile, io.BytesIO()
                try:
                    self.route("/" + "/".join(rest[1:]))
                finally:
                    made, self.wfile = self.wfile.getvalue(), socket_file
                self.state.record_made(rest[0])
                self.state.release_event(rest[0]).wait()
                self.wfile.write(made)
                self.wfile.flush()
            else:
                self.route("/" + "/".join(rest[1:]))
        elif head == "interim" and len(rest) >= 2 and rest[0].isdigit():
            # An informational response first (103 Early Hints, an unasked-for 100 Continue), then /<route>.
            self.send_response_only(int(rest[0]))
            if rest[0] == "103":
                self.send_header("Link", "</images/preload.css>; rel=preload; as=style")
            self.end_headers()
            self.wfile.flush()
            self.route("/" + "/".join(rest[1:]))
        elif head == "slow" and len(rest) >= 2 and rest[0].isdigit():
            time.sleep(int(rest[0]) / 1000)
            self.route("/" + "/".join(rest[1:]))
        elif head == "truncated" and rest[:1] == ["images"] and len(rest) == 2:
            self.send_file(rest[1], truncate=True)
        elif head == "chunked-with-length" and rest[:1] == ["images"] and len(rest) == 2:
            self.send_file(rest[1], chunked_with_length=True)
        elif head == "announced" and len(rest) == 1 and rest[0].isdigit():
            # A Content-Length of <n> bytes, of which only the three that start a JPEG come before the
            # server hangs up.
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", rest[0])
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"\xff\xd8\xff")
            self.wfile.flush()
            self.close_connection = True
        elif head == "bad-length" and rest[:1] == ["images"] and len(rest) == 2:
            # The first half of the image under the Content-Length the query gives (url-encoded, sent as
            # it is, whatever it says), then the server hangs up.
            found = self.read_served_file(rest[1])
            if found is not None:
                query = self.path.split("?", 1)[1] if "?" in self.path else ""
                self.send_response(200)
                self.send_header("Content-Type", "image/jpeg")
                self.send_header("Content-Length", urllib.parse.unquote(query))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(found[1][: len(found[1]) // 2])
                self.wfile.flush()
                self.close_connection = True
        elif head == "html-as-jpeg" and not rest:
            self.send_body(200, b"<!doctype html><html><body>Not an image</body></html>\n", "image/jpeg")
        elif head == "oversized" and len(rest) == 1 and rest[0].isdigit():
            self.send_generated(path, int(rest[0]), streamed=False)
        elif head == "oversized-stream" and len(rest) == 1 and rest[0].isdigit():
            self.send_generated(path, int(rest[0]), streamed=True)
        elif head == "etag" and rest[:1] == ["images"] and len(rest) == 2:
            self.send_file(rest[1], etag=True)
        elif head in ("cache", "cache-lm", "cache-plain", "cache-bare304", "cache-length304") and len(rest) == 3 \
                and rest[1] == "images":
            self.send_cacheable(
                path, rest[2], rest[0], with_etag=(head not in ("cache-lm", "cache-plain")),
                with_last_modified=(head != "cache-plain"), bare_304=(head == "cache-bare304"),
                length_304=(head == "cache-length304"))
        elif head in ("cache-plain-then", "cache-then") and len(rest) == 4 and rest[2] == "images":
            directives = rest[0] if self.state.snapshot("hits").get(path, 0) <= 1 else rest[1]
            validates = head == "cache-then"
            self.send_cacheable(path, rest[3], directives, with_etag=validates, with_last_modified=validates)
        elif head == "cache-age" and len(rest) == 4 and rest[0].isdigit() and rest[2] == "images":
            self.send_cacheable(path, rest[3], rest[1], with_etag=True, age=rest[0])
        elif head == "cache-expires" and len(rest) == 3 and rest[1] == "images":
            self.send_cacheable(path, rest[2], "-", with_etag=True, expires=rest[0])
        elif head == "cache-fields" and len(rest) == 4 and rest[2] == "images":
            self.send_with_fields(path, rest[3], rest[0], rest[1])
        elif head == "cache-status" and len(rest) == 4 and rest[0].isdigit() and rest[2] == "images":
            found = self.read_served_file(rest[3])
            if found is not None:
                headers = {} if rest[1] == "-" else {"Cache-Control": urllib.parse.unquote(rest[1])}
                self.state.record_status(path, int(rest[0]))
                self.send_body(int(rest[0]), found[1], "image/jpeg", headers)
        elif head == "alias" and len(rest) == 3 and rest[0].isdigit() and rest[1] == "images":
            self.send_file(rest[2])
        elif head == "long-etag" and len(rest) == 4 and rest[0].isdigit() and rest[2] == "images":
            found = self.read_served_file(rest[3])
            if found is not None:
                tag = '"' + (rest[1] + "-").ljust(int(rest[0]) - 2, "x") + '"'
                headers = {"ETag": tag, "Cache-Control": "max-age=3600"}
                self.send_body(200, found[1], "image/jpeg", headers)
        elif head == "malformed" and len(rest) == 3 and rest[1] == "images":
            self.send_malformed(rest[0], rest[2])
        elif head == "gzip" and rest[:1] == ["images"] and len(rest) == 2:
            found = self.read_served_file(rest[1])
            if found is not None:
                self.send_body(200, gzip.compress(found[1]), "image/jpeg", {"Content-Encoding": "gzip"})
        elif head == "gzip-zeros" and len(rest) == 2 and rest[0].isdigit() and rest[1].isdigit():
            self.send_body(int(rest[0]), self.state.bomb(int(rest[1])), "image/jpeg", {"Content-Encoding": "gzip"})
        elif head == "negotiate" and len(rest) == 1:
            accepted = [part.split(";")[0].strip() for part in self.headers.get("Accept", "").split(",")]
            self.send_file(rest[0] + (".webp" if "image/webp" in accepted else ".jpg"), vary=True)
        elif head == "redirect-to" and len(rest) == 1 and rest[0].isdigit():
            query = self.path.split("?", 1)[1] if "?" in self.path else ""
            self.send_response(int(rest[0]))
            self.send_header("Location", urllib.parse.unquote(query))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif head == "redirect-cache" and len(rest) >= 3 and rest[0].isdigit():
            self.send_response(int(rest[0]))
            if rest[1] != "-":
                self.send_header("Cache-Control", urllib.parse.unquote(rest[1]))
            self.send_header("Location", "/" + "/".join(rest[2:]))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif head == "redirect-body" and len(rest) >= 2 and rest[0].isdigit():
            body = b"<!doctype html><p>Moved <a href='/" + "/".join(rest[1:]).encode() + b"'>here</a></p>" + b" " * 2000
            self.send_response(int(rest[0]))
            self.send_header("Location", "/" + "/".join(rest[1:]))
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif head == "redirect-once" and len(rest) >= 2 and rest[0].isdigit():
            with self.state.lock:
                counts = self.state.__dict__.setdefault("redirect_once", {})
                seen = counts.get(self.path, 0)
                counts[self.path] = seen + 1
            if seen > 0:
                self.route("/" + "/".join(rest[1:]))
                return
            query = self.path.split("?", 1)[1] if "?" in self.path else ""
            self.send_response(int(rest[0]))
            self.send_header("Location", urllib.parse.unquote(query))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif head == "redirect-then" and len(rest) == 2 and rest[0].isdigit():
            query = self.path.split("?", 1)[1] if "?" in self.path else ""
            first, _, then = query.partition("&")
            with self.state.lock:
                counts = self.state.__dict__.setdefault("redirect_then", {})
                seen = counts.get(self.path, 0)
                counts[self.path] = seen + 1
            self.send_response(int(rest[0]))
            if rest[1] != "-":
                self.send_header("Cache-Control", urllib.parse.unquote(rest[1]))
            self.send_header("Location", urllib.parse.unquote(first if seen == 0 else then))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif head == "bounce" and not rest:
            port = self.server.server_address[1]
            other = "localhost" if self.headers.get("Host", "").startswith("127.0.0.1") else "127.0.0.1"
            self.send_response(302)
            self.send_header("Location", "http://%s:%d/bounce" % (other, port))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif head == "bare" and len(rest) == 1 and rest[0].isdigit():
            # <code> alone: no Location, no body (Content-Length: 0).
            self.send_response(int(rest[0]))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif head == "trickle" and len(rest) == 2 and rest[0].isdigit() and rest[1].isdigit():
            query = self.path.split("?", 1)[1] if "?" in self.path else ""
            self.send_trickle(path, int(rest[0]) / 1000, int(rest[1]), urllib.parse.unquote(query))
        elif head == "partial" and len(rest) == 2 and rest[0] == "images":
            found = self.read_served_file(rest[1])
            if found is None:
                return
            body = found[1]
            half = len(body) // 2
            self.send_response(206)
            self.send_header("Content-Range", "bytes 0-%d/%d" % (half - 1, len(body)))
            self.send_header("Content-Length", str(half))
            self.end_headers()
            self.wfile.write(body[:half])
        elif head == "redirect" and rest:
            self.send_response(302)
            self.send_header("Location", "/" + "/".join(rest))
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_status(404)

    def read_served_file(self, name):
        """The modification time (whole seconds) and bytes of <name> in the served folder, both of the one
        file opened (a file renamed into place meanwhile gives neither), or None (after a 404) when there
        is none."""
        file_path = os.path.realpath(os.path.join(self.state.root, name))
        if os.path.dirname(file_path) != self.state.root or not os.path.isfile(file_path):
            self.send_status(404)
            return None
        with open(file_path, "rb") as file:
            return int(os.fstat(file.fileno()).st_mtime), file.read()

    def send_file(self, name, truncate=False, etag=False, vary=False, chunked_with_length=False):
        found = self.read_served_file(name)
        if found is None:
            return
        body = found[1]
        extension = os.path.splitext(name)[1].lower()
        content_type = CONTENT_TYPES.get(extension) or mimetypes.guess_type(name)[0] or "application/octet-stream"
        if chunked_with_length:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Content-Length", str(2 * len(body)))
            self.end_headers()
            for start in range(0, len(body), CHUNK):
                piece = body[start:start + CHUNK]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        if truncate:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        headers = {"Vary": "Accept"} if vary else {}
        if etag:
            tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            headers = {"ETag": tag, "Cache-Control": "max-age=60"}
            if self.headers.get("If-None-Match") == tag:
                self.send_body(304, b"", None, headers)
                return
        self.send_body(200, body, content_type, headers)

    def send_malformed(self, kind, name):
        found = self.read_served_file(name)
        if found is None:
            return
        body = found[1]
        status, end, extra = b"HTTP/1.1 200 OK", b"\r\n", b""
        if kind == "no-reason":
            status = b"HTTP/1.1 200"
        elif kind == "bare-lf":
            end = b"\n"
        elif kind == "latin1":
            extra = b'Content-Disposition: inline; filename="caf\xe9.jpg"'
        elif kind == "huge":
            extra = b"X-Padding: " + b"a" * 200_000
        elif kind != "well-formed":
            self.send_status(404)
            return
        lines = [status, b"Content-Type: image/jpeg", b"Content-Length: %d" % len(body)] + ([extra] if extra else [])
        self.wfile.write(end.join(lines) + end + end + body)
        self.wfile.flush()
        self.close_connection = True

    def send_cacheable(self, path, name, directives, with_etag, with_last_modified=True, bare_304=False,
                       length_304=False, age=None, expires=None):
        found = self.read_served_file(name)
        if found is None:
            return
        modified, body = found
        headers = {"Last-Modified": email.utils.formatdate(modified, usegmt=True)} if with_last_modified else {}
        if directives != "-":
            headers["Cache-Control"] = directives
        tag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if with_etag:
            headers["ETag"] = tag
        if age is not None:
            headers["Age"] = age
        if expires is not None:
            headers["Expires"] = self.relative_date(expires)
        not_modified = False
        if with_etag and self.headers.get("If-None-Match") is not None:
            not_modified = self.headers.get("If-None-Match") == tag
        elif with_last_modified and self.headers.get("If-Modified-Since"):
            since = email.utils.parsedate_to_datetime(self.headers.get("If-Modified-Since")).timestamp()
            not_modified = modified <= since
        code = 304 if not_modified else 200
        if not_modified and bare_304:
            headers.pop("Cache-Control", None)
        if not_modified and length_304:
            # RFC 9110 8.6 lets a 304 state the length a 200 would have had; it has no body all the same.
            headers["Content-Length"] = str(len(body))
        self.state.record_status(path, code)
        content_type = CONTENT_TYPES.get(os.path.splitext(name)[1].lower(), "application/octet-stream")
        self.send_body(code, b"" if not_modified else body, None if not_modified else content_type, headers)

    def send_with_fields(self, path, name, first, then):
        found = self.read_served_file(name)
        if found is None:
            return
        modified_time, body = found
        modified = email.utils.formatdate(modified_time, usegmt=True)
        headers = {"ETag": '"' + hashlib.sha256(body).hexdigest()[:16] + '"'}
        not_modified = "If-None-Match" in self.headers or "If-Modified-Since" in self.headers
        if not not_modified:
            headers["Last-Modified"] = modified
        fields = then if not_modified else first
        for field in [] if fields == "-" else fields.split(";"):
            key, _, value = field.partition("=")
            value = urllib.parse.unquote(value)
            if key.lower() in ("expires", "date"):
                value = self.relative_date(value)
            headers[key] = value
        code = 304 if not_modified else 200
        self.state.record_status(path, code)
        content_type = CONTENT_TYPES.get(os.path.splitext(name)[1].lower(), "application/octet-stream")
        self.send_body(code, b"" if not_modified else body, None if not_modified else content_type, headers)

    @staticmethod
    def relative_date(value):
        """An HTTP date <s> seconds from now for +<s> or -<s>; any other value as it is."""
        offset = value.lstrip("+-")
        if offset.isdigit() and value[:1] in "+-":
            when = time.time() + (int(offset) if value[0] == "+" else -int(offset))
            return email.utils.formatdate(when, usegmt=True)
        return value

    def send_status(self, code):
        body = f"<!doctype html><html><body><h1>{code}</h1></body></html>\n".encode()
        self.send_body(code, body, "text/html; charset=utf-8")

    def send_json(self, value):
        self.send_body(200, json.dumps(value, sort_keys=True).encode(), "application/json")

    def send_body(self, code, body, content_type, headers=None):
        if "Date" in (headers or {}):
            # The caller's Date only: send_response would add the server's own beside it.
            self.send_response_only(code)
        else:
            self.send_response(code)
        if content_type:
            self.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if code != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_generated(self, path, total, streamed):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if streamed:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(total))
        self.end_headers()
        chunk = bytes(range(256)) * (CHUNK // 256)
        sent = 0
        self.state.record_sent(path, 0)
        try:
            while sent < total:
                piece = chunk[: min(CHUNK, total - sent)]
                if streamed:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    self.wfile.write(piece)
                time.sleep(0.001)
                self.wfile.flush()
                sent += len(piece)
                self.state.record_sent(path, sent)
            if streamed:
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def send_trickle(self, path, interval, code, location):
        self.send_response(code)
        self.send_header("Content-Type", "image/jpeg")
        if location:
            self.send_header("Location", location)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        piece = bytes(range(64))
        sent = 0
        self.state.record_sent(path, 0)
        try:
            while True:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                sent += len(piece)
                self.state.record_sent(path, sent)
                time.sleep(interval)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self.state.record_ended(path)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # Clients that hang up early are part of the tests, not errors worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def exit_when_orphaned():
    """Ends the process when stdin closes or the parent process dies, whichever comes first."""
    parent = os.getppid()

    def watch_stdin():
        try:
            while sys.stdin.buffer.read1(4096):
                pass
        except (OSError, ValueError):
            pass
        os._exit(0)

    def watch_parent():
        # A pipe's write end can leak into a sibling process, so stdin alone may never close.
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    threading.Thread(target=watch_parent, daemon=True).start()


def close_inherited_descriptors():
    """Closes every descriptor but stdin, stdout and stderr that this process inherited.

    Foundation's Process on Linux does not make the pipes and the socket it gives a child close on exec,
    so one test spawning a process while another spawns this server could leak them here. The other
    child's parent then waited for them to close, which they did only when this server stopped: a test
    blocked in waitUntilExit() (spinning a core) for as long as another server ran, or for ever when
    that server's own test was waiting behind it on the main actor.

    Start this script with posix_spawn, not Foundation's Process, which gives a child one of those
    sockets on purpose and learns of its exit when it closes: closed here, Foundation would take the
    server for gone and wait in waitpid() on its one thread for every child, until the server ended.
    """
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return
    for name in names:
        if name.isdigit() and int(name) > 2:
            try:
                os.close(int(name))
            except OSError:
                pass  # the listing's own descriptor, already closed


def main():
    close_inherited_descriptors()
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: image_server.py <directory>", file=sys.stderr)
        sys.exit(2)
    server = Server(("127.0.0.1", 0), Handler)
    server.state = State(sys.argv[1])
    exit_when_orphaned()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
