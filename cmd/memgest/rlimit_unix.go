//go:build linux || darwin

package main

import (
	"log/slog"
	"syscall"
)

// fitMaxClients checks maxclients against the process's open-file limit,
// raising the limit if the process may (fitClients).
func fitMaxClients(want int, log *slog.Logger) (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the open-file limit; maxclients is not checked against it", "err", err)
		return want, nil
	}
	raise := func(to uint64) error {
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: to, Max: max(lim.Max, to)})
	}
	return fitClients(want, fdLimit{cur: lim.Cur, max: lim.Max, raise: raise}, log)
}
