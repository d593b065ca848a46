package commands

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
)

// residentBytes is the process's resident set (INFO's used_memory_rss):
// /proc/self/statm's resident pages where it exists, else what the Go
// runtime holds from the operating system and has not returned.
func residentBytes(ms *runtime.MemStats) int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := bytes.Fields(b); len(f) > 1 {
			if pages, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	return int64(ms.Sys - ms.HeapReleased)
}
