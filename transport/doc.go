// Package transport is memgest's node-to-node protocol (DESIGN.md §6):
// length-prefixed binary frames, each with a caller-defined type, the
// cluster-map epoch it was sent under, a request id and CRC32C checksums,
// multiplexed and pipelined over one long-lived connection per peer.
//
// The package is payload-agnostic. It moves Frames; message types, payload
// encodings and what an epoch means belong to the caller.
//
// # Pieces
//
//   - Frame, AppendFrame, DecodeFrame, ReadFrame: the wire format
//     (docs/transport.md has the byte table).
//   - Client: one connection to one peer, dialed lazily and again after a
//     failure. Call and Go send requests without waiting for earlier ones;
//     the reader goroutine matches responses to requests by id. Pool keeps
//     one Client per address.
//   - Server: serves requests with a Handler, which may reply at once or
//     later from any goroutine.
//   - Mux, DialTag: one port shared by frames and Raft, told apart by a tag
//     byte at the start of each connection.
//   - InmemNetwork: listeners and dialers over in-memory pipes, with
//     partitions and per-link delay, for fast cluster tests.
//
// # Batching
//
// Every connection has one writer goroutine. Senders append encoded frames
// to a shared buffer and wake it; it takes everything queued so far and
// writes it with one Write (one writev when a batch carries large payloads,
// which are not copied). While a write is in progress the next batch
// gathers, so batches grow with load and an idle connection still sends each
// frame at once: no timers, no Nagle-style delay.
//
// # Why not a library
//
// This is hand-written on purpose. The data path needs a small thing: a
// framed request/response multiplexer with an epoch and a checksum in every
// frame, batched writes, and a way to share the peer port with Raft.
// gRPC would give multiplexing but brings HTTP/2 framing, flow control,
// protobuf code generation and a large dependency tree onto a path that
// moves raw value fragments, adds per-message overhead and copies, and would
// still need epochs and checksums put inside each message. net/rpc is frozen
// and its messages carry only a method name and a sequence number. Stream multiplexers such
// as yamux or smux multiplex byte streams, not messages, so framing, request
// ids, epochs and checksums would still be ours, on top of their own window
// and stream bookkeeping. What remains (a 32-byte header, a send queue, a
// pending-call map) is a few hundred lines of the standard library that we
// can read, test and fuzz completely.
//
// # Failure semantics
//
// When a connection breaks (I/O error, corrupt or malformed frame, peer
// closed), every call in flight on it fails at once with an error matching
// ErrClosed and the cause; the next call dials again. The transport never
// retries a request: whether a request may be resent is the caller's
// decision. Deciding that a peer has failed is not the transport's job
// either (DESIGN.md §4: never by a TCP hang-up alone).
package transport
