// Package tests holds memgest's multi-process tests: each test starts real
// `memgest server` processes on 127.0.0.1 with ports chosen at run time,
// talks to them over real sockets, and kills them (by PID) when it ends.
package tests
