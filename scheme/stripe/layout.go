package stripe

import (
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
)

// The engine serves both packed kinds (decision 0008). A list of either
// is the first K+M positions of its shard's placement: data positions
// 0..K−1, then M holder positions that every update of the list's chunks
// goes to. For stripe:K+M all M holders keep parity. For hybrid:K+M the
// first M−1 keep parity, RS(K, M−1), and the last keeps a whole copy of
// every data chunk of the list, open or sealed (RE-Store's replica, the
// "secondary" of RE(K, K, M−1)): one failure is served from that copy
// and any M are decoded.

// packedKind says whether the engine serves schemes of kind k.
func packedKind(k scheme.Kind) bool { return k == scheme.Stripe || k == scheme.Hybrid }

// parities is how many of spec's M holder positions keep parity.
func parities(spec scheme.Spec) int {
	if spec.Kind == scheme.Hybrid {
		return spec.M - 1
	}
	return spec.M
}

// replicaHolder is the holder position that keeps whole copies of the
// list's data chunks (hybrid), or −1 (stripe).
func replicaHolder(spec scheme.Spec) int {
	if spec.Kind == scheme.Hybrid {
		return spec.M - 1
	}
	return -1
}

// positionLost says whether position p of sh's list, held by node, cannot
// serve what it keeps: its node is not up, or it awaits its rebuild (a
// node that took the place may lack the list's chunks).
func positionLost(sh *cluster.Shard, node cluster.Node, p int) bool {
	return node.State != cluster.Up || slices.Contains(sh.Rebuild, p)
}

// holderLost is positionLost for holder position j of sh's list (holders
// as parityHolders returns them); a j out of range (stripe's replica
// holder, −1) is lost.
func holderLost(sh *cluster.Shard, spec scheme.Spec, holders []cluster.Node, j int) bool {
	return j < 0 || j >= len(holders) || positionLost(sh, holders[j], spec.K+j)
}
