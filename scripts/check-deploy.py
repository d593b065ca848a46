#!/usr/bin/env python3
"""check-deploy.py: the parts of scripts/check-deploy.sh that read files
(run with the venv's python, which has PyYAML).

  context SRC DST          copy SRC into DST as `docker build SRC` would send
                           it, leaving out what SRC/.dockerignore excludes
  build-command DOCKERFILE print the Dockerfile's `go build` command
  static FILE              fail unless FILE is a statically linked ELF
  resources DIR            print DIR/kustomization.yaml's resources, and fail
                           if a YAML file in DIR is missing from them
  consistency DIR DOCKERFILE PORT PEER_PORT HTTP_PORT
                           cross-check the manifests, the Dockerfile and the
                           binary's default ports
  probes DIR BINARY        run BINARY as a founding node waiting for a second
                           one, with a password, and check that it answers
                           the StatefulSet's probes without it: readiness
                           503 "forming", liveness 200
"""

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def fail(msg):
    print("check-deploy: " + msg, file=sys.stderr)
    sys.exit(1)


# --- the build context -------------------------------------------------

def dockerignore_patterns(src):
    """(regex, exclude) pairs from src/.dockerignore, in order."""
    out = []
    path = os.path.join(src, ".dockerignore")
    if not os.path.exists(path):
        return out
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exclude = not line.startswith("!")
        pat = line.lstrip("!").strip().lstrip("/")
        if pat.startswith("./"):
            pat = pat[2:]
        out.append((re.compile(glob_regex(pat.rstrip("/"))), exclude))
    return out


def glob_regex(pat):
    """Docker's .dockerignore glob (Go's filepath.Match plus **) as a regex."""
    i, out = 0, ""
    while i < len(pat):
        if pat.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pat.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pat[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pat[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pat[i]), i + 1
    return out


def excluded(rel, patterns):
    """Whether rel is left out: the last pattern that matches it or one of
    its parent directories decides, as in Docker."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    out = False
    for rx, exclude in patterns:
        if any(rx.fullmatch(p) for p in prefixes):
            out = exclude
    return out


def cmd_context(src, dst):
    patterns = dockerignore_patterns(src)
    if any(not exclude for _, exclude in patterns):
        fail(".dockerignore exceptions (!pattern) are not supported by this check")
    count = 0
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = [d for d in dirs if not excluded(rel_root + d, patterns)]
        for f in files:
            rel = rel_root + f
            if excluded(rel, patterns):
                continue
            os.makedirs(os.path.join(dst, rel_root), exist_ok=True)
            shutil.copy2(os.path.join(src, rel), os.path.join(dst, rel), follow_symlinks=False)
            count += 1
    print(count)


# --- the Dockerfile ----------------------------------------------------

def dockerfile_lines(path):
    """The Dockerfile's instructions, continuation lines joined."""
    out, cur = [], ""
    for line in open(path):
        line = line.rstrip("\n")
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        out.append(cur + line)
        cur = ""
    return out


def cmd_build_command(path):
    runs = [l[4:].strip() for l in dockerfile_lines(path) if l.startswith("RUN ") and " go build " in l]
    if len(runs) != 1:
        fail("%s: want exactly one RUN with `go build`, found %d" % (path, len(runs)))
    print(runs[0])


# --- static linking ----------------------------------------------------

PT_DYNAMIC, PT_INTERP = 2, 3


def cmd_static(path):
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF":
            fail(path + ": not an ELF file")
        is64, little = head[4] == 2, head[5] == 1
        end = "<" if little else ">"
        if is64:
            phoff, = struct.unpack(end + "Q", head[32:40])
            phentsize, phnum = struct.unpack(end + "HH", head[54:58])
        else:
            phoff, = struct.unpack(end + "I", head[28:32])
            phentsize, phnum = struct.unpack(end + "HH", head[42:46])
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ptype, = struct.unpack(end + "I", f.read(4))
            if ptype == PT_INTERP:
                fail(path + ": has a program interpreter (dynamically linked)")
            if ptype == PT_DYNAMIC:
                fail(path + ": has a dynamic section (dynamically linked)")
    print(path + ": statically linked (no PT_INTERP, no PT_DYNAMIC among %d program headers)" % phnum)


# --- the manifests -----------------------------------------------------

def load_yaml(path):
    import yaml
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def cmd_resources(d):
    k = load_yaml(os.path.join(d, "kustomization.yaml"))[0]
    listed = list(k.get("resources", []))
    present = sorted(f for f in os.listdir(d) if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml")
    missing = [f for f in present if f not in listed]
    if missing:
        fail("%s/kustomization.yaml does not list %s" % (d, ", ".join(missing)))
    for r in listed:
        print(os.path.join(d, r))


def env_value(container, name):
    for e in container.get("env", []):
        if e["name"] == name:
            return e.get("value")
    return None


def cmd_consistency(d, dockerfile, port, peer_port, http_port):
    defaults = {"client": int(port), "peer": int(peer_port), "http": int(http_port)}
    docs = []
    for r in load_yaml(os.path.join(d, "kustomization.yaml"))[0]["resources"]:
        docs += load_yaml(os.path.join(d, r))
    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    problems = []

    # The image exposes the binary's default ports.
    exposed = set()
    for l in dockerfile_lines(dockerfile):
        if l.startswith("EXPOSE "):
            exposed |= {int(p.split("/")[0]) for p in l.split()[1:]}
    if exposed != set(defaults.values()):
        problems.append("Dockerfile EXPOSE %s, but memgest server's default ports are %s"
                        % (sorted(exposed), sorted(defaults.values())))

    (sts,) = by_kind["StatefulSet"]
    spec = sts["spec"]
    pod = spec["template"]["spec"]
    (server,) = [c for c in pod["containers"] if c["name"] == "memgest"]
    replicas = spec["replicas"]
    for c in pod["containers"] + pod.get("initContainers", []):
        expect = env_value(c, "MEMGEST_BOOTSTRAP_EXPECT")
        if expect is not None and int(expect) != replicas:
            problems.append("container %s: MEMGEST_BOOTSTRAP_EXPECT %s, replicas %d: the founding set must be the replicas"
                            % (c["name"], expect, replicas))
    if spec.get("podManagementPolicy") != "Parallel":
        problems.append("StatefulSet: podManagementPolicy must be Parallel (no pod is ready before the cluster forms)")

    # The server's port flags, its named container ports and the binary's
    # defaults agree (the init container assumes the defaults).
    flags = dict(a[2:].split("=", 1) for a in server["args"] if a.startswith("--") and "=" in a)
    named = {p["name"]: p["containerPort"] for p in server["ports"]}
    for name, flag in (("client", "port"), ("peer", "peer-port"), ("http", "http-port")):
        if int(flags.get(flag, defaults[name])) != defaults[name] or named.get(name) != defaults[name]:
            problems.append("port %s: --%s %s, containerPort %s, binary default %d"
                            % (name, flag, flags.get(flag), named.get(name), defaults[name]))
    if sts["spec"]["serviceName"] not in flags.get("advertise", ""):
        problems.append("--advertise does not name the headless Service %s" % sts["spec"]["serviceName"])

    # Probes point at the HTTP port, at paths served without the password
    # (the cluster has one): readiness at /ready, which says whether the
    # node is ready (the PodDisruptionBudget counts on it).
    for probe in ("readinessProbe", "livenessProbe"):
        get = server.get(probe, {}).get("httpGet", {})
        if get.get("port") not in ("http", defaults["http"]):
            problems.append("%s: not an httpGet on the HTTP port" % probe)
        if get.get("path") not in OPEN_PATHS:
            problems.append("%s: path %s is not one memgest serves without the password (%s)"
                            % (probe, get.get("path"), ", ".join(OPEN_PATHS)))
    if server.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/ready":
        problems.append("readinessProbe: not /ready")

    services = {s["metadata"]["name"]: s for s in by_kind["Service"]}
    peers = services.get(sts["spec"]["serviceName"])
    if not peers or peers["spec"].get("clusterIP") != "None" or not peers["spec"].get("publishNotReadyAddresses"):
        problems.append("the StatefulSet's serviceName must be a headless Service with publishNotReadyAddresses")
    for s in services.values():
        for p in s["spec"]["ports"]:
            if p.get("targetPort") not in named and p.get("targetPort") not in named.values():
                problems.append("Service %s port %s targets %s, not a container port" % (s["metadata"]["name"], p["name"], p.get("targetPort")))

    (pdb,) = by_kind["PodDisruptionBudget"]
    if pdb["spec"].get("maxUnavailable") != 1:
        problems.append("PodDisruptionBudget: maxUnavailable must be 1 (one node down at a time)")
    labels = spec["template"]["metadata"]["labels"]
    for name, sel in [("PodDisruptionBudget", pdb["spec"]["selector"]["matchLabels"])] + \
            [("Service " + n, s["spec"]["selector"]) for n, s in services.items()]:
        if any(labels.get(k) != v for k, v in sel.items()):
            problems.append("%s: selector %s does not match the pods' labels %s" % (name, sel, labels))

    for p in problems:
        print("check-deploy: " + p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print("manifests, Dockerfile and binary agree: replicas = bootstrap-expect = %d; ports %d/%d/%d"
          % (replicas, defaults["client"], defaults["peer"], defaults["http"]))


# OPEN_PATHS are the HTTP paths memgest serves without the cluster's
# password (server/http.go).
OPEN_PATHS = ("/ready", "/metrics")


def probe_of(container, name):
    get = container[name]["httpGet"]
    return get["path"]


def http_get(port, path):
    """(status, body) of GET path on 127.0.0.1:port, or None if nothing answers."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def cmd_probes(d, binary):
    docs = []
    for r in load_yaml(os.path.join(d, "kustomization.yaml"))[0]["resources"]:
        docs += load_yaml(os.path.join(d, r))
    (sts,) = [doc for doc in docs if doc["kind"] == "StatefulSet"]
    (server,) = [c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "memgest"]
    ready, live = probe_of(server, "readinessProbe"), probe_of(server, "livenessProbe")
    port, peer, http = free_ports(3)
    data = tempfile.mkdtemp(prefix="check-deploy-")
    proc = subprocess.Popen([binary, "server", "--bind", "127.0.0.1", "--port", str(port), "--peer-port", str(peer),
                             "--http-port", str(http), "--data-dir", data, "--bootstrap-expect", "2",
                             "--requirepass", "check-deploy"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 15
        got = None
        while got is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            got = http_get(http, ready)
        if got is None:
            fail("memgest server answered nothing on its HTTP port (exit %s)" % proc.poll())
        if got[0] != 503 or not got[1].startswith("forming"):
            fail("%s of a node waiting for the cluster to form: %d %r, want 503 \"forming…\" without the password"
                 % (ready, got[0], got[1]))
        alive = http_get(http, live)
        if alive is None or alive[0] != 200:
            fail("%s: %s, want 200 without the password" % (live, alive))
        print("%s answers %d %r and %s %d without the password" % (ready, got[0], got[1].strip(), live, alive[0]))
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(data, ignore_errors=True)


def main(argv):
    cmds = {"context": cmd_context, "build-command": cmd_build_command, "static": cmd_static,
            "resources": cmd_resources, "consistency": cmd_consistency, "probes": cmd_probes}
    if len(argv) < 2 or argv[1] not in cmds:
        fail("usage: check-deploy.py {%s} ..." % "|".join(cmds))
    cmds[argv[1]](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
