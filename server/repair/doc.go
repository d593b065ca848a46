// Package repair is a memgest node's repair path (Repairer): from the
// control plane's decisions to pieces restored. A node that takes a
// shard over recovers its records from the pieces of the shard's
// placement, metadata first (Ring §5.5), and fills their values later; it
// restores the stripe keys recovery deferred; the coordinator of a shard
// with positions to rebuild re-creates what the holders there lack,
// copying replicas and decoding shards in bulk; a background sweep asks
// coordinators which pieces are garbage; scrub checks every stored
// checksum. It works through the coordinator core (server/core) it embeds
// and the node's stripe engine, and imports neither the node (server) nor
// its commands (internal/lint).
package repair
