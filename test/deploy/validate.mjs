// Validates Kubernetes objects against the API's schemas, for test_deploy.py.
//
// Reads a JSON array of objects on stdin and prints a JSON array with one
// entry per object: {"kind", "name", "errors": [strings]}; an empty `errors`
// is a valid object. Exits 0 once every object is judged, 2 when it cannot
// judge (the packages are missing, bad input).
//
// Two checks per object:
// - the schema: kubernetes-models' validators (the Kubernetes OpenAPI schemas
//   compiled for ajv: types, formats, enums, required fields) for built-in
//   kinds, @kubernetes-models/prometheus-operator's for ServiceMonitor, and
//   kserve-schema.json (ajv) for KServe's kinds, whose embedded Kubernetes
//   types go back to kubernetes-models through the x-kubernetes-model keyword;
// - unknown fields: the OpenAPI schemas leave additionalProperties open (the
//   API server prunes or, with strict field validation, rejects unknown
//   fields), so a misspelt `readinesProbe` would pass the first check. Every
//   key is looked up in the model's TypeScript declaration (the .d.ts files
//   the same generator wrote from the same schema), recursively.
//
// The packages live outside the tree ($KM_HOME, installed by
// third_party/install-kubernetes-models.sh) and are imported by path.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const kmHome = process.env.KM_HOME || "/opt/inferd/kubernetes-models-5.1.0";
const nm = path.join(kmHome, "node_modules");
const here = path.dirname(new URL(import.meta.url).pathname);

function die(msg) {
  process.stderr.write(`validate.mjs: ${msg}\n`);
  process.exit(2);
}

if (!fs.existsSync(path.join(nm, "kubernetes-models", "package.json")))
  die(`kubernetes-models is not installed in ${nm} (run third_party/install-kubernetes-models.sh)`);

// The model module (.js) and declaration (.d.ts) of apiVersion/kind, as
// paths under node_modules without the extension; null for a kind no
// package covers.
function modelPath(apiVersion, kind) {
  if (apiVersion === "monitoring.coreos.com/v1")
    return `@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/${kind}`;
  if (apiVersion.startsWith("meta/"))
    return `@kubernetes-models/apimachinery/apis/${apiVersion}/${kind}`;
  return `kubernetes-models/${apiVersion}/${kind}`;
}

const models = new Map();
async function loadModel(apiVersion, kind) {
  const key = `${apiVersion}/${kind}`;
  if (models.has(key)) return models.get(key);
  const p = path.join(nm, modelPath(apiVersion, kind));
  let cls = null;
  if (fs.existsSync(p + ".js")) {
    const mod = await import(pathToFileURL(p + ".js").href);
    cls = mod[kind] || null;
  }
  const m = cls ? { cls, dts: p + ".d.ts" } : null;
  models.set(key, m);
  return m;
}

// ---- unknown fields, from the declarations --------------------------------
// A declaration file holds one `export interface I<Kind> { ... }` whose
// members are `"name"?: Type;` lines (a multi-line type for inline maps), and
// imports naming the file of every interface it refers to.
const decls = new Map();
function readDecl(file) {
  if (decls.has(file)) return decls.get(file);
  const text = fs.readFileSync(file, "utf8");
  const imports = new Map();
  for (const m of text.matchAll(/^import \{ ([^}]+) \} from "([^"]+)";$/gm)) {
    let target = m[2];
    target = target.startsWith(".")
      ? path.join(path.dirname(file), target.replace(/\.js$/, ""))
      : path.join(nm, target.replace(/\.js$/, ""));
    for (const name of m[1].split(",")) imports.set(name.trim(), target + ".d.ts");
  }
  const props = new Map();
  const body = text.match(/^export interface \w+(?: extends [\w, ]+)? \{\n([\s\S]*?)^\}$/m);
  if (body) {
    const lines = body[1].split("\n");
    for (let i = 0; i < lines.length; i++) {
      const m = lines[i].match(/^ {4}"([^"]+)"\??: (.*)$/);
      if (!m) continue;
      let type = m[2];
      // A multi-line inline type runs to the closing `};` at the same depth.
      if (type === "{") {
        type = "";
        while (++i < lines.length && lines[i] !== "    };") type += lines[i].trim() + " ";
        type = `{ ${type}}`;
      }
      props.set(m[1], type.replace(/;$/, "").trim());
    }
  }
  const d = { props, imports, ok: body !== null };
  decls.set(file, d);
  return d;
}

// The declaration file a member's type names (through Array<...>), or null
// for a leaf (primitives, enums, maps, IntOrString, Quantity).
function typeFile(decl, type) {
  let t = type;
  for (let m; (m = t.match(/^Array<(.*)>$/)); ) t = m[1];
  if (!/^I\w+$/.test(t)) return null;
  const f = decl.imports.get(t);
  if (!f || !fs.existsSync(f)) return null;
  return readDecl(f).ok ? f : null;
}

function unknownFields(value, file, where, skip, out) {
  if (value === null || typeof value !== "object") return;
  if (Array.isArray(value)) {
    value.forEach((v, i) => unknownFields(v, file, `${where}/${i}`, null, out));
    return;
  }
  const decl = readDecl(file);
  if (!decl.ok) return;
  for (const [k, v] of Object.entries(value)) {
    if (skip && skip.has(k)) continue;
    if (!decl.props.has(k)) {
      out.push(`${where}/${k}: unknown field "${k}"`);
      continue;
    }
    const f = typeFile(decl, decl.props.get(k));
    if (f) unknownFields(v, f, `${where}/${k}`, null, out);
  }
}

// Schema check and unknown fields of `data` as model apiVersion/kind;
// `optional` names required fields to stand in for, `own` fields to leave out
// (the caller's schema checks them).
function checkModel(m, data, where, { optional = [], own = [] } = {}) {
  const errors = [];
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    errors.push(`${where}: must be an object`);
    return errors;
  }
  const copy = { ...data };
  for (const k of own) delete copy[k];
  for (const k of optional) if (!(k in copy)) copy[k] = k === "containers" ? [] : "x";
  try {
    new m.cls(copy).validate();
  } catch (e) {
    for (const line of String(e.message).split("\n"))
      if (line.trim()) errors.push(line.replace(/^data/, where));
  }
  unknownFields(data, m.dts, where, new Set(own), errors);
  return errors;
}

// ---- KServe: ajv with kserve-schema.json ------------------------------------
const { default: Ajv } = await import(pathToFileURL(path.join(nm, "ajv", "dist", "ajv.js")).href);
const schema = JSON.parse(fs.readFileSync(path.join(here, "kserve-schema.json"), "utf8"));

// The embedded Kubernetes types the KServe schema names, loaded up front
// (ajv's keywords are synchronous).
const embedded = new Map();
for (const m of JSON.stringify(schema).matchAll(/"model":"([^"]+)"/g)) {
  const parts = m[1].split("/");
  const kind = parts.pop();
  const mod = await loadModel(parts.join("/"), kind);
  if (!mod) die(`kserve-schema.json names ${m[1]}, which kubernetes-models lacks`);
  embedded.set(m[1], mod);
}

const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addKeyword({
  keyword: "x-kubernetes-model",
  schemaType: "object",
  errors: true,
  validate: function check(sch, data, _parent, cxt) {
    const where = "data" + (cxt ? cxt.instancePath : "");
    const errs = checkModel(embedded.get(sch.model), data, where, sch);
    check.errors = errs.map((message) => ({
      keyword: "x-kubernetes-model",
      instancePath: cxt ? cxt.instancePath : "",
      message,
      params: {},
    }));
    return errs.length === 0;
  },
});
ajv.addSchema(schema, "kserve");
const kserve = {
  ServingRuntime: ajv.getSchema("kserve#/definitions/servingRuntime"),
  ClusterServingRuntime: ajv.getSchema("kserve#/definitions/servingRuntime"),
  InferenceService: ajv.getSchema("kserve#/definitions/inferenceService"),
};

function ajvErrors(v) {
  return (v.errors || []).map((e) =>
    e.keyword === "x-kubernetes-model"
      ? e.message
      : `data${e.instancePath} ${e.message}${e.params && e.params.additionalProperty ? ` "${e.params.additionalProperty}"` : ""}`
  );
}

// ---- main -------------------------------------------------------------------
const objects = JSON.parse(fs.readFileSync(0, "utf8"));
if (!Array.isArray(objects)) die("stdin must hold a JSON array of objects");
const results = [];
for (const obj of objects) {
  const apiVersion = obj && obj.apiVersion;
  const kind = obj && obj.kind;
  const name = obj && obj.metadata && obj.metadata.name;
  const r = { kind: `${apiVersion}/${kind}`, name, errors: [] };
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    r.errors.push("no apiVersion or kind");
  } else if (apiVersion.startsWith("serving.kserve.io/")) {
    const v = kserve[kind];
    if (!v) r.errors.push(`no schema for ${apiVersion} ${kind}`);
    else if (!v(obj)) r.errors.push(...ajvErrors(v));
  } else {
    const m = await loadModel(apiVersion, kind);
    if (!m) r.errors.push(`no schema for ${apiVersion} ${kind}`);
    else r.errors.push(...checkModel(m, obj, "data"));
  }
  results.push(r);
}
process.stdout.write(JSON.stringify(results) + "\n");
