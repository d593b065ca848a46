//go:build unix

package commands

import "syscall"

// cpuTimes is the CPU time, in seconds, the process (all its threads) and
// its waited-for children have spent in the kernel and in user space, as
// getrusage reports it (Redis's used_cpu_* fields).
func cpuTimes() (sys, user, childSys, childUser float64, ok bool) {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil ||
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0, 0, 0, 0, false
	}
	return seconds(self.Stime), seconds(self.Utime), seconds(children.Stime), seconds(children.Utime), true
}

func seconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
