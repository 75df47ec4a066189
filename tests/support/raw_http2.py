# SPDX-License-Identifier: BSD-3-Clause
"""A gRPC call written as raw HTTP/2 frames (RFC 9113, HPACK literals of RFC 7541 §6.2.2), for
the clients no library lets one write: one that sets its stream window to 0 and never reads."""
import socket
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS = 0x0, 0x1, 0x4
END_STREAM, END_HEADERS = 0x1, 0x4
SETTINGS_INITIAL_WINDOW_SIZE = 0x4


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def literal(name, value):
    """A header field as a literal without indexing, its name new (no Huffman coding)."""
    def string(s):
        data = s.encode()
        assert len(data) < 127
        return bytes([len(data)]) + data
    return b"\x00" + string(name) + string(value)


def grpc_message(body):
    """A length-prefixed, uncompressed gRPC message."""
    return b"\x00" + struct.pack(">I", len(body)) + body


def open_call(target, path, request_bytes, window=0, metadata=()):
    """Opens a connection to target ("host:port"), tells the server the client's stream window
    is `window` bytes, and sends one whole call of `path` with `request_bytes` (a serialized
    message), no deadline.  Returns the socket: nothing is ever read from it."""
    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    settings = struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, window)
    headers = b"".join(literal(n, v) for n, v in (
        (":method", "POST"), (":scheme", "http"), (":path", path), (":authority", target),
        ("content-type", "application/grpc"), ("te", "trailers"), *metadata))
    sock.sendall(PREFACE + frame(SETTINGS, 0, 0, settings) +
                 frame(HEADERS, END_HEADERS, 1, headers) +
                 frame(DATA, END_STREAM, 1, grpc_message(request_bytes)))
    return sock
