// Package commands is a memgest node's client side (Server): the RESP
// commands with Redis's replies, their routing to the keys' coordinators
// (forwarding what another node coordinates), pipelines and plain SETs
// written together, connections, AUTH and CLIENT, keyspace commands run
// on every node, SCHEME.*, the statistics INFO and /status show. It works
// through the coordinator core (server/core) it embeds and the node's
// stripe engine, and imports neither the node (server) nor its repair
// path (internal/lint).
package commands
