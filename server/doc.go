// Package server is the composition root of a memgest node: it wires the
// store, schemes, cluster map and transport together and serves the RESP
// client protocol (one file per command family under resp/).
//
// Not built yet: it arrives with issue 3.
package server
