"""Command line and startup failures (each runs a private inferd)."""

import socket

import e2e_helpers as h


def _args(repos, extra=(), exit_on_error=False, ports=None):
    http_port, grpc_port, metrics_port = ports or h.free_ports(3)
    return h.server_args(repos, http_port, grpc_port, metrics_port, extra, exit_on_error)


def test_unknown_flag(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    rc, out, err = h.run_to_exit(_args([repo], extra=["--no-such-flag=1"]))
    assert rc != 0, out + err
    assert "usage" in err.lower(), f"no usage text on stderr:\n{err}"


def test_missing_model_repository(tmp_path):
    http_port, grpc_port, metrics_port = h.free_ports(3)
    args = [str(h.require_binary()), f"--http-port={http_port}", f"--grpc-port={grpc_port}",
            f"--metrics-port={metrics_port}", f"--backend-directory={h.backend_dir()}"]
    rc, out, err = h.run_to_exit(args)
    assert rc != 0, out + err
    assert "model-repository" in (out + err), f"error does not name --model-repository:\n{out}{err}"


def test_nonexistent_model_repository(tmp_path):
    rc, out, err = h.run_to_exit(_args([tmp_path / "does-not-exist"], exit_on_error=True))
    assert rc != 0, out + err
    assert (out + err).strip()


def test_exit_on_error_with_broken_models(tmp_path):
    repo = h.copy_repo(tmp_path / "repo")
    rc, out, err = h.run_to_exit(_args([repo], exit_on_error=True))
    assert rc != 0, out + err
    assert (out + err).strip(), "no explanation printed"


def test_exit_on_error_default_is_true(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32", "broken_backend"])
    http_port, grpc_port, metrics_port = h.free_ports(3)
    args = [str(h.require_binary()), f"--model-repository={repo}", f"--http-port={http_port}",
            f"--grpc-port={grpc_port}", f"--metrics-port={metrics_port}",
            f"--backend-directory={h.backend_dir()}"]
    rc, out, err = h.run_to_exit(args)
    assert rc != 0, out + err
    assert "broken_backend" in out + err, "the failing model is not named"


def test_each_broken_model_fails_alone(tmp_path):
    """With exit-on-error, each broken model on its own (next to a good one) stops the server,
    and the output names it: none of them is broken by accident of another."""
    for name in h.BROKEN_MODELS:
        repo = h.copy_repo(tmp_path / f"repo-{name}", models=["identity_fp32", name])
        rc, out, err = h.run_to_exit(_args([repo], exit_on_error=True))
        assert rc != 0, (name, out + err)
        assert name in out + err, (name, out + err)


def test_busy_http_port(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        _, grpc_port, metrics_port = h.free_ports(3)
        rc, out, err = h.run_to_exit(_args([repo], ports=(port, grpc_port, metrics_port)))
        text = (out + err).lower()
        assert rc != 0, out + err
        assert str(port) in text or "in use" in text or "bind" in text, \
            f"failure does not say what went wrong:\n{out}{err}"
    finally:
        busy.close()


def test_two_model_repositories(private_server, tmp_path):
    a = h.copy_repo(tmp_path / "repo-a", models=["identity_fp32"])
    b = h.copy_repo(tmp_path / "repo-b", models=["identity_int32", "batched"])
    srv = private_server(repos=[a, b], wait_models=("identity_fp32", "identity_int32", "batched"))
    r = h.infer_json(srv, "identity_int32", [("INPUT0", "INT32", [1, 2], [4, 2])])
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [4, 2]
    idx = srv.post("/v2/repository/index", json={}).json()
    assert {e["name"] for e in idx} == {"identity_fp32", "identity_int32", "batched"}


def test_exit_on_error_false_serves_good_models(private_server):
    srv = private_server(models=["identity_fp32", "broken_config", "broken_backend"])
    assert srv.get("/v2/models/broken_config/ready").status_code == 400
    assert srv.get("/v2/models/broken_backend/ready").status_code == 400
    r = h.infer_json(srv, "identity_fp32", [("INPUT0", "FP32", [1, 16], [2.0] * 16)])
    assert r.status_code == 200, r.text


def test_sigterm_exits_zero_after_traffic(private_server):
    srv = private_server(models=["identity_fp32", "identity_delay"], wait_models=("identity_fp32", "identity_delay"))
    for _ in range(5):
        assert h.infer_json(srv, "identity_fp32", [("INPUT0", "FP32", [1, 16], [1.0] * 16)]).status_code == 200
    srv.stop(check=True)
    assert srv.proc.returncode == 0


def test_model_control_mode_values(tmp_path):
    """--model-control-mode takes none, explicit or poll; anything else is a clear
    error with exit status 1."""
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    rc, out, err = h.run_to_exit(_args([repo], extra=["--model-control-mode=sometimes"]))
    assert rc == 1, out + err
    assert "sometimes" in err and "model-control-mode" in err, err
    assert "none, explicit or poll" in err, err


def test_poll_needs_a_positive_interval(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    rc, out, err = h.run_to_exit(_args([repo], extra=["--model-control-mode=poll",
                                                      "--repository-poll-secs=0"]))
    assert rc == 1, out + err
    assert "repository-poll-secs" in err, err
    rc, out, err = h.run_to_exit(_args([repo], extra=["--model-control-mode=poll",
                                                      "--repository-poll-secs=-3"]))
    assert rc == 1, out + err
    # Outside poll mode tritonserver takes any integer (and ignores it).


def test_load_model_star_must_be_alone(tmp_path):
    repo = h.copy_repo(tmp_path / "repo", models=["identity_fp32"])
    rc, out, err = h.run_to_exit(_args([repo], extra=["--model-control-mode=explicit",
                                                      "--load-model=*",
                                                      "--load-model=identity_fp32"]))
    assert rc == 1, out + err
    assert "--load-model=*" in err, err


def test_load_model_ignored_outside_explicit_mode(private_server):
    """As tritonserver: --load-model only matters in explicit mode; in mode none
    every model loads anyway."""
    srv = private_server(models=["identity_fp32", "identity_int32"],
                         extra=["--load-model=identity_int32"],
                         wait_models=("identity_fp32", "identity_int32"))
    assert srv.get("/v2/models/identity_fp32/ready").status_code == 200
    assert "--load-model is ignored" in srv.log_tail()


def test_help_lists_model_control_flags():
    rc, out, err = h.run_to_exit([str(h.require_binary()), "--help"])
    assert rc == 0, out + err
    for flag in ("--model-control-mode", "explicit", "poll", "--load-model",
                 "--repository-poll-secs"):
        assert flag in out, (flag, out)
