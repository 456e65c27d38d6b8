"""Checks of deploy/: inferd's Kubernetes, KServe and sidecar manifests.

No cluster is involved. Every kustomization under deploy/ is rendered with
`kubectl kustomize`; every rendered object, and every raw manifest of
deploy/kserve and deploy/sidecar, is validated against the Kubernetes API's
schemas and KServe's (validate.mjs, one node process for all of them); then
the references between objects are checked (selectors, ports, probes, the
HPA's target and metric, the shutdown timing, the security context), and each
inferd container's flags are run through build/inferd. Every check is also
shown to fail: the negative tests feed it a deliberately broken copy.

Needs kubectl with kustomize v5 (the machine image's kubectl; Debian's
kubernetes-client 1.20 is too old), node, and the packages of
third_party/install-kubernetes-models.sh.
"""

import copy
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
VALIDATE = pathlib.Path(__file__).with_name("validate.mjs")
INFERD = ROOT / os.environ.get("INFERD_BUILD", "build") / "inferd"

# Raw manifests validated as they are, besides their rendered form.
RAW = sorted(
    p for d in ("kserve", "sidecar") for p in (DEPLOY / d).glob("*.yaml")
    if p.name != "kustomization.yaml")
KUSTOMIZATIONS = sorted(p.parent for p in DEPLOY.rglob("kustomization.yaml"))

# ---- helpers -------------------------------------------------------------


def kubectl():
    exe = shutil.which("kubectl")
    if exe is None:
        pytest.fail("kubectl is not installed: test/deploy needs kubectl with kustomize v5")
    return exe


def render(folder):
    r = subprocess.run([kubectl(), "kustomize", str(folder)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, f"kubectl kustomize {folder} failed:\n{r.stderr}"
    return [o for o in yaml.safe_load_all(r.stdout) if o]


def validate(objects):
    """Runs validate.mjs on objects; returns one list of errors per object."""
    r = subprocess.run(["node", str(VALIDATE)], input=json.dumps(objects),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"validate.mjs failed:\n{r.stderr}"
    out = json.loads(r.stdout)
    assert len(out) == len(objects)
    return [o["errors"] for o in out]


def find(objects, kind, name=None):
    got = [o for o in objects if o["kind"] == kind and
           (name is None or o["metadata"]["name"] == name)]
    return got


def one(objects, kind, name=None):
    got = find(objects, kind, name)
    assert len(got) == 1, f"expected one {kind} {name or ''}, got {len(got)}"
    return got[0]


def pod_spec(obj):
    if obj["kind"] in ("ClusterServingRuntime", "ServingRuntime"):
        return obj["spec"]
    return obj["spec"]["template"]["spec"]


def inferd_containers(obj):
    """The containers of obj that run inferd's image."""
    spec = pod_spec(obj)
    return [c for c in spec.get("containers", []) + spec.get("initContainers", [])
            if re.match(r"^(.*/)?inferd(-full)?(:|$)", c.get("image", ""))]


def entrypoint_flags():
    """The flags the image's entrypoint gives inferd before the container's
    args: from deploy/image/Containerfile's ENTRYPOINT where it exists, else
    the image's documented `inferd --model-repository=/models`."""
    cf = ROOT / "deploy" / "image" / "Containerfile"
    if not cf.exists():
        return ["--model-repository=/models"]
    m = re.search(r"^ENTRYPOINT (\[.*?\])\s*$", cf.read_text().replace("\\\n", ""), re.M | re.S)
    assert m, f"{cf}: no ENTRYPOINT"
    argv = json.loads(m.group(1))
    i = next(i for i, a in enumerate(argv) if a.rsplit("/", 1)[-1] == "inferd")
    return argv[i + 1:]


def command_line(container):
    """inferd's flags in a container: the entrypoint's, then the args."""
    return entrypoint_flags() + container.get("args", [])


def flags(container):
    """--name=value flags of a container's command line, as a dict (a
    repeated flag keeps its last value)."""
    out = {}
    for a in command_line(container):
        m = re.match(r"^--([a-z-]+)=(.*)$", a)
        assert m, f"flag {a!r}: spell inferd's flags as --name=value"
        out[m.group(1)] = m.group(2)
    return out


def port_number(container, port):
    """A probe's or Service's port (a number or a container port's name)."""
    for p in container.get("ports", []):
        if port in (p.get("name"), p["containerPort"]):
            return p["containerPort"]
    return None


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def server_version():
    text = (ROOT / "core" / "server.h").read_text()
    return re.search(r'#define IFD_SERVER_VERSION "([^"]+)"', text).group(1)


# ---- cross-reference checks: each returns a list of problems --------------


def check_workload(dep, objects):
    """A Deployment running inferd: probes, ports, shutdown, security."""
    problems = []
    spec = pod_spec(dep)
    labels = dep["spec"]["template"]["metadata"].get("labels", {})
    if not selects(dep["spec"]["selector"].get("matchLabels"), labels):
        problems.append("Deployment selector does not match its pod labels")
    ann = dep["spec"]["template"]["metadata"].get("annotations", {})
    cs = inferd_containers(dep)
    if not cs:
        return problems + ["no inferd container"]
    for c in cs:
        f = flags(c)
        where = f"container {c['name']}"
        # Ports: the flags and the named container ports agree.
        for name, flag, default in (("http", "http-port", 8000), ("grpc", "grpc-port", 8001),
                                    ("metrics", "metrics-port", 8002)):
            if port_number(c, name) != int(f.get(flag, default)):
                problems.append(f"{where}: port {name} is not --{flag}")
        # Probes: Triton's health routes, on ports the container has.
        for probe, path in (("livenessProbe", "/v2/health/live"),
                            ("readinessProbe", "/v2/health/ready"),
                            ("startupProbe", None)):
            p = c.get(probe)
            if p is None:
                if probe == "livenessProbe" or (probe == "readinessProbe" and
                                                c.get("restartPolicy") != "Always"):
                    problems.append(f"{where}: no {probe}")
                continue
            get = p.get("httpGet")
            if get is None or port_number(c, get["port"]) is None:
                problems.append(f"{where}: {probe} port is not a container port")
            elif path and get["path"] != path:
                problems.append(f"{where}: {probe} is not on {path}")
            elif get["path"] not in ("/v2/health/live", "/v2/health/ready"):
                problems.append(f"{where}: {probe} is not on a health route")
        if "startupProbe" not in c:
            problems.append(f"{where}: no startupProbe")
        # Shutdown: the grace period covers preStop, the drain and 2 s.
        sleep = (c.get("lifecycle", {}).get("preStop", {}).get("sleep", {})
                 .get("seconds", 0))
        grace = spec.get("terminationGracePeriodSeconds", 30)
        exit_timeout = int(f.get("exit-timeout-secs", 30))
        if grace <= sleep + exit_timeout + 2:
            problems.append(f"{where}: terminationGracePeriodSeconds {grace} <= preStop "
                            f"{sleep} + --exit-timeout-secs {exit_timeout} + 2")
        if c.get("restartPolicy") != "Always" and sleep < 5:
            problems.append(f"{where}: no preStop sleep to leave the endpoints")
        if "command" in c:
            problems.append(f"{where}: sets command, which drops the entrypoint (tini)")
        # Security: the restricted profile, a writable /tmp.
        sc = c.get("securityContext", {})
        psc = spec.get("securityContext", {})
        if not (sc.get("runAsNonRoot") or psc.get("runAsNonRoot")):
            problems.append(f"{where}: not runAsNonRoot")
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{where}: root filesystem not read-only")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation not false")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            problems.append(f"{where}: capabilities not dropped")
        if "RuntimeDefault" not in (sc.get("seccompProfile", {}).get("type"),
                                    psc.get("seccompProfile", {}).get("type")):
            problems.append(f"{where}: seccompProfile not RuntimeDefault")
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                problems.append(f"{where}: mount {m['mountPath']} names no volume")
        tmp = mounts.get("/tmp")
        if tmp is None or "emptyDir" not in volumes.get(tmp["name"], {}):
            problems.append(f"{where}: /tmp (TMPDIR) is not an emptyDir")
        repo = f.get("model-repository")
        if repo not in mounts or not mounts[repo].get("readOnly"):
            problems.append(f"{where}: the model repository {repo} is not mounted read-only")
        else:
            claim = volumes.get(mounts[repo]["name"], {}).get("persistentVolumeClaim")
            if claim and not find(objects, "PersistentVolumeClaim", claim["claimName"]):
                problems.append(f"{where}: PVC {claim['claimName']} is not in the output")
        resources = c.get("resources", {})
        if not resources.get("requests") or not resources.get("limits"):
            problems.append(f"{where}: no resource requests and limits")
        if ann.get("prometheus.io/scrape") == "true" and \
                ann.get("prometheus.io/port") != f.get("metrics-port", "8002"):
            problems.append(f"{where}: prometheus.io/port is not --metrics-port")
        tag = c["image"].rsplit(":", 1)
        if len(tag) != 2 or tag[1] != server_version():
            problems.append(f"{where}: image tag is not inferd's version {server_version()}")
    return problems


def check_service(svc, dep):
    problems = []
    labels = dep["spec"]["template"]["metadata"]["labels"]
    if not selects(svc["spec"].get("selector"), labels):
        problems.append("Service selector does not match the Deployment's pods")
    c = inferd_containers(dep)[0]
    names = {p["name"]: p for p in svc["spec"]["ports"]}
    for name in ("http", "grpc", "metrics"):
        if name not in names:
            problems.append(f"Service has no {name} port")
        elif port_number(c, names[name]["targetPort"]) is None:
            problems.append(f"Service port {name} targets no container port")
    if names.get("grpc", {}).get("appProtocol") != "kubernetes.io/h2c":
        problems.append("Service grpc port is not appProtocol kubernetes.io/h2c")
    return problems


def check_pdb(pdb, dep):
    labels = dep["spec"]["template"]["metadata"]["labels"]
    if not selects(pdb["spec"]["selector"].get("matchLabels"), labels):
        return ["PodDisruptionBudget selects none of the Deployment's pods"]
    return []


def check_hpa(hpa, dep):
    problems = []
    ref = hpa["spec"]["scaleTargetRef"]
    if (ref.get("apiVersion"), ref["kind"], ref["name"]) != \
            ("apps/v1", "Deployment", dep["metadata"]["name"]):
        problems.append("HPA does not target the Deployment")
    if "replicas" in dep["spec"]:
        problems.append("Deployment sets replicas the HPA owns")
    if not 1 <= hpa["spec"].get("minReplicas", 1) <= hpa["spec"]["maxReplicas"]:
        problems.append("HPA replicas out of order")
    pods = [m["pods"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    if len(pods) != 1:
        return problems + ["HPA has no Pods metric"]
    if pods[0]["target"]["type"] != "AverageValue":
        problems.append("a Pods metric's target must be AverageValue")
    for m in hpa["spec"]["metrics"]:
        t = m[m["type"][0].lower() + m["type"][1:]]["target"]
        if t["type"] not in ("Utilization", "Value", "AverageValue"):
            problems.append(f"HPA target type {t['type']}")
    # The metric is the one docs/deploy.md's adapter rule serves, computed
    # from a series inferd exports.
    rule = adapter_rule()
    if pods[0]["metric"]["name"] != rule["name"]["as"]:
        problems.append("HPA metric is not the adapter rule's")
    return problems


def adapter_rule():
    doc = (ROOT / "docs" / "deploy.md").read_text()
    m = re.search(r"```yaml\n(rules:\n.*?)```", doc, re.S)
    assert m, "docs/deploy.md has no prometheus-adapter rule"
    return yaml.safe_load(m.group(1))["rules"][0]


def check_servicemonitor(sm, svc):
    problems = []
    if not selects(sm["spec"]["selector"].get("matchLabels"), svc["metadata"]["labels"]):
        problems.append("ServiceMonitor selects not the Service")
    names = {p["name"] for p in svc["spec"]["ports"]}
    for e in sm["spec"]["endpoints"]:
        if e.get("port") not in names:
            problems.append(f"ServiceMonitor port {e.get('port')} is not a Service port")
    return problems


def check_kserve(runtime, isvc):
    problems = []
    c = inferd_containers(runtime)
    if len(c) != 1 or c[0]["name"] != "kserve-container":
        return ["the runtime's inferd container must be kserve-container"]
    f = flags(c[0])
    repos = [a.split("=", 1)[1] for a in c[0].get("args", [])
             if a.split("=", 1)[0] in ("--model-repository", "--model-store")]
    # KServe's conventions, as in its kserve-tritonserver runtime.
    for k, v in (("http-port", "8080"), ("grpc-port", "9000")):
        if f.get(k) != v:
            problems.append(f"--{k} is not KServe's {v}")
    if repos != ["/mnt/models"]:
        problems.append("the model repository is not KServe's /mnt/models")
    if not {"v2", "grpc-v2"} <= set(runtime["spec"].get("protocolVersions", [])):
        problems.append("protocolVersions lacks v2 or grpc-v2")
    formats = runtime["spec"].get("supportedModelFormats", [])
    if not {"triton", "onnx", "pytorch", "python"} <= {m["name"] for m in formats}:
        problems.append("supportedModelFormats lacks one of triton, onnx, pytorch, python")
    ann = runtime["spec"].get("annotations", {})
    if ann.get("prometheus.kserve.io/port") != f.get("metrics-port", "8002"):
        problems.append("prometheus.kserve.io/port is not --metrics-port")
    # KServe's own match (ModelSpec.RuntimeSupportsModel): with an explicit
    # runtime, mt:<name>[:<version>] among the runtime's formats.
    model = isvc["spec"]["predictor"]["model"]
    if model.get("runtime") != runtime["metadata"]["name"]:
        problems.append("the InferenceService names another runtime")
    labels = set()
    for m in formats:
        labels.add(m["name"])
        if "version" in m:
            labels.add(f"{m['name']}:{m['version']}")
    mf = model["modelFormat"]
    want = mf["name"] + (f":{mf['version']}" if "version" in mf else "")
    if want not in labels:
        problems.append(f"the runtime does not support model format {want}")
    if model.get("protocolVersion", "v1") not in runtime["spec"].get("protocolVersions", []):
        problems.append("the runtime does not speak the model's protocolVersion")
    return problems


def check_sidecar(dep):
    problems = []
    spec = pod_spec(dep)
    cs = inferd_containers(dep)
    if len(cs) != 1 or cs[0] not in spec.get("initContainers", []) or \
            cs[0].get("restartPolicy") != "Always":
        return ["inferd is not a native sidecar (an initContainer, restartPolicy Always)"]
    inferd = cs[0]
    apps = spec["containers"]
    repo = flags(inferd).get("model-repository")
    inferd_mounts = {m["mountPath"]: m for m in inferd.get("volumeMounts", [])}
    for app in apps:
        env = {e["name"]: e.get("value", "") for e in app.get("env", [])}
        for key, value in env.items():
            m = re.match(r"^(?:http://)?localhost:(\d+)$", value)
            if m and int(m.group(1)) not in [p["containerPort"] for p in inferd["ports"]]:
                problems.append(f"{app['name']}: {key} is not one of inferd's ports")
        app_mounts = {m["mountPath"]: m for m in app.get("volumeMounts", [])}
        shared = repo in app_mounts and repo in inferd_mounts and \
            app_mounts[repo]["name"] == inferd_mounts[repo]["name"]
        if not shared:
            problems.append(f"{app['name']} does not share inferd's model repository {repo}")
        shm = app_mounts.get("/dev/shm"), inferd_mounts.get("/dev/shm")
        if None in shm or shm[0]["name"] != shm[1]["name"]:
            problems.append(f"{app['name']} does not share /dev/shm with inferd")
    return problems


# ---- fixtures ------------------------------------------------------------


@pytest.fixture(scope="module")
def rendered():
    r = subprocess.run([kubectl(), "version", "--client", "-o", "json"],
                       capture_output=True, text=True, timeout=30)
    v = json.loads(r.stdout).get("kustomizeVersion", "v0")
    if int(re.match(r"v(\d+)", v).group(1)) < 5:
        pytest.fail(f"kubectl's kustomize is {v}; deploy/ needs v5 (kubectl 1.27 or later)")
    return {str(k.relative_to(DEPLOY)): render(k) for k in KUSTOMIZATIONS}


@pytest.fixture(scope="module")
def base(rendered):
    return rendered["k8s/base"]


@pytest.fixture(scope="module")
def kserve(rendered):
    objs = rendered["kserve"]
    return one(objs, "ClusterServingRuntime"), one(objs, "InferenceService")


# ---- tests ---------------------------------------------------------------


def test_every_kustomization_renders(rendered):
    assert {"k8s/base", "kserve", "sidecar"} <= set(rendered)
    assert any(k.startswith("k8s/overlays/") for k in rendered)
    for name, objs in rendered.items():
        assert objs, f"{name} renders nothing"


def test_schemas(rendered):
    objects, where = [], []
    for name, objs in rendered.items():
        objects += objs
        where += [f"{name}: {o['kind']} {o['metadata']['name']}" for o in objs]
    for p in RAW:
        for o in yaml.safe_load_all(p.read_text()):
            if o:
                objects.append(o)
                where.append(f"{p.relative_to(ROOT)}: {o['kind']}")
    bad = {w: e for w, e in zip(where, validate(objects)) if e}
    assert not bad, json.dumps(bad, indent=1)


def break_deployment(dep):
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c["readinesProbe"] = c.pop("readinessProbe")


def break_sleep(dep):
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c["lifecycle"]["preStop"]["sleep"] = {}


def break_port(svc):
    svc["spec"]["ports"][0]["port"] = "8000"


def break_runtime(rt):
    rt["spec"]["protocolVersions"].append("v3")


def break_runtime_container(rt):
    rt["spec"]["containers"][0]["imagePullPolicy"] = "Sometimes"


def break_isvc(isvc):
    m = isvc["spec"]["predictor"]["model"]
    m["storageURI"] = m.pop("storageUri")


def break_isvc_format(isvc):
    del isvc["spec"]["predictor"]["model"]["modelFormat"]["name"]


def break_monitor(sm):
    sm["spec"]["endpoints"][0]["prot"] = "metrics"


def break_hpa(hpa):
    hpa["spec"]["scaleTargetRef"].pop("name")


SCHEMA_BREAKS = [
    ("k8s/base", "Deployment", break_deployment, "readinesProbe"),
    ("k8s/base", "Deployment", break_sleep, "seconds"),
    ("k8s/base", "Service", break_port, "port"),
    ("k8s/base", "HorizontalPodAutoscaler", break_hpa, "name"),
    ("kserve", "ClusterServingRuntime", break_runtime, "protocolVersions"),
    ("kserve", "ClusterServingRuntime", break_runtime_container, "imagePullPolicy"),
    ("kserve", "InferenceService", break_isvc, "storageURI"),
    ("kserve", "InferenceService", break_isvc_format, "name"),
    ("k8s/overlays/servicemonitor", "ServiceMonitor", break_monitor, "prot"),
]


def test_schemas_reject_broken_objects(rendered):
    objects = []
    for folder, kind, breaker, _ in SCHEMA_BREAKS:
        o = copy.deepcopy(one(rendered[folder], kind))
        breaker(o)
        objects.append(o)
    # A kind no schema covers is an error, not a pass.
    objects.append({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "x"}})
    errors = validate(objects)
    for (folder, kind, breaker, word), e in zip(SCHEMA_BREAKS, errors):
        assert e, f"{breaker.__name__} ({folder} {kind}) was accepted"
        assert any(word in x for x in e), f"{breaker.__name__}: {e}"
    assert errors[-1] and "no schema" in errors[-1][0]


@pytest.mark.parametrize("folder", ["k8s/base", "k8s/overlays/local", "k8s/overlays/full",
                                    "k8s/overlays/servicemonitor"])
def test_kubernetes_cross_references(rendered, folder):
    objs = rendered[folder]
    dep = one(objs, "Deployment", "inferd")
    svc = one(objs, "Service", "inferd")
    problems = check_workload(dep, objs) + check_service(svc, dep) + \
        check_pdb(one(objs, "PodDisruptionBudget"), dep) + \
        check_hpa(one(objs, "HorizontalPodAutoscaler"), dep)
    for sm in find(objs, "ServiceMonitor"):
        problems += check_servicemonitor(sm, svc)
    assert not problems


def test_servicemonitor_overlay_has_one(rendered):
    assert find(rendered["k8s/overlays/servicemonitor"], "ServiceMonitor")
    assert not find(rendered["k8s/base"], "ServiceMonitor")


def mutate(obj, fn):
    o = copy.deepcopy(obj)
    fn(o)
    return o


def inferd_of(dep):
    return dep["spec"]["template"]["spec"]["containers"][0]


CROSS_BREAKS = {
    "grace period": lambda d: d["spec"]["template"]["spec"].update(
        terminationGracePeriodSeconds=40),
    "probe port": lambda d: inferd_of(d)["livenessProbe"]["httpGet"].update(port="htp"),
    "probe path": lambda d: inferd_of(d)["readinessProbe"]["httpGet"].update(
        path="/v2/health/live"),
    "no startup probe": lambda d: inferd_of(d).pop("startupProbe"),
    "writable root": lambda d: inferd_of(d)["securityContext"].update(
        readOnlyRootFilesystem=False),
    "capabilities": lambda d: inferd_of(d)["securityContext"]["capabilities"].update(
        drop=["NET_RAW"]),
    "no /tmp": lambda d: inferd_of(d).update(volumeMounts=[
        m for m in inferd_of(d)["volumeMounts"] if m["mountPath"] != "/tmp"]),
    "writable models": lambda d: inferd_of(d)["volumeMounts"][0].update(readOnly=False),
    "metrics port": lambda d: inferd_of(d)["args"].append("--metrics-port=9102"),
    "image tag": lambda d: inferd_of(d).update(image="inferd:latest"),
}


@pytest.mark.parametrize("what", sorted(CROSS_BREAKS))
def test_workload_check_fails_on_broken(base, what):
    dep = mutate(one(base, "Deployment"), CROSS_BREAKS[what])
    assert check_workload(dep, base), f"{what} not noticed"


def test_other_checks_fail_on_broken(base, rendered, kserve):
    dep = one(base, "Deployment")
    svc = one(base, "Service")
    hpa = one(base, "HorizontalPodAutoscaler")
    pdb = one(base, "PodDisruptionBudget")
    sm = one(rendered["k8s/overlays/servicemonitor"], "ServiceMonitor")
    assert check_service(mutate(svc, lambda s: s["spec"]["selector"].update(
        {"app.kubernetes.io/name": "other"})), dep)
    assert check_service(mutate(svc, lambda s: s["spec"]["ports"][1].update(
        appProtocol="http")), dep)
    assert check_service(mutate(svc, lambda s: s["spec"]["ports"][0].update(
        targetPort="web")), dep)
    assert check_pdb(mutate(pdb, lambda p: p["spec"]["selector"]["matchLabels"].update(
        {"app.kubernetes.io/component": "x"})), dep)
    assert check_hpa(mutate(hpa, lambda h: h["spec"]["scaleTargetRef"].update(
        name="other")), dep)
    assert check_hpa(mutate(hpa, lambda h: h["spec"]["metrics"][0]["pods"]["metric"].update(
        name="requests")), dep)
    assert check_hpa(mutate(hpa, lambda h: h["spec"]["metrics"][0]["pods"]["target"].update(
        type="Average")), dep)
    assert check_hpa(hpa, mutate(dep, lambda d: d["spec"].update(replicas=3)))
    assert check_servicemonitor(mutate(sm, lambda s: s["spec"]["endpoints"][0].update(
        port="prom")), svc)
    rt, isvc = kserve
    assert check_kserve(rt, mutate(isvc, lambda i: i["spec"]["predictor"]["model"][
        "modelFormat"].update(version="3")))
    assert check_kserve(rt, mutate(isvc, lambda i: i["spec"]["predictor"]["model"].update(
        runtime="kserve-tritonserver")))
    assert check_kserve(mutate(rt, lambda r: r["spec"]["containers"][0]["args"].__setitem__(
        0, "--model-repository=/models")), isvc)
    assert check_workload(mutate(dep, lambda d: inferd_of(d).update(command=["inferd"])), base)
    side = one(rendered["sidecar"], "Deployment")
    assert check_sidecar(mutate(side, lambda d: d["spec"]["template"]["spec"]["containers"][0][
        "env"][0].update(value="http://localhost:8080")))
    assert check_sidecar(mutate(side, lambda d: d["spec"]["template"]["spec"][
        "initContainers"][0].pop("restartPolicy")))


def test_kserve_cross_references(kserve):
    assert not check_kserve(*kserve)


def test_sidecar_cross_references(rendered):
    dep = one(rendered["sidecar"], "Deployment")
    assert not check_workload(dep, rendered["sidecar"])
    assert not check_sidecar(dep)


def test_hpa_metric_is_exported():
    """The adapter rule's series is a metric core/metrics.c exports."""
    rule = adapter_rule()
    series = re.match(r"^(\w+)", rule["seriesQuery"]).group(1)
    assert f'"{series}"' in (ROOT / "core" / "metrics.c").read_text()
    assert "<<.Series>>" in rule["metricsQuery"]
    assert {"namespace", "pod"} <= set(rule["resources"]["overrides"])


# ---- inferd takes every flag the manifests give it -----------------------


def run_inferd(args, timeout=15):
    """Starts build/inferd with args (ports 0, an empty repository); returns
    (started, exit status, log)."""
    if not INFERD.exists():
        pytest.fail(f"{INFERD} is not built (make {INFERD.relative_to(ROOT)})")
    with tempfile.TemporaryDirectory() as tmp:
        repo = pathlib.Path(tmp, "models")
        repo.mkdir()
        fixed = []
        for a in args:
            name = a.split("=", 1)[0]
            if name == "--backend-directory":
                continue  # the image's; nothing here loads a backend
            if name in ("--model-repository", "--model-store"):
                a = f"{name}={repo}"
            elif name in ("--http-port", "--grpc-port", "--metrics-port"):
                a = f"{name}=0"
            fixed.append(a)
        logfile = pathlib.Path(tmp, "log")
        with open(logfile, "w") as out:
            p = subprocess.Popen([str(INFERD), "--http-address=127.0.0.1", *fixed],
                                 stdout=out, stderr=subprocess.STDOUT,
                                 env={**os.environ, "TMPDIR": tmp})
        started, deadline = False, time.monotonic() + timeout
        while time.monotonic() < deadline and p.poll() is None:
            if " ready" in logfile.read_text():
                started = True
                break
            time.sleep(0.02)
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log = logfile.read_text()
        return started, p.returncode, log


def manifest_args(rendered):
    out = {}
    for name, objs in rendered.items():
        for o in objs:
            if o["kind"] in ("Deployment", "ClusterServingRuntime", "ServingRuntime"):
                for c in inferd_containers(o):
                    out[f"{name}/{o['metadata']['name']}/{c['name']}"] = command_line(c)
    return out


def test_inferd_takes_the_manifests_flags(rendered):
    seen = set()
    for where, args in manifest_args(rendered).items():
        if tuple(args) in seen:
            continue
        seen.add(tuple(args))
        started, rc, log = run_inferd(args)
        assert started and rc == 0, f"{where}: inferd {' '.join(args)}\n{log}"
    assert len(seen) >= 3


def test_inferd_refuses_a_bad_flag():
    started, rc, log = run_inferd(["--model-repository=/models", "--no-such-flag=1"])
    assert not started and rc != 0, log
