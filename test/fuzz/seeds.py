#!/usr/bin/env python3
"""test/fuzz/seeds.py - writes the seed corpora of the fuzz targets
(test/fuzz/corpus/<target>/): hand-written requests like the unit and e2e
tests send, every config.pbtxt under test/models, and the configs of the
recorded Triton conformance cases when /work/shared/conformance is there.

    /usr/bin/python3 test/fuzz/seeds.py      (from the repository root)

The files are committed; run this again after changing it (it keeps the
found-* files, inputs a fuzzer found). The gRPC seeds
are built by hand (HTTP/2 frames with HPACK literals, no Huffman coding)
around messages that protoc's Python code packs.
"""
import glob
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "test", "fuzz", "corpus")
CONFORMANCE = "/work/shared/conformance/config-sanity/cases.json"


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- bodies -----------------------------------------------------------------

FP32_16 = list(range(1, 17))
JSON_BODIES = {
    "fp32": {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                         "data": FP32_16}]},
    "fp32_nested": {"id": "r1", "inputs": [{"name": "INPUT0", "datatype": "FP32",
                                             "shape": [2, 2], "data": [[1.5, -2], [3e3, 0.25]]}],
                    "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]},
    "bytes": {"inputs": [{"name": "INPUT0", "datatype": "BYTES", "shape": [3],
                          "data": ["a", "\u00e9\\\"x", ""]}]},
    "bool": {"inputs": [{"name": "INPUT0", "datatype": "BOOL", "shape": [1, 2],
                         "data": [True, False]}]},
    "int64": {"inputs": [{"name": "INPUT0", "datatype": "INT64", "shape": [1, 3],
                          "data": [-9223372036854775808, 0, 9223372036854775807]}],
              "parameters": {"binary_data_output": True, "priority": 1, "timeout": 100}},
    "fp16": {"inputs": [{"name": "INPUT0", "datatype": "FP16", "shape": [1, 2],
                         "data": [1.0, 65504]}]},
    "multi": {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 2], "data": [1, 2]},
                         {"name": "INPUT1", "datatype": "INT32", "shape": [1, 2], "data": [3, 4]}],
              "outputs": [{"name": "OUTPUT0"}, {"name": "OUTPUT1", "parameters": {"classification": 1}}]},
    "seq": {"inputs": [{"name": "INPUT0", "datatype": "INT32", "shape": [1, 1], "data": [1]}],
            "parameters": {"sequence_id": 7, "sequence_start": True, "sequence_end": False}},
    "shm": {"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [1, 16],
                        "parameters": {"shared_memory_region": "r", "shared_memory_byte_size": 64}}]},
}


def json_text(obj):
    return json.dumps(obj, separators=(",", ":"))


def binary_body(name="INPUT0", dtype="FP32", shape=(1, 16), raw=None, json_extra=None):
    """An infer body with one binary tensor: (json header, full body)."""
    if raw is None:
        raw = struct.pack("<16f", *FP32_16)
    hdr = {"inputs": [{"name": name, "datatype": dtype, "shape": list(shape),
                       "parameters": {"binary_data_size": len(raw)}}],
           "parameters": {"binary_data_output": True}}
    if json_extra:
        hdr.update(json_extra)
    h = json_text(hdr).encode()
    return h, h + raw


def bytes_tensor(items):
    return b"".join(struct.pack("<I", len(s)) + s for s in items)


# ---- HTTP/1.1 ---------------------------------------------------------------


def http_req(method, path, body=b"", headers=()):
    if isinstance(body, str):
        body = body.encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost"]
    lines += list(headers)
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def http_seeds():
    s = {}
    s["health"] = http_req("GET", "/v2/health/live") + http_req("GET", "/v2/health/ready")
    s["server_meta"] = http_req("GET", "/v2")
    s["model_meta"] = http_req("GET", "/v2/models/identity_fp32") + \
        http_req("GET", "/v2/models/versioned/versions/2")
    s["model_ready"] = http_req("GET", "/v2/models/identity_fp32/ready") + \
        http_req("GET", "/v2/models/nope/versions/1/ready")
    s["config"] = http_req("GET", "/v2/models/batched/config")
    s["stats"] = http_req("GET", "/v2/models/stats") + http_req("GET", "/v2/models/identity_fp32/versions/1/stats")
    s["index"] = http_req("POST", "/v2/repository/index", "{\"ready\":true}")
    s["load"] = http_req("POST", "/v2/repository/models/identity_fp32/load", "{}") + \
        http_req("POST", "/v2/repository/models/identity_fp32/unload", "{\"parameters\":{\"unload_dependents\":true}}")
    s["trace_log"] = http_req("GET", "/v2/trace/setting") + http_req("GET", "/v2/logging") + \
        http_req("GET", "/v2/systemsharedmemory/status") + http_req("GET", "/v2/cudasharedmemory/status")
    s["metrics"] = http_req("GET", "/metrics")
    s["shm_http"] = http_req("POST", "/v2/systemsharedmemory/region/r/register",
                             "{\"key\":\"/inferd_fuzz_none\",\"offset\":0,\"byte_size\":64}") + \
        http_req("GET", "/v2/systemsharedmemory/region/r/status") + \
        http_req("POST", "/v2/cudasharedmemory/region/c/register",
                 "{\"raw_handle\":{\"b64\":\"" + "A" * 86 + "==\"},\"device_id\":0,\"byte_size\":64}") + \
        http_req("POST", "/v2/systemsharedmemory/region/r/unregister") + \
        http_req("POST", "/v2/cudasharedmemory/unregister")
    s["head_options"] = http_req("HEAD", "/v2/health/ready") + http_req("OPTIONS", "/v2")
    models = {"fp32": "identity_fp32", "fp32_nested": "identity_fp32", "bytes": "identity_bytes",
              "bool": "identity_bool", "int64": "identity_int64", "fp16": "identity_fp16",
              "multi": "identity_multi", "seq": "identity_int32", "shm": "identity_fp32"}
    for k, body in JSON_BODIES.items():
        s["infer_" + k] = http_req("POST", f"/v2/models/{models[k]}/infer", json_text(body))
    h, body = binary_body()
    s["infer_binary"] = http_req("POST", "/v2/models/identity_fp32/versions/1/infer", body,
                                 [f"Inference-Header-Content-Length: {len(h)}",
                                  "Content-Type: application/octet-stream"])
    h, body = binary_body(dtype="BYTES", shape=(2,), raw=bytes_tensor([b"ab", b"\xff\x00"]))
    s["infer_binary_bytes"] = http_req("POST", "/v2/models/identity_bytes/infer", body,
                                       [f"Inference-Header-Content-Length: {len(h)}"])
    h, body = binary_body()
    s["infer_binary_short"] = http_req("POST", "/v2/models/identity_fp32/infer", body[:-5],
                                       [f"Inference-Header-Content-Length: {len(h)}"])
    s["infer_header_len_big"] = http_req("POST", "/v2/models/identity_fp32/infer", "{}",
                                         ["Inference-Header-Content-Length: 99999999999999999999"])
    # Chunked, Expect: 100-continue, keep-alive / close, pipelining.
    js = json_text(JSON_BODIES["fp32"]).encode()
    chunks = b"".join(b"%x\r\n" % len(js[i:i + 40]) + js[i:i + 40] + b"\r\n" for i in range(0, len(js), 40))
    s["infer_chunked"] = (b"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nHost: x\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n")
    s["expect_continue"] = http_req("POST", "/v2/models/identity_fp32/infer", js,
                                    ["Expect: 100-continue"])
    s["connection_close"] = http_req("GET", "/v2/health/live", headers=["Connection: close"]) + \
        http_req("GET", "/v2/health/ready")
    s["http10"] = b"GET /v2/health/live HTTP/1.0\r\n\r\n"
    s["pipelined"] = b"".join(http_req("POST", "/v2/models/identity_fp32/infer", js) for _ in range(6))
    s["generate"] = http_req("POST", "/v2/models/identity_bytes/generate",
                             "{\"INPUT0\":\"hello\",\"parameters\":{\"stream\":false}}")
    s["generate_stream"] = http_req("POST", "/v2/models/identity_bytes/generate_stream",
                                    "{\"INPUT0\":[\"a\",\"b\"]}")
    # Malformed.
    s["bad_method"] = b"BREW /v2 HTTP/1.1\r\n\r\n"
    s["bad_json"] = http_req("POST", "/v2/models/identity_fp32/infer", "{\"inputs\":[{\"name\":")
    s["bad_cl"] = b"POST /v2/models/identity_fp32/infer HTTP/1.1\r\nContent-Length: -1\r\n\r\n"
    s["two_cl"] = b"POST /v2 HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"
    s["long_url"] = http_req("GET", "/v2/models/" + "a" * 9000)
    s["url_escapes"] = http_req("GET", "/v2/models/%69dentity_fp32/versions/%31") + \
        http_req("GET", "/v2//models/../x?y=z#w")
    s["half_line"] = b"GET /v2/health/re"
    s["header_no_colon"] = b"GET / HTTP/1.1\r\nFoo\r\n\r\n"
    return s


# ---- HTTP/2 and gRPC ------------------------------------------------------


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def hpack_literal(name, value):
    """Literal header field without indexing, new name, no Huffman."""
    def s(x):
        x = x.encode()
        assert len(x) < 127
        return bytes([len(x)]) + x
    return b"\x00" + s(name) + s(value)


def grpc_headers(path, extra=()):
    hs = [(":method", "POST"), (":scheme", "http"), (":path", path),
          (":authority", "localhost"), ("content-type", "application/grpc"),
          ("te", "trailers")] + list(extra)
    return b"".join(hpack_literal(n, v) for n, v in hs)


SETTINGS = frame(4, 0, 0, b"")
SETTINGS_ACK = frame(4, 1, 0, b"")


def grpc_call(stream, path, msgs, extra=(), end=True):
    out = frame(1, 4, stream, grpc_headers(path, extra))  # HEADERS, END_HEADERS
    for i, m in enumerate(msgs):
        last = end and i == len(msgs) - 1
        out += frame(0, 1 if last else 0, stream, b"\x00" + struct.pack(">I", len(m)) + m)
    if not msgs and end:
        out += frame(0, 1, stream, b"")
    return out


def load_pb():
    tmp = tempfile.mkdtemp(prefix="ifd_seeds_")
    subprocess.run(["protoc", f"-I{ROOT}", f"--python_out={tmp}", "proto/grpc_service.proto",
                    "proto/model_config.proto", "proto/health.proto"], check=True)
    sys.path.insert(0, tmp)
    from proto import grpc_service_pb2, health_pb2  # noqa: E402
    return tmp, grpc_service_pb2, health_pb2


def infer_messages(pb):
    out = {}
    r = pb.ModelInferRequest(model_name="identity_fp32", id="a")
    t = r.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 16])
    r.raw_input_contents.append(struct.pack("<16f", *FP32_16))
    r.outputs.add(name="OUTPUT0")
    out["raw_fp32"] = r.SerializeToString()
    r = pb.ModelInferRequest(model_name="identity_fp32", model_version="1")
    t = r.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 16])
    t.contents.fp32_contents.extend(float(x) for x in FP32_16)
    r.parameters["priority"].int64_param = 2
    r.parameters["sequence_id"].string_param = "s"
    r.parameters["binary_data_output"].bool_param = True
    out["typed_fp32"] = r.SerializeToString()
    r = pb.ModelInferRequest(model_name="identity_bytes")
    t = r.inputs.add(name="INPUT0", datatype="BYTES", shape=[2])
    t.contents.bytes_contents.extend([b"x", b""])
    out["typed_bytes"] = r.SerializeToString()
    r = pb.ModelInferRequest(model_name="identity_bytes")
    r.inputs.add(name="INPUT0", datatype="BYTES", shape=[2])
    r.raw_input_contents.append(bytes_tensor([b"ab", b"c"]))
    out["raw_bytes"] = r.SerializeToString()
    r = pb.ModelInferRequest(model_name="identity_multi")
    for n in ("INPUT0", "INPUT1"):
        t = r.inputs.add(name=n, datatype="INT32", shape=[1, 2])
        t.contents.int_contents.extend([1, -2])
    r.outputs.add(name="OUTPUT1").parameters["classification"].int64_param = 1
    out["typed_multi"] = r.SerializeToString()
    r = pb.ModelInferRequest(model_name="identity_int64")
    t = r.inputs.add(name="INPUT0", datatype="INT64", shape=[1, 2])
    t.contents.int64_contents.extend([-(2 ** 63), 2 ** 63 - 1])
    out["typed_int64"] = r.SerializeToString()
    r = pb.ModelInferRequest(model_name="identity_bool")
    t = r.inputs.add(name="INPUT0", datatype="BOOL", shape=[1, 2])
    t.contents.bool_contents.extend([True, False])
    out["typed_bool"] = r.SerializeToString()
    r = pb.ModelInferRequest(model_name="identity_fp32")
    t = r.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 16])
    t.parameters["shared_memory_region"].string_param = "r"
    out["shm"] = r.SerializeToString()
    return out


def grpc_seeds(pb, hpb):
    svc = "/inference.GRPCInferenceService/"
    msgs = infer_messages(pb)
    s = {}
    pre = SETTINGS + SETTINGS_ACK
    s["live_ready"] = pre + grpc_call(1, svc + "ServerLive", [pb.ServerLiveRequest().SerializeToString()]) + \
        grpc_call(3, svc + "ServerReady", [b""])
    s["server_meta"] = pre + grpc_call(1, svc + "ServerMetadata", [b""])
    s["model_meta"] = pre + grpc_call(1, svc + "ModelMetadata", [
        pb.ModelMetadataRequest(name="versioned", version="2").SerializeToString()]) + \
        grpc_call(3, svc + "ModelReady", [pb.ModelReadyRequest(name="identity_fp32").SerializeToString()])
    s["config"] = pre + grpc_call(1, svc + "ModelConfig", [pb.ModelConfigRequest(name="batched").SerializeToString()])
    s["stats_index"] = pre + grpc_call(1, svc + "ModelStatistics", [pb.ModelStatisticsRequest().SerializeToString()]) + \
        grpc_call(3, svc + "RepositoryIndex", [pb.RepositoryIndexRequest(ready=True).SerializeToString()])
    s["load_unload"] = pre + grpc_call(1, svc + "RepositoryModelLoad", [
        pb.RepositoryModelLoadRequest(model_name="identity_fp32").SerializeToString()]) + \
        grpc_call(3, svc + "RepositoryModelUnload", [
            pb.RepositoryModelUnloadRequest(model_name="identity_fp32").SerializeToString()])
    s["shm_trace_log"] = pre + grpc_call(1, svc + "SystemSharedMemoryStatus", [b""]) + \
        grpc_call(3, svc + "TraceSetting", [b""]) + grpc_call(5, svc + "LogSettings", [b""]) + \
        grpc_call(7, svc + "CudaSharedMemoryRegister", [b""])
    s["health"] = pre + grpc_call(1, "/grpc.health.v1.Health/Check",
                                  [hpb.HealthCheckRequest(service="").SerializeToString()])
    for k, m in msgs.items():
        s["infer_" + k] = pre + grpc_call(1, svc + "ModelInfer", [m], [("grpc-timeout", "10S")])
    s["stream_infer"] = pre + grpc_call(1, svc + "ModelStreamInfer",
                                        [msgs["raw_fp32"], msgs["typed_bytes"], msgs["shm"]])
    s["concurrent"] = pre + b"".join(grpc_call(1 + 2 * i, svc + "ModelInfer", [msgs["raw_fp32"]]) for i in range(4))
    # Transport corner cases.
    s["rst_stream"] = pre + grpc_call(1, svc + "ModelInfer", [msgs["raw_fp32"]], end=False) + \
        frame(3, 0, 1, struct.pack(">I", 8))
    s["ping_window_goaway"] = pre + frame(6, 0, 0, b"12345678") + frame(8, 0, 0, struct.pack(">I", 1000)) + \
        grpc_call(1, svc + "ServerLive", [b""]) + frame(7, 0, 0, struct.pack(">II", 1, 0))
    s["continuation"] = pre + frame(1, 0, 1, grpc_headers(svc + "ServerLive")[:20]) + \
        frame(9, 4, 1, grpc_headers(svc + "ServerLive")[20:]) + frame(0, 1, 1, b"\x00\x00\x00\x00\x00")
    s["unknown_method"] = pre + grpc_call(1, svc + "Nope", [b""]) + grpc_call(3, "/x", [b""])
    s["bad_content_type"] = pre + frame(1, 5, 1, b"".join(hpack_literal(n, v) for n, v in [
        (":method", "POST"), (":scheme", "http"), (":path", svc + "ServerLive"),
        (":authority", "x"), ("content-type", "text/plain")]))
    s["compressed_flag"] = pre + frame(1, 4, 1, grpc_headers(svc + "ServerLive")) + \
        frame(0, 1, 1, b"\x01\x00\x00\x00\x00")
    s["split_message"] = pre + frame(1, 4, 1, grpc_headers(svc + "ModelInfer")) + \
        frame(0, 0, 1, b"\x00" + struct.pack(">I", len(msgs["raw_fp32"])) + msgs["raw_fp32"][:10]) + \
        frame(0, 1, 1, msgs["raw_fp32"][10:])
    s["settings_params"] = frame(4, 0, 0, struct.pack(">HI", 3, 1) + struct.pack(">HI", 4, 65535) +
                                 struct.pack(">HI", 5, 16384)) + grpc_call(1, svc + "ServerLive", [b""])
    return s, msgs


# ---- configs ------------------------------------------------------------------


def config_seeds():
    s = {}
    for p in sorted(glob.glob(os.path.join(ROOT, "test", "models", "**", "config.pbtxt"), recursive=True)):
        rel = os.path.relpath(p, os.path.join(ROOT, "test", "models"))
        s["models_" + rel.replace("/config.pbtxt", "").replace("/", "_")] = open(p, "rb").read()
    for p in sorted(glob.glob("/work/shared/conformance/triton-2.47/*.config.pbtxt")):
        s["triton_" + os.path.basename(p).replace(".config.pbtxt", "")] = open(p, "rb").read()
    if os.path.exists(CONFORMANCE):
        cases = json.load(open(CONFORMANCE))["cases"]
        seen = set()
        for c in cases:
            for name, m in c.get("models", {}).items():
                text = m.get("config")
                if not text:
                    continue
                h = hashlib.sha1(text.encode()).hexdigest()[:8]
                if h in seen:
                    continue
                seen.add(h)
                s["conf_" + c["id"].replace("/", "_")[:60] + "_" + h] = text
    return s


def main():
    # Files named found-* are inputs a fuzzer found (a -merge=1 of a long
    # run's corpus, docs/fuzzing.md): kept. The rest is rewritten.
    if os.path.isdir(CORPUS):
        for t in os.listdir(CORPUS):
            for f in os.listdir(os.path.join(CORPUS, t)):
                if not f.startswith("found-"):
                    os.remove(os.path.join(CORPUS, t, f))
    for k, v in http_seeds().items():
        put("http1", k, v)
    for k, v in JSON_BODIES.items():
        put("infer_json", k, json_text(v))
    put("infer_json", "bad_nesting", "{\"inputs\":[{\"name\":\"I\",\"datatype\":\"FP32\",\"shape\":[2],"
        "\"data\":[[[[1]]],2]}]}")
    put("infer_json", "escapes", "{\"id\":\"\\ud83d\\ude00\\n\",\"inputs\":[{\"name\":\"\\u0049\","
        "\"datatype\":\"BYTES\",\"shape\":[1],\"data\":[\"\\u0000\"]}]}")
    for name, kw in {"fp32": {}, "bytes": {"dtype": "BYTES", "shape": (2,), "raw": bytes_tensor([b"ab", b""])},
                     "two": {"json_extra": {"outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}}}.items():
        h, body = binary_body(**kw)
        put("infer_binary", name, struct.pack("<H", len(h)) + body)
    h, body = binary_body()
    put("infer_binary", "header_too_long", struct.pack("<H", len(body) + 1) + body)
    put("infer_binary", "extra_bytes", struct.pack("<H", len(h)) + body + b"junk")
    tmp, pb, hpb = load_pb()
    try:
        gs, msgs = grpc_seeds(pb, hpb)
        for k, v in gs.items():
            put("grpc", k, v)
        for k, v in msgs.items():
            put("grpc_infer", k, v)
    finally:
        shutil.rmtree(tmp)
    cs = config_seeds()
    for k, v in cs.items():
        put("config", k, v)
    # The same configs in JSON (the "config" of a load request), where
    # Python's protobuf reads the text.
    tmp, pb, hpb = load_pb()
    try:
        from google.protobuf import json_format, text_format
        from proto import model_config_pb2
        n = 0
        for k, v in sorted(cs.items()):
            try:
                m = text_format.Parse(v if isinstance(v, str) else v.decode(), model_config_pb2.ModelConfig())
            except Exception:  # noqa: BLE001 - broken on purpose
                continue
            if n % 3 == 0:
                put("config", "json_" + k, json_format.MessageToJson(m, preserving_proto_field_name=True))
            n += 1
    finally:
        shutil.rmtree(tmp)
    for t in sorted(os.listdir(CORPUS)):
        print(t, len(os.listdir(os.path.join(CORPUS, t))))


if __name__ == "__main__":
    main()
