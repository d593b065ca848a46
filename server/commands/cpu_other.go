//go:build !unix

package commands

// cpuTimes reports nothing where getrusage does not exist: INFO leaves
// its CPU section empty.
func cpuTimes() (sys, user, childSys, childUser float64, ok bool) { return 0, 0, 0, 0, false }
