"""Fixtures for the inferd end-to-end tests.

`server`: one inferd for the whole session, serving a copy of test/models/repo
(broken models included, --exit-on-error=false), with libtriton_sleep.so copied
into the `sleep` model's folder. At teardown it gets SIGTERM and must exit 0.

`private_server`: a factory for tests that need a server of their own; every
server it starts is stopped (and checked to exit 0) at the end of the test.
"""

import pytest

import e2e_helpers as h


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA build and a GPU (make test-gpu); skips without one")
    config.addinivalue_line(
        "markers", "slow: long-running checks (e.g. the ONNX Runtime leak check); -m 'not slow' skips them")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    h.require_binary()
    tmp = tmp_path_factory.mktemp("inferd-session")
    repo = h.copy_repo(tmp / "repo")
    srv = h.start_server(tmp, [repo], wait_models=("identity_fp32",))
    try:
        yield srv
    finally:
        srv.stop(check=True)


@pytest.fixture
def private_server(tmp_path):
    """private_server(models=None, extra=(), wait_models=("identity_fp32",), repos=None)"""
    h.require_binary()
    started = []

    def start(models=None, extra=(), wait_models=("identity_fp32",), repos=None):
        n = len(started)
        if repos is None:
            repos = [h.copy_repo(tmp_path / f"repo{n}", models=models)]
        srv = h.start_server(tmp_path / f"srv{n}", repos, extra=extra, wait_models=wait_models)
        started.append(srv)
        return srv

    yield start
    h.stop_all(started)
