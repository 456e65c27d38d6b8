"""The logging extension (GET/POST /v2/logging, gRPC LogSettings) and the
--log-file / --log-format flags, against tritonserver 2.47's answers
(conformance/triton-2.47/features, section 6). Each test uses its own server:
the settings are the process's."""

import re
import time

import grpc
import pytest

import e2e_helpers as h
import grpc_helpers as g
from grpc_helpers import grpc_stubs  # noqa: F401  (fixture)

SC = grpc.StatusCode
DEFAULTS = {"log_file": "", "log_info": True, "log_warning": True, "log_error": True,
            "log_verbose_level": 0, "log_format": "default"}


def settings(srv):
    r = srv.get("/v2/logging")
    assert r.status_code == 200, r.text
    assert r.headers.get("Content-Type", "").startswith("application/json")
    return r.json()


def post(srv, body):
    data = body if isinstance(body, (bytes, str)) else None
    if data is None:
        return srv.post("/v2/logging", json=body)
    return srv.post("/v2/logging", data=data, headers={"Content-Type": "application/json"})


def test_http_logging_exchanges(private_server):
    srv = private_server(models=["identity_fp32"])
    body = settings(srv)
    assert body == DEFAULTS and list(body) == list(DEFAULTS), body

    r = post(srv, {"log_verbose_level": 1})
    assert r.status_code == 200 and r.json() == dict(DEFAULTS, log_verbose_level=1), r.text
    r = post(srv, {"no_such_setting": 3})
    assert r.status_code == 200 and r.json()["log_verbose_level"] == 1, r.text

    for bad, text in [({"log_verbose_level": "1"}, "attempt to access JSON non-unsigned-integer as unsigned-integer"),
                      ({"log_verbose_level": -1}, "attempt to access JSON non-unsigned-integer as unsigned-integer"),
                      ({"log_info": "yes"}, "attempt to access JSON non-boolean as boolean")]:
        r = post(srv, bad)
        assert r.status_code == 500 and h.error_of(r) == text, (bad, r.status_code, r.text)

    r = post(srv, {"log_format": "ISO8601"})
    assert r.status_code == 200 and r.json()["log_format"] == "ISO8601", r.text
    r = post(srv, {"log_format": "xml"})
    assert r.status_code == 503, r.text
    assert h.error_of(r) == "invalid argument for --log_format, got: xml"
    r = post(srv, {"log_file": "/tmp/x.log"})
    assert r.status_code == 501, r.text
    assert h.error_of(r) == "log file location can not be updated through network protocol"
    r = post(srv, {})
    assert r.status_code == 200 and r.json()["log_format"] == "ISO8601", r.text
    r = post(srv, b"{bad json")
    assert r.status_code == 500, r.text
    assert h.error_of(r).startswith("failed to parse the request JSON buffer: "), r.text

    # A refused change changes nothing, even its valid parts.
    r = post(srv, {"log_info": False, "log_format": "xml"})
    assert r.status_code == 503 and settings(srv)["log_info"] is True, r.text

    r = post(srv, {"log_info": False, "log_verbose_level": 0, "log_format": "default"})
    want = dict(DEFAULTS, log_info=False)
    assert r.status_code == 200 and r.json() == want, r.text
    assert settings(srv) == want
    r = srv.session.put(srv.url("/v2/logging"), data=b"{}")
    assert r.status_code == 405, r.text


def wait_for(pred, what, srv, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}\n--- log tail ---\n{srv.log_tail()}")


def test_levels_change_what_is_logged(private_server, grpc_stubs):
    srv = private_server(models=["identity_fp32"])
    # At verbose level 1 each gRPC call logs a line naming its method.
    method = "/inference.GRPCInferenceService/ServerLive"
    assert method not in srv.log_tail(100000)
    assert post(srv, {"log_verbose_level": 1}).status_code == 200
    with g.Client(grpc_stubs, g.grpc_target(srv)) as c:
        c.server_live()
        wait_for(lambda: method in srv.log_tail(100000), "no verbose line at log_verbose_level 1", srv)
        assert post(srv, {"log_verbose_level": 0}).status_code == 200
        n = srv.log_tail(1000000).count(method)
        for _ in range(5):
            c.server_live()
        time.sleep(0.2)
        assert srv.log_tail(1000000).count(method) == n, srv.log_tail(600)


def test_grpc_log_settings(private_server, grpc_stubs):
    srv = private_server(models=["identity_fp32"])
    with g.Client(grpc_stubs, g.grpc_target(srv)) as c:
        pb = c.pb
        V = pb.LogSettingsRequest.SettingValue

        def as_dict(resp):
            out = {}
            for k, v in resp.settings.items():
                out[k] = getattr(v, v.WhichOneof("parameter_choice"))
            return out

        r = c.log_settings()
        assert as_dict(r) == DEFAULTS, r
        assert r.settings["log_verbose_level"].WhichOneof("parameter_choice") == "uint32_param"
        r = c.log_settings(settings={"log_verbose_level": V(uint32_param=2), "log_info": V(bool_param=False)})
        assert as_dict(r) == dict(DEFAULTS, log_verbose_level=2, log_info=False), r
        e = g.rpc_error(c.log_settings, settings={"log_verbose_level": V(string_param="2")})
        assert e.code() == SC.INVALID_ARGUMENT, g.describe(e)
        assert e.details() == "expect int32 for 'log_verbose_level'"
        e = g.rpc_error(c.log_settings, settings={"log_info": V(uint32_param=1)})
        assert e.code() == SC.INVALID_ARGUMENT and "log_info" in e.details(), g.describe(e)
        e = g.rpc_error(c.log_settings, settings={"log_format": V(string_param="xml")})
        assert e.code() == SC.UNAVAILABLE, g.describe(e)
        assert e.details() == "invalid argument for --log_format, got: xml"
        e = g.rpc_error(c.log_settings, settings={"log_file": V(string_param="/tmp/x")})
        assert e.code() == SC.UNIMPLEMENTED, g.describe(e)
        r = c.log_settings(settings={"no_such": V(bool_param=True)})
        assert as_dict(r) == dict(DEFAULTS, log_verbose_level=2, log_info=False), r
    # HTTP sees what gRPC set.
    assert settings(srv) == dict(DEFAULTS, log_verbose_level=2, log_info=False)


ISO_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ I \d+ [\w.]+:\d+\] ")


def test_log_file_and_format_flags(private_server, grpc_stubs, tmp_path):
    log_file = tmp_path / "inferd.log"
    log_file.write_text("kept\n")
    srv = private_server(models=["identity_fp32"],
                         extra=[f"--log-file={log_file}", "--log-format=ISO8601"])
    body = settings(srv)
    assert body["log_file"] == str(log_file) and body["log_format"] == "ISO8601", body
    lines = log_file.read_text().splitlines()
    assert lines[0] == "kept", lines[:3]  # appended, not truncated
    info = [ln for ln in lines[1:] if " I " in ln[:24]]
    assert info and all(ISO_LINE.match(ln) for ln in info), lines[:5]
    # Switching the format at run time changes the next lines.
    assert post(srv, {"log_format": "default", "log_verbose_level": 1}).status_code == 200
    with g.Client(grpc_stubs, g.grpc_target(srv)) as c:
        c.server_live()
    # Verbose lines carry the INFO letter, as Triton's do.
    default = re.compile(r"^I\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ [\w.]+:\d+\] ")
    wait_for(lambda: any(default.match(ln) for ln in log_file.read_text().splitlines()[len(lines):]),
             "no default-format line after the switch", srv)
    assert not any(ln.startswith("V") for ln in log_file.read_text().splitlines()), "a V line"


@pytest.mark.parametrize("flag,text", [("--log-format=xml", "--log-format"),
                                       ("--log-file=/nonexistent-dir/x.log", "--log-file")])
def test_bad_log_flags_refused(tmp_path, flag, text):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    ports = h.free_ports(3)
    args = h.server_args([repo], *ports, extra=[flag])
    rc, out, err = h.run_to_exit(args)
    assert rc != 0 and text in err, (rc, err[-2000:])


FORGED = 'I0205 18:34:18.707423 1 file.cc:123] THIS ENTRY WAS INJECTED'


@pytest.mark.parametrize("escaped", [True, False], ids=["escaped", "unescaped"])
def test_log_messages_escaped(tmp_path, escaped):
    """Messages are JSON strings, as tritonserver writes them (its
    qa/L0_logging log-injection test): a client's text with a newline and a
    forged line prefix stays inside its own line, quoted and escaped, and
    TRITON_SERVER_ESCAPE_LOG_MESSAGES=0 writes messages raw. The sleep test
    backend logs each request's ID through TRITONSERVER_LogMessage."""
    import json
    import shutil
    so = h.sleep_backend_so()
    if not so.is_file():
        pytest.skip(f"{so} not built")
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    d = repo / "sleep"
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(
        'name: "sleep"\nbackend: "sleep"\nmax_batch_size: 0\n'
        'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
        'output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
        'parameters { key: "poll_cancel" value: { string_value: "1" } }\n')
    shutil.copy2(so, d / so.name)
    env = {"TRITON_SERVER_ESCAPE_LOG_MESSAGES": "1" if escaped else "0"}
    srv = h.start_server(tmp_path / "srv", [repo], wait_models=("sleep",), env=env)
    try:
        rid = f'a "quoted" \\ id\n{FORGED}'
        r = h.infer_json(srv, "sleep", [("IN", "INT32", [1], [0])], request_id=rid)
        assert r.status_code == 200, r.text
        srv.stop(check=True)
        lines = srv.log_path.read_text().splitlines()
        line = re.compile(r"^[EWI]\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ [\w.]+:\d+\] (?P<msg>.*)$")
        if escaped:
            # Every line is one record whose message is a JSON string.
            for ln in lines:
                m = line.match(ln)
                assert m, f"not a log line: {ln!r}"
                json.loads(m.group("msg"))
            assert FORGED not in lines
            want = "sleep: request '" + rid + "' sleeping 0 ms"
            assert any(line.match(ln).group("msg") == json.dumps(want) for ln in lines), lines
            assert any(line.match(ln).group("msg") == '"successfully loaded \'sleep\' version 1"'
                       for ln in lines), lines
        else:
            # Raw: the forged line is a line of its own (what escaping prevents).
            assert FORGED + "' sleeping 0 ms" in lines, lines
            assert any(ln.endswith("] successfully loaded 'sleep' version 1") for ln in lines), lines
    finally:
        srv.stop(check=False)
