#!/bin/sh
# memgest-role.sh: the StatefulSet's init container runs this (busybox sh)
# to choose whether its pod founds the cluster or joins it, and writes the
# choice as a `memgest server --config` file. The memgest image has no
# shell, and memgest founds a cluster exactly when --join is absent (a
# node whose --join names itself never forms: server/node.go,
# startControl), so the choice must be made before the server starts.
#
# The rule:
#   - pod 0 founds (no join line; --bootstrap-expect comes from the
#     environment), unless its data directory is new and some other pod of
#     the founding set already belongs to a cluster: then pod 0 lost its
#     volume and must join that cluster instead of founding a second one;
#   - pod 0 with a data directory it used before writes the founding role
#     again: Raft state in it decides (founding is skipped when state
#     exists), so a restart is a restart whatever the file says;
#   - every other pod joins, via the first pod of the founding set that
#     belongs to a cluster, or via pod 0 when none does yet (the cluster is
#     forming: memgest retries the join until pod 0 answers).
# "Belongs to a cluster" is read from the pod's open /metrics: a node
# that has not joined anything reports memgest_map_epoch 0.
#
# Environment: POD_NAME and POD_NAMESPACE (downward API),
# MEMGEST_BOOTSTRAP_EXPECT (the founding set: pods 0..N-1), and optionally
# PEER_SERVICE, CLUSTER_DOMAIN, PEER_PORT, HTTP_PORT, DATA_DIR, ROLE_FILE.
set -eu

: "${POD_NAME:?}" "${POD_NAMESPACE:?}" "${MEMGEST_BOOTSTRAP_EXPECT:?}"
service=${PEER_SERVICE:-memgest-peers}
domain=${CLUSTER_DOMAIN:-cluster.local}
peer_port=${PEER_PORT:-17001}
http_port=${HTTP_PORT:-27001}
data=${DATA_DIR:-/data}
out=${ROLE_FILE:-/run/memgest/role.conf}

set_name=${POD_NAME%-*}
ordinal=${POD_NAME##*-}

# host i is pod i's stable DNS name under the headless Service.
host() { echo "$set_name-$1.$service.$POD_NAMESPACE.svc.$domain"; }

# has_map i succeeds when pod i answers /metrics with a map epoch above 0.
# timeout bounds a pod that accepts and does not answer (busybox wget's
# own -T crashed on a refused connection in 1.35).
has_map() {
	timeout 3 wget -q -O - "http://$(host "$1"):$http_port/metrics" 2>/dev/null |
		awk '$1 == "memgest_map_epoch" && $2 + 0 > 0 { found = 1 } END { exit !found }'
}

log() { echo "memgest-role: $POD_NAME: $*" >&2; }

via=""
if [ "$ordinal" != 0 ] || [ ! -e "$data/node-id" ]; then
	i=0
	while [ "$i" -lt "$MEMGEST_BOOTSTRAP_EXPECT" ]; do
		if [ "$i" != "$ordinal" ] && has_map "$i"; then
			via=$i
			break
		fi
		i=$((i + 1))
	done
fi

mkdir -p "$(dirname "$out")"
if [ "$ordinal" = 0 ] && [ -z "$via" ]; then
	log "founds the cluster (or restarts as its founder)"
	echo "# $POD_NAME founds the cluster: no join" >"$out"
else
	via=${via:-0}
	log "joins via $(host "$via"):$peer_port"
	echo "join $(host "$via"):$peer_port" >"$out"
fi
