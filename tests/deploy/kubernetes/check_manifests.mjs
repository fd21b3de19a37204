// Checks deploy/kubernetes/*.yaml: every document validates against the Kubernetes (kubernetes-models) or KEDA
// (@kubernetes-models/keda) JSON schema shipped in the pinned npm packages (no network), and the pieces fit
// together — probes on /health and /ready at the container's port, a preStop that starts the drain, a grace
// period covering the drain, resources, the model on a mounted volume, a Service reaching the pods, a
// ScaledObject scaling this Deployment on a metric lockstep exports. With --binary and --model it then runs
// `lockstep serve` with the container's own arguments (model path, host and port replaced, drain grace cut
// to 1 s) and checks each probe route answers 200, the metric is exported, and SIGTERM (what the preStop sends)
// turns /ready into 503 and exits 0.
//
//   node check_manifests.mjs [--binary build/lockstep --model MODEL.gguf]
// Prints one line per check; exits 1 on the first failure set.
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Service } from "kubernetes-models/v1/Service";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";

const here = dirname(fileURLToPath(import.meta.url));
const manifestDir = join(here, "..", "..", "..", "deploy", "kubernetes");
const models = {
  "apps/v1 Deployment": Deployment,
  "v1 Service": Service,
  "v1 PersistentVolumeClaim": PersistentVolumeClaim,
  "keda.sh/v1alpha1 ScaledObject": ScaledObject,
};

let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures++;
  return ok;
}

function arg(name) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

// --- schema validation ---
const docs = [];
const files = readdirSync(manifestDir).filter((f) => f.endsWith(".yaml")).sort();
check(files.length >= 4, `deploy/kubernetes has the manifests (${files.join(", ")})`);
for (const file of files) {
  for (const doc of parseAllDocuments(readFileSync(join(manifestDir, file), "utf8"))) {
    if (doc.errors.length > 0) {
      check(false, `${file}: YAML: ${doc.errors[0].message}`);
      continue;
    }
    const obj = doc.toJS();
    if (obj == null) continue;
    const key = `${obj.apiVersion} ${obj.kind}`;
    const Model = models[key];
    if (!check(Model !== undefined, `${file}: known kind ${key}`)) continue;
    try {
      new Model(obj).validate();
      check(true, `${file}: ${key} '${obj.metadata?.name}' matches its schema`);
    } catch (e) {
      check(false, `${file}: ${key}: ${e.message}`);
    }
    docs.push({ file, obj });
  }
}
const find = (kind) => docs.filter((d) => d.obj.kind === kind).map((d) => d.obj);
const [deployment] = find("Deployment");
const [service] = find("Service");
const [scaled] = find("ScaledObject");
const [claim] = find("PersistentVolumeClaim");
if (!check(deployment && service && scaled && claim, "a Deployment, a Service, a PVC and a ScaledObject")) {
  process.exit(1);
}

// --- the pieces fit together ---
const pod = deployment.spec.template.spec;
const container = pod.containers.find((c) => c.name === "lockstep");
check(container !== undefined, "the Deployment has a container named lockstep");
const args = container.args ?? [];
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
check(args[0] === "serve", "the container runs `lockstep serve`");
const port = Number(flag("--port"));
const containerPort = (container.ports ?? []).find((p) => p.containerPort === port);
check(containerPort !== undefined, `the container port is the --port it serves on (${port})`);
check(flag("--host") === "0.0.0.0", "it binds 0.0.0.0 (probes and the Service come from outside the pod)");
const probePort = (p) => p?.httpGet?.port === port || p?.httpGet?.port === containerPort?.name;
for (const [probe, path] of [["startupProbe", "/health"], ["livenessProbe", "/health"], ["readinessProbe", "/ready"]]) {
  const p = container[probe];
  check(p?.httpGet?.path === path && probePort(p), `${probe} is GET ${path} on port ${port}`);
}
const preStop = container.lifecycle?.preStop?.exec?.command?.join(" ") ?? "";
check(/kill -TERM 1\b/.test(preStop), `preStop starts the drain (SIGTERM to lockstep): '${preStop}'`);
const grace = Number(flag("--drain-grace") ?? 0);
const timeout = Number(flag("--drain-timeout") ?? 30);
check(pod.terminationGracePeriodSeconds >= grace + timeout,
      `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} >= drain grace ${grace} + timeout ${timeout}`);
check(container.readinessProbe.periodSeconds * container.readinessProbe.failureThreshold < grace,
      "the readiness probe notices a drain within the drain grace");
const requests = container.resources?.requests ?? {};
check(requests.cpu !== undefined && requests.memory !== undefined, "CPU and memory requests are set");
check(Number(flag("-t")) <= Number(requests.cpu), `-t ${flag("-t")} threads fit the CPU request ${requests.cpu}`);
const modelPath = flag("-m") ?? flag("--model");
const mount = (container.volumeMounts ?? []).find((m) => modelPath?.startsWith(m.mountPath + "/"));
check(mount !== undefined, `the model ${modelPath} is on a mounted volume`);
const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
check(volume?.persistentVolumeClaim?.claimName === claim.metadata.name,
      `that volume is the claim '${claim.metadata.name}'`);
const labels = deployment.spec.template.metadata.labels;
check(Object.entries(service.spec.selector).every(([k, v]) => labels[k] === v), "the Service selects the pods");
check(service.spec.ports.some((p) => p.targetPort === containerPort?.name || p.targetPort === port),
      "the Service targets the container port");
check(scaled.spec.scaleTargetRef.name === deployment.metadata.name, "the ScaledObject scales this Deployment");
const trigger = scaled.spec.triggers.find((t) => t.type === "prometheus");
const metric = trigger?.metadata?.query?.match(/lockstep_[a-z_]+/)?.[0];
check(metric === "lockstep_num_requests_waiting", `the ScaledObject scales on the queue length (${metric})`);
const annotations = deployment.spec.template.metadata.annotations ?? {};
check(Number(annotations["prometheus.io/port"]) === port && annotations["prometheus.io/path"] === "/metrics",
      "Prometheus is told to scrape /metrics on the serving port");

// --- a live run of the container's arguments ---
const binary = arg("--binary");
const model = arg("--model");
if (binary && model) {
  const liveArgs = [...args];
  const set = (name, value) => {
    const i = liveArgs.indexOf(name);
    if (i >= 0) liveArgs[i + 1] = value;
  };
  set(modelPath === flag("-m") ? "-m" : "--model", model);
  set("--host", "127.0.0.1");
  set("--port", "0");
  set("--drain-grace", "1");
  set("-t", "1");
  await live(binary, liveArgs);
}

async function live(binary, liveArgs) {
  const child = spawn(binary, liveArgs, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const livePort = await new Promise((resolve) => {
    const timer = setInterval(() => {
      const m = log.match(/serving .* on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m || child.exitCode !== null) {
        clearInterval(timer);
        resolve(m ? Number(m[1]) : 0);
      }
    }, 20);
    setTimeout(() => {
      clearInterval(timer);
      resolve(0);
    }, 60000);
  });
  if (!check(livePort > 0, `lockstep serve accepts the container's arguments (${liveArgs.join(" ")})`)) {
    console.log(log);
    child.kill("SIGKILL");
    return;
  }
  const get = async (path) => {
    const r = await fetch(`http://127.0.0.1:${livePort}${path}`);
    return { status: r.status, text: await r.text() };
  };
  for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) {
    const path = container[probe].httpGet.path;
    const r = await get(path);
    check(r.status === 200, `live: ${probe} GET ${path} -> ${r.status}`);
  }
  const metrics = await get("/metrics");
  check(metrics.text.includes(`\n${metric} `) || metrics.text.startsWith(`${metric} `),
        `live: /metrics exports ${metric}`);
  child.kill("SIGTERM");
  let ready = 0;
  for (let i = 0; i < 100 && ready !== 503; i++) {
    ready = (await get(container.readinessProbe.httpGet.path).catch(() => ({ status: -1 }))).status;
    if (ready !== 503) await new Promise((r) => setTimeout(r, 10));
  }
  check(ready === 503, `live: after SIGTERM ${container.readinessProbe.httpGet.path} -> ${ready}`);
  const alive = await get(container.livenessProbe.httpGet.path).catch(() => ({ status: -1 }));
  check(alive.status === 200, `live: during the drain ${container.livenessProbe.httpGet.path} -> ${alive.status}`);
  const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 30000))]);
  check(code === 0, `live: exits 0 after the drain (${code})`);
  if (code === "timeout") child.kill("SIGKILL");
}

console.log(failures === 0 ? "all manifest checks passed" : `${failures} manifest check(s) FAILED`);
process.exit(failures === 0 ? 0 : 1);
