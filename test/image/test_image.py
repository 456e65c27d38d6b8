"""The container image (deploy/image/, docs/deploy.md; `make test-image`).

Builds the `inferd` image with deploy/image/build.sh under a tag of its own
(build.sh keeps no intermediate images), checks what the image declares (user, ports,
volume, entrypoint, HEALTHCHECK, OCI labels), then runs it with rootful
podman and runc, a read-only root file system, a model repository mounted
read-only at /models (the
example's digits_onnx, and `slow`, an identity model that sleeps
SLOW_MS per execution), its three ports published on 127.0.0.1 only, and:

* the server becomes ready, `podman healthcheck run` says healthy (the
  image's probe, inside the container), and inferd runs as the user inferd;
* digits_onnx answers one HTTP (requests) and one gRPC (grpcio) inference
  of the README's digit with the class 2;
* the metrics endpoint counts both;
* SIGTERM to the container while a `slow` request runs: the request is
  answered in full, and the container exits 0 well within
  --exit-timeout-secs (tini, PID 1, passes the signal to inferd, which
  drains).

Every container and image it makes is removed at the end, even on failure.
With IMAGE_TEST_FULL=1 the same runs on the `inferd-full` image too, with
the digits ensemble (its python step), digits_torchscript and a python model
in a packed EXECUTION_ENV_PATH environment, and checks that PID 1 reaps an
orphaned grandchild of a python stub.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
import e2e_helpers as h  # noqa: E402
import grpc_helpers as gh  # noqa: E402

PODMAN = os.environ.get("PODMAN", "podman")
BUILD = os.environ.get("INFERD_BUILD", "build")
EXAMPLES = h.REPO_ROOT / "examples" / "model_repository"
RUN_ID = f"{os.getpid()}-{int(time.time())}"
SLOW_MS = 3000
EXIT_TIMEOUT_S = 20
START_TIMEOUT_S = 90
# The README's digit (a 2), raw pixel values 0..16.
PIXELS = [0, 0, 7, 16, 14, 3, 0, 0, 0, 0, 9, 14, 11, 15, 0, 0, 0, 0, 1, 5, 0, 15, 5, 0,
          0, 0, 0, 0, 0, 16, 5, 0, 0, 0, 0, 0, 3, 16, 4, 0, 0, 0, 0, 1, 12, 14, 1, 0,
          0, 0, 5, 12, 16, 16, 14, 1, 0, 0, 8, 16, 14, 10, 13, 3]
LABEL = 2


def podman(*args, check=True, timeout=120):
    r = subprocess.run([PODMAN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r


def ulimits():
    """podman's default ulimits can exceed the machine's hard limits (and its
    runc refuses an nproc above kernel.pid_max)."""
    import resource
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    if nofile == resource.RLIM_INFINITY:
        nofile = 1048576
    if nproc == resource.RLIM_INFINITY or nproc > pid_max:
        nproc = pid_max
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


def build_image(target):
    tag = f"localhost/inferd-test-{target}:{RUN_ID}"
    env = dict(os.environ, BUILD=BUILD, PODMAN=PODMAN)
    t0 = time.monotonic()
    r = subprocess.run(["bash", "deploy/image/build.sh", target, tag], cwd=h.REPO_ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0, f"build.sh {target} failed:\n{r.stdout[-6000:]}"
    print(r.stdout.strip().splitlines()[-1], f"(total {time.monotonic() - t0:.1f} s)")
    return tag


@pytest.fixture(scope="module")
def images():
    """Builds lazily; removes every image built here at the end."""
    built = {}

    def get(target):
        if target not in built:
            built[target] = None
            built[target] = build_image(target)
        return built[target]

    yield get
    for tag in built.values():
        if tag:
            podman("rmi", "-f", tag, check=False)


@pytest.fixture(scope="module")
def stubs():
    d = tempfile.mkdtemp(prefix="inferd-image-stubs-")
    try:
        yield gh.generate_stubs(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def make_repo(models, extra=None):
    """A repository readable by the container's user (1000): copies of the
    example's models, plus `slow`; `extra` adds {relative path: text}."""
    repo = Path(tempfile.mkdtemp(prefix="inferd-image-repo-"))
    for m in models:
        shutil.copytree(EXAMPLES / m, repo / m)
    slow = repo / "slow"
    (slow / "1").mkdir(parents=True)
    (slow / "config.pbtxt").write_text(
        'name: "slow"\nbackend: "identity"\nmax_batch_size: 0\n'
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
        'instance_group [ { count: 1 kind: KIND_CPU } ]\n'
        f'parameters {{ key: "execute_delay_ms" value: {{ string_value: "{SLOW_MS}" }} }}\n')
    for rel, text in (extra or {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    for p in [repo, *repo.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return repo


class Container:
    def __init__(self, image, repo, args=()):
        self.image, self.repo, self.args = image, repo, args
        self.name = f"inferd-test-{RUN_ID}-{os.urandom(3).hex()}"
        self.http_port, self.grpc_port, self.metrics_port = h.free_ports(3)
        self.url = f"http://127.0.0.1:{self.http_port}"

    def run(self):
        # --read-only as Kubernetes' readOnlyRootFilesystem (podman mounts a
        # tmpfs on /tmp).
        podman("run", "-d", "--name", self.name, "--runtime", "runc", *ulimits(), "--read-only",
               "-p", f"127.0.0.1:{self.http_port}:8000", "-p", f"127.0.0.1:{self.grpc_port}:8001",
               "-p", f"127.0.0.1:{self.metrics_port}:8002", "-v", f"{self.repo}:/models:ro",
               self.image, f"--exit-timeout-secs={EXIT_TIMEOUT_S}", *self.args)

    def state(self):
        r = podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", self.name,
                   check=False)
        return r.stdout.strip()

    def logs(self):
        r = podman("logs", self.name, check=False)
        return (r.stdout + r.stderr)[-6000:]

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                if requests.get(self.url + "/v2/health/ready", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            st = self.state()
            assert st.startswith("running") or st.startswith("created"), \
                f"container {st}:\n{self.logs()}"
            time.sleep(0.25)
        raise AssertionError(f"not ready in {START_TIMEOUT_S} s:\n{self.logs()}")

    def remove(self):
        podman("rm", "-f", "-t", "0", self.name, check=False)
        shutil.rmtree(self.repo, ignore_errors=True)


@pytest.fixture
def containers():
    made = []

    def start(image, repo, args=()):
        """Runs `image` on `repo` (removed with the container, even when
        `podman run` fails after creating it)."""
        c = Container(image, repo, args)
        made.append(c)
        c.run()
        return c

    yield start
    for c in made:
        c.remove()


def http_digits(c):
    x = (np.asarray(PIXELS, dtype=np.float32) / 16).tolist()
    r = requests.post(f"{c.url}/v2/models/digits_onnx/infer", timeout=20, json={"inputs": [
        {"name": "pixels", "datatype": "FP32", "shape": [1, 64], "data": x}]})
    assert r.status_code == 200, r.text
    outs = {o["name"]: o for o in r.json()["outputs"]}
    assert outs["label"]["data"] == [LABEL], r.text
    assert abs(sum(outs["probabilities"]["data"]) - 1) < 1e-4, r.text


def grpc_digits(c, stubs):
    x = (np.asarray(PIXELS, dtype=np.float32) / 16).reshape(1, 64)
    with gh.Client(stubs, f"127.0.0.1:{c.grpc_port}") as cl:
        deadline = time.monotonic() + 10
        while True:  # the published port may lag the HTTP one by a moment
            try:
                assert cl.server_ready(timeout=2).ready
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        resp = cl.model_infer(gh.infer_request(stubs.pb, "digits_onnx", [("pixels", "FP32", [1, 64], x)]))
    outs = gh.outputs_of(resp)
    assert outs["label"].reshape(-1).tolist() == [LABEL]


def metric(text, name, model):
    for line in text.splitlines():
        if line.startswith(name + "{") and f'model="{model}"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} for {model} not in the metrics:\n{text[:3000]}")


def drain_on_sigterm(c):
    """SIGTERM while a `slow` request executes: answered in full, exit 0."""
    result = {}

    def call():
        t0 = time.monotonic()
        try:
            r = requests.post(f"{c.url}/v2/models/slow/infer", timeout=EXIT_TIMEOUT_S + 10, json={
                "inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]}]})
            result["status"], result["body"] = r.status_code, r.text
        except requests.RequestException as e:
            result["error"] = repr(e)
        result["s"] = time.monotonic() - t0

    t = threading.Thread(target=call)
    t.start()
    time.sleep(SLOW_MS / 3000)  # the request is executing now
    t_sig = time.monotonic()
    podman("kill", "--signal", "TERM", c.name)
    r = podman("wait", c.name, timeout=EXIT_TIMEOUT_S + 15)
    exit_s = time.monotonic() - t_sig
    t.join(timeout=EXIT_TIMEOUT_S)
    assert result.get("status") == 200, f"{result}\n{c.logs()}"
    assert json.loads(result["body"])["outputs"][0]["data"] == [1, 2, 3, 4]
    assert result["s"] >= SLOW_MS / 1000 * 0.9, result
    assert r.stdout.strip() == "0", f"exit status {r.stdout.strip()}:\n{c.logs()}"
    assert exit_s < EXIT_TIMEOUT_S, f"exited {exit_s:.1f} s after SIGTERM (drain deadline {EXIT_TIMEOUT_S} s)"
    print(f"drained: request answered in {result['s']:.1f} s, exit 0 {exit_s:.1f} s after SIGTERM")


# ---------------------------------------------------------------- tests ---

def test_image_declares(images):
    tag = images("inferd")
    cfg = json.loads(podman("image", "inspect", tag).stdout)[0]
    c = cfg["Config"]
    assert c["User"] == "1000:1000"
    assert set(c["ExposedPorts"]) == {"8000/tcp", "8001/tcp", "8002/tcp"}
    assert set(c["Volumes"]) == {"/models"}
    assert c["Entrypoint"][:3] == ["/usr/bin/tini", "--", "/opt/tritonserver/bin/inferd"]
    assert "--model-repository=/models" in c["Entrypoint"]
    hc = c.get("Healthcheck") or cfg.get("Healthcheck")
    assert hc and "inferd-health-probe" in " ".join(hc["Test"]), cfg
    labels = c["Labels"]
    version = [ln.split('"')[1] for ln in (h.REPO_ROOT / "core/server.h").read_text().splitlines()
               if ln.startswith("#define IFD_SERVER_VERSION")][0]
    assert labels["org.opencontainers.image.version"] == version
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=h.REPO_ROOT, stdout=subprocess.PIPE,
                          text=True).stdout.strip()
    assert labels["org.opencontainers.image.revision"].startswith(head), labels
    assert "org.opencontainers.image.source" in labels
    print(f"image size: {cfg['Size'] / 1e6:.1f} MB")


def test_serve_and_drain(images, stubs, containers):
    c = containers(images("inferd"), make_repo(["digits_onnx"]))
    c.wait_ready()
    hc = podman("healthcheck", "run", c.name, check=False)
    assert hc.returncode == 0, f"healthcheck: {hc.stdout}{hc.stderr}"
    top = podman("top", c.name, "user", "comm").stdout
    assert any(ln.split()[:2] == ["inferd", "inferd"] for ln in top.splitlines()), top
    http_digits(c)
    grpc_digits(c, stubs)
    m = requests.get(f"http://127.0.0.1:{c.metrics_port}/metrics", timeout=10)
    assert m.status_code == 200
    assert metric(m.text, "nv_inference_request_success", "digits_onnx") == 2
    drain_on_sigterm(c)


@pytest.mark.skipif(os.environ.get("IMAGE_TEST_FULL") != "1", reason="IMAGE_TEST_FULL=1 tests inferd-full")
def test_full_image(images, stubs, containers):
    # A python model that leaves an orphan: its child forks a grandchild and
    # exits at once, so the grandchild is reparented to PID 1, and exits in
    # turn; PID 1 must reap it.
    orphan = (
        "import os\nimport numpy as np\nimport triton_python_backend_utils as pb_utils\n\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        if os.fork() == 0:\n"
        "            if os.fork() == 0:\n"
        "                os._exit(0)\n"
        "            os._exit(0)\n"
        "        os.wait()\n"
        "        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor('OUTPUT0',\n"
        "            pb_utils.get_input_tensor_by_name(r, 'INPUT0').as_numpy())]) for r in requests]\n")
    config = ('name: "orphan"\nbackend: "python"\nmax_batch_size: 0\n'
              'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n'
              'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\n')
    # A python model in a conda-pack style environment (EXECUTION_ENV_PATH):
    # the image's tar and gzip extract it, its bash sources bin/activate.
    env_model = (
        "import json, os\nimport numpy as np\nimport triton_python_backend_utils as pb_utils\n"
        "import inferd_env_probe\n\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        rep = json.dumps([inferd_env_probe.VALUE, os.environ.get('INFERD_ENV_ACTIVATED')])\n"
        "        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor('REPORT',\n"
        "            np.array([rep.encode()], dtype=np.object_))]) for r in requests]\n")
    env_config = ('name: "env_packed"\nbackend: "python"\nmax_batch_size: 0\n'
                  'input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
                  'output [ { name: "REPORT" data_type: TYPE_STRING dims: [ 1 ] } ]\n'
                  'parameters: { key: "EXECUTION_ENV_PATH" value: '
                  '{ string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }\n')
    repo = make_repo(["digits", "digits_preprocess", "digits_onnx", "digits_postprocess",
                      "digits_torchscript"],
                     extra={"orphan/config.pbtxt": config, "orphan/1/model.py": orphan,
                            "env_packed/config.pbtxt": env_config, "env_packed/1/model.py": env_model})
    pack_env(repo / "env_packed" / "env.tar.gz")
    (repo / "env_packed" / "env.tar.gz").chmod(0o644)
    c = containers(images("inferd-full"), repo)
    c.wait_ready()
    http_digits(c)
    r = requests.post(f"{c.url}/v2/models/digits/infer", timeout=20, json={"inputs": [
        {"name": "pixels", "datatype": "UINT8", "shape": [1, 64], "data": PIXELS}]})
    assert r.status_code == 200, r.text
    assert {o["name"]: o for o in r.json()["outputs"]}["label"]["data"] == [LABEL]
    x = (np.asarray(PIXELS, dtype=np.float32) / 16).tolist()
    r = requests.post(f"{c.url}/v2/models/digits_torchscript/infer", timeout=20, json={"inputs": [
        {"name": "INPUT__0", "datatype": "FP32", "shape": [1, 64], "data": x}]})
    assert r.status_code == 200, r.text
    assert int(np.argmax(r.json()["outputs"][0]["data"])) == LABEL, r.text
    for _ in range(3):
        r = requests.post(f"{c.url}/v2/models/orphan/infer", timeout=20, json={"inputs": [
            {"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]}]})
        assert r.status_code == 200, r.text
    r = requests.post(f"{c.url}/v2/models/env_packed/infer", timeout=20, json={"inputs": [
        {"name": "IN", "datatype": "INT32", "shape": [1], "data": [1]}]})
    assert r.status_code == 200, r.text
    assert json.loads(r.json()["outputs"][0]["data"][0]) == [42, "yes"], r.text
    time.sleep(0.5)
    pid1 = podman("inspect", "--format", "{{.State.Pid}}", c.name).stdout.strip()
    zombies = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and zombie_child(p, pid1)]
    assert not zombies, f"zombie children of PID 1 (host pid {pid1}): {zombies}"
    drain_on_sigterm(c)


def pack_env(dst):
    """A conda-pack style archive: bin/activate and a module in site-packages
    for the image's Python (3.11)."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        sp = root / "lib" / "python3.11" / "site-packages"
        sp.mkdir(parents=True)
        (sp / "inferd_env_probe.py").write_text("VALUE = 42\n")
        (root / "bin").mkdir()
        (root / "bin" / "activate").write_text("export INFERD_ENV_ACTIVATED=yes\n")
        with tarfile.open(dst, "w:gz") as t:
            for p in sorted(root.iterdir()):
                t.add(p, arcname=p.name)


def zombie_child(proc, ppid):
    try:
        st = (proc / "status").read_text()
    except OSError:
        return False
    fields = dict(ln.split(":\t", 1) for ln in st.splitlines() if ":\t" in ln)
    return fields.get("PPid", "").strip() == ppid and fields.get("State", "").startswith("Z")
