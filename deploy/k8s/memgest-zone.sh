#!/bin/sh
# memgest-zone.sh: the StatefulSet's zone init container runs this (busybox
# sh) to hand memgest its failure domain (decision 0021): the zone label
# (topology.kubernetes.io/zone) of the Kubernetes node the pod was
# scheduled on, written to /run/memgest/zone for the server's --zone-file.
# The downward API cannot read a node's labels, so it asks the API server,
# with the pod's service account (rbac.yaml grants it get on nodes and
# nothing else). A node without the label gives an empty zone: memgest then
# spreads over hosts only. A failed request fails the pod, loudly, rather
# than start a node that would be placed as if zone-less.
#
# Environment: NODE_NAME (downward API, spec.nodeName), optionally
# ZONE_LABEL and ZONE_FILE.
set -eu

: "${NODE_NAME:?}"
label=${ZONE_LABEL:-topology.kubernetes.io/zone}
out=${ZONE_FILE:-/run/memgest/zone}
sa=/var/run/secrets/kubernetes.io/serviceaccount
token=$(cat "$sa/token")

node=$(timeout 10 wget -q -O - --header "Authorization: Bearer $token" \
	"https://kubernetes.default.svc/api/v1/nodes/$NODE_NAME") || {
	echo "memgest-zone: cannot read node $NODE_NAME from the API server (rbac.yaml applied?)" >&2
	exit 1
}
key=$(echo "$label" | sed 's/[./]/\\&/g')
zone=$(echo "$node" | tr ',' '\n' | sed -n "s/.*\"$key\": *\"\([^\"]*\)\".*/\1/p" | head -n 1)
printf '%s\n' "$zone" >"$out"
echo "memgest-zone: node $NODE_NAME is in zone \"$zone\"" >&2
