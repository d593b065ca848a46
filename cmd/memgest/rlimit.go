package main

import (
	"fmt"
	"log/slog"
)

// reservedFDs are the file descriptors a node keeps for other than its
// clients: its three listeners, Raft's log and snapshots, HTTP requests,
// and its peer connections (a few for each other node of the cluster).
// Redis reserves 32 (CONFIG_MIN_RESERVED_FDS); a memgest node talks to
// every peer as well.
const reservedFDs = 128

// fdLimit is the process's open-file limit (RLIMIT_NOFILE) and a way to
// set it.
type fdLimit struct {
	cur, max uint64
	raise    func(to uint64) error // sets the soft limit to `to`, the hard one to at least that
}

// fitClients is the maxclients a node can serve within the open-file
// limit, as Redis's adjustOpenFilesLimit decides it: want, if the limit
// covers want clients and the reserve or can be raised that far;
// otherwise what the highest limit it can set leaves after the reserve,
// with a warning. It fails when that leaves no room for a client.
func fitClients(want int, l fdLimit, log *slog.Logger) (int, error) {
	need := uint64(want) + reservedFDs
	if l.cur >= need {
		return want, nil
	}
	err := l.raise(need)
	if err == nil {
		log.Info("raised the open-file limit for maxclients", "maxclients", want, "limit", need)
		return want, nil
	}
	best := l.cur
	if l.max > best && l.raise(l.max) == nil {
		best = l.max
	}
	if best <= reservedFDs {
		return 0, fmt.Errorf("the open-file limit (ulimit -n) of %d leaves no room for clients: a node keeps %d for itself; raise it to at least %d for maxclients %d", best, reservedFDs, need, want)
	}
	fit := int(best - reservedFDs)
	log.Warn("maxclients lowered to fit the open-file limit; raise 'ulimit -n' for more",
		"requested", want, "maxclients", fit, "open_file_limit", best, "needed", need, "err", err)
	return fit, nil
}
