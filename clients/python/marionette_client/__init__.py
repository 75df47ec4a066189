# SPDX-License-Identifier: BSD-3-Clause
"""A Python client for marionette-server (the marionette.v1.Planner gRPC service).

Uses Debian's python3-grpcio and python3-protobuf, and the stubs generated from
proto/marionette/v1/planner.proto: by `pip install clients/python` (docs/install.md), or by the
project's build into build/python (put that folder on PYTHONPATH; the build copies this package
there too).

    from marionette_client import Client, parse_goal
    with Client("127.0.0.1:50051") as c:          # or "a:50051,b:50051", or "dns:///name:50051"
        plan = c.plan("puppetcopter", parse_goal("point:hand_l=0.05,0.24,0.40;radius=0.04"),
                      scene="table", planner="est", time_limit=30, seed=1)
        for t, values in input_rows(plan):
            ...

Several servers ("a:1,b:2,c:3", or a dns: name that resolves to many) are balanced with gRPC's
round_robin and health checking, and calls that fail UNAVAILABLE (a server gone or draining) are
sent again elsewhere (service_config.json, shared with the C++ clients; docs/fleet.md).

Errors are grpc.RpcError with the server's status code and a message naming the field.
Units are SI (m, rad, s, N, J); points in stage coordinates (floor at z = 0).
"""

import math
import os
import socket
import time

import grpc

from marionette.v1 import planner_pb2 as pb
from marionette.v1 import planner_pb2_grpc as pb_grpc

from ._version import __version__

__all__ = ["Client", "parse_goal", "input_rows", "channel_target", "pb", "OUTCOMES",
           "__version__"]

OUTCOMES = {pb.OUTCOME_EXACT: "exact", pb.OUTCOME_APPROXIMATE: "approximate",
            pb.OUTCOME_NOT_FOUND: "not-found"}


def _number(text, what):
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what}: '{text}' is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{what}: '{text}' is not finite")
    return value


def parse_goal(text):
    """A pb.Goal from the CLI's --goal syntax: "q:NAME=V,...[;tol=X]",
    "point:NAME=x,y,z[;radius=R]" or "rest-of:VAR=V,...[;tol=X]", each with optional ";at-rest"
    and ";energy=J"."""
    kind, _, rest = text.partition(":")
    parts = rest.split(";")
    goal = pb.Goal()
    body = parts[0]
    if kind == "q" or kind == "rest-of":
        target = goal.joints.values if kind == "q" else goal.rest_of.inputs
        for item in body.split(","):
            name, eq, value = item.partition("=")
            if not eq or not name:
                raise ValueError(f"goal: expected NAME=VALUE, got '{item}'")
            target[name.strip()] = _number(value, f"goal {name}")
    elif kind == "point":
        name, eq, xyz = body.partition("=")
        coords = xyz.split(",")
        if not eq or len(coords) != 3:
            raise ValueError(f"goal: expected point:NAME=x,y,z, got '{body}'")
        t = goal.points.targets.add()
        t.point = name.strip()
        t.position_m.x, t.position_m.y, t.position_m.z = (_number(c, "goal point") for c in coords)
    else:
        raise ValueError(f"goal: '{text}' is not q:..., point:... or rest-of:...")
    for option in parts[1:]:
        key, _, value = option.partition("=")
        if key in ("tol", "radius"):
            goal.tolerance = _number(value, f"goal {key}")
        elif key == "at-rest":
            goal.at_rest = True
        elif key == "energy":
            goal.rest_energy_j = _number(value, "goal energy")
        else:
            raise ValueError(f"goal: unknown option '{option}'")
    return goal


def input_rows(plan):
    """(t_s, {variable: value}) for every sample of a plan's input sequence."""
    seq = plan.inputs
    n = len(seq.variables)
    for i in range(len(seq.values) // n if n else 0):
        t = seq.times_s[i] if seq.times_s else i / seq.rate_hz
        yield t, dict(zip(seq.variables, seq.values[i * n:(i + 1) * n]))


def _service_config():
    with open(os.path.join(os.path.dirname(__file__), "service_config.json")) as f:
        return f.read()


def _split_host_port(entry):
    host, sep, port = entry.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or len(port) > 5:
        raise ValueError(f"server: '{entry}': expected HOST:PORT")
    return host, port


def channel_target(servers):
    """(target, authority) for a server text, as the C++ clients read it: one "host:port" or any
    gRPC target with a scheme ("dns:///name:port", "ipv4:...") as it is; a list "a:1,b:2" resolved
    here, every name to all its addresses, into one "ipv4:" (or "ipv6:") list whose authority is
    the first entry.  ValueError naming the entry otherwise."""
    if not servers:
        raise ValueError("server: empty: expected HOST:PORT[,HOST:PORT...]")
    scheme = servers.partition(":")[0]
    if scheme in ("dns", "ipv4", "ipv6", "unix", "unix-abstract") or "://" in servers:
        return servers, None
    entries = servers.split(",")
    parsed = [_split_host_port(e) for e in entries]
    if len(entries) == 1:
        return servers, None
    for family, prefix in ((socket.AF_INET, "ipv4:"), (socket.AF_INET6, "ipv6:")):
        found = []
        for host, port in parsed:
            try:
                infos = socket.getaddrinfo(host, int(port), family, socket.SOCK_STREAM)
            except socket.gaierror:
                infos = []
            addresses = []
            for info in infos:
                address = info[4][0]
                text = f"[{address}]:{port}" if family == socket.AF_INET6 else f"{address}:{port}"
                if text not in addresses:
                    addresses.append(text)
            found.append(addresses)
        if all(found):
            return prefix + ",".join(a for addresses in found for a in addresses), entries[0]
    raise ValueError(f"server: '{servers}': a name does not resolve, or the entries share no "
                     "address family (IPv4 for all, or IPv6 for all); use a dns: name")


def _model_ref(model):
    """A built-in name, or YAML text (anything with a newline)."""
    return pb.ModelRef(yaml=model) if "\n" in model else pb.ModelRef(name=model)


def _scene_ref(scene):
    if scene is None:
        return None
    return pb.SceneRef(yaml=scene) if "\n" in scene else pb.SceneRef(name=scene)


class Client:
    """One channel to a server or a fleet.  target: "host:port", "a:1,b:2,c:3" or a gRPC target
    such as "dns:///name:port" (balanced, health-checked, retried: see the module's text); token:
    sent as "authorization: Bearer <token>"; root_certificates: PEM bytes of the CA for TLS (None
    = plain text)."""

    STREAM_ATTEMPTS = 5

    def __init__(self, target="127.0.0.1:50051", token=None, root_certificates=None):
        target, authority = channel_target(target)
        options = [("grpc.max_receive_message_length", -1),
                   ("grpc.service_config", _service_config()),
                   ("grpc.per_rpc_retry_buffer_size", 32 << 20)]
        if authority:
            options.append(("grpc.default_authority", authority))
        if root_certificates is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self.channel = grpc.secure_channel(target, creds, options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self.stub = pb_grpc.PlannerStub(self.channel)
        self.metadata = [("authorization", f"Bearer {token}")] if token else None

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def server_info(self):
        """What this client talks to: pb.ServerInfo (version, api, workers, max_queue)."""
        return self.stub.GetServerInfo(pb.GetServerInfoRequest(), metadata=self.metadata)

    def models(self):
        return list(self.stub.ListModels(pb.ListModelsRequest(), metadata=self.metadata).models)

    def describe(self, model):
        return self.stub.DescribeModel(pb.DescribeModelRequest(model=_model_ref(model)),
                                       metadata=self.metadata)

    def scenes(self):
        return list(self.stub.ListScenes(pb.ListScenesRequest(), metadata=self.metadata).scenes)

    def simulate(self, model, variables=(), rows=(), rate_hz=50.0, scene=None, dt_s=0.0,
                 duration_s=0.0, stop_on_collision=False, timeout=None):
        """Runs rig setpoints (rows of values for `variables`, sampled at rate_hz) through the
        integrator; the response has one sample per step."""
        req = pb.SimulateRequest(model=_model_ref(model), dt_s=dt_s, duration_s=duration_s,
                                 stop_on_collision=stop_on_collision)
        if scene is not None:
            req.scene.CopyFrom(_scene_ref(scene))
        if variables:
            req.inputs.variables.extend(variables)
            req.inputs.rate_hz = rate_hz
            for row in rows:
                if len(row) != len(variables):
                    raise ValueError(f"simulate: a row of {len(row)} values for "
                                     f"{len(variables)} variables")
                req.inputs.values.extend(row)
        return self.stub.Simulate(req, metadata=self.metadata, timeout=timeout)

    def plan_request(self, model, goal, scene=None, planner="est", start=None, time_limit=0.0,
                     seed=1, rate_hz=0.0, parameters=None, raw=False, max_propagations=0):
        """A pb.PlanRequest; goal: a pb.Goal or the CLI's --goal text; start: None (rest), or a
        dict of rig inputs by name (their rest pose).  The search's budget is max_propagations
        (0: the server's default for the puppet); time_limit (s) is a deadline on it (0: the
        server's maximum).  The server optimizes the plan it finds unless raw (the search's
        plan as found)."""
        req = pb.PlanRequest(model=_model_ref(model), planner=planner, time_limit_s=time_limit,
                             seed=seed, output_rate_hz=rate_hz, raw=raw,
                             max_propagations=max_propagations)
        req.goal.CopyFrom(parse_goal(goal) if isinstance(goal, str) else goal)
        if scene is not None:
            req.scene.CopyFrom(_scene_ref(scene))
        for name, value in (start or {}).items():
            req.start.input_values[name] = value
        for name, value in (parameters or {}).items():
            req.parameters[name] = str(value)
        return req

    def plan(self, model, goal, timeout=None, **kwargs):
        """Plans (unary Plan); returns the pb.PlanResponse."""
        return self.stub.Plan(self.plan_request(model, goal, **kwargs), metadata=self.metadata,
                              timeout=timeout)

    def plan_stream(self, model, goal, timeout=None, **kwargs):
        """Plans with progress: yields pb.PlanEvent (progress events, then the plan).  A stream
        that ends UNAVAILABLE after its first event (its server killed or drained) is asked
        again from the start, within the same timeout: its progress starts over."""
        request = self.plan_request(model, goal, **kwargs)
        return self._streamed(self.stub.PlanStream, request, timeout)

    def _streamed(self, method, request, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        for attempt in range(1, self.STREAM_ATTEMPTS + 1):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                yield from method(request, metadata=self.metadata, timeout=left)
                return
            except grpc.RpcError as e:
                if (e.code() != grpc.StatusCode.UNAVAILABLE or attempt == self.STREAM_ATTEMPTS
                        or (deadline is not None and time.monotonic() >= deadline)):
                    raise

    def perform(self, model, clips, scene=None, timeout=None, weights=None, disable=(), **fields):
        """Plays a performance: yields pb.PlanEvent (progress, then the plan with `targets` and
        `tracking`).  clips: (format, text) or (format, text, map_yaml) in playing order, format
        one of "markers", "pcr", "bvh", "keyframes"; fields: PerformRequest's numbers by name
        (speed=0.5, loop=2, margin_m=0.03, kinematic_only=True, calm_weight=0.05,
        free_points=["hand_l"], ...)."""
        req = pb.PerformRequest(model=_model_ref(model), **fields)
        if scene is not None:
            req.scene.CopyFrom(_scene_ref(scene))
        for clip in clips:
            fmt, text, map_yaml = (tuple(clip) + ("",))[:3]
            req.clips.add(format=getattr(pb.PerformanceClip, "FORMAT_" + fmt.upper()), text=text,
                          map_yaml=map_yaml)
        req.disable.extend(disable)
        for name, value in (weights or {}).items():
            req.weights[name] = value
        return self._streamed(self.stub.Perform, req, timeout)
