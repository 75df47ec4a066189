# SPDX-License-Identifier: BSD-3-Clause
"""Real marionette-server processes for the Python tests: started on a free loopback port,
their JSON-lines log gathered, stopped by signal; and the grpc.health.v1 messages by hand."""
import os
import re
import signal
import subprocess
import threading

SERVING, NOT_SERVING = 1, 2  # grpc.health.v1.HealthCheckResponse.ServingStatus


def start_server(build, *args):
    """marionette-server on a free loopback port with `args`: (process, "127.0.0.1:PORT"); its
    log lines gather in process.log (drained, so that it never blocks on a full pipe)."""
    return start_server_command([os.path.join(build, "bin", "marionette-server"), "--listen",
                                 "127.0.0.1:0", *args])


def start_server_command(command):
    """start_server for a whole command line (an installed server, run as some user): it must
    listen on a free port (--listen HOST:0)."""
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"\(port (\d+)\)", line)
    if not m:
        proc.kill()
        raise AssertionError(f"the server did not start: {line}{proc.stderr.read()}")
    proc.log = [line]
    proc.drain = threading.Thread(target=lambda: proc.log.extend(proc.stderr), daemon=True)
    proc.drain.start()
    return proc, f"127.0.0.1:{m.group(1)}"


def stop_server(proc, sig=signal.SIGTERM):
    """`sig` (SIGKILL after 30 s) unless it has already gone; returns its exit status once its
    log is read to the end."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    proc.drain.join(timeout=30)
    proc.stderr.close()
    return proc.returncode


def health_request(service):
    """grpc.health.v1.HealthCheckRequest {service} (field 1, a string of fewer than 128 bytes:
    its length is one byte)."""
    name = service.encode()
    return b"\x0a" + bytes([len(name)]) + name if name else b""


def health_status(reply):
    """The status of a serialized HealthCheckResponse (field 1, a varint; absent = UNKNOWN)."""
    return reply[1] if len(reply) >= 2 and reply[0] == 0x08 else 0


def check_health(channel, service, timeout=5):
    call = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=None,
                               response_deserializer=None)
    return health_status(call(health_request(service), timeout=timeout))


def watch_health(channel, service):
    """The Watch stream: an iterator of statuses (cancel() ends it)."""
    return channel.unary_stream("/grpc.health.v1.Health/Watch", request_serializer=None,
                                response_deserializer=None)(health_request(service))
