#!/usr/bin/env bash
# check-deploy.sh: what `make check-deploy` (and CI) checks of the container
# image definition and the Kubernetes manifests, on a machine with no Docker
# daemon and no cluster:
#   1. the Dockerfile's `go build` command, run as written on a copy of the
#      build context (.dockerignore applied), yields a statically linked
#      binary (distroless/static has no libc) that runs;
#   2. deploy/k8s renders (`kubectl kustomize`, when kubectl is present;
#      otherwise the files kustomization.yaml lists are checked as they
#      are) and every resource validates, strictly (unknown fields fail),
#      against the Kubernetes schemas of K8S_VERSIONS;
#   3. the manifests, the Dockerfile and the binary agree (ports,
#      replicas = bootstrap-expect, probes, selectors), and the binary,
#      run as a founding node alone, answers the probes' paths without the
#      password (readiness 503 "forming", liveness 200);
#   4. deploy/k8s/memgest-role.sh chooses found or join as documented, and
#      what it writes is a config file `memgest server` accepts.
# The validator, kubernetes-validate (it bundles the schemas: no network),
# is installed once into a venv under ~/.cache/memgest-deploy.
set -euo pipefail
cd "$(dirname "$0")/.."

# K8S_VERSIONS: the oldest Kubernetes the manifests are meant for (the
# PodDisruptionBudget's unhealthyPodEvictionPolicy is GA from 1.31) and the
# newest the pinned validator knows.
K8S_VERSIONS=${K8S_VERSIONS:-"1.31.0 1.37.0"}

req=scripts/check-deploy-requirements.txt
cache=${MEMGEST_DEPLOY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memgest-deploy}
venv=$cache/venv-$(sha256sum "$req" | cut -c1-12)
if ! [ -x "$venv/bin/kubernetes-validate" ]; then
	echo "check-deploy: installing kubernetes-validate into $venv (once)" >&2
	rm -rf "$venv"
	mkdir -p "$cache"
	python3 -m venv "$venv" >&2
	"$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
fi
py=$venv/bin/python
helper=scripts/check-deploy.py

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# passed counts the checks that passed. A failing check ends the run,
# except the role cases, which all run and are counted.
passed=0

# 1. The image's build, without Docker.
echo "== Dockerfile: its go build command on the build context"
mkdir "$tmp/context"
n=$("$py" $helper context . "$tmp/context")
build=$("$py" $helper build-command Dockerfile)
# The Dockerfile writes /memgest; here the binary goes to the temp dir.
build_here=${build/ -o \/memgest / -o $tmp\/memgest }
[ "$build_here" != "$build" ] || { echo "check-deploy: the Dockerfile's build does not write -o /memgest" >&2; exit 1; }
echo "$n files in the context; running: $build"
(cd "$tmp/context" && sh -c "$build_here")
"$py" $helper static "$tmp/memgest"
"$tmp/memgest" version
passed=$((passed + 2))
# The binary's default ports, which the image and the manifests use.
help=$("$tmp/memgest" server --help)
default_of() { sed -n "s/^ *--$1 int .*(default \([0-9]*\))\$/\1/p" <<<"$help"; }
port=$(default_of port) peer_port=$(default_of peer-port) http_port=$(default_of http-port)
if [ -z "$port" ] || [ -z "$peer_port" ] || [ -z "$http_port" ]; then
	echo "check-deploy: could not read the default ports from memgest server --help" >&2
	exit 1
fi

# 2. Render and validate.
echo "== deploy/k8s: schema validation (strict) against Kubernetes $K8S_VERSIONS"
resources=$("$py" $helper resources deploy/k8s)
# CHECK_DEPLOY_KUBECTL= (empty) checks the raw files even where kubectl is.
kubectl=${CHECK_DEPLOY_KUBECTL-kubectl}
if [ -n "$kubectl" ] && command -v "$kubectl" >/dev/null; then
	"$kubectl" kustomize deploy/k8s >"$tmp/rendered.yaml"
	files=("$tmp/rendered.yaml")
	echo "rendered with kubectl kustomize: $(grep -c '^kind:' "$tmp/rendered.yaml") resources"
else
	# shellcheck disable=SC2206 # file names without spaces, one per line
	files=($resources)
	echo "no kubectl: validating the files kustomization.yaml lists (the generated ConfigMap is not among them)"
fi
for v in $K8S_VERSIONS; do
	"$venv/bin/kubernetes-validate" --strict --quiet -k "$v" "${files[@]}"
	echo "kubernetes $v: valid"
	passed=$((passed + 1))
done

# 3. Agreement between the pieces.
echo "== consistency"
"$py" $helper consistency deploy/k8s Dockerfile "$port" "$peer_port" "$http_port"
"$py" $helper probes deploy/k8s "$tmp/memgest"
passed=$((passed + 2))

# 4. The init container's choice, with a stand-in for wget that answers
# each pod's /metrics from FAKE_EPOCHS ("ordinal:epoch ..."; a pod not
# listed does not answer).
echo "== deploy/k8s/memgest-role.sh"
mkdir -p "$tmp/fakebin" "$tmp/role"
cat >"$tmp/fakebin/wget" <<'EOF'
#!/bin/sh
for url; do :; done
ord=${url#http://*-}; ord=${ord%%.*}
echo "$ord" >>"$FAKE_ASKED"
for pair in $FAKE_EPOCHS; do
	if [ "${pair%%:*}" = "$ord" ]; then
		printf '# HELP memgest_map_epoch x\nmemgest_map_epoch %s\nmemgest_serving 1\n' "${pair#*:}"
		exit 0
	fi
done
exit 1
EOF
chmod +x "$tmp/fakebin/wget"
fails=0
# role_case NAME POD EPOCHS HAS_NODE_ID WANT: WANT is "found" or the ordinal joined via.
role_case() {
	local name=$1 pod=$2 epochs=$3 known=$4 want=$5 data=$tmp/role/$1 got
	mkdir -p "$data"
	[ "$known" = yes ] && echo 0123456789abcdef0123456789abcdef01234567 >"$data/node-id"
	: >"$data/asked"
	PATH=$tmp/fakebin:$PATH FAKE_EPOCHS=$epochs FAKE_ASKED=$data/asked \
		POD_NAME=$pod POD_NAMESPACE=ns MEMGEST_BOOTSTRAP_EXPECT=6 DATA_DIR=$data ROLE_FILE=$data/role.conf \
		sh deploy/k8s/memgest-role.sh 2>/dev/null
	if grep -q '^join ' "$data/role.conf"; then
		got=$(sed -n 's/^join memgest-\([0-9]*\)\.memgest-peers\.ns\.svc\.cluster\.local:17001$/\1/p' "$data/role.conf")
		got=${got:-"bad join line: $(cat "$data/role.conf")"}
	else
		got=found
	fi
	if [ "$got" != "$want" ]; then
		echo "FAIL role $name: want $want, got $got" >&2
		fails=$((fails + 1))
	else
		echo "ok   role $name: $got"
		passed=$((passed + 1))
	fi
	# The file must be a config memgest accepts: with a bad --bind the
	# server fails on that, after reading the file (a bad line fails first).
	if out=$("$tmp/memgest" server --config "$data/role.conf" --bind not-an-ip 2>&1) ||
		! grep -q 'bind "not-an-ip" is not an IP address' <<<"$out"; then
		echo "FAIL role $name: memgest server did not take $data/role.conf: $out" >&2
		fails=$((fails + 1))
	else
		passed=$((passed + 1))
	fi
}
role_case first-formation-founder memgest-0 "" no found
role_case founder-peers-unjoined memgest-0 "1:0 2:0 3:0" no found
role_case founder-lost-volume memgest-0 "1:0 2:7 3:7" no 2
role_case founder-restart memgest-0 "1:7 2:7" yes found
if [ -s "$tmp/role/founder-restart/asked" ]; then
	echo "FAIL role founder-restart: asked other pods, need not" >&2
	fails=$((fails + 1))
fi
role_case joiner-forming memgest-3 "" no 0
role_case joiner-via-member memgest-3 "0:0 1:4" no 1
role_case joiner-restart memgest-2 "0:9" yes 0
role_case spare-after-scale-up memgest-7 "0:9 1:9" no 0
if [ "$fails" != 0 ]; then
	echo "check-deploy: $passed passed, $fails failed"
	exit 1
fi
echo "check-deploy: $passed passed, 0 failed"
