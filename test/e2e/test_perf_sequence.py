"""inferd-perf's sequence options (perf_analyzer's) against a sequence model.

A private server serves test/models/perf_seq_repo: seq_direct (identity
behind the direct sequence batcher, 4 batch slots, START and READY controls,
10 s idle limit) and seq_oldest (the oldest strategy, up to 32 sequences, 60 s idle limit).

- Every protocol, concurrency 1 and 6 (6 sequences for 4 slots: two wait in
  the backlog) with sequences of 2-3 requests: no error, and the client's
  request count equals the server's success-count delta in every step. That
  holds only if inferd-perf ends every open sequence when it stops issuing
  (a sequence left open would hold its slot until the idle timeout, and the
  backlogged requests would not finish).
- One-request sequences (START and END together), over a gRPC stream.
- The open loop (--request-rate-range with --num-of-sequences).
- --idle-sequences: the sequences are live while held (inferd_sequence_active)
  and gone after inferd-perf ENDs them.
- A --sequence-id-range smaller than the live sequences is refused, as
  perf_analyzer does, and --idle-sequences needs a sequence model.
"""

import re
import subprocess
import urllib.request

import pytest

import e2e_helpers as h
from test_perf_smoke import field, perf_binary, run_perf, steps

REPO = h.REPO_ROOT / "test" / "models" / "perf_seq_repo"
MODELS = ("seq_direct", "seq_oldest")
TIMEOUT_S = 30


@pytest.fixture
def seq_server(private_server):
    return private_server(repos=[REPO], wait_models=MODELS)


def urls(s):
    return {
        "http-binary": ["-i", "http", "-u", f"127.0.0.1:{s.http_port}", "--http-format", "binary"],
        "http-json": ["-i", "http", "-u", f"127.0.0.1:{s.http_port}", "--http-format", "json"],
        "grpc": ["-i", "grpc", "-u", f"127.0.0.1:{s.grpc_port}"],
        "grpc-stream": ["-i", "grpc", "-u", f"127.0.0.1:{s.grpc_port}", "--streaming"],
    }


def check_ok(rc, out, err):
    assert rc == 0, f"exit {rc}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"


def test_closed_loop_every_protocol(seq_server):
    for mode, args in sorted(urls(seq_server).items()):
        rc, out, err = run_perf(["-m", "seq_direct", "--concurrency-range", "1:6:5",
                                 "--sequence-length", "3", "--sequence-id-range", "100",
                                 "--measurement-interval", "400", "--warmup", "100"] + args)
        check_ok(rc, out, err)
        assert "Sequence model: length 3 +/- 20%, ids from 100" in out, out
        got = steps(out)
        assert [c for c, _ in got] == [1, 6], f"{mode}:\n{out}"
        for conc, text in got:
            n = field(text, "Request count")
            assert n > 0, f"{mode}:\n{text}"
            assert "Error count" not in text, f"{mode}:\n{text}"
            assert field(text, "Successful request count") == n, f"{mode}, {conc}:\n{text}"


def test_one_request_sequences(seq_server):
    """--sequence-length 1 --sequence-length-variation 0: every request both
    STARTs and ENDs its sequence."""
    rc, out, err = run_perf(["-m", "seq_direct", "--concurrency-range", "5",
                             "--sequence-length", "1", "--sequence-length-variation", "0",
                             "--measurement-interval", "300", "--warmup", "100"]
                            + urls(seq_server)["grpc-stream"])
    check_ok(rc, out, err)
    (_, text), = steps(out)
    n = field(text, "Request count")
    assert n > 0 and "Error count" not in text, text
    assert field(text, "Successful request count") == n, text


def test_open_loop(seq_server):
    rc, out, err = run_perf(["-m", "seq_direct", "--request-rate-range", "200",
                             "--num-of-sequences", "3", "--sequence-length", "4",
                             "--measurement-interval", "400", "--warmup", "100"]
                            + urls(seq_server)["http-binary"])
    check_ok(rc, out, err)
    assert "3 concurrent sequences" in out, out
    text = out.split("Request Rate: 200 inference requests per seconds\n", 1)[1]
    n = field(text, "Request count")
    assert n > 0 and "Error count" not in text, text
    assert field(text, "Successful request count") == n, text


def active_gauge(srv, model):
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.metrics_port}/metrics", timeout=5) as r:
        body = r.read().decode()
    m = re.search(r'^inferd_sequence_active\{model="%s",version="1"\} (\d+)' % model, body, re.M)
    assert m, body
    return int(m.group(1))


@pytest.mark.parametrize("proto", ["http-binary", "grpc"])
def test_idle_sequences(seq_server, proto):
    args = [str(perf_binary()), "-m", "seq_oldest", "--idle-sequences", "10",
            "--idle-seconds", "3"] + urls(seq_server)[proto]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        first = proc.stdout.readline()
        assert first.strip() == "idle sequences: 10 started, 0 failed", (
            first + proc.stdout.read() + proc.stderr.read())
        # Held for 3 s from here: the 10 are live now.
        assert active_gauge(seq_server, "seq_oldest") == 10
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err
    assert "idle sequences: 10 ended, 0 failed" in out, out
    assert active_gauge(seq_server, "seq_oldest") == 0


def test_id_range_too_small(seq_server):
    rc, out, err = run_perf(["-m", "seq_direct", "--concurrency-range", "4",
                             "--sequence-id-range", "1:3", "--measurement-interval", "300",
                             "--warmup", "0"] + urls(seq_server)["http-binary"])
    assert rc == 2, out + err
    assert "--sequence-id-range 1:3 has fewer ids than the 4 sequences" in err, err


def test_idle_sequences_need_a_sequence_model(server):
    rc, out, err = run_perf(["-m", "identity_fp32", "--idle-sequences", "3", "--idle-seconds", "0",
                             "-u", f"127.0.0.1:{server.http_port}"])
    assert rc != 0
    assert "--idle-sequences needs a sequence model" in err, err
